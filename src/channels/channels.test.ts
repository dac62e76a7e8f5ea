import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ChannelPipe } from '../../test/harness/channel-pipe.js';
import { sameBytes } from '../../test/harness/bytes.js';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { AUTO_CLEAN_OUTCOMES, MessageLanes, type MessageLanesOptions, lanesHash, type MessageLaneConfig } from './index.js';
import { writeReliablePiece, writeUnreliablePiece } from './wire.js';

/** Message `i` of a test: its index in the first 4 bytes (when ≥ 4 bytes), then seeded bytes. */
function message(seed: number, i: number, size: number): Uint8Array {
  const b = new NonCryptoRng(seed * 7919 + i).fill(new Uint8Array(size));
  if (size >= 4) new DataView(b.buffer).setUint32(0, i, true);
  return b;
}

function throwsCode(f: () => unknown, code: string): void {
  try {
    f();
  } catch (e) {
    expect(e).toBeInstanceOf(GamewireError);
    expect((e as GamewireError).code).toBe(code);
    return;
  }
  throw new Error(`expected ${code}`);
}

const ALL: MessageLaneConfig[] = [
  { mode: 'reliable-ordered' },
  { mode: 'reliable-unordered' },
  { mode: 'unreliable' },
  { mode: 'unreliable-sequenced' },
  { mode: 'notify' },
];

describe('channels: reliable lanes over a lossy, reordering, duplicating pipe', () => {
  for (const loss of [0, 0.1, 0.3, 0.5]) {
    it(`every message arrives exactly once, intact, in order on the ordered lane (loss ${loss * 100}%)`, () => {
      const seed = 100 + loss * 100;
      const pipe = new ChannelPipe({ lanes: ALL }, { seed, loss, dup: 0.1, delayMs: 10, jitterMs: 15, room: 1200, packetsPerTick: 2 });
      const rng = new NonCryptoRng(seed);
      const sizes: number[] = [];
      const n = 300;
      for (let i = 0; i < n; i++) {
        const r = rng.nextFloat();
        sizes.push(r < 0.05 ? 0 : r < 0.8 ? rng.nextRange(1, 200) : r < 0.97 ? rng.nextRange(200, 4000) : rng.nextRange(4000, 40_000));
      }
      let sent = 0;
      const ticks = pipe.runUntil(() => {
        // Send over time, both lanes, from end 0 (and a little back from end 1).
        for (let k = 0; k < 3 && sent < n; k++, sent++) {
          pipe.ends[0].send(pipe.now, 0, message(seed, sent, sizes[sent]!));
          pipe.ends[0].send(pipe.now, 1, message(seed + 1, sent, sizes[sent]!));
          if (sent % 10 === 0) pipe.ends[1].send(pipe.now, 0, message(seed + 2, sent, 10));
        }
        return sent === n && pipe.idle();
      });
      expect(ticks).toBeLessThan(200_000);
      const ordered = pipe.messages(1, 0);
      expect(ordered.length).toBe(n);
      ordered.forEach((m, i) => expect(sameBytes(m, message(seed, i, sizes[i]!))).toBe(true));
      const unordered = pipe.messages(1, 1);
      expect(unordered.length).toBe(n);
      const seen = new Set<number>();
      for (const m of unordered) {
        // Identify by content: size + index (empty and < 4-byte messages by size class).
        const i = m.length >= 4 ? new DataView(m.buffer, m.byteOffset).getUint32(0, true) : -1;
        if (i >= 0) {
          expect(seen.has(i)).toBe(false);
          seen.add(i);
          expect(sameBytes(m, message(seed + 1, i, sizes[i]!))).toBe(true);
        }
      }
      expect(seen.size).toBe(sizes.filter((s) => s >= 4).length);
      expect(pipe.messages(0, 0).length).toBe(Math.ceil(n / 10));
      const s = pipe.ends[0].laneStats(0);
      expect(s.delivered).toBe(n);
      expect(s.queuedBytes).toBe(0);
      expect(s.inFlightBytes).toBe(0);
      if (loss > 0) expect(s.resent).toBeGreaterThan(0);
      const c = pipe.ends[1].counters();
      expect(c.payloadsRefused).toBe(0);
      expect(c.corruptMessages).toBe(0);
    });
  }

  it('property: exactly once (and in order where ordered) for any room, header jitter, window, redundancy, loss, duplication', () => {
    fc.assert(fc.property(
      fc.record({
        seed: fc.nat(), room: fc.integer({ min: 60, max: 1500 }), roomJitter: fc.integer({ min: 0, max: 37 }),
        window: fc.constantFrom(16, 64, 1024, 8192), redundancy: fc.integer({ min: 0, max: 3 }),
        loss: fc.double({ min: 0, max: 0.5, noNaN: true }), dup: fc.double({ min: 0, max: 0.3, noNaN: true }),
        jitterMs: fc.integer({ min: 0, max: 30 }), budget: fc.constantFrom(8192, 1 << 22),
        sizes: fc.array(fc.oneof(fc.integer({ min: 0, max: 100 }), fc.integer({ min: 0, max: 8000 })), { minLength: 1, maxLength: 40 }),
      }),
      (p) => {
        const lanes: MessageLaneConfig[] = [{ mode: 'reliable-ordered', maxMessageBytes: 8000 }, { mode: 'reliable-unordered', maxMessageBytes: 8000 }];
        const pipe = new ChannelPipe({ lanes, reliableWindow: p.window, redundancy: p.redundancy, maxReceiveBytes: p.budget }, {
          seed: p.seed, loss: p.loss, dup: p.dup, delayMs: 5, jitterMs: p.jitterMs, room: p.room, roomJitter: p.roomJitter, packetsPerTick: 4,
        });
        p.sizes.forEach((n, i) => {
          pipe.ends[0].send(0, 0, message(p.seed, i, n));
          pipe.ends[0].send(0, 1, message(p.seed, i, n));
        });
        expect(pipe.runUntil(() => pipe.idle(), 100_000)).toBeLessThan(100_000);
        const ordered = pipe.messages(1, 0);
        expect(ordered.length).toBe(p.sizes.length);
        ordered.forEach((m, i) => expect(sameBytes(m, message(p.seed, i, p.sizes[i]!))).toBe(true));
        const unordered = pipe.messages(1, 1).map((m) => m.length).sort((a, b) => a - b);
        expect(unordered).toEqual([...p.sizes].sort((a, b) => a - b));
        expect(pipe.ends[1].counters().payloadsRefused).toBe(0);
        expect(pipe.packets.every((k) => k.bytes <= p.room)).toBe(true);
      },
    ), { numRuns: 40 });
  });

  it('notice: a reliable message sent with notice gets one delivered event, others none', () => {
    const pipe = new ChannelPipe({ lanes: ALL }, { seed: 5, loss: 0.3, delayMs: 5, jitterMs: 5 });
    const ids = [0, 1, 2, 3, 4].map((i) => pipe.ends[0].send(0, 0, message(5, i, 3000), i % 2 === 0));
    pipe.runUntil(() => pipe.idle());
    expect(pipe.deliveries(0).map((d) => d.id).sort()).toEqual([ids[0], ids[2], ids[4]]);
    expect(pipe.deliveries(0).every((d) => d.delivered && d.lane === 0)).toBe(true);
  });
});

