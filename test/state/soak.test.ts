import { expect, it } from 'vitest';
import { runStateSoak } from '../soak/state-soak.js';

it('a short state soak: 20,000 ticks of random spawns, changes and despawns over a lossy reordering pipe converge at every calm, memory bounded', () => {
  const r = runStateSoak(7, 20_000, undefined, 2000);
  expect(r.failures).toEqual([]);
  expect(r.calmChecks).toBe(10);
  expect(r.spawned).toBeGreaterThan(5000);
  expect(r.lost).toBeGreaterThan(1000);
  expect(r.maxClientRecords).toBeLessThanOrEqual(128);
});
