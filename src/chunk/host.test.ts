import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { hostedBlockPeak, pieceSlicesOf } from './config.js';
import { ChunkHost, type ChunkHostEvent } from './host.js';
import { ChunkSender, type ChunkSenderEvent } from './sender.js';
import { ChunkReceiver, type ChunkReceiverCounter } from './receiver.js';
import { DEFAULT_SLICE_BYTES, encodeSlice, SLICE_HEADER_BYTES, sliceCountOf, sliceLengthOf } from './wire.js';

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
    expect(host.memoryBytes()).toBe(100); // its delivered block, until polled
    expect(host.pollEvent()?.event.type).toBe('block');
    expect(host.memoryBytes()).toBe(0);
  });

  it('never throws on random bytes and mutated slices from many addresses, stays within its budget, and gives it all back', () => {
    const s = new ChunkSender({ sessionId: 3, rateBytesPerSec: 1e9 });
    s.sendBlock(block(5, 40_000)); // 35 slices: 3 pieces
    s.sendBlock(block(6, 5000));
    s.handleTimeout(0);
    const out = new Uint8Array(1500);
    const slices: Uint8Array[] = [];
    for (let n = s.pollTransmit(0, out); n !== undefined && slices.length < 40; n = s.pollTransmit(0, out)) slices.push(out.slice(0, n));
    const dgram = fc.oneof<fc.Arbitrary<Uint8Array | Uint8Array[]>[]>(
      fc.uint8Array({ maxLength: 64 }),
      fc.tuple(fc.nat(slices.length - 1), fc.nat(1500), fc.nat(255)).map(([i, at, v]) => {
        const b = slices[i]!.slice();
        b[at % b.length] = v;
        return b;
      }),
      fc.nat(slices.length - 1).map((i) => slices[i]!),
      fc.constant(slices), // the whole capture, in order
    );
    // Room for one 40 KB block while it is assembled (hostedBlockPeak), not for three senders' at once.
    const receiver = { maxBlockBytes: 48 * 1024, maxMemoryBytes: 100 * 1024 };
    const budget = 120 * 1024;
    let peak = 0;
    let over = 0;
    let delivered = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.nat(9), dgram, fc.nat(300)), { maxLength: 120 }), (ds) => {
        const host = new ChunkHost({ maxSenders: 3, idleTimeoutMs: 1000, maxMemoryBytes: budget, receiver });
        let now = 0;
        const drain = (): void => {
          if ((host.pollTimeout() ?? Infinity) <= now) host.handleTimeout(now);
          while (host.pollTransmit(now, out) !== undefined);
          for (let e = host.pollEvent(); e !== undefined; e = host.pollEvent()) if (e.event.type === 'block') delivered++;
        };
        for (const [who, d, dt] of ds) {
          now += dt;
          for (const b of Array.isArray(d) ? d : [d]) {
            host.handleDatagram(now, `a${who}`, b);
            expect(host.memoryBytes()).toBeLessThanOrEqual(budget);
          }
          drain();
          expect(host.senderCount).toBeLessThanOrEqual(3);
          peak = Math.max(peak, host.senderCount);
          expect(host.memoryBytes()).toBeLessThanOrEqual(budget);
        }
        over += host.counters().overBudget;
        now += 1000;
        drain();
        expect(host.senderCount).toBe(0);
        expect(host.memoryBytes()).toBe(0);
      }),
      { numRuns: 200 },
    );
    // The runs did reach the sender limit and the budget, and completed blocks.
    expect(peak).toBe(3);
    expect(over).toBeGreaterThan(0);
    expect(delivered).toBeGreaterThan(0);
  });

  it('rejects bad options', () => {
    expect(() => new ChunkHost({ maxSenders: 0 })).toThrow(/invalid-config/);
    expect(() => new ChunkHost({ idleTimeoutMs: -1 })).toThrow(/invalid-config/);
    expect(() => new ChunkHost({ receiver: { ackEveryNew: 0 } })).toThrow(/invalid-config/);
  });
});

const MiB = 1024 * 1024;

/**
 * Slice `sliceId` of a `blockBytes` block (chunk `chunkId`), as a sender that never hears the answer sends
 * it: a spoofed source address costs the flood nothing but these bytes.
 */
function spoofed(session: number, chunkId: number, blockBytes: number, sliceId: number, o: { pipelined?: boolean; sliceBytes?: number; fill?: number } = {}): Uint8Array {
  const sliceBytes = o.sliceBytes ?? DEFAULT_SLICE_BYTES;
  const len = sliceLengthOf(blockBytes, sliceBytes, sliceId);
  const out = new Uint8Array(SLICE_HEADER_BYTES + len);
  encodeSlice(out, {
    session, chunkId, pipelined: o.pipelined ?? false, sendTimeUs: 0, blockBytes, sliceBytes, sliceId,
    payload: new Uint8Array(len).fill(o.fill ?? 0xa5),
  });
  return out;
}