describe('channels: unreliable lanes', () => {
  it('unreliable-sequenced never delivers an older message after a newer one; unreliable at most once', () => {
    const pipe = new ChannelPipe({ lanes: ALL }, { seed: 9, loss: 0.2, dup: 0.3, delayMs: 5, jitterMs: 40, packetsPerTick: 4 });
    const n = 2000;
    let sent = 0;
    pipe.runUntil(() => {
      if (sent < n) {
        const size = sent % 17 === 0 ? 3000 : 20; // some split messages
        pipe.ends[0].send(pipe.now, 3, message(9, sent, size));
        pipe.ends[0].send(pipe.now, 2, message(10, sent, size));
        sent++;
      }
      return sent === n && pipe.idle();
    });
    const idx = (m: Uint8Array): number => new DataView(m.buffer, m.byteOffset).getUint32(0, true);
    const seq = pipe.messages(1, 3).map(idx);
    expect(seq.length).toBeGreaterThan(n * 0.15); // 40 ms of jitter at one message per ms: most arrive late
    for (let i = 1; i < seq.length; i++) expect(seq[i]!).toBeGreaterThan(seq[i - 1]!);
    const plain = pipe.messages(1, 2).map(idx);
    expect(new Set(plain).size).toBe(plain.length);
    expect(plain.length).toBeGreaterThan(n * 0.6);
    let outOfOrder = 0;
    for (let i = 1; i < plain.length; i++) if (plain[i]! < plain[i - 1]!) outOfOrder++;
    expect(outOfOrder).toBeGreaterThan(0); // reordered, yet delivered
    expect(pipe.ends[1].counters().olderSequenced).toBeGreaterThan(0);
  });

  it('notify: exactly one outcome per message, matching the fates of the packets that carried it', () => {
    const pipe = new ChannelPipe({ lanes: ALL }, { seed: 11, loss: 0.25, dup: 0.1, delayMs: 5, jitterMs: 20, packetsPerTick: 1 });
    const n = 1500;
    const sizes: number[] = [];
    let sent = 0;
    pipe.runUntil(() => {
      if (sent < n && pipe.now % 2 === 0) {
        const size = sent % 9 === 0 ? 2500 : sent % 5;
        sizes.push(size);
        expect(pipe.ends[0].send(pipe.now, 4, message(11, sent, size))).toBe(sent);
        sent++;
      }
      return sent === n && pipe.idle();
    });
    const outcomes = pipe.deliveries(0, 4);
    expect(outcomes.length).toBe(n);
    const byId = new Map(outcomes.map((d) => [d.id, d.delivered]));
    expect(byId.size).toBe(n);
    // Expected: delivered iff every packet carrying a piece of the message was delivered.
    const expected = new Map<number, boolean>();
    for (const p of pipe.packets) {
      if (p.from !== 0) continue;
      for (const f of p.frames) if (f.lane === 4) expected.set(f.id, (expected.get(f.id) ?? true) && p.delivered === true);
    }
    let lost = 0;
    for (let id = 0; id < n; id++) {
      expect(byId.get(id)).toBe(expected.get(id & 0xffff));
      if (!byId.get(id)) lost++;
    }
    expect(lost).toBeGreaterThan(0);
    // Every message reported delivered was received (once).
    expect(pipe.messages(1, 4).length).toBe(n - lost);
    const s = pipe.ends[0].laneStats(4);
    expect(s.delivered + s.lost).toBe(n);
  });
});

