/**
 * Prints the interpolation table of `bench:state` part 2 (bench/state/interp.ts) on its own.
 *
 *   npx tsx bench/state/interp-run.ts            (seeds 1–10, 120 s each, 5 cost runs per system)
 *   npx tsx bench/state/interp-run.ts --write    (also writes bench/results/state-interp.json)
 *   INTERP_SEEDS=3 INTERP_SECONDS=60 INTERP_COST_RUNS=3 npx tsx bench/state/interp-run.ts
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { interpTable, interpTargets, runInterpBench } from './interp.js';

const HERE = dirname(fileURLToPath(import.meta.url));

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
