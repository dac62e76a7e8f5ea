import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { testBit } from './bitset.js';
import type { ChunkReceiverOptions } from './config.js';
import { type ChunkReceiverEvent, ChunkReceiver } from './receiver.js';
import {
  type AckPacket, type ChunkPacket, decodeChunkPacket, encodeAck, encodeCancel, encodeSlice, type RefusePacket,
  sliceCountOf, sliceLengthOf,
} from './wire.js';

const S = 0x5e55;

function receiver(cfg: ChunkReceiverOptions = {}): ChunkReceiver {
  return new ChunkReceiver(cfg);
}

interface SliceOpts {
  session?: number;
  pipelined?: boolean;
  sendTimeUs?: number;
  sliceBytes?: number;
}

/** Encode slice `sliceId` of `data` as chunk `chunkId`. */
function slice(chunkId: number, data: Uint8Array, sliceId: number, o: SliceOpts = {}): Uint8Array {
  const sliceBytes = o.sliceBytes ?? 64;
  const len = sliceLengthOf(data.length, sliceBytes, sliceId);
  const out = new Uint8Array(sliceBytes + 100);
  const n = encodeSlice(out, {
    session: o.session ?? S, chunkId, pipelined: o.pipelined ?? false, sendTimeUs: o.sendTimeUs ?? 0,
    blockBytes: data.length, sliceBytes, sliceId, payload: data.subarray(sliceId * sliceBytes, sliceId * sliceBytes + len),
  });
  return out.slice(0, n);
}

function cancel(chunkId: number, session = S): Uint8Array {
  const out = new Uint8Array(64);
  return out.slice(0, encodeCancel(out, { session, chunkId, pipelined: false }));
}

function drain(r: ChunkReceiver, now: number, out = new Uint8Array(1500)): ChunkPacket[] {
  r.handleTimeout(now);
  const list: ChunkPacket[] = [];
  for (;;) {
    const n = r.pollTransmit(now, out);
    if (n === undefined) return list;
    const d = decodeChunkPacket(out.slice(0, n));
    if (!d.ok) throw new Error(d.code);
    list.push(d.value);
  }
}

const acks = (ps: ChunkPacket[]): AckPacket[] => ps.filter((p): p is AckPacket => p.type === 'ack');

function events(r: ChunkReceiver): ChunkReceiverEvent[] {
  const list: ChunkReceiverEvent[] = [];
  for (let e = r.pollEvent(); e !== undefined; e = r.pollEvent()) list.push(e);
  return list;
}

/** The slices an ack says arrived (cumAck + windows), below `n`. */
function ackedSet(a: AckPacket, n: number): Set<number> {
  const s = new Set<number>();
  for (let i = 0; i < Math.min(a.cumAck, n); i++) s.add(i);
  for (const w of a.windows) for (let i = 0; i < w.bits.length * 8; i++) if (testBit(w.bits, i) && w.base + i < n) s.add(w.base + i);
  return s;
}

const block = (n: number, seed = 1): Uint8Array => new NonCryptoRng(seed).fill(new Uint8Array(n));

