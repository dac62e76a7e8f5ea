import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DeadlineHeap, deferStuck, grownLength } from './deadline-heap.js';

describe('DeadlineHeap', () => {
  it('behaves like a sorted list under random set/delete/popDue (model check)', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('set' as const), id: fc.nat(40), t: fc.integer({ min: 0, max: 1000 }) }),
      fc.record({ k: fc.constant('del' as const), id: fc.nat(40) }),
      fc.record({ k: fc.constant('pop' as const), now: fc.integer({ min: 0, max: 1000 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 300 }), (ops) => {
        const h = new DeadlineHeap(2, 41); // growth 2, 4, … 32, then capped at 41
        const model = new Map<number, number>();
        for (const o of ops) {
          if (o.k === 'set') {
            h.set(o.id, o.t);
            model.set(o.id, o.t);
          } else if (o.k === 'del') {
            h.delete(o.id);
            model.delete(o.id);
          } else {
            let best = -1;
            for (const [id, t] of model) {
              if (t <= o.now && (best < 0 || t < model.get(best)! || (t === model.get(best)! && id < best))) best = id;
            }
            expect(h.popDue(o.now)).toBe(best);
            expect(h.capacity).toBeLessThanOrEqual(41);
            if (best >= 0) model.delete(best);
          }
          expect(h.size).toBe(model.size);
          const min = model.size === 0 ? undefined : Math.min(...model.values());
          expect(h.peekTime()).toBe(min);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('with ranks, orders ties by rank (model check)', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('set' as const), id: fc.nat(40), t: fc.integer({ min: 0, max: 5 }) }),
      fc.record({ k: fc.constant('rank' as const), id: fc.nat(40), r: fc.integer({ min: -5, max: 5 }) }),
      fc.record({ k: fc.constant('del' as const), id: fc.nat(40) }),
      fc.record({ k: fc.constant('pop' as const), now: fc.integer({ min: 0, max: 5 }) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 50, maxLength: 300, size: 'max' }), (ops) => {
        const h = new DeadlineHeap(2, 41);
        const model = new Map<number, number>();
        const rank = new Map<number, number>();
        const key = (id: number): [number, number, number] => [model.get(id)!, rank.get(id) ?? id, id];
        const before = (a: number, b: number): boolean => {
          const x = key(a);
          const y = key(b);
          return x[0] < y[0] || (x[0] === y[0] && (x[1] < y[1] || (x[1] === y[1] && x[2] < y[2])));
        };
        for (const o of ops) {
          if (o.k === 'set') {
            h.set(o.id, o.t);
            model.set(o.id, o.t);
          } else if (o.k === 'rank') {
            h.setRank(o.id, o.r);
            rank.set(o.id, o.r);
          } else if (o.k === 'del') {
            h.delete(o.id);
            model.delete(o.id);
          } else {
            let best = -1;
            for (const id of model.keys()) if (model.get(id)! <= o.now && (best < 0 || before(id, best))) best = id;
            expect(h.popDue(o.now)).toBe(best);
            if (best >= 0) model.delete(best);
          }
          expect(h.size).toBe(model.size);
        }
      }),
      { numRuns: 100 },
    );
  });

  it('reschedule never puts an id at or before the instant it was woken', () => {
    const h = new DeadlineHeap();
    h.reschedule(3, 100, 100);
    expect(h.deadline(3)).toBe(101);
    h.reschedule(3, 90, 100);
    expect(h.deadline(3)).toBe(101);
    h.reschedule(3, 100.25, 100);
    expect(h.deadline(3)).toBe(100.25);
    h.reschedule(3, 40, -Infinity);
    expect(h.deadline(3)).toBe(40);
  });

  it('grows by doubling but never past maxIds, and still orders every id', () => {
    const h = new DeadlineHeap(16, 5000);
    for (let id = 4999; id >= 0; id--) h.set(id, (id * 7919) % 5000);
    expect(h.capacity).toBe(5000);
    expect(h.size).toBe(5000);
    let last = -1;
    for (let id = h.popDue(5000); id >= 0; id = h.popDue(5000)) {
      const t = (id * 7919) % 5000;
      expect(t).toBeGreaterThanOrEqual(last);
      last = t;
    }
    expect(h.size).toBe(0);
  });
});

describe('deferStuck: the one stuck-deadline rule (Host, DriveLoop, World)', () => {
  it('moves a deadline at or before the wake-up instant one step past it, and leaves a later one alone', () => {
    expect(deferStuck(100, 100, 1)).toBe(101);
    expect(deferStuck(40, 100, 1)).toBe(101);
    expect(deferStuck(-Infinity, 100, 1)).toBe(101);
    expect(deferStuck(100.25, 100, 1)).toBe(100.25);
    expect(deferStuck(100, 100, 10)).toBe(110);
    expect(deferStuck(100, 99.5, 0.25)).toBe(100);
    // Never woken: any deadline stands.
    expect(deferStuck(40, -Infinity, 1)).toBe(40);
    fc.assert(fc.property(fc.double({ noNaN: true, min: -1e9, max: 1e9 }), fc.double({ noNaN: true, min: -1e9, max: 1e9 }),
      fc.double({ min: 1e-3, max: 1e3, noNaN: true }), (d, w, step) => {
        const t = deferStuck(d, w, step);
        return t > w && (d > w ? t === d : t === w + step);
      }));
  });
});

describe('grownLength', () => {
  it('doubles until the table holds what is needed, caps at the most it will need, never below the need', () => {
    expect(grownLength(16, 17, 5000)).toBe(32);
    expect(grownLength(16, 100, 5000)).toBe(128);
    expect(grownLength(4096, 4097, 5000)).toBe(5000);
    expect(grownLength(0, 1, 10)).toBe(1);
    expect(grownLength(16, 40, 20)).toBe(40);
  });
});
