/**
 * Instructions per message of part b's KCP pair (bench/kcp-pair.ts), this checkout against another
 * (a dev tool, not a bench of record: it writes nothing). Wall-clock A/Bs (bench:kcp-ab) cannot
 * resolve a few per cent on a shared machine; this count can. Each tree's pair is bundled with
 * esbuild and run under valgrind (cachegrind, instruction count only) on `node --predictable` with
 * fixed seeds, which makes V8 compile on the main thread and gives the same count on every run. The
 * count of 8 warm-up runs is subtracted from that of 8 warm-up runs plus 4 measured ones. It counts
 * instructions, not time (a memory stall or a slow builtin costs more than its count), so use it to
 * find and check CPU work, and bench:kcp-ab to confirm in time. Needs valgrind (`apt-get install
 * valgrind`); about a minute per tree and loss rate.
 *
 *   git worktree add /tmp/base fac1af6 && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   npm run bench:kcp-instr -- /tmp/base            (0 % and 10 % loss)
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { build } from 'esbuild';
import { checkoutArgs } from './kcp-pair.js';
import { table } from './readme.js';

const WARMUP = 8;
const MEASURED = 4;
const MESSAGES = 20_000;

/** Total instructions of one valgrind run of `bundle` with `runs` measured runs. */
function instructions(bundle: string, runs: number, loss: number): Promise<number> {
  const args = ['--tool=cachegrind', '--cache-sim=no', '--cachegrind-out-file=/dev/null', process.execPath,
    '--predictable', '--random-seed=42', '--hash-seed=42', bundle, String(WARMUP), String(runs), String(loss)];
  return new Promise((resolve, reject) => {
    const child = spawn('valgrind', args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      const m = /I\s+refs:\s+([\d,]+)/.exec(err);
      if (code !== 0 || m === null) reject(new Error(`valgrind exited ${code}: ${err.slice(-500)}`));
      else resolve(Number(m[1]!.replaceAll(',', '')));
    });
  });
}

async function main(): Promise<void> {
  const { other, kcpEntry, losses } = checkoutArgs('bench:kcp-instr');
  const here = path.resolve(import.meta.dirname, '..');
  try {
    execFileSync('valgrind', ['--version'], { stdio: 'ignore' });
  } catch {
    console.error('bench:kcp-instr needs valgrind (apt-get install valgrind)');
    process.exit(2);
  }
  const dir = mkdtempSync(path.join(tmpdir(), 'kcp-instr-'));
  try {
    // Both pairs run the same driver (this tree's bench/kcp-pair.ts); only the Kcp class differs.
    const bundles = await Promise.all([path.join(here, 'src/kcp/index.ts'), kcpEntry].map(async (kcp, i) => {
      const entry = path.join(dir, `entry${i}.ts`);
      writeFileSync(entry, [
        `import { ourPairEnd, pairRun } from ${JSON.stringify(path.join(here, 'bench/kcp-pair.ts'))};`,
        `import { Kcp } from ${JSON.stringify(kcp)};`,
        'const [warmup, runs, loss] = process.argv.slice(2).map(Number);',
        `for (let i = 0; i < warmup + runs; i++) pairRun((o) => ourPairEnd(o, Kcp), ${MESSAGES}, loss, 7);`,
      ].join('\n'));
      const outfile = path.join(dir, `pair${i}.mjs`);
      await build({ entryPoints: [entry], bundle: true, platform: 'node', format: 'esm', outfile, logLevel: 'warning' });
      return outfile;
    }));
    const rows: string[][] = [];
    for (const loss of losses) {
      const perMessage: number[] = [];
      for (const bundle of bundles) {
        const [base, total] = await Promise.all([instructions(bundle, 0, loss), instructions(bundle, MEASURED, loss)]);
        perMessage.push((total - base) / (MEASURED * MESSAGES));
      }
      const [h, t] = perMessage as [number, number];
      rows.push([`${loss * 100}%`, Math.round(h).toLocaleString('en-US'), Math.round(t).toLocaleString('en-US'), `${(t / h).toFixed(3)}×`]);
    }
    console.log(`\nKcp pair (part b of bench:kcp), instructions per 1 KiB message, ${MEASURED} × ${MESSAGES.toLocaleString('en-US')} messages after ${WARMUP} warm-up runs\n`);
    console.log(table(['loss', 'this tree', other, `speed ratio (${other} / this tree)`], rows));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
