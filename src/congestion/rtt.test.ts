import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { RttEstimator } from './rtt.js';

describe('RttEstimator', () => {
  it('assumes 100 ms with no variance before the first sample (first resend after 125 ms)', () => {
    const r = new RttEstimator();
    expect(r.srttMs).toBe(100);
    expect(r.minRttMs).toBeUndefined();
    expect(r.resendDelayMs(20)).toBe(125);
    expect(r.resendDelayMs(300)).toBe(300);
  });

  it('follows RFC 6298: first sample sets srtt and rttvar = sample/2, then gains 1/8 and 1/4', () => {
    const r = new RttEstimator();
    r.update(0, 80);
    expect([r.srttMs, r.rttvarMs]).toEqual([80, 40]);
    r.update(1, 40);
    expect(r.srttMs).toBeCloseTo(75, 9);
    expect(r.rttvarMs).toBeCloseTo(40, 9);
    expect(r.minRttMs).toBe(40);
    expect(r.latestMs).toBe(40);
    expect(r.samples).toBe(2);
    expect(r.resendDelayMs(0)).toBeCloseTo(75 + 160, 9);
  });

  it('converges on a steady RTT so the resend delay approaches 1.25 × RTT', () => {
    const r = new RttEstimator();
    for (let i = 0; i < 100; i++) r.update(i, 200);
    expect(r.srttMs).toBeCloseTo(200, 6);
    expect(r.resendDelayMs(10)).toBeCloseTo(250, 3);
  });

  it('ignores negative, absurd and non-finite samples', () => {
    const r = new RttEstimator(50);
    for (const bad of [-1, 60_000, NaN, Infinity]) expect(r.update(0, bad)).toBe(false);
    expect(r.samples).toBe(0);
    expect(r.srttMs).toBe(50);
    expect(() => new RttEstimator(0)).toThrow(GamewireError);
  });

  it('keeps the minimum with its time, and rebaseMin replaces it (a path that got longer)', () => {
    const r = new RttEstimator();
    expect(r.minRttAtMs).toBeUndefined();
    r.rebaseMin(5, 10);
    expect(r.minRttMs).toBeUndefined();
    r.update(10, 40);
    r.update(20, 42);
    expect([r.minRttMs, r.minRttAtMs]).toEqual([40, 10]);
    r.rebaseMin(30, 80);
    expect([r.minRttMs, r.minRttAtMs]).toEqual([80, 30]);
    r.update(40, 79);
    expect([r.minRttMs, r.minRttAtMs]).toEqual([79, 40]);
    r.rebaseMin(50, NaN);
    expect(r.minRttMs).toBe(79);
  });

  it('estimates jitter as the mean absolute change between samples (plain average of the first 16, then gain 1/16)', () => {
    const r = new RttEstimator();
    r.update(0, 50);
    expect(r.jitterMs).toBe(0);
    r.update(1, 54);
    r.update(2, 50);
    expect(r.jitterMs).toBeCloseTo(4, 9);
    r.update(3, 51);
    expect(r.jitterMs).toBeCloseTo(3, 9);
    for (let i = 0; i < 13; i++) r.update(4 + i, 51);
    expect(r.jitterMs).toBeCloseTo(9 / 16, 9);
    r.update(20, 67);
    expect(r.jitterMs).toBeCloseTo(9 / 16 + (16 - 9 / 16) / 16, 9);
  });
});