describe('channels: split and merge', () => {
  const room = 1200;
  const sizes = [0, 1, room - 1, room, room + 1, 5 * room + 7, 1024 * 1024];
  it('reliable messages of 0, 1, packet-1, packet, packet+1 bytes and 1 MiB round trip (clean and 20% loss)', () => {
    for (const loss of [0, 0.2]) {
      const pipe = new ChannelPipe({ lanes: ALL }, { seed: 21, loss, delayMs: 5, jitterMs: 5, room, packetsPerTick: 64 });
      sizes.forEach((s, i) => pipe.ends[0].send(0, 0, message(21, i, s)));
      pipe.runUntil(() => pipe.idle());
      const got = pipe.messages(1, 0);
      expect(got.map((m) => m.length)).toEqual(sizes);
      got.forEach((m, i) => expect(sameBytes(m, message(21, i, sizes[i]!))).toBe(true));
      if (loss === 0) {
        // Pieces never exceed the packet: no packet longer than the room, and 1 MiB needs ≥ 1 MiB / room packets.
        expect(pipe.packets.every((p) => p.bytes <= room)).toBe(true);
        expect(pipe.packets.length).toBeGreaterThanOrEqual(Math.ceil((1024 * 1024) / room));
        expect(pipe.packets.length).toBeLessThan(Math.ceil((1024 * 1024) / (room - 60)) + 10);
      }
    }
  });

  it('unreliable messages up to 256 pieces round trip; small ones share one packet', () => {
    const lanes = ALL.map((l) => (l.mode === 'unreliable' ? { ...l, maxQueuedBytes: 1 << 20 } : l));
    const pipe = new ChannelPipe({ lanes }, { seed: 22, room, packetsPerTick: 300 });
    const usizes = [0, 1, room - 1, room, room + 1, 256 * 1024 - 16];
    usizes.forEach((s, i) => pipe.ends[0].send(0, 2, message(22, i, s)));
    pipe.runUntil(() => pipe.idle());
    const got = pipe.messages(1, 2);
    expect(got.map((m) => m.length).sort((a, b) => a - b)).toEqual([...usizes].sort((a, b) => a - b));
    for (const m of got) expect(sameBytes(m, message(22, usizes.indexOf(m.length), m.length))).toBe(true);

    const merge = new ChannelPipe({ lanes: ALL }, { seed: 23, room });
    for (let i = 0; i < 100; i++) merge.ends[0].send(0, i % 5, message(23, i, 5));
    merge.runUntil(() => merge.idle());
    expect(merge.packets.filter((p) => p.from === 0).length).toBe(1); // 100 × (5 + 5) bytes in one packet
    expect(merge.messages(1).length).toBe(100);
  });
});

