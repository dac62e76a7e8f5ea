import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { DeliverySchedule } from './schedule.js';

type Op = { kind: 'push'; time: number } | { kind: 'pop' };

describe('DeliverySchedule', () => {
  it('pops in (time, insertion) order under any interleaving of pushes and pops', () => {
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      // Few distinct times so ties are common; runs of rising times exercise the FIFO path.
      fc.integer({ min: 0, max: 40 }).map((t) => ({ kind: 'push' as const, time: t / 4 })),
      fc.constant({ kind: 'pop' as const }),
    );
    fc.assert(fc.property(fc.array(opArb, { maxLength: 400 }), (ops) => {
      const s = new DeliverySchedule();
      const model: { time: number; id: number }[] = [];
      let id = 0;
      for (const op of ops) {
        if (op.kind === 'push') {
          const data = new Uint8Array(8);
          new DataView(data.buffer).setUint32(0, id);
          s.push(op.time, data, id % 8);
          model.push({ time: op.time, id: id++ });
        } else if (model.length > 0) {
          let best = 0;
          for (let k = 1; k < model.length; k++) {
            if (model[k].time < model[best].time) best = k;
          }
          const want = model.splice(best, 1)[0];
          if (s.peekTime() !== want.time || s.peekSize() !== want.id % 8) return false;
          const got = new DataView(s.pop().buffer).getUint32(0);
          if (got !== want.id || s.popSize !== want.id % 8) return false;
        }
        if (s.length !== model.length) return false;
        if (s.bytes !== model.reduce((a, m) => a + (m.id % 8), 0)) return false;
      }
      return true;
    }), { numRuns: 300 });
  });

  it('grows its FIFO ring past the initial capacity without losing order', () => {
    const s = new DeliverySchedule();
    for (let i = 0; i < 1000; i++) s.push(i, new Uint8Array([i & 0xff]), 1);
    for (let i = 0; i < 500; i++) expect(s.pop()[0]).toBe(i & 0xff);
    for (let i = 1000; i < 2000; i++) s.push(i, new Uint8Array([i & 0xff]), 1);
    for (let i = 500; i < 2000; i++) expect(s.pop()[0]).toBe(i & 0xff);
    expect(s.length).toBe(0);
    expect(s.peekTime()).toBeUndefined();
    expect(s.peekSize()).toBeUndefined();
  });
});
