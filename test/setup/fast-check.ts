// Vitest setup (vitest.config.ts `setupFiles`): one fast-check seed for every property, fixed so a run
// is reproducible, overridable to explore. FC_SEED=<int> replays a seed, FC_SEED=random draws one;
// a failing test prints the seed in use. A test that passes its own `seed` ignores this one.
import fc from 'fast-check';
import { beforeEach } from 'vitest';

/** The seed every property uses unless FC_SEED says otherwise. */
export const DEFAULT_FC_SEED = 20261123;

function seedFromEnv(raw: string | undefined): number {
  if (raw === undefined || raw === '') return DEFAULT_FC_SEED;
  if (raw === 'random') return crypto.getRandomValues(new Int32Array(1))[0]!;
  const n = Number(raw);
  if (!Number.isSafeInteger(n)) throw new Error(`FC_SEED must be an integer or 'random', got '${raw}'`);
  return n | 0;
}

const seed = seedFromEnv(process.env.FC_SEED);
fc.configureGlobal({ ...fc.readConfigureGlobal(), seed });

beforeEach((ctx) => {
  ctx.onTestFailed(() => {
    console.error(`[fast-check] global seed ${seed}: replay with FC_SEED=${seed}, explore with FC_SEED=random`);
  });
});