describe('channels: limits', () => {
  it('message-too-large above maxMessageBytes (reliable 1 MiB, unreliable 256 × fragment), invalid-argument on a bad lane', () => {
    const c = new MessageLanes({ lanes: ALL });
    c.send(0, 0, new Uint8Array(1024 * 1024));
    throwsCode(() => c.send(0, 0, new Uint8Array(1024 * 1024 + 1)), 'message-too-large');
    throwsCode(() => c.send(0, 2, new Uint8Array(256 * 1024)), 'message-too-large');
    throwsCode(() => c.send(0, 5, new Uint8Array(1)), 'invalid-argument');
    throwsCode(() => c.send(0, -1, new Uint8Array(1)), 'invalid-argument');
    throwsCode(() => c.send(0, 2, new Uint8Array(1), true), 'invalid-argument');
    throwsCode(() => c.send(0, 0, [1, 2] as unknown as Uint8Array), 'invalid-argument');
    const u = new MessageLanes({ lanes: [{ mode: 'unreliable', maxQueuedBytes: 1 << 20, maxMessageBytes: 256 * 100 }], fragmentBytes: 100 });
    u.send(0, 0, new Uint8Array(25_600));
    throwsCode(() => u.send(0, 0, new Uint8Array(25_601)), 'message-too-large');
    throwsCode(() => new MessageLanes({ lanes: [{ mode: 'unreliable', maxQueuedBytes: 1 << 20, maxMessageBytes: 25_601 }], fragmentBytes: 100 }), 'invalid-config');
  });

  it('queue-full: a reliable lane refuses bytes beyond maxQueuedBytes (queued + unacked), accepts again once acked', () => {
    const pipe = new ChannelPipe({ lanes: [{ mode: 'reliable-ordered', maxQueuedBytes: 10_000 }] }, { seed: 3, delayMs: 5 });
    const c = pipe.ends[0];
    for (let i = 0; i < 9; i++) c.send(0, 0, new Uint8Array(1000)); // 9 × 1016 = 9144
    throwsCode(() => c.send(0, 0, new Uint8Array(1000)), 'queue-full');
    c.send(0, 0, new Uint8Array(800)); // 9144 + 816 = 9960 fits
    pipe.runUntil(() => pipe.idle());
    expect(pipe.messages(1).length).toBe(10);
    for (let i = 0; i < 9; i++) c.send(pipe.now, 0, new Uint8Array(1000));
  });

  it('an unreliable lane at maxQueuedBytes drops its oldest; a dropped notify message gets delivered:false', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'notify', maxQueuedBytes: 1000 }, { mode: 'unreliable', maxQueuedBytes: 1000 }] });
    for (let i = 0; i < 12; i++) {
      c.send(0, 0, message(1, i, 84)); // 100 bytes charged each
      c.send(0, 1, message(1, i, 84));
    }
    expect(c.laneStats(0).queuedMessages).toBe(10);
    expect(c.laneStats(0).dropped).toBe(2);
    expect(c.laneStats(1).dropped).toBe(2);
    expect([c.pollEvent(), c.pollEvent(), c.pollEvent()]).toEqual([
      { type: 'delivery', lane: 0, id: 0, delivered: false },
      { type: 'delivery', lane: 0, id: 1, delivered: false },
      undefined,
    ]);
  });

  it('the sender never sends a reliable id at or beyond the oldest unacked + window, and resumes on acks', () => {
    const pipe = new ChannelPipe({ lanes: [{ mode: 'reliable-ordered' }], reliableWindow: 16 }, { seed: 4, delayMs: 1000, packetsPerTick: 5 });
    for (let i = 0; i < 40; i++) pipe.ends[0].send(0, 0, message(4, i, 10));
    for (let t = 0; t < 50; t++) pipe.tick();
    const ids = pipe.packets.flatMap((p) => p.frames.map((f) => f.id));
    expect(new Set(ids).size).toBe(16); // ids 0..15 only, the rest waits
    expect(Math.max(...ids)).toBe(15);
    expect(pipe.ends[0].hasFrames()).toBe(false);
    pipe.runUntil(() => pipe.idle());
    expect(pipe.messages(1).length).toBe(40);
  });

  it('a message of more pieces than the window still goes (the window counts from the oldest unacked piece)', () => {
    for (const mode of ['reliable-ordered', 'reliable-unordered'] as const) {
      const pipe = new ChannelPipe({ lanes: [{ mode }], reliableWindow: 64 }, { seed: 6, loss: 0.2, delayMs: 5, jitterMs: 5, room: 200, packetsPerTick: 8 });
      const big = message(6, 0, 100_000); // ≈ 700 pieces of ≤ 150 bytes
      pipe.ends[0].send(0, 0, big);
      pipe.ends[0].send(0, 0, message(6, 1, 10));
      pipe.runUntil(() => pipe.idle());
      const got = pipe.messages(1);
      expect(got.length).toBe(2);
      expect(sameBytes(got.find((m) => m.length === 100_000), big)).toBe(true);
      expect(pipe.ends[1].counters().payloadsRefused).toBe(0);
    }
  });

  it('the receiver refuses a packet with a reliable id outside [next, next + window) and one over its receive budget', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'reliable-ordered' }], reliableWindow: 16, maxReceiveBytes: 2048, });
    const pkt = new Uint8Array(3000);
    let n = writeReliablePiece(pkt, 0, 0, 16, true, true, new Uint8Array(1), 0, 1);
    expect(c.validate(pkt, 0, n)).toBe(false);
    expect(c.counters().outsideWindow).toBe(1);
    n = writeReliablePiece(pkt, 0, 0, 15, true, true, new Uint8Array(1), 0, 1);
    expect(c.validate(pkt, 0, n)).toBe(true);
    // Two out-of-order pieces of 1500 bytes: over 2048 together.
    n = writeReliablePiece(pkt, 0, 0, 1, true, true, new Uint8Array(1500), 0, 1500);
    expect(c.validate(pkt, 0, n)).toBe(true);
    c.receive(0, pkt, 0, n);
    n = writeReliablePiece(pkt, 0, 0, 2, true, true, new Uint8Array(1500), 0, 1500);
    expect(c.validate(pkt, 0, n)).toBe(false);
    expect(c.counters().overBudget).toBe(1);
    // The piece that unblocks delivery is accepted, and frees the budget.
    n = writeReliablePiece(pkt, 0, 0, 0, true, true, new Uint8Array(3), 0, 3);
    expect(c.validate(pkt, 0, n)).toBe(true);
    c.receive(0, pkt, 0, n);
    expect([c.pollEvent()?.type, c.pollEvent()?.type]).toEqual(['message', 'message']);
    // A duplicate is accepted (its packet may be acked) but not delivered again.
    expect(c.validate(pkt, 0, n)).toBe(true);
    c.receive(0, pkt, 0, n);
    expect(c.pollEvent()).toBeUndefined();
    expect(c.counters().duplicatePieces).toBe(1);
    expect(c.counters().payloadsRefused).toBe(2);
  });

  it('the sender keeps a reliable lane within the receiver budget, so a lost head piece never gets a packet refused', () => {
    const cfg: MessageLanesOptions = { lanes: [{ mode: 'reliable-ordered' }], maxReceiveBytes: 20_000 };
    const pipe = new ChannelPipe(cfg, { seed: 8, loss: 0.3, delayMs: 20, jitterMs: 10, packetsPerTick: 10 });
    for (let i = 0; i < 200; i++) pipe.ends[0].send(0, 0, message(8, i, 900));
    pipe.runUntil(() => pipe.idle());
    expect(pipe.messages(1).length).toBe(200);
    expect(pipe.ends[1].counters().payloadsRefused).toBe(0);
  });

  it('reassembly slots: at maxReassemblySlots the oldest partial message is evicted (counted)', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'unreliable' }], maxReassemblySlots: 2 });
    const pkt = new Uint8Array(100);
    for (const seq of [1, 2, 3]) {
      const n = writeUnreliablePiece(pkt, 0, 0, seq, 0, 2, new Uint8Array(10), 0, 10);
      expect(c.validate(pkt, 0, n)).toBe(true);
      c.receive(0, pkt, 0, n);
    }
    expect(c.counters().reassemblyEvicted).toBe(1);
    for (const seq of [2, 3, 1]) {
      const n = writeUnreliablePiece(pkt, 0, 0, seq, 1, 2, new Uint8Array(5), 0, 5);
      c.receive(0, pkt, 0, n);
    }
    const got: number[] = [];
    for (let e = c.pollEvent(); e; e = c.pollEvent()) if (e.type === 'message') got.push(e.bytes.length);
    expect(got).toEqual([15, 15]); // seq 2 and 3; seq 1 was evicted, its second piece starts a new slot
    expect(c.counters().reassemblyEvicted).toBe(1);
  });

  it('reassembly bytes: an unreliable lane holds at most maxReceiveBytes of pieces (oldest evicted)', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'unreliable' }], maxReceiveBytes: 4096 });
    const pkt = new Uint8Array(3000);
    for (const seq of [1, 2]) {
      const n = writeUnreliablePiece(pkt, 0, 0, seq, 0, 3, new Uint8Array(2500), 0, 2500);
      c.receive(0, pkt, 0, n);
    }
    expect(c.counters().reassemblyEvicted).toBe(1);
    const n = writeUnreliablePiece(pkt, 0, 0, 3, 0, 3, new Uint8Array(2500), 0, 2500);
    c.receive(0, pkt, 0, n);
    expect(c.counters().reassemblyEvicted).toBe(2);
  });

  it('an unreliable piece larger than any packet offered is dropped (counted), a notify one reported lost', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'notify' }], fragmentBytes: 1024 });
    c.send(0, 0, new Uint8Array(1000));
    c.send(0, 0, new Uint8Array(10));
    const out = new Uint8Array(500);
    const n = c.writeFrames(0, out, 0, 500);
    expect(n).toBe(15);
    c.takeToken();
    expect(c.counters().unsendable).toBe(1);
    expect(c.pollEvent()).toEqual({ type: 'delivery', lane: 0, id: 0, delivered: false });
  });

  it('writeFrames without takeToken in between throws invalid-state', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'reliable-ordered' }] });
    c.send(0, 0, new Uint8Array(10));
    c.send(0, 0, new Uint8Array(10));
    const out = new Uint8Array(100);
    expect(c.writeFrames(0, out, 0, 20)).toBe(15);
    throwsCode(() => c.writeFrames(0, out, 0, 100), 'invalid-state');
    c.takeToken();
    expect(c.writeFrames(0, out, 0, 100)).toBe(15); // the second message ('auto' rides nothing before loss is measured)
  });

  it('invalid configs throw invalid-config', () => {
    const bad: unknown[] = [
      { lanes: [] }, { lanes: new Array(33).fill({ mode: 'unreliable' }) }, { lanes: [{ mode: 'x' }] },
      { lanes: [{ mode: 'notify', priority: 8 }] }, { lanes: [{ mode: 'notify', weight: 0 }] },
      { lanes: ALL, redundancy: 9 }, { lanes: ALL, reliableWindow: 1000 }, { lanes: ALL, maxReassemblySlots: 0 },
      { lanes: [{ mode: 'reliable-ordered', maxMessageBytes: 5000 }], maxReceiveBytes: 4096 },
      { lanes: [{ mode: 'reliable-ordered', maxQueuedBytes: 100, maxMessageBytes: 100 }] },
    ];
    for (const b of bad) throwsCode(() => new MessageLanes(b as MessageLanesOptions), 'invalid-config');
  });
});

