import { describe, expect, it } from 'vitest';
import { hostedBlockPeak } from '../../src/chunk/config.js';
import { ChunkHost } from '../../src/chunk/host.js';
import { ChunkReceiver, ChunkSender, decodeChunkPacket } from '../../src/chunk/index.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { World as SimWorld } from '../../src/sim/world.js';
import { type Direction, PairWorld, sameBytes } from '../harness/index.js';

/** Mutate one real datagram: flip bits, truncate, extend, duplicate, or replace it with noise. */
function mutate(rng: NonCryptoRng, bytes: Uint8Array): Uint8Array[] {
  const b = bytes.slice();
  switch (rng.nextInt(7)) {
    case 0: {
      const flips = 1 + rng.nextInt(3);
      for (let i = 0; i < flips && b.length > 0; i++) {
        const bit = rng.nextInt(b.length * 8);
        b[bit >>> 3] ^= 1 << (bit & 7);
      }
      return [b];
    }
    case 1: return [b.subarray(0, rng.nextInt(b.length + 1))];
    case 2: {
      const longer = new Uint8Array(b.length + 1 + rng.nextInt(8));
      longer.set(b);
      rng.fill(longer.subarray(b.length));
      return [longer];
    }
    case 3: return [b, b.slice(), b.slice()];
    case 4: return [rng.fill(new Uint8Array(rng.nextInt(1300)))];
    case 5: {
      // Keep magic/type/session so the noise reaches deep validation.
      const n = rng.fill(new Uint8Array(8 + rng.nextInt(100)));
      n.set(b.subarray(0, Math.min(8, b.length)));
      return [n];
    }
    default: return [];
  }
}

interface Checker {
  sender: ChunkSender;
  receiver: ChunkReceiver;
  peakRx: number;
  peakTx: number;
}

function check(c: Checker): void {
  c.peakRx = Math.max(c.peakRx, c.receiver.memoryBytes());
  c.peakTx = Math.max(c.peakTx, c.sender.memoryBytes());
  if (c.peakRx > c.receiver.config.maxMemoryBytes) throw new Error(`receiver memory ${c.peakRx}`);
  if (c.peakTx > c.sender.memoryLimitBytes()) throw new Error(`sender memory ${c.peakTx}`);
}

