import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { ByteSlab, Deque, SnRing } from './queues.js';

describe('Deque', () => {
  it('behaves like an array used as a FIFO across growth and wrap-around', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.integer(), fc.constant(null)), { maxLength: 300 }), (ops) => {
        const d = new Deque<number>(2);
        const model: number[] = [];
        for (const op of ops) {
          if (op === null) expect(d.shift()).toBe(model.shift());
          else {
            d.push(op);
            model.push(op);
          }
          expect(d.length).toBe(model.length);
          expect(d.front()).toBe(model[0]);
          expect(d.back()).toBe(model[model.length - 1]);
          for (let i = 0; i < model.length; i++) expect(d.at(i)).toBe(model[i]);
        }
      }),
    );
  });
});

describe('SnRing', () => {
  it('finds items by u32 sequence number across the 2^32 wrap and keeps them when growing', () => {
    const r = new SnRing<{ sn: number }>(4);
    const base = 2 ** 32 - 3;
    const items = Array.from({ length: 4 }, (_, i) => ({ sn: (base + i) >>> 0 }));
    for (const it of items) r.set(it);
    expect(items.map((it) => r.get(it.sn))).toEqual(items);
    r.reserve(7);
    expect(r.capacity).toBe(8);
    expect(items.map((it) => r.get(it.sn))).toEqual(items);
    const more = { sn: (base + 7) >>> 0 };
    r.set(more);
    expect(r.get(more.sn)).toBe(more);
    r.clear(items[0]!.sn);
    expect(r.get(items[0]!.sn)).toBeUndefined();
    expect(r.get(12345)).toBeUndefined();
  });
});

describe('ByteSlab', () => {
  it('reuses a slab only once every copy in it is released; live copies are never overwritten', () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constant(-1)), { maxLength: 400 }),
        fc.integer({ min: 0, max: 2 ** 30 }),
        (ops, seed) => {
          const slab = new ByteSlab(64, 24, 2);
          const live: { view: Uint8Array; want: number[]; slab: ByteSlab['last'] }[] = [];
          let fill = seed;
          for (const op of ops) {
            if (op < 0) {
              const i = live.length === 0 ? -1 : (fill = (fill * 1103515245 + 12345) >>> 0) % live.length;
              if (i >= 0) {
                const [c] = live.splice(i, 1);
                if (c!.slab !== undefined) slab.release(c!.slab);
              }
            } else {
              const src = Uint8Array.from({ length: op + 3 }, () => (fill = (fill * 1103515245 + 12345) >>> 0) & 0xff);
              const view = slab.copy(src, 3, src.length);
              live.push({ view, want: [...src.subarray(3)], slab: slab.last });
            }
            for (const c of live) expect([...c.view]).toEqual(c.want);
          }
          expect(slab.freeSlabs).toBeLessThanOrEqual(2);
        },
      ),
      { numRuns: 200, seed: 31 },
    );
  });

  it('rewinds the current slab and keeps emptied ones, so steady traffic allocates nothing', () => {
    const slab = new ByteSlab(64, 32, 4);
    const src = new Uint8Array(32).fill(5);
    const a = slab.copy(src, 0, 32);
    const sa = slab.last!;
    slab.release(sa);
    const b = slab.copy(src, 0, 32);
    expect(b.buffer).toBe(a.buffer); // rewound: same bytes reused
    expect(b.byteOffset).toBe(0);
    const c = slab.copy(src, 0, 32);
    const d = slab.copy(src, 0, 32); // does not fit: a second slab
    expect(d.buffer).not.toBe(c.buffer);
    slab.release(sa);
    slab.release(sa); // b and c released: the first slab is now free
    expect(slab.freeSlabs).toBe(1);
    slab.copy(src, 0, 32);
    const f = slab.copy(src, 0, 32); // the second slab is full: the free one is taken
    expect(f.buffer).toBe(a.buffer);
    expect(slab.freeSlabs).toBe(0);
    const big = slab.copy(new Uint8Array(40), 0, 40);
    expect(slab.last).toBeUndefined();
    expect(big.buffer.byteLength).toBe(40);
  });

  it('returns independent copies, sharing slabs only below maxPiece', () => {
    const slab = new ByteSlab(64, 16);
    const src = Uint8Array.from({ length: 40 }, (_, i) => i);
    const a = slab.copy(src, 0, 10);
    const b = slab.copy(src, 10, 30);
    const c = slab.copy(src, 30, 40);
    src.fill(0);
    expect([...a]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(b.length).toBe(20);
    expect(b.buffer.byteLength).toBe(20); // larger than maxPiece: its own buffer
    expect(b[0]).toBe(10);
    expect([...c]).toEqual([30, 31, 32, 33, 34, 35, 36, 37, 38, 39]);
    expect(c.buffer).toBe(a.buffer);
    for (let i = 0; i < 10; i++) slab.copy(src, 0, 16);
    expect(a[9]).toBe(9); // later copies never overwrite earlier ones
  });
});