describe('channels: scheduling', () => {
  it('strict priority: a lower level gets nothing while a higher one fills the packet', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'unreliable', priority: 1 }, { mode: 'reliable-ordered', priority: 0 }], redundancy: 2 });
    for (let i = 0; i < 50; i++) {
      c.send(0, 0, new Uint8Array(100));
      c.send(0, 1, new Uint8Array(100));
    }
    const out = new Uint8Array(1200);
    const lanesOf = (): number[] => {
      const n = c.writeFrames(0, out, 0, 1200);
      c.takeToken();
      const l: number[] = [];
      for (let o = 0; o < n; o += 105) l.push(out[o + 1]!);
      return l;
    };
    for (let p = 0; p < 4; p++) expect(lanesOf().every((l) => l === 1)).toBe(true); // 4 × 11 = 44 of lane 1
    const mixed = lanesOf(); // 6 left of lane 1, then its redundancy (its priority), nothing of lane 0
    expect(mixed.filter((l) => l === 1).length).toBe(11);
    expect(mixed.filter((l) => l === 0).length).toBe(0);
    for (let p = 0; p < 9; p++) lanesOf(); // the other riders of lane 1: 50 × 2 rides, 11 a packet
    const after = lanesOf(); // lane 1 is done (nothing acked yet, every piece rode twice): lane 0 at last
    expect(after.filter((l) => l === 0).length).toBeGreaterThan(0);
  });

  it("'auto' redundancy rides as often as the loss rate asks: none on a clean path, 1 at ≤ 1 %, 2 at 5 %, 3 at 10 %, 5 at 20 %", () => {
    const rides = (loss: number | undefined, sinceLoss?: number): number => {
      const c = new MessageLanes({ lanes: [{ mode: 'reliable-ordered' }] });
      if (loss !== undefined) c.setLossRate(loss, sinceLoss);
      c.send(0, 0, new Uint8Array(10));
      const out = new Uint8Array(1200);
      for (let p = 0; p < 12; p++) {
        c.writeFrames(0, out, 0, 1200, p > 0);
        c.takeToken();
      }
      return c.laneStats(0).redundant;
    };
    expect([undefined, 0, 0.001, 0.01, 0.05, 0.1, 0.2, 0.5].map((p) => rides(p))).toEqual([0, 0, 1, 1, 2, 3, 5, 8]);
    // No loss in the rate's window, but one fewer than AUTO_CLEAN_OUTCOMES outcomes ago: still once.
    expect([rides(0, 0), rides(0, 300), rides(0, AUTO_CLEAN_OUTCOMES - 1), rides(0, AUTO_CLEAN_OUTCOMES), rides(0, Infinity)])
      .toEqual([1, 1, 1, 0, 0]);
    expect(() => new MessageLanes({ lanes: [{ mode: 'reliable-ordered', redundancy: 9 }] })).toThrow(/0\.\.8 or 'auto'/);
  });

  it('a lane with redundancy 0 sends no riders, so the next level follows its new data at once', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'unreliable', priority: 1 }, { mode: 'reliable-ordered', priority: 0, redundancy: 0 }] });
    for (let i = 0; i < 50; i++) {
      c.send(0, 0, new Uint8Array(100));
      c.send(0, 1, new Uint8Array(100));
    }
    const out = new Uint8Array(1200);
    let mixed: number[] = [];
    for (let p = 0; p < 5; p++) {
      const n = c.writeFrames(0, out, 0, 1200);
      c.takeToken();
      mixed = [];
      for (let o = 0; o < n; o += 105) mixed.push(out[o + 1]!);
    }
    expect(mixed.filter((l) => l === 1).length).toBe(6);
    expect(mixed.filter((l) => l === 0).length).toBe(5);
    expect(c.laneStats(1).redundant).toBe(0);
    expect(() => new MessageLanes({ lanes: [{ mode: 'unreliable', redundancy: 1 }] })).toThrow(/redundancy is for reliable lanes/);
  });

  it('weights 1:3 within a level share the bytes 25%:75% (±5%)', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'unreliable', weight: 1 }, { mode: 'unreliable', weight: 3 }, { mode: 'reliable-ordered', weight: 2, priority: 1 }], redundancy: 0 });
    const rng = new NonCryptoRng(77);
    for (let i = 0; i < 1000; i++) {
      c.send(0, 0, new Uint8Array(rng.nextRange(1, 300)));
      c.send(0, 1, new Uint8Array(rng.nextRange(1, 300)));
    }
    const out = new Uint8Array(1200);
    const bytes = [0, 0];
    for (let p = 0; p < 100; p++) {
      const n = c.writeFrames(0, out, 0, 1200);
      c.takeToken();
      for (let o = 0; o < n;) {
        const len = out[o + 4]! < 0x80 ? out[o + 4]! : (out[o + 4]! & 0x7f) | (out[o + 5]! << 7);
        const f = 4 + (len < 0x80 ? 1 : 2) + len;
        bytes[out[o + 1]!]! += f;
        o += f;
      }
    }
    const share = bytes[1]! / (bytes[0]! + bytes[1]!);
    console.log(`weights 1:3: the weight-3 lane took ${(share * 100).toFixed(2)}% of ${bytes[0]! + bytes[1]!} frame bytes`);
    expect(share).toBeGreaterThan(0.7);
    expect(share).toBeLessThan(0.8);
  });

  it('an idle lane re-enters at the current minimum (no banked credit)', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'unreliable' }, { mode: 'unreliable' }] });
    const out = new Uint8Array(1200);
    for (let i = 0; i < 200; i++) c.send(0, 0, new Uint8Array(95));
    for (let p = 0; p < 10; p++) {
      c.writeFrames(0, out, 0, 1200);
      c.takeToken();
    }
    for (let i = 0; i < 200; i++) c.send(0, 1, new Uint8Array(95));
    c.writeFrames(0, out, 0, 1200);
    const lanes: number[] = [];
    for (let o = 0; o < 1200; o += 100) lanes.push(out[o + 1]!);
    expect(lanes.filter((l) => l === 0).length).toBeGreaterThanOrEqual(5);
    expect(lanes.filter((l) => l === 1).length).toBeGreaterThanOrEqual(5);
  });
});