describe('ChunkReceiver: reassembly', () => {
  it('reassembles slices in any order and hands out the exact block once', () => {
    const r = receiver();
    const data = block(1000);
    const n = sliceCountOf(1000, 64);
    const order = [...Array(n).keys()].reverse();
    for (const i of order) r.handleDatagram(0, slice(0, data, i));
    const ev = events(r);
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({ type: 'block', id: 1 });
    expect(ev[0].type === 'block' && ev[0].data).toEqual(data);
    expect(r.counters()).toMatchObject({ slicesAccepted: n, blocksDelivered: 1, bytesDelivered: 1000 });
    expect(r.memoryBytes()).toBe(0);
  });

  it('accepts an empty block (one empty slice)', () => {
    const r = receiver();
    r.handleDatagram(0, slice(0, new Uint8Array(0), 0));
    expect(events(r)).toMatchObject([{ type: 'block', id: 1, data: new Uint8Array(0) }]);
  });

  it('never counts a slice twice and acks every duplicate at once', () => {
    const r = receiver({ ackDelayMs: 5 });
    const data = block(640);
    r.handleDatagram(0, slice(0, data, 0));
    expect(drain(r, 0)).toEqual([]);
    r.handleDatagram(1, slice(0, data, 0, { sendTimeUs: 1234 }));
    const a = acks(drain(r, 1));
    expect(a).toHaveLength(1);
    expect(ackedSet(a[0], 10)).toEqual(new Set([0]));
    expect(a[0]).toMatchObject({ hasEcho: true, echoTimeUs: 1234, ackDelayUs: 0 });
    r.handleDatagram(2, slice(0, data, 0));
    expect(acks(drain(r, 2))).toHaveLength(1);
    expect(r.counters()).toMatchObject({ slicesAccepted: 1, duplicateSlices: 2 });
  });

  it('acks slices of the chunk it just completed (and the one before) as complete', () => {
    const r = receiver();
    const a = block(100, 1);
    const b = block(64, 2);
    r.handleDatagram(0, slice(0, a, 0));
    r.handleDatagram(0, slice(0, a, 1));
    const done = acks(drain(r, 0));
    expect(done.at(-1)).toMatchObject({ chunkId: 0, status: 'complete', cumAck: 2 });
    r.handleDatagram(1, slice(1, b, 0));
    drain(r, 1);
    expect(r.expectedBlockId).toBe(3);
    r.handleDatagram(2, slice(0, a, 1, { sendTimeUs: 77 }));
    r.handleDatagram(2, slice(1, b, 0));
    expect(acks(drain(r, 2)).map((x) => [x.chunkId, x.status, x.cumAck, x.echoTimeUs])).toEqual([
      [0, 'complete', 2, 77], [1, 'complete', 1, 0],
    ]);
    expect(r.counters().finishedChunkSlices).toBe(2);
    expect(events(r)).toHaveLength(2);
  });

  it('ignores slices of other chunks and slices inconsistent with the block being received', () => {
    const r = receiver();
    const data = block(640);
    r.handleDatagram(0, slice(10, data, 0));
    r.handleDatagram(0, slice(13, data, 0));
    r.handleDatagram(0, slice(7, data, 0));
    r.handleDatagram(0, slice(10, block(700), 1));
    r.handleDatagram(0, slice(10, data, 1, { sliceBytes: 128 }));
    expect(r.counters()).toMatchObject({ futureChunk: 1, oldChunk: 1, inconsistentSlices: 2, slicesAccepted: 1 });
    r.handleDatagram(0, new Uint8Array([0xc1, 1, 2, 3]));
    expect(r.counters().malformed).toBe(1);
  });

  it('buffers the next chunk and delivers in order', () => {
    const r = receiver();
    const a = block(200, 1);
    const b = block(100, 2);
    r.handleDatagram(0, slice(0, a, 0));
    r.handleDatagram(0, slice(1, b, 0, { pipelined: true }));
    r.handleDatagram(0, slice(1, b, 1, { pipelined: true }));
    expect(events(r)).toEqual([]);
    expect(acks(drain(r, 0)).find((x) => x.chunkId === 1)).toMatchObject({ status: 'complete' });
    for (let i = 1; i < 4; i++) r.handleDatagram(1, slice(0, a, i));
    expect(events(r).map((e) => e.type === 'block' && e.data)).toEqual([a, b]);
  });

  it('wraps chunk ids from 65535 to 0', () => {
    const r = receiver();
    const a = block(10, 1);
    const b = block(10, 2);
    r.handleDatagram(0, slice(65535, a, 0));
    r.handleDatagram(0, slice(0, b, 0));
    expect(events(r).map((e) => e.type === 'block' && e.id)).toEqual([65536, 65537]);
    r.handleDatagram(0, slice(65535, a, 0));
    expect(acks(drain(r, 0)).map((x) => [x.chunkId, x.status])).toContainEqual([65535, 'complete']);
  });

  it('syncs to chunk id − 1 when the first slice it sees is pipelined', () => {
    const r = receiver();
    const a = block(10, 1);
    const b = block(10, 2);
    r.handleDatagram(0, slice(8, b, 0, { pipelined: true }));
    expect(r.expectedBlockId).toBe(8);
    expect(r.counters().deferredNextChunk).toBe(1);
    expect(drain(r, 0)).toEqual([]);
    r.handleDatagram(1, slice(7, a, 0));
    r.handleDatagram(1, slice(8, b, 0, { pipelined: true }));
    expect(events(r).map((e) => e.type === 'block' && e.id)).toEqual([8, 9]);
  });
});

