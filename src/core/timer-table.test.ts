import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { TimerTable } from './timer-table.js';

describe('TimerTable', () => {
  it('names timers, reports the earliest armed deadline and which timers expired, in number order', () => {
    const Timer = { Idle: 0, Handshake: 1, Resend: 2 } as const;
    const t = new TimerTable(3);
    expect(t.next()).toBeUndefined();
    expect(t.nextExpired(1e9)).toBe(-1);
    t.set(Timer.Idle, 10_000);
    t.set(Timer.Resend, 250);
    t.set(Timer.Handshake, 5000);
    expect(t.next()).toBe(250);
    expect(t.get(Timer.Handshake)).toBe(5000);
    expect(t.expired(Timer.Resend, 249.9)).toBe(false);
    expect(t.expired(Timer.Resend, 250)).toBe(true);
    const due: number[] = [];
    for (let x = t.nextExpired(6000); x >= 0; x = t.nextExpired(6000, x)) due.push(x);
    expect(due).toEqual([Timer.Handshake, Timer.Resend]);
    expect(t.nextExpired(6000, -1, Timer.Resend)).toBe(Timer.Handshake);
    expect(t.nextExpired(6000, Timer.Handshake, Timer.Resend)).toBe(-1);
    t.stop(Timer.Resend);
    expect(t.get(Timer.Resend)).toBeUndefined();
    expect(t.next()).toBe(5000);
    t.set(Timer.Idle, Infinity);
    expect(t.expired(Timer.Idle, Infinity)).toBe(false);
    t.stopAll();
    expect(t.next()).toBeUndefined();
  });

  it('a deadline in the past (even −Infinity) is due at any time', () => {
    const t = new TimerTable(1);
    t.set(0, -Infinity);
    expect(t.next()).toBe(-Infinity);
    expect(t.expired(0, -1e300)).toBe(true);
    expect(t.nextExpired(0)).toBe(0);
  });

  it('matches a model under random set/stop (next, expired, nextExpired)', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('set' as const), i: fc.nat(5), at: fc.oneof(fc.integer({ min: -5, max: 5 }), fc.double({ min: -1e6, max: 1e6, noNaN: true })) }),
      fc.record({ k: fc.constant('stop' as const), i: fc.nat(5) }),
      fc.record({ k: fc.constant('check' as const), now: fc.oneof(fc.integer({ min: -5, max: 5 }), fc.double({ min: -1e6, max: 1e6, noNaN: true })) }),
    );
    fc.assert(fc.property(fc.array(op, { maxLength: 100 }), (ops) => {
      const t = new TimerTable(6);
      const model: (number | undefined)[] = Array.from({ length: 6 }, () => undefined);
      for (const o of ops) {
        if (o.k === 'set') {
          t.set(o.i, o.at);
          model[o.i] = o.at;
        } else if (o.k === 'stop') {
          t.stop(o.i);
          model[o.i] = undefined;
        } else {
          const armed = model.filter((x): x is number => x !== undefined);
          expect(t.next()).toBe(armed.length === 0 ? undefined : Math.min(...armed));
          const due = model.flatMap((x, i) => (x !== undefined && x <= o.now ? [i] : []));
          const seen: number[] = [];
          for (let x = t.nextExpired(o.now); x >= 0; x = t.nextExpired(o.now, x)) seen.push(x);
          expect(seen).toEqual(due);
          for (let i = 0; i < 6; i++) expect(t.expired(i, o.now)).toBe(due.includes(i));
        }
      }
    }));
  });

  it('holds 1..32 timers', () => {
    expect(() => new TimerTable(0)).toThrow(/1\.\.32/);
    expect(() => new TimerTable(33)).toThrow(/1\.\.32/);
  });
});
