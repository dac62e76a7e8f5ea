// `npm run soak:state [-- TICKS [SEED]]`: the state layer's soak at length (default 10^6 ticks), printing
// what it checked. Exits 1 on any failure. See state-soak.ts.
import { runStateSoak } from './state-soak.js';

const ticks = Number(process.argv[2] ?? 1_000_000);
const seed = Number(process.argv[3] ?? Date.now() % 1_000_000);
const started = performance.now();
let last = started;
// A calm (and its convergence check) every 5,000 ticks, or ten in a shorter run.
const calmEvery = Math.min(5000, Math.max(100, Math.floor(ticks / 10)));
const r = runStateSoak(seed, ticks, (done) => {
  const now = performance.now();
  if (now - last > 10_000) {
    last = now;
    process.stderr.write(`soak:state: ${done} / ${ticks} ticks, ${((now - started) / 1000).toFixed(0)} s\n`);
  }
}, calmEvery);
console.log(`soak:state seed=${r.seed} ticks=${r.ticks} real=${((performance.now() - started) / 1000).toFixed(1)}s`);
console.log(`  entities spawned ${r.spawned}, despawned ${r.despawned}, at most ${r.maxAlive} alive`);
console.log(`  snapshots applied ${r.snapshots}, lost ${r.lost}`);
console.log(`  convergence checks (client holds exactly the server's entities and values): ${r.calmChecks}`);
console.log(`  client memory: at most ${r.maxClientRecords} snapshots kept, ${r.maxClientVisible} entities tracked`);
if (r.failures.length > 0) {
  console.log(`FAILED (replay with: npm run soak:state -- ${ticks} ${r.seed}):\n  ${r.failures.join('\n  ')}`);
  process.exit(1);
}
console.log('ok');
