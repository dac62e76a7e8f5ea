import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { DEFAULT_FC_SEED } from './fast-check.js';

describe('fast-check setup', () => {
  it('pins one seed for every property, unless FC_SEED overrides it', () => {
    const env = process.env.FC_SEED;
    const seed = fc.readConfigureGlobal().seed;
    expect(Number.isInteger(seed)).toBe(true);
    if (env === undefined || env === '') expect(seed).toBe(DEFAULT_FC_SEED);
    else if (env !== 'random') expect(seed).toBe(Number(env) | 0);
  });

  it('so the same property sees the same values on every run', () => {
    const seen: number[][] = [];
    for (let run = 0; run < 2; run++) {
      const values: number[] = [];
      fc.assert(fc.property(fc.integer(), (v) => void values.push(v)), { numRuns: 20 });
      seen.push(values);
    }
    expect(seen[1]).toEqual(seen[0]);
    expect(new Set(seen[0]).size).toBeGreaterThan(5);
  });
});
