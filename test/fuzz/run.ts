// `npm run fuzz -- [N] [SEED]`: N inputs (default 10^6) spread over the netcode reader targets
// (netcode-harness.ts), printing per target what was checked: inputs by mode, accepted, rejected by
// reason, the slowest input (µs in the reader), and the heap before and after. Exits 1 at the first
// broken invariant, printing the target, the case seed and the input in hex.
// `npm run fuzz -- --case TARGET:CASE_SEED` replays one input.
import { nodeCrypto } from '../../src/adapters/node/node-crypto.js';
import { nobleCrypto } from '../../src/crypto/noble.js';
import { sodiumCrypto } from '../../src/crypto/sodium.js';
import {
  emptyStats, type FuzzFailure, microsQuantile, NETCODE_FUZZ_TARGETS, type NetcodeFuzzTarget, runNetcodeCase, runNetcodeFuzz,
} from './netcode-harness.js';

const providers = [nobleCrypto, nodeCrypto, await sodiumCrypto()];
const gc = (globalThis as { gc?: () => void }).gc;
const heapMiB = (): string => {
  gc?.();
  return (process.memoryUsage().heapUsed / 2 ** 20).toFixed(1);
};

function report(f: FuzzFailure, replay: string): never {
  console.log(`FAILED ${f.target} (${f.mode}), case seed ${f.caseSeed}: ${f.message}`);
  console.log(`  input (${f.inputHex.length / 2} bytes): ${f.inputHex}`);
  console.log(`  replay: ${replay}`);
  process.exit(1);
}

const args = process.argv.slice(2);
if (args[0] === '--case') {
  const [target, seed] = (args[1] ?? '').split(':');
  if (!NETCODE_FUZZ_TARGETS.includes(target as NetcodeFuzzTarget) || !/^\d+$/.test(seed ?? '')) {
    console.error(`usage: npm run fuzz -- --case TARGET:CASE_SEED (targets: ${NETCODE_FUZZ_TARGETS.join(', ')})`);
    process.exit(2);
  }
  const f = runNetcodeCase(target as NetcodeFuzzTarget, Number(seed), providers);
  if (f !== undefined) report(f, `npm run fuzz -- --case ${target}:${seed}`);
  console.log(`ok: ${target}:${seed} holds every invariant`);
  process.exit(0);
}

const inputs = Number(args[0] ?? 1_000_000);
const seed = Number(args[1] ?? Date.now() % 1_000_000_000);
if (!Number.isSafeInteger(inputs) || inputs < 1 || !Number.isSafeInteger(seed)) {
  console.error('usage: npm run fuzz -- [INPUTS] [SEED]   or   npm run fuzz -- --case TARGET:CASE_SEED');
  process.exit(2);
}
const heapBefore = heapMiB();
let heapPeak = process.memoryUsage().heapUsed;
const started = performance.now();
console.log(`netcode fuzz: ${inputs} inputs, seed ${seed}, providers ${providers.map((p) => p.name).join(', ')}${gc === undefined ? '' : ', heap after GC'}`);
const r = runNetcodeFuzz({
  seed, inputs, providers,
  onProgress: (done) => {
    heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    if (done % 1_000_000 === 0) process.stderr.write(`  ${done} / ${inputs} inputs, ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
  },
  progressEvery: 10_000,
});
const seconds = ((performance.now() - started) / 1000).toFixed(1);
for (const [target, s] of Object.entries(r.stats)) {
  const modes = Object.entries(s.modes).map(([k, v]) => `${k} ${v}`).join(', ');
  const drops = Object.entries(s.rejected).sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ');
  console.log(`${target}: ${s.inputs} inputs (${modes})`);
  console.log(`  accepted ${s.accepted}; rejected ${s.inputs - s.accepted} (${drops})`);
  // The slowest input timed again, 11 times: a maximum on a shared machine is mostly preemption and GC.
  const again = Array.from({ length: 11 }, () => {
    const t = emptyStats();
    runNetcodeCase(target as NetcodeFuzzTarget, s.slowestSeed, providers, t);
    return t.totalMicros;
  }).sort((x, y) => x - y);
  console.log(`  reader time per input: mean ${(s.totalMicros / Math.max(1, s.inputs)).toFixed(1)} µs, 99% ≤ ${microsQuantile(s, 0.99)} µs, `
    + `99.99% ≤ ${microsQuantile(s, 0.9999)} µs, max ${s.maxMicros.toFixed(0)} µs (${s.slowest}; case ${s.slowestSeed}, `
    + `timed again: median ${again[5]!.toFixed(0)} µs, max ${again[10]!.toFixed(0)} µs)`);
}
console.log(`heap: ${heapBefore} MiB before, ${heapMiB()} MiB after, peak sampled ${(heapPeak / 2 ** 20).toFixed(1)} MiB; ${r.inputs} inputs in ${seconds} s`);
if (r.failure !== undefined) report(r.failure, `npm run fuzz -- --case ${r.failure.target}:${r.failure.caseSeed}   (run: npm run fuzz -- ${inputs} ${seed})`);
console.log('ok: no input broke an invariant');