describe('channels: redundancy', () => {
  /**
   * A 60 Hz game: one packet per 16 ms tick (state on an unreliable lane), a 40-byte reliable event
   * every 4th tick, 20% loss, 50 ms one way. Returns the mean delivery latency of the events (ms and
   * ticks) and the redundancy's byte cost (redundant frame bytes / other frame bytes of the lane, and
   * per packet of the whole run).
   */
  function run(redundancy: number, loss = 0.2): { ms: number; ticks: number; overhead: number; perPacket: number } {
    const pipe = new ChannelPipe({ lanes: [{ mode: 'reliable-ordered' }, { mode: 'unreliable' }], redundancy },
      { seed: 31, loss, delayMs: 50, jitterMs: 10, alwaysSend: true, sendEveryMs: 16 });
    const sentAt: number[] = [];
    const recvAt: number[] = [];
    const n = 200;
    pipe.runUntil(() => {
      if (pipe.now % 16 === 0) {
        pipe.ends[0].send(pipe.now, 1, new Uint8Array(60));
        if (pipe.now % 64 === 0 && sentAt.length < n) {
          pipe.ends[0].send(pipe.now, 0, message(31, sentAt.length, 40));
          sentAt.push(pipe.now);
        }
      }
      const got = pipe.messages(1, 0).length;
      while (recvAt.length < got) recvAt.push(pipe.now);
      return got === n;
    });
    const s = pipe.ends[0].laneStats(0);
    const ms = recvAt.reduce((a, r, k) => a + r - sentAt[k]!, 0) / n;
    const packets = pipe.packets.filter((p) => p.from === 0).length;
    return { ms, ticks: ms / 16, overhead: s.redundantBytes / (s.sentBytes - s.redundantBytes), perPacket: s.redundantBytes / packets };
  }

  it('redundancy lowers delivery latency under loss; its byte cost is what docs/channels.md states', () => {
    const r0 = run(0);
    const r1 = run(1);
    const r2 = run(2);
    console.log(`redundancy 0/1/2 at 20% loss: mean latency ${r0.ms.toFixed(1)}/${r1.ms.toFixed(1)}/${r2.ms.toFixed(1)} ms; `
      + `redundant bytes per other byte of the lane ${r1.overhead.toFixed(2)}/${r2.overhead.toFixed(2)}, per packet ${r1.perPacket.toFixed(1)}/${r2.perPacket.toFixed(1)} B`);
    expect(r0.overhead).toBe(0);
    expect(r2.ms).toBeLessThan(r0.ms * 0.8);
    expect(r1.ms).toBeLessThan(r0.ms);
    expect(r2.overhead).toBeGreaterThan(1.5);
    expect(r2.overhead).toBeLessThanOrEqual(2);
    const clean = run(2, 0);
    expect(clean.ms).toBeLessThan(80);
  });
});

