import { describe, expect, it } from 'vitest';
import { PacingBudget } from './pacer.js';

describe('PacingBudget', () => {
  it('starts full, accumulates rate × dt and spends it (the seed accumulator)', () => {
    const b = new PacingBudget(1000, 1);
    b.refill(0, 32_000);
    expect(b.available).toBe(32_000);
    b.spend(32_000);
    b.refill(500, 32_000);
    expect(b.available).toBeCloseTo(16_000, 6);
    expect(b.covers(16_000)).toBe(true);
    expect(b.covers(16_001)).toBe(false);
    b.spend(1200);
    expect(b.available).toBeCloseTo(14_800, 6);
  });

  it('caps the saved budget at rate × burstMs, but never below minCapBytes', () => {
    const b = new PacingBudget(10, 2400);
    b.refill(0, 1_000_000);
    b.refill(10_000, 1_000_000);
    expect(b.available).toBe(10_000);
    const slow = new PacingBudget(10, 2400);
    slow.refill(0, 1000);
    slow.refill(60_000, 1000);
    expect(slow.available).toBe(2400);
  });

  it('uses the rate in force during each interval', () => {
    const b = new PacingBudget(100_000, 1);
    b.refill(0, 1000);
    b.clear();
    b.refill(1000, 5000);
    expect(b.available).toBeCloseTo(1000, 6);
    b.refill(2000, 5000);
    expect(b.available).toBeCloseTo(6000, 6);
  });

  it('readyAt says exactly when a size is covered, and the budget then covers it', () => {
    const b = new PacingBudget(10, 2400);
    expect(b.readyAt(100)).toBeUndefined();
    b.refill(3, 250_000);
    expect(b.readyAt(2400)).toBe(3);
    b.clear();
    const t = b.readyAt(1228)!;
    expect(t).toBeCloseTo(3 + (1228 / 250_000) * 1000, 9);
    b.refill(t, 250_000);
    expect(b.covers(1228)).toBe(true);
    b.spend(1228);
    expect(b.readyAt(0)).toBe(t);
  });

  it('time going backwards adds nothing; a zero rate is never ready', () => {
    const b = new PacingBudget(10, 2400);
    b.refill(100, 1000);
    b.clear();
    b.refill(50, 1000);
    expect(b.available).toBe(0);
    b.refill(100, 0);
    expect(b.readyAt(10)).toBeUndefined();
    b.clear();
    expect(b.available).toBe(0);
  });
});
