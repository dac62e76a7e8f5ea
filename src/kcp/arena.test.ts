import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { KcpArena, KCP_SEGMENT_BYTES, SlabPool, type SlabCopy } from './arena.js';
import { Kcp, type KcpOptions } from './kcp.js';
import { encodeKcpHeader, KCP_OVERHEAD, KcpCommand } from './segment.js';

function holder(): SlabCopy {
  return { data: new Uint8Array(0), slab: undefined, held: 0 };
}

const aligned = (n: number): number => (n + 7) & ~7;

describe('SlabPool', () => {
  it('never overwrites a live copy; when it takes a slab, those in use are within 16x the live bytes plus two', () => {
    // Short-lived copies are released oldest first (read in order); long-lived ones (held out of
    // order, or never read) only now and then, at random: the pattern that pins mostly-empty slabs.
    type Op = { copy: number; long: boolean } | 'release-short' | 'release-long';
    const op: fc.Arbitrary<Op> = fc.oneof(
      { arbitrary: fc.record({
          copy: fc.integer({ min: 0, max: 50 }),
          long: fc.oneof({ arbitrary: fc.constant(true), weight: 1 }, { arbitrary: fc.constant(false), weight: 15 }),
        }), weight: 6 },
      { arbitrary: fc.constant<Op>('release-short'), weight: 8 },
      { arbitrary: fc.constant<Op>('release-long'), weight: 2 },
    );
    fc.assert(
      // Slabs of 256: copies of 17 bytes and more are at least 1/16 of one, so the pool does not record
      // them. Copies above maxPiece get their own buffers.
      fc.property(fc.array(op, { minLength: 100, maxLength: 400 }), fc.integer({ min: 0, max: 2 ** 30 }), fc.constantFrom(512, 256), fc.constantFrom(24, 48), (ops, seed, slabBytes, maxPiece) => {
        const pool = new SlabPool(Infinity, slabBytes, maxPiece, 2);
        const short: { h: SlabCopy; want: number[] }[] = [];
        const long: { h: SlabCopy; want: number[] }[] = [];
        let fill = seed;
        const next = (): number => (fill = (fill * 1103515245 + 12345) >>> 0) >>> 8;
        let liveBytes = 0; // in slabs (their `held`)
        let ownBytes = 0;
        const check = (c: { h: SlabCopy; want: number[] }): void => {
          if (c.h.data.length !== c.want.length || c.want.some((b, k) => c.h.data[k] !== b)) expect([...c.h.data]).toEqual(c.want);
        };
        ops.forEach((o, i) => {
          if (typeof o === 'string') {
            const from = o === 'release-short' ? short : long;
            if (from.length === 0) return;
            const [c] = from.splice(o === 'release-short' ? 0 : next() % from.length, 1);
            check(c!);
            if (c!.h.slab !== undefined) liveBytes -= c!.h.held;
            else ownBytes -= c!.h.held;
            pool.release(c!.h);
            pool.release(c!.h); // a second release does nothing
          } else {
            const src = Uint8Array.from({ length: o.copy + 3 }, () => next() & 0xff);
            const h = holder();
            const before = pool.inUse - ownBytes;
            if (!pool.copy(h, src, 3, src.length)) expect.fail('refused without a budget');
            if (h.slab !== undefined) {
              // Copies of more than 32 bytes end their source 3 bytes in: those 3 go too, where they fit.
              const head = h.data.byteOffset % 8;
              expect([head, o.copy > 32 || head === 0]).toEqual([head === 0 ? 0 : 3, true]);
              expect(h.held).toBe(aligned(head + o.copy));
              liveBytes += h.held;
            } else ownBytes += h.held;
            (o.long ? long : short).push({ h, want: [...src.subarray(3)] });
            // Slabs are taken only here: then every one in use but the current and the last is 1/16 full.
            const slabs = pool.inUse - ownBytes;
            if (slabs > before && slabs > 16 * liveBytes + 2 * slabBytes) expect(slabs).toBeLessThanOrEqual(16 * liveBytes + 2 * slabBytes);
          }
          if (i % 16 === 0) for (const c of [...short, ...long]) check(c);
        });
        for (const c of [...short, ...long]) check(c);
        expect(pool.freeSlabs).toBeLessThanOrEqual(2);
      }),
      { numRuns: 200 },
    );
  });

  it('takes an emptied slab off the compaction list at once, so only the free list keeps it', () => {
    const pool = new SlabPool(Infinity, 64, 32, 4);
    const src = new Uint8Array(8).fill(1);
    const hs = Array.from({ length: 80 }, () => holder());
    for (const h of hs) pool.copy(h, src, 0, 8); // 10 slabs
    for (let i = 0; i < hs.length; i++) if (i % 8 !== 0) pool.release(hs[i]!); // 8 of 64 live: all sparse
    for (const h of hs) pool.release(h);
    expect(pool.inUse).toBe(64); // the current slab, rewound
    expect(pool.freeSlabs).toBe(4); // maxFree
    const pending = (pool as unknown as { pending: unknown[] }).pending;
    expect(pending.length).toBe(0);
  });

  it('keeps up to maxFree emptied slabs, so bursts released at once (one ACK for a window) allocate none again', () => {
    const pool = new SlabPool(Infinity, 64, 32, 4);
    const src = new Uint8Array(8).fill(3);
    const seen = new Set<ArrayBufferLike>();
    const spares: number[] = [];
    for (let burst = 0; burst < 4; burst++) {
      const hs = Array.from({ length: 40 }, () => holder());
      for (const h of hs) {
        pool.copy(h, src, 0, 8); // 5 full slabs of 8 copies
        seen.add(h.data.buffer);
      }
      for (const h of hs) pool.release(h);
      spares.push(pool.freeSlabs);
    }
    expect(seen.size).toBe(5); // the first burst's slabs, reused by every later one
    expect(spares).toEqual([4, 4, 4, 4]); // the last one emptied is the current slab, rewound
  });

  it('rewinds the current slab and keeps emptied ones, so steady traffic allocates nothing', () => {
    const pool = new SlabPool(Infinity, 64, 32, 4);
    const src = new Uint8Array(32).fill(5);
    const a = holder();
    pool.copy(a, src, 0, 32);
    const first = a.data.buffer;
    pool.release(a);
    const b = holder();
    pool.copy(b, src, 0, 32);
    expect(b.data.buffer).toBe(first); // rewound: same bytes reused
    expect(b.data.byteOffset).toBe(0);
    const c = holder();
    pool.copy(c, src, 0, 32);
    const d = holder();
    pool.copy(d, src, 0, 32); // does not fit: a second slab
    expect(d.data.buffer).not.toBe(c.data.buffer);
    pool.release(b);
    pool.release(c); // the first slab is now free
    expect(pool.freeSlabs).toBe(1);
    pool.copy(holder(), src, 0, 32);
    const f = holder();
    pool.copy(f, src, 0, 32); // the second slab is full: the free one is taken
    expect(f.data.buffer).toBe(first);
    expect(pool.freeSlabs).toBe(0);
    const big = holder();
    pool.copy(big, new Uint8Array(40), 0, 40);
    expect(big.slab).toBeUndefined();
    expect(big.held).toBe(40);
    expect(big.data.buffer.byteLength).toBe(40);
    expect(pool.inUse).toBe(2 * 64 + 40);
    pool.release(big);
    expect(pool.inUse).toBe(2 * 64);
  });

  it('moves the last small copies out of a retired slab, so one long-lived copy does not pin it', () => {
    const pool = new SlabPool(Infinity, 256, 16, 4); // compaction below 256 / 16 = 16 live bytes
    const src = Uint8Array.from({ length: 16 }, (_, i) => i);
    const p = holder();
    pool.copy(p, src, 0, 3);
    const hs = Array.from({ length: 15 }, () => holder());
    for (const h of hs) pool.copy(h, src, 0, 16); // 8 + 240 = 248 bytes
    const old = p.slab;
    for (const h of hs) pool.release(h);
    expect(p.slab).toBe(old); // still the slab being filled: not compacted
    pool.copy(holder(), src, 0, 16); // retires it with 8 live bytes
    expect(p.slab).toBe(old);
    expect(pool.compactions).toBe(0);
    for (let i = 0; i < 15; i++) pool.copy(holder(), src, 0, 16); // fills the next slab
    expect(pool.inUse).toBe(2 * 256);
    pool.copy(holder(), src, 0, 16); // a slab is needed: first p moves, freeing the old one
    expect(p.slab).not.toBe(old);
    expect([...p.data]).toEqual([0, 1, 2]);
    expect(pool.compactions).toBe(1);
    expect(pool.compactedBytes).toBe(3);
    expect(pool.freeSlabs).toBe(1); // the emptied slab is kept for reuse
    expect(pool.inUse).toBe(2 * 256);
  });

  it('refuses copies that need memory beyond their limit, others above laterBytes, and never holds more than maxBytes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ len: fc.integer({ min: 1, max: 120 }), release: fc.integer({ min: -3, max: 30 }), urgent: fc.boolean() }), {
          maxLength: 300,
        }),
        (ops) => {
          const max = 1024;
          const pool = new SlabPool(max, 128, 64, 2); // urgent copies up to 896 bytes in use, others 768
          const live: SlabCopy[] = [];
          const src = new Uint8Array(120).fill(7);
          for (const op of ops) {
            if (op.release >= 0 && op.release < live.length) pool.release(live.splice(op.release, 1)[0]!);
            const h = holder();
            const before = pool.inUse;
            if (pool.copy(h, src, 0, op.len, op.urgent)) {
              live.push(h);
              expect(op.urgent || before <= pool.laterBytes).toBe(true);
            } else {
              expect(h.slab).toBeUndefined();
              expect(h.held).toBe(0);
              expect(pool.inUse).toBe(before);
            }
            expect(pool.allocated).toBeLessThanOrEqual(max);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
  it('refuses a copy that is not urgent above laterBytes, even where the slab being filled has room', () => {
    const pool = new SlabPool(640, 128, 32, 0); // laterBytes 480, urgentBytes 512
    const src = new Uint8Array(32).fill(1);
    for (let i = 0; i < 13; i++) expect(pool.copy(holder(), src, 0, 32, true)).toBe(true);
    expect(pool.inUse).toBe(512); // the 4th slab holds one copy: room for three more
    const late = holder();
    expect(pool.copy(late, src, 0, 32)).toBe(false);
    expect(late.slab).toBeUndefined();
    expect(pool.inUse).toBe(512);
    expect(pool.copy(late, src, 0, 32, true)).toBe(true);
    expect(pool.inUse).toBe(512);
  });
  it('squeezes fragmented slabs for a copy that must not wait, and only for it', () => {
    // 4 slabs of 128 bytes, half of each released: 256 live bytes hold the 512 bytes a copy may use
    // (the budget keeps one slab more, for moving copies).
    const pool = new SlabPool(640, 128, 32, 0);
    const src = new Uint8Array(32).fill(1);
    const hs = Array.from({ length: 16 }, () => holder());
    for (const h of hs) expect(pool.copy(h, src, 0, 32, true)).toBe(true);
    expect(pool.inUse).toBe(512);
    hs.forEach((h, i) => i % 2 === 1 && pool.release(h)); // every slab half full: none sparse
    const late = holder();
    expect(pool.laterBytes).toBe(480);
    expect(pool.copy(late, src, 0, 32)).toBe(false); // not urgent: refused above laterBytes
    expect(pool.copy(late, src, 0, 32, true)).toBe(true); // urgent: squeezes, up to urgentBytes (512)
    expect(pool.inUse).toBeLessThanOrEqual(512);
    for (const [i, h] of hs.entries()) if (i % 2 === 0) expect([...h.data]).toEqual([...src]);
    expect(pool.compactions).toBeGreaterThan(0);
  });
});

describe('SlabPool charges (records)', () => {
  it('charges beside copies never take inUse past the limit, also for urgent copies into the slab being filled', () => {
    const pool = new SlabPool(1024, 256, 64, 2); // urgent copies and charges up to 768 bytes
    let n = 0;
    for (let i = 0; i < 200; i++) {
      const h = holder();
      if (pool.copy(h, new Uint8Array(8), 0, 8, true, 32)) n++;
      if (i % 3 === 0) pool.charge(32, true);
      expect(pool.inUse).toBeLessThanOrEqual(pool.urgentBytes);
      expect(pool.allocated).toBeLessThanOrEqual(1024);
    }
    expect(n).toBeGreaterThan(5);
    expect(n).toBeLessThan(20);
    // Not urgent: refused once inUse would pass laterBytes.
    const later = new SlabPool(4096, 256, 64, 2);
    for (let i = 0; i < 400; i++) {
      later.copy(holder(), new Uint8Array(8), 0, 8, false, 32);
      expect(later.inUse).toBeLessThanOrEqual(later.laterBytes);
    }
  });
});

describe('KcpArena', () => {
  it('checks its budget', () => {
    expect(() => new KcpArena({ maxReceiveBytes: -1 })).toThrow(GamewireError);
    expect(() => new KcpArena({ maxReceiveBytes: 1.5 })).toThrow(GamewireError);
    expect(new KcpArena({ maxReceiveBytes: Infinity }).receive.laterBytes).toBe(Infinity);
    const a = new KcpArena({ maxReceiveBytes: 100_000 });
    expect(a.maxReceiveBytes).toBe(100_000);
    expect(a.receive.urgentBytes).toBe(100_000 - 16384);
    expect(a.receive.laterBytes).toBe(75_000);
    expect(new KcpArena({ maxReceiveBytes: 20_000 }).receive.laterBytes).toBe(20_000 - 16384);
    expect(new KcpArena({ maxReceiveBytes: 1000 }).receive.urgentBytes).toBe(0);
    expect(a.counters()).toEqual({ receiveDropped: 0, receiveDroppedBytes: 0, sendRefused: 0, sendRefusedBytes: 0, compactions: 0, compactedBytes: 0 });
  });

  it('gives each nesting level of flushes its own scratch buffer, grown to need', () => {
    const a = new KcpArena();
    const b0 = a.scratchAt(0, 100);
    expect(b0.length).toBe(4272);
    expect(a.scratchAt(0, 4000)).toBe(b0);
    const b1 = a.scratchAt(1, 100);
    expect(b1).not.toBe(b0);
    expect(a.scratchAt(0, 5000).length).toBe(5000);
    expect(a.scratchBytes).toBe(5000 + 4272);
  });
});

// ---- Kcps on an arena -------------------------------------------------------------------------

const TURBO: KcpOptions = { nodelay: 1, interval: 10, resend: 2, nc: true, sndWnd: 128, rcvWnd: 128 };

/** One PUSH datagram of `payload` for conversation `conv`, as any raw-mode peer may send it. */
function push(conv: number, sn: number, payload: Uint8Array, una = 0): Uint8Array {
  const d = new Uint8Array(KCP_OVERHEAD + payload.length);
  encodeKcpHeader(d, 0, { conv, cmd: KcpCommand.PUSH, frg: 0, wnd: 128, ts: 0, sn, una, len: payload.length });
  d.set(payload, KCP_OVERHEAD);
  return d;
}

/** A sender → receiver pair with instant delivery through queues (no loss). */
class Pair {
  readonly toB: Uint8Array[] = [];
  readonly toA: Uint8Array[] = [];
  readonly a: Kcp;
  readonly b: Kcp;
  readonly got: Uint8Array[] = [];

  constructor(conv: number, bArena: KcpArena, aOptions: KcpOptions = TURBO) {
    this.a = new Kcp(conv, (d) => this.toB.push(d.slice()), aOptions);
    this.b = new Kcp(conv, (d) => this.toA.push(d.slice()), { ...TURBO, arena: bArena });
  }

  step(now: number, read: boolean): void {
    this.a.update(now);
    for (const d of this.toB.splice(0)) this.b.input(d, now);
    if (read) for (let m = this.b.recvMessage(); m !== undefined; m = this.b.recvMessage()) this.got.push(m);
    this.b.update(now);
    for (const d of this.toA.splice(0)) this.a.input(d, now);
  }
}

function message(i: number, size: number): Uint8Array {
  return Uint8Array.from({ length: size }, (_, j) => (i * 31 + j) & 0xff);
}

function expectMessages(got: Uint8Array[], n: number, size: number): void {
  expect(got.length).toBe(n);
  got.forEach((m, i) => {
    if (m.length !== size || m.some((b, j) => b !== ((i * 31 + j) & 0xff))) expect([i, ...m.subarray(0, 8)]).toEqual([i, ...message(i, 8)]);
  });
}

describe('Kcp on a KcpArena', () => {
  it('drops data segments beyond the receive budget without ACK and counts them; memory stays within it; all arrives once the reader reads', () => {
    const budget = 64 * 1024;
    const arena = new KcpArena({ maxReceiveBytes: budget });
    const p = new Pair(1, arena);
    const n = 300;
    for (let i = 0; i < n; i++) expect(p.a.send(message(i, 1000))).toBe(0);
    let maxHeld = 0;
    for (let now = 0; now < 20_000 && p.got.length < n; now += 10) {
      p.step(now, now >= 1000); // the reader stalls for the first second
      maxHeld = Math.max(maxHeld, arena.receiveBytes);
      expect(arena.receiveBytes).toBeLessThanOrEqual(budget);
      if (now === 990) {
        expect(p.b.counters().pushOverBudget).toBeGreaterThan(0);
        expect(p.b.rcvQueueLength + p.b.rcvBufLength).toBeLessThan(budget / 1000);
      }
    }
    expectMessages(p.got, n, 1000);
    expect(maxHeld).toBeGreaterThan(budget / 2);
    const drops = p.b.counters().pushOverBudget;
    expect(arena.counters().receiveDropped).toBe(drops);
    expect(arena.counters().receiveDroppedBytes).toBe(drops * 1000);
    // Dropped segments were never acknowledged, so the sender had to send them again.
    expect(p.a.counters().retransmitTimeout + p.a.counters().retransmitFast).toBeGreaterThanOrEqual(drops);
    expect(p.a.waitSnd()).toBe(0);
  });

  it('a raw-mode peer holding small out-of-order segments does not pin a slab each (they are compacted) and never beyond the budget', () => {
    const budget = 1024 * 1024;
    const arena = new KcpArena({ maxReceiveBytes: budget });
    const honest = new Pair(1, arena, { ...TURBO, sndWnd: 16 }); // about 16 KiB per 10 ms step
    const victim = new Kcp(2, () => {}, { ...TURBO, arena }); // the attacker's session on the same host
    const n = 2400; // 2.4 MB through the shared arena
    for (let i = 0; i < n; i++) honest.a.send(message(i, 1000));
    let sn = 1; // sn 0 never comes, so every segment stays in the receive buffer
    let maxHeld = 0;
    for (let now = 0; now < 20_000 && honest.got.length < n; now += 10) {
      honest.step(now, true);
      // One 1-byte segment per ~16 KiB of honest traffic: without compaction, each pins a 16 KiB slab.
      if (sn < 128 && honest.got.length >= sn * 16) victim.input(push(2, sn++, Uint8Array.of(sn)), now);
      maxHeld = Math.max(maxHeld, arena.receiveBytes);
    }
    expectMessages(honest.got, n, 1000);
    expect(sn).toBe(128);
    expect(victim.rcvBufLength).toBe(127); // all held, none dropped
    expect(victim.counters().pushOverBudget).toBe(0);
    expect(arena.counters().compactions).toBeGreaterThan(50);
    // 127 live bytes, 8 each with alignment (and a record each): far below the 127 × 16 KiB they
    // would pin uncompacted.
    expect(maxHeld).toBeLessThanOrEqual(budget);
    expect(arena.receiveBytes).toBeLessThanOrEqual(4 * 16384 + 127 * KCP_SEGMENT_BYTES);
    victim.dispose();
    // Slabs; what else is charged is the honest receiver's pending-ACK list, kept once grown.
    expect(arena.receiveBytes - arena.receive.charged).toBeLessThanOrEqual(3 * 16384);
    expect(arena.receive.charged).toBeLessThanOrEqual(2 * TURBO.rcvWnd! * 4);
  });

  it('peers filling the out-of-order share of a shared budget do not stop another session', () => {
    const budget = 640 * 1024;
    const arena = new KcpArena({ maxReceiveBytes: budget });
    const honest = new Pair(1, arena);
    const victims = [2, 3, 4, 5].map((conv) => new Kcp(conv, () => {}, { ...TURBO, arena }));
    // 4 × 127 out-of-order segments of 1.5 KiB: 762 KB, more than the whole budget.
    for (const v of victims) for (let sn = 1; sn < 128; sn++) v.input(push(v.conv, sn, new Uint8Array(1500).fill(sn)), 0);
    const dropped = victims.reduce((n, v) => n + v.counters().pushOverBudget, 0);
    expect(dropped).toBeGreaterThan(0);
    expect(arena.counters().receiveDropped).toBe(dropped);
    expect(arena.receiveBytes).toBeLessThanOrEqual((budget * 3) / 4);
    const n = 2000;
    for (let i = 0; i < n; i++) honest.a.send(message(i, 1000));
    let now = 0;
    for (; now < 20_000 && honest.got.length < n; now += 10) {
      honest.step(now, true);
      expect(arena.receiveBytes).toBeLessThanOrEqual(budget);
    }
    expectMessages(honest.got, n, 1000);
    expect(now).toBeLessThan(1000); // 2 MB in 10 ms steps of one window each: not slowed down
    // The first peer's segments all fit; the last one's were refused (none acknowledged).
    expect(victims[0]!.rcvBufLength).toBe(127);
    const last = victims[3]!;
    expect(last.rcvBufLength + last.counters().pushOverBudget).toBe(127);
    expect(last.counters().pushOverBudget).toBeGreaterThan(0);
    expect(last.pendingAckCount).toBe(last.rcvBufLength);
    // When the gap fills, the held segments become readable.
    victims[0]!.input(push(2, 0, Uint8Array.of(0)), 30_000);
    expect(victims[0]!.rcvQueueLength).toBe(128);
  });

  it('dispose() gives every copy back to the arena; the Kcp refuses further use', () => {
    const arena = new KcpArena();
    const p = new Pair(1, arena);
    const sender = new Kcp(9, () => {}, { ...TURBO, arena });
    for (let i = 0; i < 40; i++) sender.send(message(i, 3000)); // own buffers above 2 KiB, and slabs
    sender.send(message(0, 10));
    for (let i = 0; i < 50; i++) p.a.send(message(i, 1000));
    for (let now = 0; now < 200; now += 10) p.step(now, false);
    expect(arena.receiveBytes).toBeGreaterThan(0);
    expect(arena.sendBytes).toBeGreaterThan(40 * 3000);
    p.b.dispose();
    sender.dispose();
    expect(arena.receive.inUse).toBeLessThanOrEqual(16384); // the slab being filled
    expect(arena.send.inUse).toBeLessThanOrEqual(16384);
    expect(p.b.rcvQueueLength + p.b.rcvBufLength).toBe(0);
    expect(sender.waitSnd()).toBe(0);
    expect(() => sender.send(new Uint8Array(1))).toThrow(GamewireError);
    expect(() => p.b.input(new Uint8Array(24))).toThrow(GamewireError);
    p.b.dispose(); // idempotent
  });

  it('a Kcp without an arena owns one; Kcps on one arena share its scratch buffer', () => {
    const a = new Kcp(1, () => {});
    const b = new Kcp(1, () => {});
    expect(a.arena).not.toBe(b.arena);
    const shared = new KcpArena();
    const c = new Kcp(1, () => {}, { arena: shared });
    const d = new Kcp(2, () => {}, { arena: shared });
    expect(c.arena).toBe(shared);
    for (const k of [c, d]) {
      k.send(new Uint8Array(100));
      k.update(0);
    }
    expect(shared.scratchBytes).toBe(4272);
    expect(() => new Kcp(1, () => {}, { arena: {} as KcpArena })).toThrow(GamewireError);
  });

  it('a Kcp holds a pending-ACK list only until the flush that sends it; the arena keeps at most 64 for reuse', () => {
    const shared = new KcpArena();
    const run = (n: number, segments: number, now: number): void => {
      for (let i = 0; i < n; i++) {
        let rx: Kcp | undefined;
        const tx = new Kcp(i, (d) => rx!.input(d.slice()), { nc: true });
        const acked: Uint8Array[] = [];
        rx = new Kcp(i, (d) => acked.push(d.slice()), { arena: shared });
        rx.update(now);
        tx.update(now);
        for (let s = 0; s < segments; s++) tx.send(new Uint8Array(10));
        tx.flush();
        expect(rx.pendingAckCount).toBe(segments);
        rx.flush();
        expect(rx.pendingAckCount).toBe(0);
        for (const d of acked) tx.input(d);
        expect(tx.waitSnd()).toBe(0);
      }
    };
    run(3, 1, 0);
    expect(shared.spareAckLists).toBe(1); // each of the three gave its list back before the next took one
    run(100, 1, 10);
    expect(shared.spareAckLists).toBe(1);
    const held: Kcp[] = [];
    for (let i = 0; i < 100; i++) {
      const k = new Kcp(i, () => {}, { arena: shared });
      k.update(0);
      const seg = new Uint8Array(KCP_OVERHEAD + 4);
      encodeKcpHeader(seg, 0, { conv: i, cmd: KcpCommand.PUSH, frg: 0, wnd: 32, ts: 0, sn: 0, una: 0, len: 4 });
      k.input(seg);
      held.push(k);
    }
    expect(shared.spareAckLists).toBe(0);
    for (const k of held) k.flush();
    expect(shared.spareAckLists).toBe(64);
    run(1, 20, 20); // more ACKs than a first list holds: the Kcp keeps its grown list
    expect(shared.spareAckLists).toBe(63);
  });
});

describe('Kcps sharing one arena', () => {
  it('past their share, out-of-order segments are refused even where the slab being filled has room; a gap-filling one is not', () => {
    const arena = new KcpArena({ maxReceiveBytes: 120 * 1024 }); // out-of-order share 90 KiB, urgent 104 KiB
    const a = new Kcp(1, () => {}, { ...TURBO, arena });
    const b = new Kcp(2, () => {}, { ...TURBO, arena });
    a.update(0);
    for (let sn = 0; sn < 66; sn++) {
      a.input(push(1, sn, new Uint8Array(1000)), 0); // unread: 5 slabs, the 5th with room
      a.flush(); // its ACKs leave at once, so its pending-ACK list never grows (and is not charged)
    }
    expect(arena.receive.inUse).toBe(5 * 16384 + 66 * KCP_SEGMENT_BYTES);
    expect(a.counters().pushOverBudget).toBe(0);
    b.input(push(2, 5, new Uint8Array(1000)), 0);
    expect(b.counters().pushOverBudget).toBe(1);
    expect(b.rcvBufLength).toBe(0);
    b.input(push(2, 0, new Uint8Array(1000)), 0);
    expect(b.counters().pushOverBudget).toBe(1);
    expect(b.rcvQueueLength).toBe(1);
    expect(arena.receive.inUse).toBe(5 * 16384 + 67 * KCP_SEGMENT_BYTES);
  });


  it('all finish after their readers stalled: out-of-order data cannot take the room the segments filling the gaps need', () => {
    // Found by helper "host" on KcpServer: three sessions on a 96 KiB arena, readers stalled for 3 s,
    // never finished, because out-of-order copies filled the slab being filled past their share.
    const budget = 96 * 1024;
    const arena = new KcpArena({ maxReceiveBytes: budget });
    const rng = new NonCryptoRng(7);
    const pairs = [1, 2, 3].map((conv) => new Pair(conv, arena));
    for (const p of pairs) for (let i = 0; i < 100; i++) p.a.send(message(i, 1000));
    let now = 0;
    for (; now < 30_000 && pairs.some((p) => p.got.length < 100); now += 10) {
      for (const p of pairs) {
        // 5 % loss each way, so segments arrive out of order
        p.toB.splice(0, p.toB.length, ...p.toB.filter(() => !rng.chance(0.05)));
        p.step(now, now >= 3000);
      }
      if (arena.receiveBytes > budget) expect(arena.receiveBytes).toBeLessThanOrEqual(budget);
    }
    for (const p of pairs) expectMessages(p.got, 100, 1000);
    expect(arena.counters().receiveDropped).toBeGreaterThan(0);
  });
});

describe('send budget and segment records', () => {
  it('an arena with maxSendBytes refuses a send beyond it with -4, queueing nothing; acknowledged segments give their bytes back', () => {
    const budget = 256 * 1024;
    const arena = new KcpArena({ maxSendBytes: budget });
    expect(arena.maxSendBytes).toBe(budget);
    const p = new Pair(1, new KcpArena(), { ...TURBO, arena });
    p.a.update(0);
    p.b.update(0);
    let accepted = 0;
    let refusedAt = -1;
    for (let i = 0; i < 1000; i++) {
      const waiting = p.a.waitSnd();
      const held = p.a.sendBytes;
      const r = p.a.send(message(i, 3000)); // 3 segments each
      expect(arena.sendBytes).toBeLessThanOrEqual(budget);
      if (r === -4) {
        refusedAt = i;
        expect([p.a.waitSnd(), p.a.sendBytes]).toEqual([waiting, held]); // nothing queued, nothing charged
        break;
      }
      expect(r).toBe(0);
      accepted++;
    }
    expect(refusedAt).toBeGreaterThan(40); // 3000 bytes of payload + 3 records each: most of the budget
    expect(p.a.counters().sendOverBudget).toBe(1);
    expect(arena.counters()).toMatchObject({ sendRefused: 1, sendRefusedBytes: 3000 });
    // Zero-length messages are one record each, charged too: they cannot grow the queue past the budget.
    let empties = 0;
    while (p.a.send(new Uint8Array(0)) === 0) empties++;
    expect(empties).toBeLessThan(budget / 200);
    expect(arena.sendBytes).toBeLessThanOrEqual(budget);
    // Delivered and acknowledged: the budget is back, and sending works again.
    for (let now = 10; now < 10_000 && p.got.length < accepted; now += 10) p.step(now, true);
    expect(p.got.length).toBe(accepted);
    for (let now = 10_000; now < 10_500; now += 10) p.step(now, true);
    expect(p.a.waitSnd()).toBe(0);
    expect(p.a.sendBytes).toBe(0);
    expect(p.a.send(message(0, 3000))).toBe(0);
  });

  it('a message whose last segment finds no room gives back the segments already copied', () => {
    // 3 slabs: copies may use 2 (records included). A slab takes 11 segments of 1376 bytes, so the
    // sixth two-segment message copies its first segment into the first slab and finds no room for
    // its second.
    const arena = new KcpArena({ maxSendBytes: 3 * 16384 });
    const k = new Kcp(1, () => {}, { arena });
    const two = new Uint8Array(2 * 1376);
    for (let i = 0; i < 5; i++) expect(k.send(two)).toBe(0);
    const before = [k.waitSnd(), k.sendBytes, arena.send.inUse];
    expect(k.send(two)).toBe(-4);
    expect([k.waitSnd(), k.sendBytes, arena.send.inUse]).toEqual(before);
    expect(k.counters().sendOverBudget).toBe(1);
    // No copy of the refused message is left behind: once the others are gone the slab is empty and
    // starts over, so eleven segments fit in it again.
    k.dispose();
    const k2 = new Kcp(2, () => {}, { arena });
    for (let i = 0; i < 11; i++) expect(k2.send(new Uint8Array(1376))).toBe(0);
    expect(arena.send.inUse).toBe(16384 + 11 * KCP_SEGMENT_BYTES);
  });

  it('maxSendBytes on a Kcp bounds what that Kcp holds to send (payload plus a record per segment)', () => {
    const k = new Kcp(1, () => {}, { maxSendBytes: 10_000 });
    expect(k.maxSendBytes).toBe(10_000);
    let n = 0;
    while (k.send(new Uint8Array(1000)) === 0) n++;
    expect(k.sendBytes).toBeLessThanOrEqual(10_000);
    expect(n).toBeGreaterThan(5);
    expect(n).toBeLessThan(10);
    expect(k.counters().sendOverBudget).toBe(1);
    expect(k.arena.counters().sendRefused).toBe(1);
    expect(() => new Kcp(1, () => {}, { maxSendBytes: 0 })).toThrow(GamewireError);
    expect(() => new KcpArena({ maxSendBytes: -5 })).toThrow(GamewireError);
    // Without a budget (the default), a Kcp queues as C does, up to maxSendQueueSegments.
    expect(new Kcp(1, () => {}).maxSendBytes).toBe(Infinity);
    expect(new KcpArena().maxSendBytes).toBe(Infinity);
  });

  it('empty out-of-order segments are charged a record each: a flood of them stops at the receive budget', () => {
    const budget = 256 * 1024;
    const arena = new KcpArena({ maxReceiveBytes: budget });
    const k = new Kcp(1, () => {}, { ...TURBO, rcvWnd: 65535, arena });
    k.update(0);
    for (let sn = 1; sn < 65535; sn++) {
      k.input(push(1, sn, new Uint8Array(0)), 0);
      if (sn % 512 === 0) k.flush();
      if (arena.receiveBytes > budget) expect(arena.receiveBytes).toBeLessThanOrEqual(budget);
    }
    expect(k.counters().pushOverBudget).toBeGreaterThan(0);
    expect(k.rcvBufLength).toBeLessThan(budget / 200);
    expect(arena.counters().receiveDropped).toBe(k.counters().pushOverBudget);
    k.dispose();
    expect(arena.receive.inUse).toBe(0);
  });
});

describe('pending ACKs and the receive budget', () => {
  it('a list grown by a burst of duplicate PUSHes is charged to the receive budget; ACKs beyond it are dropped and counted', () => {
    const budget = 256 * 1024;
    const arena = new KcpArena({ maxReceiveBytes: budget });
    const k = new Kcp(1, () => {}, { ...TURBO, arena });
    k.update(0);
    // 65,536 copies of one in-window segment before the next flush: each is acknowledged again.
    const d = new Uint8Array(58 * KCP_OVERHEAD);
    for (let i = 0; i < 58; i++) encodeKcpHeader(d, i * KCP_OVERHEAD, { conv: 1, cmd: KcpCommand.PUSH, frg: 0, wnd: 128, ts: 0, sn: 0, una: 0, len: 0 });
    for (let i = 0; i < 1130; i++) {
      k.input(d, 0);
      if (arena.receiveBytes > budget) expect(arena.receiveBytes).toBeLessThanOrEqual(budget);
    }
    expect(k.pendingAckCount * 8).toBeLessThanOrEqual(budget);
    expect(k.counters().ackListFull).toBeGreaterThan(0);
    expect(arena.receive.charged).toBeGreaterThan(k.pendingAckCount * 8 - 128);
    k.flush();
    expect(k.pendingAckCount).toBe(0);
    k.dispose();
    expect(arena.receive.charged).toBe(0);
  });
});