describe('channels: sequence wrap', () => {
  it('reliable ids and unreliable seqs wrap past 65535 without loss, duplication or disorder', () => {
    const lanes: MessageLaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'reliable-unordered' }, { mode: 'unreliable-sequenced' }];
    const pipe = new ChannelPipe({ lanes, reliableWindow: 1024 }, { seed: 41, loss: 0.1, dup: 0.05, delayMs: 3, jitterMs: 4, packetsPerTick: 16 });
    const n = 70_000;
    let sent = 0;
    pipe.runUntil(() => {
      for (let k = 0; k < 150 && sent < n; k++, sent++) {
        const m = new Uint8Array(4);
        new DataView(m.buffer).setUint32(0, sent, true);
        for (let l = 0; l < 3; l++) pipe.ends[0].send(pipe.now, l, m);
      }
      return sent === n && pipe.idle();
    });
    const idx = (m: Uint8Array): number => new DataView(m.buffer, m.byteOffset).getUint32(0, true);
    const ordered = pipe.messages(1, 0).map(idx);
    expect(ordered.length).toBe(n);
    expect(ordered.every((v, i) => v === i)).toBe(true);
    const unordered = pipe.messages(1, 1).map(idx).sort((a, b) => a - b);
    expect(unordered.every((v, i) => v === i)).toBe(true);
    const seq = pipe.messages(1, 2).map(idx);
    expect(seq.length).toBeGreaterThan(n * 0.3);
    expect(seq.every((v, i) => i === 0 || v > seq[i - 1]!)).toBe(true);
    expect(pipe.ends[1].counters().payloadsRefused).toBe(0);
  });
});

