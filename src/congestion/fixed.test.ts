import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { DEFAULT_RATE_BYTES_PER_SEC, FixedRate } from './fixed.js';

describe('FixedRate', () => {
  it('paces at the configured rate whatever the feedback, and totals the feedback', () => {
    const r = new FixedRate(125_000);
    expect(r.pacingRate(0)).toBe(125_000);
    r.onSent(1, 1228);
    r.onLoss(2, 1228);
    r.onAck(3, 2456, 40);
    expect(r.pacingRate(1e9)).toBe(125_000);
    expect([r.sentBytes, r.ackedBytes, r.lostBytes]).toEqual([1228, 2456, 1228]);
  });

  it('defaults to 250 000 bytes/s', () => {
    expect(new FixedRate().pacingRate(0)).toBe(DEFAULT_RATE_BYTES_PER_SEC);
    expect(DEFAULT_RATE_BYTES_PER_SEC).toBe(250_000);
  });

  it('rejects a non-positive or non-finite rate', () => {
    for (const bad of [0, -1, NaN, Infinity]) {
      expect(() => new FixedRate(bad)).toThrow(GamewireError);
    }
  });
});