describe('chunk fuzz', () => {
  for (const seed of [1, 2, 3]) {
    it(`mutated live traffic both ways (seed ${seed}): no throw, bounded memory, then a clean transfer completes`, () => {
      const rng = new NonCryptoRng(1000 + seed);
      const sender = new ChunkSender({ sessionId: seed, rateBytesPerSec: 2e6, sliceBytes: 500, stallTimeoutMs: 500 });
      const receiver = new ChunkReceiver({ maxBlockBytes: 300_000 });
      const world = new PairWorld({ seed, aToB: { latencyMs: 5, jitterMs: 5, loss: 0.05 }, a: sender, b: receiver, reuseReceiveBuffer: true });
      const c: Checker = { sender, receiver, peakRx: 0, peakTx: 0 };
      let mutated = 0;
      world.onDeliver = (_dir: Direction, bytes: Uint8Array) => {
        if (!rng.chance(0.3)) return undefined;
        mutated++;
        return mutate(rng, bytes);
      };
      for (let i = 0; i < 6; i++) sender.sendBlock(rng.fill(new Uint8Array(rng.nextInt(200_000))));
      let outcomes = 0;
      world.runUntil(() => {
        check(c);
        while (receiver.pollEvent() !== undefined);
        for (let e = sender.pollEvent(); e !== undefined; e = sender.pollEvent()) if (e.type !== 'stalled') outcomes++;
        return outcomes === 6;
      }, { maxTimeMs: 30_000 });
      expect(mutated).toBeGreaterThan(200);
      // Stop mutating; whatever was in flight finishes, then a fresh block arrives byte-exact.
      world.onDeliver = undefined;
      const clean = new NonCryptoRng(seed).fill(new Uint8Array(150_000));
      sender.sendBlock(clean);
      let got: Uint8Array | undefined;
      const r = world.runUntil(() => {
        check(c);
        for (let e = receiver.pollEvent(); e !== undefined; e = receiver.pollEvent()) if (e.type === 'block') got = e.data;
        while (sender.pollEvent() !== undefined);
        return got !== undefined && sameBytes(got, clean) && sender.progress(world.now).queuedBlocks === 0;
      }, { maxTimeMs: 30_000 });
      expect(r.ok).toBe(true);
      expect(outcomes).toBe(6);
      expect(receiver.counters().malformed).toBeGreaterThan(100);
      expect(sender.counters().malformed).toBeGreaterThan(10);
      expect(c.peakRx).toBeLessThanOrEqual(receiver.config.maxMemoryBytes);
    });
  }

  it('thousands of captured-and-mutated and random datagrams into fresh ends: no throw, bounded, then a clean transfer', () => {
    const rng = new NonCryptoRng(77);
    // Capture real traffic of both kinds.
    const capture: Uint8Array[] = [];
    const s0 = new ChunkSender({ sessionId: 5, rateBytesPerSec: 5e6, sliceBytes: 256 });
    const r0 = new ChunkReceiver({ maxBlockBytes: 1 << 20 });
    const w0 = new PairWorld({ seed: 77, aToB: { latencyMs: 3, loss: 0.2 }, a: s0, b: r0 });
    w0.onTransmit = (_d, bytes) => {
      if (capture.length < 400) capture.push(bytes.slice());
    };
    s0.sendBlock(rng.fill(new Uint8Array(60_000)));
    s0.sendBlock(rng.fill(new Uint8Array(500)));
    w0.runFor(2000);
    s0.cancel(2);
    w0.runFor(500);
    const kinds = new Set(capture.map((b) => decodeChunkPacket(b)).filter((r) => r.ok).map((r) => r.ok && r.value.type));
    expect([...kinds].sort()).toEqual(['ack', 'slice']);

    const sender = new ChunkSender({ sessionId: 9, rateBytesPerSec: 5e6 });
    const receiver = new ChunkReceiver({ maxBlockBytes: 100_000, maxMemoryBytes: 150_000, sessionIdleMs: 500 });
    const c: Checker = { sender, receiver, peakRx: 0, peakTx: 0 };
    sender.sendBlock(rng.fill(new Uint8Array(10_000)));
    const out = new Uint8Array(1500);
    let now = 0;
    for (let i = 0; i < 4000; i++) {
      now += rng.nextInt(3);
      const src = capture[rng.nextInt(capture.length)];
      const inputs = rng.chance(0.2) ? [rng.fill(new Uint8Array(rng.nextInt(1300)))] : rng.chance(0.3) ? [src] : mutate(rng, src);
      for (const d of inputs) {
        receiver.handleDatagram(now, d);
        sender.handleDatagram(now, d);
      }
      receiver.handleTimeout(now);
      sender.handleTimeout(now);
      while (receiver.pollTransmit(now, out) !== undefined);
      for (let k = 0; k < 4 && sender.pollTransmit(now, out) !== undefined; k++);
      while (receiver.pollEvent() !== undefined);
      while (sender.pollEvent() !== undefined);
      check(c);
    }
    expect(receiver.counters().malformed).toBeGreaterThan(1000);
    // The same objects, joined by a clean link, finish a transfer (the receiver drops the captured
    // session once it has been silent for sessionIdleMs and adopts the sender's).
    const world = new PairWorld({ seed: 78, aToB: { latencyMs: 5 }, a: sender, b: receiver, startMs: now + 1 });
    const clean = new NonCryptoRng(79).fill(new Uint8Array(90_000));
    while (sender.pollEvent() !== undefined);
    sender.sendBlock(clean);
    let got: Uint8Array | undefined;
    const r = world.runUntil(() => {
      check(c);
      for (let e = receiver.pollEvent(); e !== undefined; e = receiver.pollEvent()) if (e.type === 'block' && sameBytes(e.data, clean)) got = e.data;
      return got !== undefined;
    }, { maxTimeMs: 20_000 });
    expect(r.ok).toBe(true);
    expect(receiver.sessionId).toBe(9);
  });

  for (const seed of [4]) {
    it(`mutated live traffic between three senders and a ChunkHost with a tight budget (seed ${seed}): within budget, then clean transfers, then the budget empties`, () => {
      const rng = new NonCryptoRng(2000 + seed);
      const maxBlockBytes = 200_000;
      // Room for one largest block while it is assembled, plus ~200 KB: the senders contend for it.
      const budget = hostedBlockPeak(maxBlockBytes) + 200_000;
      const host = new ChunkHost({ maxMemoryBytes: budget, idleTimeoutMs: 2000, receiver: { maxBlockBytes } });
      const world = new SimWorld({ seed, link: { latencyMs: 5, jitterMs: 5, loss: 0.05 } });
      world.add('rx', host);
      const names = ['s1', 's2', 's3'];
      const senders = names.map((n, i) => {
        const s = new ChunkSender({ sessionId: seed * 10 + i, rateBytesPerSec: 2e6, sliceBytes: 500, stallTimeoutMs: 500 });
        world.addPeer(n, s, 'rx');
        return s;
      });
      let mutated = 0;
      world.onDeliver = (_from, _to, bytes) => {
        if (!rng.chance(0.3)) return undefined;
        mutated++;
        return mutate(rng, bytes);
      };
      let peak = 0;
      let outcomes = 0;
      const got = new Map<string, Uint8Array[]>(names.map((n) => [n, []]));
      const poll = (): void => {
        peak = Math.max(peak, host.memoryBytes());
        for (let e = host.pollEvent(); e !== undefined; e = host.pollEvent()) if (e.event.type === 'block') got.get(e.address)!.push(e.event.data);
      };
      for (const s of senders) for (let i = 0; i < 3; i++) s.sendBlock(rng.fill(new Uint8Array(rng.nextInt(maxBlockBytes))));
      world.runUntil(() => {
        poll();
        for (const s of senders) for (let e = s.pollEvent(); e !== undefined; e = s.pollEvent()) if (e.type !== 'stalled') outcomes++;
        return outcomes === 9;
      }, { maxTimeMs: 60_000 });
      expect(mutated).toBeGreaterThan(500);
      expect(outcomes).toBe(9);
      expect(host.counters().overBudget).toBeGreaterThan(0); // the budget was the limit
      // Stop mutating: each sender's next block arrives byte-exact.
      world.onDeliver = undefined;
      for (const n of names) got.set(n, []);
      const clean = names.map((_, i) => new NonCryptoRng(seed * 10 + i).fill(new Uint8Array(150_000)));
      senders.forEach((s, i) => s.sendBlock(clean[i]!));
      const r = world.runUntil(() => {
        poll();
        for (const s of senders) while (s.pollEvent() !== undefined);
        return names.every((n, i) => got.get(n)!.some((b) => sameBytes(b, clean[i]!)));
      }, { maxTimeMs: 30_000 });
      expect(r.ok).toBe(true);
      expect(peak).toBeLessThanOrEqual(budget);
      // The senders go away halfway through one more block each: every receiver expires and the whole budget is returned.
      for (const s of senders) s.sendBlock(rng.fill(new Uint8Array(150_000)));
      world.runFor(40);
      poll();
      expect(host.memoryBytes()).toBeGreaterThan(0);
      for (const n of names) world.remove(n);
      world.runFor(3000);
      poll();
      expect(host.senderCount).toBe(0);
      expect(host.memoryBytes()).toBe(0);
    });
  }
});