describe('channels: mutated traffic', () => {
  it('bit flips, truncations and splices of real packets never throw (refused or applied)', () => {
    const cfg: MessageLanesOptions = { lanes: ALL };
    const pipe = new ChannelPipe(cfg, { seed: 51, loss: 0.1, room: 600, packetsPerTick: 4 });
    const captured: Uint8Array[] = [];
    const out = new Uint8Array(600);
    for (let i = 0; i < 200; i++) pipe.ends[0].send(0, i % 5, message(51, i, (i * 37) % 2000));
    for (let t = 0; t < 400 && pipe.ends[0].hasFrames(); t++) {
      const n = pipe.ends[0].writeFrames(t, out, 0, 600);
      pipe.ends[0].takeToken();
      if (n > 0) captured.push(out.slice(0, n));
    }
    const rng = new NonCryptoRng(52);
    const victim = new MessageLanes(cfg);
    for (let i = 0; i < 20_000; i++) {
      const src = captured[rng.nextInt(captured.length)]!;
      let b = src.slice();
      const what = rng.nextInt(4);
      if (what === 0) for (let k = 0; k <= rng.nextInt(3); k++) b[rng.nextInt(b.length)] ^= 1 << rng.nextInt(8);
      else if (what === 1) b = b.subarray(0, rng.nextInt(b.length));
      else if (what === 2) {
        const other = captured[rng.nextInt(captured.length)]!;
        const cut = rng.nextInt(b.length);
        b = Uint8Array.from([...b.subarray(0, cut), ...other.subarray(rng.nextInt(other.length))]);
      }
      if (victim.validate(b, 0, b.length)) victim.receive(i, b, 0, b.length);
      while (victim.pollEvent() !== undefined);
    }
    const c = victim.counters();
    expect(c.payloadsRefused).toBeGreaterThan(1000);
    expect(c.framesReceived).toBeGreaterThan(1000);
  });
});

describe('channels: lanesHash and hostile bytes', () => {
  it('lanesHash is a u32 that depends on modes, window and receive budget only', () => {
    const h = lanesHash({ lanes: ALL });
    expect(Number.isInteger(h) && h >= 0 && h <= 0xffffffff).toBe(true);
    expect(lanesHash({ lanes: ALL.map((l) => ({ ...l, priority: 3, weight: 7 })) })).toBe(h);
    expect(lanesHash({ lanes: [...ALL].reverse() })).not.toBe(h);
    expect(lanesHash({ lanes: ALL, reliableWindow: 4096 })).not.toBe(h);
    expect(lanesHash({ lanes: ALL, maxReceiveBytes: 1 << 20 })).not.toBe(h);
    expect(lanesHash({ lanes: ALL.slice(0, 4) })).not.toBe(h);
  });

  it('validate refuses bad frames, unknown lanes and mode mismatches; random bytes never throw', () => {
    const c = new MessageLanes({ lanes: [{ mode: 'reliable-ordered' }, { mode: 'unreliable' }] });
    const pkt = new Uint8Array(64);
    let n = writeReliablePiece(pkt, 0, 1, 0, true, true, new Uint8Array(2), 0, 2);
    expect(c.validate(pkt, 0, n)).toBe(false);
    n = writeUnreliablePiece(pkt, 0, 0, 0, 0, 1, new Uint8Array(2), 0, 2);
    expect(c.validate(pkt, 0, n)).toBe(false);
    n = writeUnreliablePiece(pkt, 0, 2, 0, 0, 1, new Uint8Array(2), 0, 2);
    expect(c.validate(pkt, 0, n)).toBe(false);
    expect(c.counters().badLane).toBe(3);
    expect(c.validate(pkt, 0, 0)).toBe(true);
    const rng = new NonCryptoRng(99);
    for (let i = 0; i < 20_000; i++) {
      const b = rng.fill(new Uint8Array(rng.nextInt(40)));
      if (rng.chance(0.5) && b.length > 2) {
        b[0] = rng.chance(0.5) ? 0x10 | rng.nextInt(4) : 0x20 | rng.nextInt(2);
        b[1] = rng.nextInt(2);
      }
      if (c.validate(b, 0, b.length)) c.receive(i, b, 0, b.length);
    }
    while (c.pollEvent() !== undefined);
  });
});

describe('channels: setRedundancy (a connection moved to another transport)', () => {
  it('takes the new redundancy from the next packet on; refuses other lanes', () => {
    const lanes: MessageLaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'unreliable' }];
    const pipe = new ChannelPipe({ lanes, redundancy: 2 }, { seed: 5, delayMs: 20, room: 1200, alwaysSend: true, sendEveryMs: 5 });
    const a = pipe.ends[0];
    const exchange = (): void => {
      let sent = 0;
      pipe.runUntil(() => {
        if (pipe.now % 10 === 0 && sent < 30) a.send(pipe.now, 0, message(9, sent++, 40));
        return sent === 30 && pipe.idle();
      });
    };
    exchange();
    const rode = a.laneStats(0).redundant;
    expect(rode).toBeGreaterThan(0);
    throwsCode(() => a.setRedundancy({ lanes: [{ mode: 'reliable-ordered' }] }), 'invalid-config');
    throwsCode(() => a.setRedundancy({ lanes: [{ mode: 'reliable-unordered' }, { mode: 'unreliable' }] }), 'invalid-config');
    throwsCode(() => a.setRedundancy({ lanes, redundancy: 9 }), 'invalid-config');
    a.setRedundancy({ lanes, redundancy: 0 });
    expect(a.config.redundancy).toBe(0);
    exchange();
    expect(a.laneStats(0).redundant).toBe(rode);
    expect(pipe.messages(1, 0).length).toBe(60);
  });
});