/** A counter summed over every live sender's receiver. */
function rxTotal(host: ChunkHost, name: ChunkReceiverCounter): number {
  let n = 0;
  for (const a of host.senders()) n += host.receiver(a)!.counters()[name];
  return n;
}

const delivered = (r: Rig, n: string): number => r.senderEvents.get(n)!.filter((e) => e.type === 'delivered').length;

describe('ChunkHost: one receive budget for every sender', () => {
  it('a flood of 16 spoofed senders × 2 slices, each announcing the largest block, reserves what arrived, not 512 MiB', () => {
    const host = new ChunkHost();
    const largest = 16 * MiB; // the default maxBlockBytes
    for (let s = 0; s < 16; s++) {
      for (let k = 0; k < 2; k++) host.handleDatagram(0, `spoof${s}`, spoofed(0x5000 + s, 5 + k, largest, 1000, { pipelined: k === 1 }));
    }
    expect(host.senderCount).toBe(16);
    expect(rxTotal(host, 'slicesAccepted')).toBe(32);
    // Per slice: its block's bitfield (1.8 KB), piece table (8.2 KB) and one piece (16 KB).
    expect(host.memoryBytes()).toBeLessThanOrEqual(32 * 32 * 1024);
    expect(host.maxMemoryBytes).toBe(64 * MiB);
    // The same with the smallest slices (64 bytes): 32 KiB bitfields. Each sender's second block is refused
    // (counted): with it, the sender's share would no longer hold its first block once complete.
    const small = new ChunkHost();
    for (let s = 0; s < 16; s++) {
      for (let k = 0; k < 2; k++) small.handleDatagram(0, `spoof${s}`, spoofed(0x5000 + s, 5 + k, largest, 1000, { pipelined: k === 1, sliceBytes: 64 }));
    }
    expect(rxTotal(small, 'slicesAccepted')).toBe(16);
    expect(rxTotal(small, 'deferredNoMemory')).toBe(16);
    expect(small.memoryBytes()).toBeLessThanOrEqual(16 * 64 * 1024);
  });

  it('drops slices beyond the budget unacked and counts them; memory never exceeds it; a silent flood\'s share returns when its senders expire', () => {
    const budget = 8 * MiB;
    const host = new ChunkHost({ maxMemoryBytes: budget, idleTimeoutMs: 1000, receiver: { maxBlockBytes: 2 * MiB } });
    const out = new Uint8Array(1500);
    let sent = 0;
    for (let j = 0; j < 120; j++) {
      for (let s = 0; s < 16; s++) {
        for (let k = 0; k < 2; k++) {
          // Every 14th slice (14 × 1173 bytes make a piece): each lands in a piece of its own.
          host.handleDatagram(0, `spoof${s}`, spoofed(0x6000 + s, 5 + k, 2 * MiB, j * 14, { pipelined: k === 1 }));
          sent++;
          expect(host.memoryBytes()).toBeLessThanOrEqual(budget);
        }
      }
    }
    while (host.pollTransmit(0, out) !== undefined);
    const over = host.counters().overBudget;
    expect(over).toBeGreaterThan(0);
    // Each slice stored, or dropped for memory, or (the pipelined block's) dropped until its predecessor has memory.
    expect(rxTotal(host, 'slicesAccepted') + rxTotal(host, 'deferredNoMemory') + rxTotal(host, 'deferredNextChunk')).toBe(sent);
    expect(rxTotal(host, 'deferredNoMemory')).toBeGreaterThanOrEqual(over);
    expect(host.memoryBytes()).toBeGreaterThan(budget / 2);
    // One more slice into a new piece: dropped, counted, and nothing goes back to its (spoofed) source.
    const before = host.memoryBytes();
    host.handleDatagram(1, 'spoof3', spoofed(0x6003, 5, 2 * MiB, 1701));
    expect(host.pollTransmit(1, out)).toBeUndefined();
    expect(host.memoryBytes()).toBe(before);
    expect(host.counters().overBudget + rxTotal(host, 'slicesAccepted')).toBeGreaterThan(over);
    // Removing a sender returns its reservation at once…
    const share = host.receiver('spoof0')!.memoryBytes();
    const held = host.memoryBytes();
    expect(share).toBeGreaterThan(0);
    expect(host.remove('spoof0')).toBe(true);
    expect(host.memoryBytes()).toBe(held - share);
    // …and when the flood falls silent, after idleTimeoutMs every other spoofed sender expires with its reservation.
    host.handleTimeout(1001);
    let expired = 0;
    for (let e = host.pollEvent(); e !== undefined; e = host.pollEvent()) if (e.event.type === 'expired') expired++;
    expect(expired).toBe(15);
    expect(host.memoryBytes()).toBe(0);
  });

  it('a legitimate block of the largest size arrives intact beside the flood, the host within its budget throughout', () => {
    const host = new ChunkHost({ maxSenders: 17 });
    const r = rig(7, host, ['real']);
    for (let s = 0; s < 16; s++) {
      for (let k = 0; k < 2; k++) r.world.inject(`spoof${s}`, 'rx', spoofed(0x7000 + s, 5 + k, 16 * MiB, 1000, { pipelined: k === 1 }));
    }
    const data = block(77, 16 * MiB);
    r.senders.get('real')!.sendBlock(data);
    let peak = 0;
    const done = (): boolean => {
      peak = Math.max(peak, host.memoryBytes());
      r.poll();
      return delivered(r, 'real') === 1;
    };
    expect(r.world.runUntil(done, { maxTimeMs: 60_000 }).ok).toBe(true);
    const got = blocksAt(r, 'real');
    expect(got).toHaveLength(1);
    expect(Buffer.from(got[0]).equals(Buffer.from(data))).toBe(true);
    expect(peak).toBeLessThanOrEqual(64 * MiB);
  });

  it('once a flood that filled the budget falls silent, a real sender waiting beside it gets its block through (after the flood expires)', () => {
    const budget = 8 * MiB;
    const host = new ChunkHost({ maxMemoryBytes: budget, maxSenders: 17, idleTimeoutMs: 2000, receiver: { maxBlockBytes: 2 * MiB } });
    const r = rig(8, host, ['real']);
    for (let j = 0; j < 120; j++) {
      for (let s = 0; s < 16; s++) r.world.inject(`spoof${s}`, 'rx', spoofed(0x8000 + s, 5, 2 * MiB, j * 14));
    }
    const flooded = host.counters().overBudget;
    expect(flooded).toBeGreaterThan(0);
    const data = block(88, 2 * MiB);
    r.senders.get('real')!.sendBlock(data);
    let peak = 0;
    const done = (): boolean => {
      peak = Math.max(peak, host.memoryBytes());
      r.poll();
      return delivered(r, 'real') === 1;
    };
    expect(r.world.runUntil(done, { maxTimeMs: 30_000 }).ok).toBe(true);
    expect(Buffer.from(blocksAt(r, 'real')[0]).equals(Buffer.from(data))).toBe(true);
    expect(host.counters().overBudget).toBeGreaterThan(flooded); // the real sender's slices were refused while the flood held the budget
    // (The real sender's first receiver, whose every slice was refused, may expire too while its probes back off.)
    expect(r.hostEvents.filter((e) => e.event.type === 'expired' && e.address.startsWith('spoof'))).toHaveLength(16);
    expect(peak).toBeLessThanOrEqual(budget);
  });

  it('senders whose blocks together far exceed the budget all complete: half-received blocks never hold each other up', () => {
    for (const seed of [1, 2]) {
      const budget = 6 * MiB;
      const host = new ChunkHost({ maxMemoryBytes: budget, receiver: { maxBlockBytes: MiB } });
      const names = ['s1', 's2', 's3', 's4', 's5', 's6'];
      const r = rig(seed, host, names);
      const sent = new Map<string, Uint8Array[]>();
      names.forEach((n, i) => {
        const bs = [block(seed * 100 + i, MiB), block(seed * 100 + i + 50, MiB - 1000 * i)];
        sent.set(n, bs);
        for (const b of bs) r.senders.get(n)!.sendBlock(b);
      });
      let peak = 0;
      const done = (): boolean => {
        peak = Math.max(peak, host.memoryBytes());
        r.poll();
        return names.every((n) => delivered(r, n) === 2);
      };
      expect(r.world.runUntil(done, { maxTimeMs: 120_000 }).ok, `seed ${seed}`).toBe(true);
      for (const [n, bs] of sent) {
        const got = blocksAt(r, n);
        expect(got.map((b) => b.length)).toEqual(bs.map((b) => b.length));
        got.forEach((b, i) => expect(Buffer.from(b).equals(Buffer.from(bs[i]!))).toBe(true));
      }
      expect(peak).toBeLessThanOrEqual(budget);
      expect(rxTotal(host, 'deferredNoMemory')).toBeGreaterThan(0); // the budget was really the limit
      expect(host.memoryBytes()).toBe(0);
    }
  });

  it('a sender\'s next block never takes the headroom its current block needs to complete', () => {
    const size = MiB;
    const peak = hostedBlockPeak(size);
    const n = sliceCountOf(size, DEFAULT_SLICE_BYTES);
    const pieceSlices = pieceSlicesOf(DEFAULT_SLICE_BYTES);
    const pieceBytes = pieceSlices * DEFAULT_SLICE_BYTES;
    const head = Math.ceil(n / 8) + 8 * Math.ceil(n / pieceSlices); // bitfield + piece table
    // Below the headroom: room for the current block's first 10 pieces and a little more.
    const host = new ChunkHost({ maxMemoryBytes: peak + head + 10 * pieceBytes + 100, receiver: { maxBlockBytes: size } });
    const a = block(41, size);
    const b = block(42, size);
    const sliceOf = (chunkId: number, data: Uint8Array, i: number): Uint8Array => {
      const len = sliceLengthOf(size, DEFAULT_SLICE_BYTES, i);
      const out = new Uint8Array(SLICE_HEADER_BYTES + len);
      encodeSlice(out, {
        session: 4, chunkId, pipelined: chunkId === 1, sendTimeUs: 0, blockBytes: size, sliceBytes: DEFAULT_SLICE_BYTES, sliceId: i,
        payload: data.subarray(i * DEFAULT_SLICE_BYTES, i * DEFAULT_SLICE_BYTES + len),
      });
      return out;
    };
    for (let p = 0; p < 10; p++) host.handleDatagram(0, 'x', sliceOf(0, a, p * pieceSlices));
    host.handleDatagram(0, 'x', sliceOf(1, b, 0)); // the next block's first slice would cross into the headroom
    const got: Uint8Array[] = [];
    const poll = (): void => {
      for (let e = host.pollEvent(); e !== undefined; e = host.pollEvent()) if (e.event.type === 'block') got.push(e.event.data);
    };
    for (let i = 0; i < n; i++) host.handleDatagram(1, 'x', sliceOf(0, a, i));
    poll(); // (a delivered block counts against the budget until it is polled)
    expect(got).toHaveLength(1);
    for (let i = 0; i < n; i++) host.handleDatagram(2, 'x', sliceOf(1, b, i));
    poll();
    expect(got).toHaveLength(2);
    expect(Buffer.from(got[0]!).equals(Buffer.from(a))).toBe(true);
    expect(Buffer.from(got[1]!).equals(Buffer.from(b))).toBe(true);
    expect(host.memoryBytes()).toBe(0);
  });

  it('drops a slice beyond the end of its block (counted) without corrupting or completing the block', () => {
    const host = new ChunkHost();
    const data = block(31, 100_000);
    const n = sliceCountOf(data.length, DEFAULT_SLICE_BYTES);
    const sliceOf = (i: number): Uint8Array => {
      const len = sliceLengthOf(data.length, DEFAULT_SLICE_BYTES, i);
      const out = new Uint8Array(SLICE_HEADER_BYTES + len);
      encodeSlice(out, {
        session: 9, chunkId: 0, pipelined: false, sendTimeUs: 0, blockBytes: data.length, sliceBytes: DEFAULT_SLICE_BYTES, sliceId: i,
        payload: data.subarray(i * DEFAULT_SLICE_BYTES, i * DEFAULT_SLICE_BYTES + len),
      });
      return out;
    };
    const out = new Uint8Array(1500);
    for (let i = 0; i < n - 1; i++) host.handleDatagram(0, 'a', sliceOf(i));
    while (host.pollTransmit(10, out) !== undefined);
    const mem = host.memoryBytes();
    for (const id of [n, n + 20, 0xffffffff]) {
      expect(() => host.handleDatagram(11, 'a', spoofed(9, 0, data.length, id, { fill: 0xee }))).not.toThrow();
    }
    expect(host.receiver('a')!.counters()).toMatchObject({ malformed: 3, slicesAccepted: n - 1 });
    expect(host.pollTransmit(100, out)).toBeUndefined();
    expect(host.pollEvent()).toBeUndefined();
    expect(host.memoryBytes()).toBe(mem);
    host.handleDatagram(101, 'a', sliceOf(n - 1));
    const e = host.pollEvent();
    expect(e?.event.type).toBe('block');
    expect(Buffer.from((e!.event as { data: Uint8Array }).data).equals(Buffer.from(data))).toBe(true);
  });

  it('rejects a budget or a per-sender share too small for one largest block while it is assembled', () => {
    expect(() => new ChunkHost({ maxMemoryBytes: 32 * MiB })).toThrow(/invalid-config/);
    expect(() => new ChunkHost({ maxMemoryBytes: 16 * MiB, receiver: { maxBlockBytes: 4 * MiB } })).not.toThrow();
    expect(() => new ChunkHost({ receiver: { maxBlockBytes: 16 * MiB, maxMemoryBytes: 17 * MiB } })).toThrow(/invalid-config/);
    expect(() => new ChunkHost({ maxMemoryBytes: 1.5 })).toThrow(/invalid-config/);
    expect(new ChunkHost({ maxMemoryBytes: 256 * MiB }).maxMemoryBytes).toBe(256 * MiB);
  });
});

