// `npm run soak [-- MESSAGES [SEED]]`: the connection soak at length (default 10^7 messages), printing
// what it checked. Exits 1 on any failure. See soak.ts for what is checked.
import { runSoak } from './soak.js';

const messages = Number(process.argv[2] ?? 10_000_000);
const seed = Number(process.argv[3] ?? Date.now() % 1_000_000);
const started = performance.now();
let last = started;
const r = runSoak(seed, messages, (done) => {
  const now = performance.now();
  if (now - last > 10_000) {
    last = now;
    process.stderr.write(`soak: ${done} / ${messages} messages sent, ${((now - started) / 1000).toFixed(0)} s\n`);
  }
});
const s = ((performance.now() - started) / 1000).toFixed(1);
console.log(`soak seed=${r.seed} messages=${r.messages} virtual=${(r.virtualMs / 1000).toFixed(0)}s real=${s}s`);
console.log(`  reliable echoes checked (messages and blocks: once, intact, ordered on lane 0 and the block lane): ${r.reliableEchoed}`);
console.log(`  block outcomes checked (exactly one, delivered => arrived): ${r.blocksDelivered}`);
console.log(`  unreliable echoes checked (intact, never twice, sequenced never older): ${r.unreliableEchoed} of ${r.unreliableSent} sent`);
console.log(`  notify outcomes checked (exactly one, delivered => arrived): ${r.notifyDelivered} delivered, ${r.notifyLost} lost`);
if (r.failures.length > 0) {
  console.log(`FAILED (replay with: npm run soak -- ${messages} ${r.seed}):\n  ${r.failures.join('\n  ')}`);
  process.exit(1);
}
console.log('ok');
