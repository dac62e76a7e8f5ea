import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { Deque, SnRing } from './queues.js';

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
