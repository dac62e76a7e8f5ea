/**
 * A/B of this checkout's `Kcp` against another checkout's, in ONE process (a dev tool, not a bench
 * of record: it writes nothing). The pair of part b of bench:kcp (bench/kcp-pair.ts), in short runs
 * that alternate between the two trees, so the noise of a shared machine (a plain loop varies 10x
 * here from one process to the next) hits both alike. Prints the medians and the median of the per-pair ratios.
 *
 *   git worktree add /tmp/base fac1af6 && ln -s "$PWD/node_modules" /tmp/base/node_modules
 *   npm run bench:kcp-ab -- /tmp/base            (0 % and 10 % loss)
 *   KCP_AB_PAIRS=80 npm run bench:kcp-ab -- /tmp/base 0.05
 */
import { pathToFileURL } from 'node:url';
import { Kcp } from '../src/kcp/index.js';
import { checkoutArgs, ourPairEnd, pairRun } from './kcp-pair.js';
import { table } from './readme.js';

type KcpClass = typeof Kcp;

const MESSAGES = 20_000;

/** Messages per wall-clock second of one run of part b's pair on `K`. */
function pairRate(K: KcpClass, loss: number): number {
  return MESSAGES / (pairRun((out) => ourPairEnd(out, K), MESSAGES, loss, 7).wallMs / 1000);
}

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((x, y) => x - y);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

async function main(): Promise<void> {
  const { other, kcpEntry, losses } = checkoutArgs('bench:kcp-ab');
  const pairs = Number(process.env.KCP_AB_PAIRS ?? 40);
  if (!(Number.isInteger(pairs) && pairs > 0)) {
    console.error('KCP_AB_PAIRS must be a positive integer');
    process.exit(2);
  }
  const mod = (await import(pathToFileURL(kcpEntry).href)) as { Kcp: KcpClass };
  const trees: KcpClass[] = [Kcp, mod.Kcp];
  const rows: string[][] = [];
  for (const loss of losses) {
    for (let i = 0; i < 3; i++) for (const K of trees) pairRate(K, loss); // warm up both JITs
    const here: number[] = [];
    const there: number[] = [];
    const ratio: number[] = [];
    for (let i = 0; i < pairs; i++) {
      const first = i % 2;
      const x = pairRate(trees[first]!, loss);
      const y = pairRate(trees[1 - first]!, loss);
      const [h, t] = first === 0 ? [x, y] : [y, x];
      here.push(h);
      there.push(t);
      ratio.push(h / t);
    }
    const k = (v: number): string => `${Math.round(v / 1000).toLocaleString('en-US')}k`;
    rows.push([
      `${loss * 100}%`,
      k(quantile(here, 0.5)),
      k(quantile(there, 0.5)),
      `${quantile(ratio, 0.5).toFixed(2)}×`,
      `${quantile(ratio, 0.25).toFixed(2)}–${quantile(ratio, 0.75).toFixed(2)}`,
    ]);
  }
  console.log(`\nKcp pair, ${MESSAGES.toLocaleString('en-US')} × 1 KiB per run, ${pairs} alternating pairs of runs per row (wall clock)\n`);
  console.log(table(['loss', 'this tree msg/s', `${other} msg/s`, 'median ratio', 'ratio p25–p75'], rows));
}

await main();
