// `npm run test:seeds` (CI runs it after `npm test`): every test file that uses fast-check, run again
// under each pinned extra seed, so a property that holds only for the default seed fails in CI while
// every run stays reproducible. `npm run test:seeds -- 5 6` runs other seeds instead.
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';

/** Seeds run besides `DEFAULT_FC_SEED`; pinned, so a failure here replays with `FC_SEED=<seed>`. */
const EXTRA_FC_SEEDS: readonly number[] = [3, 777, 90210];

const ROOT = resolve(import.meta.dirname, '../..');

/** Test files (paths from the repository root) that import fast-check. */
function propertyTestFiles(): string[] {
  const found: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'node_modules') walk(p);
      } else if (e.name.endsWith('.test.ts') && /from ['"]fast-check['"]/.test(readFileSync(p, 'utf8'))) {
        found.push(relative(ROOT, p));
      }
    }
  };
  for (const dir of ['src', 'test', 'examples']) walk(join(ROOT, dir));
  return found.sort();
}

function main(args: string[]): number {
  const seeds = args.length > 0 ? args.map(Number) : EXTRA_FC_SEEDS;
  if (!seeds.every(Number.isSafeInteger)) {
    console.error(`usage: test:seeds [seed ...] (integers), got ${args.join(' ')}`);
    return 2;
  }
  const files = propertyTestFiles();
  const failed: number[] = [];
  for (const seed of seeds) {
    const t0 = performance.now();
    console.log(`\n[test:seeds] FC_SEED=${seed}: ${files.length} files`);
    const r = spawnSync(process.execPath, [join(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', ...files], {
      cwd: ROOT,
      env: { ...process.env, FC_SEED: String(seed) },
      stdio: 'inherit',
    });
    if (r.status !== 0) failed.push(seed);
    console.log(`[test:seeds] FC_SEED=${seed}: ${r.status === 0 ? 'passed' : 'FAILED'} in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  if (failed.length > 0) console.error(`[test:seeds] failed under FC_SEED ${failed.join(', ')}: replay one with FC_SEED=<seed> npx vitest run <file>`);
  return failed.length > 0 ? 1 : 0;
}

process.exitCode = main(process.argv.slice(2));
