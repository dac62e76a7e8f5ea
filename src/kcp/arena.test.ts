import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GamewireError } from '../core/errors.js';
import { KcpArena, SlabPool, type Slab, type SlabCopy } from './arena.js';

function holder(): SlabCopy {
  return { data: new Uint8Array(0), slab: undefined, own: 0 };
}

const aligned = (n: number): number => (n + 7) & ~7;

describe('SlabPool', () => {
  it('never overwrites a live copy; slabs in use stay within 8x the live bytes plus the one being filled', () => {
    // Short-lived copies are released oldest first (read in order); long-lived ones (held out of
    // order, or never read) only now and then, at random: the pattern that pins mostly-empty slabs.
    type Op = { copy: number; long: boolean } | 'release-short' | 'release-long';
    const op: fc.Arbitrary<Op> = fc.oneof(
      { arbitrary: fc.record({
          copy: fc.integer({ min: 0, max: 30 }),
          long: fc.oneof({ arbitrary: fc.constant(true), weight: 1 }, { arbitrary: fc.constant(false), weight: 15 }),
        }), weight: 6 },
      { arbitrary: fc.constant<Op>('release-short'), weight: 8 },
      { arbitrary: fc.constant<Op>('release-long'), weight: 2 },
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 100, maxLength: 400 }), fc.integer({ min: 0, max: 2 ** 30 }), (ops, seed) => {
        const pool = new SlabPool(Infinity, 256, 24, 2);
        const short: { h: SlabCopy; want: number[] }[] = [];
        const long: { h: SlabCopy; want: number[] }[] = [];
        let fill = seed;
        const next = (): number => (fill = (fill * 1103515245 + 12345) >>> 0) >>> 8;
        let liveBytes = 0; // in slabs, each copy rounded up to 8
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
            if (c!.h.slab !== undefined) liveBytes -= aligned(c!.h.data.length);
            ownBytes -= c!.h.own;
            pool.release(c!.h);
            pool.release(c!.h); // a second release does nothing
          } else {
            const src = Uint8Array.from({ length: o.copy + 3 }, () => next() & 0xff);
            const h = holder();
            if (!pool.copy(h, src, 3, src.length)) expect.fail('refused without a budget');
            if (h.slab !== undefined) liveBytes += aligned(o.copy);
            ownBytes += h.own;
            (o.long ? long : short).push({ h, want: [...src.subarray(3)] });
          }
          if (pool.inUse - ownBytes > 8 * liveBytes + 256) expect(pool.inUse - ownBytes).toBeLessThanOrEqual(8 * liveBytes + 256);
          if (i % 16 === 0) for (const c of [...short, ...long]) check(c);
        });
        for (const c of [...short, ...long]) check(c);
        expect(pool.freeSlabs).toBeLessThanOrEqual(2);
      }),
      { numRuns: 100 },
    );
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
    expect(big.own).toBe(40);
    expect(big.data.buffer.byteLength).toBe(40);
    expect(pool.inUse).toBe(2 * 64 + 40);
    pool.release(big);
    expect(pool.inUse).toBe(2 * 64);
  });

  it('moves the last small copies out of a retired slab, so one long-lived copy does not pin it', () => {
    const pool = new SlabPool(Infinity, 128, 16, 4); // compaction below 128 / 8 = 16 live bytes
    const src = Uint8Array.from({ length: 16 }, (_, i) => i);
    const p = holder();
    pool.copy(p, src, 0, 3);
    const hs = Array.from({ length: 7 }, () => holder());
    for (const h of hs) pool.copy(h, src, 0, 16); // 8 + 112 = 120 bytes
    const old = p.slab;
    for (const h of hs) pool.release(h);
    expect(p.slab).toBe(old); // still the slab being filled: not compacted
    expect(pool.compactions).toBe(0);
    pool.copy(holder(), src, 0, 16); // retires it with 8 live bytes: p moves
    expect(p.slab).not.toBe(old);
    expect([...p.data]).toEqual([0, 1, 2]);
    expect(pool.compactions).toBe(1);
    expect(pool.compactedBytes).toBe(3);
    expect(pool.freeSlabs).toBe(1);
    expect(pool.inUse).toBe(128);
  });

  it('refuses copies that need memory beyond the limit and never holds more than maxBytes', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ len: fc.integer({ min: 1, max: 120 }), release: fc.integer({ min: -3, max: 30 }), half: fc.boolean() }), {
          maxLength: 300,
        }),
        (ops) => {
          const max = 512;
          const pool = new SlabPool(max, 128, 64, 2);
          const live: SlabCopy[] = [];
          const src = new Uint8Array(120).fill(7);
          for (const op of ops) {
            if (op.release >= 0 && op.release < live.length) pool.release(live.splice(op.release, 1)[0]!);
            const h = holder();
            const limit = op.half ? max / 2 : max;
            const before = pool.inUse;
            if (pool.copy(h, src, 0, op.len, limit)) live.push(h);
            else {
              expect(h.slab).toBeUndefined();
              expect(h.own).toBe(0);
              expect(pool.inUse).toBe(before);
            }
            expect(pool.allocated).toBeLessThanOrEqual(max);
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

describe('KcpArena', () => {
  it('checks its budget', () => {
    expect(() => new KcpArena({ maxReceiveBytes: -1 })).toThrow(GamewireError);
    expect(() => new KcpArena({ maxReceiveBytes: 1.5 })).toThrow(GamewireError);
    expect(new KcpArena({ maxReceiveBytes: Infinity }).outOfOrderBytes).toBe(Infinity);
    const a = new KcpArena({ maxReceiveBytes: 1000 });
    expect(a.maxReceiveBytes).toBe(1000);
    expect(a.outOfOrderBytes).toBe(750);
    expect(a.counters()).toEqual({ receiveDropped: 0, receiveDroppedBytes: 0, compactions: 0, compactedBytes: 0 });
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