describe('ChunkReceiver: acks', () => {
  it('acks every second new in-order slice, or after ackDelayMs for a lone one', () => {
    const r = receiver({ ackDelayMs: 3 });
    const data = block(64 * 10);
    r.handleDatagram(0, slice(0, data, 0));
    expect(drain(r, 0)).toEqual([]);
    expect(r.pollTimeout()).toBe(3);
    r.handleDatagram(1, slice(0, data, 1));
    expect(acks(drain(r, 1)).map((a) => a.cumAck)).toEqual([2]);
    r.handleDatagram(2, slice(0, data, 2, { sendTimeUs: 2000 }));
    expect(drain(r, 4.9)).toEqual([]);
    const late = acks(drain(r, 5));
    expect(late).toMatchObject([{ cumAck: 3, echoTimeUs: 2000, ackDelayUs: 3000 }]);
    expect(r.pollTimeout()).toBeUndefined();
  });

  it('answers a burst fed before one drain (a UdpDriver loop turn) with one ack that reports all of it', () => {
    const r = receiver();
    const data = block(64 * 100);
    const burst = [...Array(32).keys()].filter((i) => i !== 7).concat([40, 3]);
    for (const [k, i] of burst.entries()) r.handleDatagram(10 + k * 0.01, slice(0, data, i, { sendTimeUs: 1000 + k }));
    const a = acks(drain(r, 11));
    expect(a).toHaveLength(1);
    expect(a[0].cumAck).toBe(7);
    expect(ackedSet(a[0], 100)).toEqual(new Set(burst));
    // The echo is the newest prompting slice (the duplicate of 3), held from its arrival until the drain.
    expect(a[0]).toMatchObject({ hasEcho: true, echoTimeUs: 1000 + burst.length - 1 });
    expect(a[0].ackDelayUs).toBe(Math.round((11 - (10 + (burst.length - 1) * 0.01)) * 1000));
    expect(drain(r, 12)).toEqual([]);
  });

  it('acks at once on a gap, and reports slices past the gap in a window', () => {
    const r = receiver();
    const data = block(64 * 40);
    r.handleDatagram(0, slice(0, data, 0));
    r.handleDatagram(0, slice(0, data, 20));
    const a = acks(drain(r, 0));
    expect(a).toHaveLength(1);
    expect(a[0].cumAck).toBe(1);
    expect(ackedSet(a[0], 40)).toEqual(new Set([0, 20]));
  });

  it('rotates its windows so every received slice of a huge block is eventually reported', () => {
    const r = receiver({ ackWindowBytes: 4, maxBlockBytes: 64 * 5000 });
    const data = block(64 * 5000);
    const rng = new NonCryptoRng(9);
    const got = new Set<number>();
    const reported = new Set<number>();
    for (let i = 0; i < 5000; i++) {
      if (!rng.chance(0.6)) continue;
      got.add(i);
      r.handleDatagram(i, slice(0, data, i));
      for (const a of acks(drain(r, i + 0.01))) for (const s of ackedSet(a, 5000)) reported.add(s);
    }
    for (const s of reported) expect(got.has(s)).toBe(true);
    const firstPass = reported.size;
    expect(firstPass).toBe(got.size);
    // Lose all those acks: duplicates of one already-acked slice keep rotating windows over the rest.
    const again = new Set<number>();
    const dupe = [...got][0];
    for (let k = 0; k < 2000; k++) {
      r.handleDatagram(6000 + k, slice(0, data, dupe));
      for (const a of acks(drain(r, 6000 + k))) for (const s of ackedSet(a, 5000)) again.add(s);
    }
    expect(again).toEqual(got);
  });

  it('fits its acks into a small caller buffer', () => {
    const r = receiver({ ackWindowBytes: 255 });
    const data = block(64 * 4000);
    for (let i = 0; i < 4000; i += 2) r.handleDatagram(0, slice(0, data, i));
    const out = new Uint8Array(100);
    r.handleDatagram(1, slice(0, data, 3000));
    const n = r.pollTransmit(1, out)!;
    expect(n).toBeLessThanOrEqual(100);
    expect(decodeChunkPacket(out.subarray(0, n)).ok).toBe(true);
    r.handleDatagram(2, slice(0, data, 3000));
    expect(r.pollTransmit(2, new Uint8Array(20))).toBeUndefined();
    expect(r.counters().outTooSmall).toBe(1);
  });
});

