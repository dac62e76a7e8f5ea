/**
 * Prints the interpolation table of `bench:state` part 2 (bench/state/interp.ts).
 *
 *   npx tsx bench/state/interp-run.ts            (seeds 1–10, 120 s each, 5 cost runs per system)
 *   npx tsx bench/state/interp-run.ts --write    (also writes bench/results/state-interp.json)
 *   INTERP_SEEDS=3 INTERP_SECONDS=60 INTERP_COST_RUNS=3 npx tsx bench/state/interp-run.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { table } from '../readme.js';
import { runInterpBench, type InterpBenchResult } from './interp.js';

const HERE = dirname(fileURLToPath(import.meta.url));

/** The table as markdown: one row per system and scenario. */
export function interpTable(res: InterpBenchResult): string {
  const f = (x: number, d = 1): string => (Number.isFinite(x) ? x.toFixed(d) : '–');
  return table(
    ['system', 'one way 50 ms ±', 'stalled frames %', 'extrapolated %', 'longest stall ms', 'display delay ms (sd)', 'RMS err mm', 'p99 err mm', 'shape RMS mm', 'RMS after 10 s mm', 'backward jumps / run', '900 entities ms / frame'],
    res.rows.map((r) => [
      r.system,
      r.scenario,
      f(r.stalledPct, 3),
      f(r.extrapolatedPct, 2),
      f(r.longestStallMs, 0),
      `${f(r.meanDelayMs, 0)} (${f(r.sdDelayMs, 1)})`,
      f(r.rmsMm, 1),
      f(r.p99Mm, 0),
      f(r.shapeRmsMm, 1),
      f(r.settledRmsMm, 1),
      f(r.backwardJumps, 1),
      f(r.frameMs900, 3),
    ]),
  );
}

/** The targets for gamewire's rows, each with what was measured and whether it is met. */
export function interpTargets(res: InterpBenchResult): string[] {
  const gw = res.rows.filter((r) => r.system === 'gamewire' && r.scenario.includes('loss') && !r.scenario.startsWith('0'));
  const lines: string[] = [];
  const mark = (ok: boolean): string => (ok ? 'met' : 'MISSED');
  for (const r of gw) {
    const ok = r.stalledPct <= 0.15 && r.meanDelayMs <= 150;
    lines.push(`target stalls ≤ 0.15 % at display delay ≤ 150 ms, ${r.scenario}: ${r.stalledPct.toFixed(3)} % at ${r.meanDelayMs.toFixed(0)} ms: ${mark(ok)}`);
  }
  for (const r of gw.filter((x) => x.scenario.startsWith('±40'))) lines.push(`target RMS error ≤ 25 mm at ±40 ms: ${r.rmsMm.toFixed(1)} mm: ${mark(r.rmsMm <= 25)}`);
  const back = Math.max(...res.rows.filter((r) => r.system === 'gamewire').map((r) => r.backwardJumps));
  lines.push(`target zero backward clock jumps: ${back}: ${mark(back === 0)}`);
  const cost = res.cost.find((c) => c.system === 'gamewire');
  if (cost !== undefined) lines.push(`target ≤ 0.2 ms per frame for 900 entities: ${cost.medianMs.toFixed(3)} ms: ${mark(cost.medianMs <= 0.2)}`);
  return lines;
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  const n = Number(process.env.INTERP_SEEDS ?? 10);
  const started = Date.now();
  const res = runInterpBench({
    seeds: Array.from({ length: n }, (_, i) => i + 1),
    seconds: Number(process.env.INTERP_SECONDS ?? 120),
    costRuns: Number(process.env.INTERP_COST_RUNS ?? 5),
  });
  const c = res.config;
  console.log(
    `interpolation: server ${1000 / c.tickMs} Hz, client ${c.fps} fps, one way ${c.baseOneWayMs} ms ± J uniform, ` +
      `seeds ${c.seeds[0]}–${c.seeds[c.seeds.length - 1]}, ${c.seconds} s each; path ${res.path.minSpeed.toFixed(1)}–` +
      `${res.path.maxSpeed.toFixed(1)} m/s, up to ${res.path.maxAccel.toFixed(0)} m/s²; means over seeds (longest stall: max)\n`,
  );
  console.log(interpTable(res));
  console.log(`\n${interpTargets(res).join('\n')}`);
  for (const cst of res.cost) {
    console.log(
      `\n${cst.system}: 900 entities, per-frame median ${cst.medianMs.toFixed(3)} ms (runs ${cst.runsMs.map((x) => x.toFixed(3)).join(', ')}); ` +
        `per snapshot taken in ${cst.ingestMedianMs.toFixed(3)} ms`,
    );
  }
  console.log(`\n${cpus()[0]?.model ?? '?'} × ${cpus().length}, Node ${process.version}, ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (process.argv.includes('--write')) {
    const file = join(HERE, '..', 'results', 'state-interp.json');
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, `${JSON.stringify({ node: process.version, cpu: cpus()[0]?.model, ...res }, null, 1)}\n`);
    console.log(`wrote ${file}`);
  }
}
