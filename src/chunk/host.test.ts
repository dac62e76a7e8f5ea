import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { ChunkHost, type ChunkHostEvent } from './host.js';
import { ChunkSender, type ChunkSenderEvent } from './sender.js';
import { ChunkReceiver } from './receiver.js';

function block(seed: number, n: number): Uint8Array {
  const b = new Uint8Array(n);
  new NonCryptoRng(seed).fill(b);
  return b;
}

/** Compare blocks as strings: toEqual over large typed arrays is slow. */
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

const LINK = { latencyMs: 10, jitterMs: 2, rateBitsPerSec: 20e6, queueBytes: 256 * 1024, loss: 0.02 };

interface Rig {
  world: World;
  host: ChunkHost;
  senders: Map<string, ChunkSender>;
  hostEvents: ChunkHostEvent[];
  senderEvents: Map<string, ChunkSenderEvent[]>;
  /** Poll every event (the world does not); call from run predicates. */
  poll(): void;
}

function rig(seed: number, host: ChunkHost, names: string[]): Rig {
  const world = new World({ seed, link: LINK });
  world.add('rx', host);
  const senders = new Map<string, ChunkSender>();
  const senderEvents = new Map<string, ChunkSenderEvent[]>();
  const r: Rig = {
    world, host, senders, hostEvents: [], senderEvents,
    poll() {
      for (let e = host.pollEvent(); e !== undefined; e = host.pollEvent()) r.hostEvents.push(e);
      for (const [n, s] of senders) for (let e = s.pollEvent(); e !== undefined; e = s.pollEvent()) senderEvents.get(n)!.push(e);
    },
  };
  names.forEach((n, i) => {
    const s = new ChunkSender({ sessionId: 0x1000 + seed * 16 + i, rateBytesPerSec: 1_000_000 });
    senders.set(n, s);
    senderEvents.set(n, []);
    world.addPeer(n, s, 'rx');
  });
  return r;
}

function blocksAt(r: Rig, address: string): Uint8Array[] {
  return r.hostEvents.flatMap((e) => (e.address === address && e.event.type === 'block' ? [e.event.data] : []));
}