describe('ChunkReceiver: limits, refusal, cancel', () => {
  it('refuses a block larger than maxBlockBytes without allocating, tells the sender, moves on', () => {
    const r = receiver({ maxBlockBytes: 1000 });
    const big = block(5000);
    r.handleDatagram(0, slice(0, big, 3));
    expect(r.memoryBytes()).toBe(0);
    const out = drain(r, 0);
    expect(out).toEqual([{ type: 'refuse', session: S, chunkId: 0, reason: 'too-large', limitBytes: 1000 } satisfies RefusePacket]);
    expect(events(r)).toEqual([{ type: 'refused', id: 1, blockBytes: 5000, limitBytes: 1000 }]);
    r.handleDatagram(1, slice(0, big, 4));
    expect(drain(r, 1).map((p) => p.type)).toEqual(['refuse']);
    r.handleDatagram(2, slice(1, block(10), 0));
    expect(events(r)).toMatchObject([{ type: 'block', id: 2 }]);
    expect(r.counters()).toMatchObject({ refusedBlocks: 1, refusalsSent: 2 });
  });

  it('never exceeds maxMemoryBytes: defers (no ack) until the user polls blocks', () => {
    const foot = 1000 + Math.ceil(1000 / 512) + 1;
    const r = receiver({ maxBlockBytes: 1000, maxMemoryBytes: foot + 100 });
    const a = block(1000, 1);
    const b = block(1000, 2);
    for (let i = 0; i < 16; i++) r.handleDatagram(0, slice(0, a, i));
    expect(r.memoryBytes()).toBe(1000);
    r.handleDatagram(0, slice(1, b, 0));
    expect(r.counters().deferredNoMemory).toBe(1);
    expect(acks(drain(r, 0)).every((x) => x.chunkId === 0)).toBe(true);
    expect(r.memoryBytes()).toBeLessThanOrEqual(foot + 100);
    expect(events(r)).toHaveLength(1);
    expect(r.memoryBytes()).toBe(0);
    r.handleDatagram(1, slice(1, b, 0));
    expect(r.memoryBytes()).toBe(1000 + 2);
  });

  it('drops a slice beyond the end of its block (counted): no throw, no ack, no memory, the block neither corrupted nor completed', () => {
    const r = receiver();
    const data = block(1000, 7);
    const n = sliceCountOf(1000, 64);
    for (let i = 0; i < n - 1; i++) r.handleDatagram(0, slice(0, data, i));
    drain(r, 10);
    const mem = r.memoryBytes();
    // Full-length slices that claim to lie past the block's end (a 64-byte slice n, n+1, 2^32−1), with a valid CRC.
    const beyond = (sliceId: number): Uint8Array => {
      const out = new Uint8Array(200);
      return out.slice(0, encodeSlice(out, {
        session: S, chunkId: 0, pipelined: false, sendTimeUs: 0, blockBytes: 1000, sliceBytes: 64, sliceId, payload: new Uint8Array(64).fill(0xee),
      }));
    };
    for (const id of [n, n + 1, 0xffffffff]) expect(() => r.handleDatagram(11, beyond(id))).not.toThrow();
    expect(r.counters()).toMatchObject({ malformed: 3, slicesAccepted: n - 1 });
    expect(drain(r, 100)).toEqual([]);
    expect(events(r)).toEqual([]);
    expect(r.memoryBytes()).toBe(mem);
    expect(r.progress().blocks).toEqual([{ id: 1, totalBytes: 1000, receivedBytes: (n - 1) * 64 }]);
    r.handleDatagram(101, slice(0, data, n - 1));
    const ev = events(r);
    expect(ev).toHaveLength(1);
    expect(ev[0]).toMatchObject({ type: 'block', id: 1 });
    expect(Buffer.from((ev[0] as { data: Uint8Array }).data).equals(Buffer.from(data))).toBe(true);
  });

  it('does not allocate the next block before the current one', () => {
    const r = receiver();
    r.handleDatagram(0, slice(0, block(100), 0));
    r.handleDatagram(0, slice(1, block(100), 0));
    expect(r.memoryBytes()).toBe(2 * (100 + 1));
    const q = receiver();
    q.handleDatagram(0, slice(4, block(100), 0, { pipelined: true }));
    expect(q.memoryBytes()).toBe(0);
  });

  it('frees a cancelled block, answers the cancel, skips the chunk', () => {
    const r = receiver();
    const a = block(300, 1);
    r.handleDatagram(0, slice(0, a, 0));
    expect(r.memoryBytes()).toBeGreaterThan(0);
    r.handleDatagram(1, cancel(0));
    expect(r.memoryBytes()).toBe(0);
    expect(acks(drain(r, 1))).toMatchObject([{ chunkId: 0, status: 'cancelled', cumAck: 0, hasEcho: false }]);
    expect(events(r)).toEqual([{ type: 'cancelled', id: 1, reason: 'sender' }]);
    r.handleDatagram(2, cancel(0));
    r.handleDatagram(2, slice(0, a, 1));
    expect(acks(drain(r, 2)).map((x) => x.status)).toEqual(['cancelled']);
    r.handleDatagram(3, slice(1, block(5), 0));
    expect(events(r)).toMatchObject([{ type: 'block', id: 2 }]);
  });

  it('answers a cancel for a block it already completed with complete', () => {
    const r = receiver();
    r.handleDatagram(0, slice(0, block(10), 0));
    r.handleDatagram(1, cancel(0));
    expect(acks(drain(r, 1)).map((x) => x.status)).toEqual(['complete']);
  });

  it('rejects bad configs', () => {
    expect(() => new ChunkReceiver({ maxBlockBytes: 1000, maxMemoryBytes: 999 })).toThrow(GamewireError);
    expect(() => new ChunkReceiver({ ackWindowBytes: 256 })).toThrow(GamewireError);
    expect(() => new ChunkReceiver({ ackDelayMs: -1 })).toThrow(GamewireError);
  });
});

describe('ChunkReceiver: sessions', () => {
  it('binds to the first session and ignores others while it is active', () => {
    const r = receiver({ sessionIdleMs: 1000 });
    r.handleDatagram(0, slice(0, block(640), 0));
    r.handleDatagram(500, slice(0, block(10), 0, { session: 99 }));
    expect(r.sessionId).toBe(S);
    expect(r.counters().wrongSession).toBe(1);
  });

  it('adopts a new session after the old one went silent, freeing its partial block', () => {
    const r = receiver({ sessionIdleMs: 1000 });
    r.handleDatagram(0, slice(5, block(640), 0));
    const fresh = block(10, 3);
    r.handleDatagram(1000, slice(0, fresh, 0, { session: 99 }));
    expect(r.sessionId).toBe(99);
    expect(r.memoryBytes()).toBe(10);
    expect(events(r)).toEqual([
      { type: 'cancelled', id: 6, reason: 'session-changed' },
      { type: 'block', id: 1, data: fresh },
    ]);
    // The old session's late slices are now ignored…
    r.handleDatagram(1001, slice(5, block(640), 1));
    expect(r.counters().wrongSession).toBe(1);
    // …and if it comes back after the new one went silent, it resumes where it was (no re-delivery).
    r.handleDatagram(5000, slice(4, block(10), 0));
    expect(r.expectedBlockId).toBe(6);
    expect(r.counters().oldChunk).toBe(1);
  });

  it('never switches away from a pinned session', () => {
    const r = receiver({ sessionId: 7, sessionIdleMs: 0 });
    r.handleDatagram(0, slice(0, block(10), 0));
    r.handleDatagram(9999, slice(0, block(10), 0, { session: 7 }));
    expect(r.counters().wrongSession).toBe(1);
    expect(events(r)).toHaveLength(1);
  });

  it('sends nothing and allocates nothing for acks, refusals or garbage', () => {
    const r = receiver();
    const out = new Uint8Array(100);
    const n = encodeAck(out, { session: S, chunkId: 0, status: 'complete', hasEcho: false, echoTimeUs: 0, ackDelayUs: 0, cumAck: 1, windows: [] });
    r.handleDatagram(0, out.slice(0, n));
    r.handleDatagram(0, new NonCryptoRng(1).fill(new Uint8Array(500)));
    expect(r.counters()).toMatchObject({ wrongDirection: 1, malformed: 1 });
    expect(drain(r, 0)).toEqual([]);
    expect(r.memoryBytes()).toBe(0);
    expect(r.sessionId).toBeUndefined();
  });
});