describe('ChunkHost', () => {
  it('receives concurrent blocks from several senders on one address, each acked and delivered to its own sender', () => {
    for (const seed of [1, 2, 3]) {
      const r = rig(seed, new ChunkHost({ receiver: { maxBlockBytes: 1 << 20 } }), ['s1', 's2', 's3']);
      const sent = new Map<string, Uint8Array[]>();
      [...r.senders].forEach(([n, s], i) => {
        const bs = [block(seed * 10 + i, 200_000 + i * 1000), block(seed * 10 + i + 5, 3000)];
        sent.set(n, bs);
        for (const b of bs) s.sendBlock(b);
      });
      const done = (): boolean => {
        r.poll();
        return [...r.senders.keys()].every((n) => r.senderEvents.get(n)!.filter((e) => e.type === 'delivered').length === 2);
      };
      expect(r.world.runUntil(done, { maxTimeMs: 20_000 }).ok).toBe(true);
      for (const [n, bs] of sent) {
        expect(blocksAt(r, n).map(hex)).toEqual(bs.map(hex));
        expect(r.host.receiver(n)!.counters().blocksDelivered).toBe(2);
      }
      expect(r.host.senders().sort()).toEqual(['s1', 's2', 's3']);
      expect(r.host.counters().peersAdded).toBe(3);
      const ids = new Set(r.hostEvents.map((e) => `${e.peer}@${e.address}`));
      expect(ids.size).toBe(3);
    }
  });

  it('refuses senders beyond maxSenders (counted), and admits one once an idle sender expires', () => {
    const host = new ChunkHost({ maxSenders: 2, idleTimeoutMs: 1000, receiver: { maxBlockBytes: 1 << 20 } });
    const r = rig(4, host, ['s1', 's2', 's3']);
    const s1 = r.senders.get('s1')!;
    const s2 = r.senders.get('s2')!;
    const s3 = r.senders.get('s3')!;
    s1.sendBlock(block(1, 20_000));
    s2.sendBlock(block(2, 20_000));
    const delivered = (n: string): number => r.senderEvents.get(n)!.filter((e) => e.type === 'delivered').length;
    expect(r.world.runUntil(() => (r.poll(), delivered('s1') === 1 && delivered('s2') === 1), { maxTimeMs: 5000 }).ok).toBe(true);
    const late = block(3, 20_000);
    s3.sendBlock(late);
    r.world.runFor(500);
    r.poll();
    expect(host.counters().refusedFull).toBeGreaterThan(0);
    expect(delivered('s3')).toBe(0);
    expect(host.receiver('s3')).toBeUndefined();
    // s1 and s2 fall silent: after 1 s they expire, their slots free, and s3's retransmissions get in.
    expect(r.world.runUntil(() => (r.poll(), delivered('s3') === 1), { maxTimeMs: 10_000 }).ok).toBe(true);
    expect(blocksAt(r, 's3').map(hex)).toEqual([hex(late)]);
    const expired = r.hostEvents.filter((e) => e.event.type === 'expired').map((e) => e.address).sort();
    expect(expired).toEqual(['s1', 's2']);
    expect(host.counters().peersFreed).toBeGreaterThanOrEqual(2);
    expect(host.senderCount).toBeLessThanOrEqual(2);
  });

  it('creates no receiver for datagrams that are not slices or cancels, nor for refused addresses', () => {
    const host = new ChunkHost({ accept: (from) => from !== 'banned' });
    host.handleDatagram(0, 'x', new Uint8Array([1, 2, 3, 4]));
    host.handleDatagram(0, 'y', new Uint8Array(0));
    const s = new ChunkSender({ sessionId: 7, rateBytesPerSec: 1e6 });
    s.sendBlock(block(9, 100));
    s.handleTimeout(0);
    const out = new Uint8Array(1500);
    const n = s.pollTransmit(0, out)!;
    host.handleDatagram(0, 'banned', out.subarray(0, n));
    expect(host.senderCount).toBe(0);
    expect(host.counters().refused).toBe(3);
    host.handleDatagram(0, 'ok', out.subarray(0, n));
    expect(host.senders()).toEqual(['ok']);
    expect(host.receiver('ok')).toBeInstanceOf(ChunkReceiver);
    expect(host.memoryBytes()).toBeGreaterThan(0);
    expect(host.remove('ok')).toBe(true);
    expect(host.receiver('ok')).toBeUndefined();
  });

  it('never throws on random bytes and mutated slices from many addresses, and stays within its bounds', () => {
    const s = new ChunkSender({ sessionId: 3, rateBytesPerSec: 1e9 });
    s.sendBlock(block(5, 5000));
    s.handleTimeout(0);
    const out = new Uint8Array(1500);
    const slices: Uint8Array[] = [];
    for (let n = s.pollTransmit(0, out); n !== undefined && slices.length < 8; n = s.pollTransmit(0, out)) slices.push(out.slice(0, n));
    const dgram = fc.oneof(
      fc.uint8Array({ maxLength: 64 }),
      fc.tuple(fc.nat(slices.length - 1), fc.nat(1500), fc.nat(255)).map(([i, at, v]) => {
        const b = slices[i]!.slice();
        b[at % b.length] = v;
        return b;
      }),
      fc.nat(slices.length - 1).map((i) => slices[i]!),
    );
    const maxMemoryBytes = 64 * 1024;
    let peak = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(9), dgram, fc.nat(3000)), { maxLength: 60 }), (ds) => {
        const host = new ChunkHost({ maxSenders: 3, idleTimeoutMs: 1000, receiver: { maxBlockBytes: 32 * 1024, maxMemoryBytes } });
        let now = 0;
        for (const [who, d, dt] of ds) {
          now += dt;
          host.handleDatagram(now, `a${who}`, d);
          if ((host.pollTimeout() ?? Infinity) <= now) host.handleTimeout(now);
          while (host.pollTransmit(now, out) !== undefined);
          expect(host.senderCount).toBeLessThanOrEqual(3);
          peak = Math.max(peak, host.senderCount);
          expect(host.memoryBytes()).toBeLessThanOrEqual(3 * maxMemoryBytes);
          while (host.pollEvent() !== undefined);
        }
      }),
      { numRuns: 200 },
    );
    expect(peak).toBe(3); // the runs did reach the sender limit
  });

  it('rejects bad options', () => {
    expect(() => new ChunkHost({ maxSenders: 0 })).toThrow(/invalid-config/);
    expect(() => new ChunkHost({ idleTimeoutMs: -1 })).toThrow(/invalid-config/);
    expect(() => new ChunkHost({ receiver: { ackEveryNew: 0 } })).toThrow(/invalid-config/);
  });
});
