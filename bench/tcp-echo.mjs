// Kernel TCP echo for bench/latency.bench.ts part 4 (the baseline beside `gamewire echo`).
//   node bench/tcp-echo.mjs listen HOST PORT
//   node bench/tcp-echo.mjs connect HOST PORT COUNT INTERVAL_MS SIZE
// The client sends COUNT messages of SIZE bytes (u32 LE index first, as gamewire echo) every INTERVAL_MS on one
// socket with setNoDelay(true), checks every echo (in order, intact) and prints the same `rtt_ms …` line as
// `gamewire echo` (nearest-rank percentiles), then `rtts a,b,c…` (every sample, ms).
import { createConnection, createServer } from 'node:net';
import { performance } from 'node:perf_hooks';

const [mode, host, portText, ...rest] = process.argv.slice(2);
const port = Number(portText);

if (mode === 'listen') {
  const server = createServer((s) => {
    s.setNoDelay(true);
    s.on('data', (d) => s.write(d));
    s.on('error', () => s.destroy());
  });
  server.listen(port, host, () => process.stderr.write(`tcp echo listening on ${host}:${port}\n`));
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
} else if (mode === 'connect') {
  const [count, intervalMs, size] = rest.map(Number);
  const payload = (i) => {
    const b = Buffer.alloc(size);
    for (let j = 0; j < size; j++) b[j] = j < 4 ? (i >>> (8 * j)) & 0xff : (i * 31 + j * 7 + 1) & 0xff;
    return b;
  };
  const sentAt = [];
  const rtts = [];
  let pending = Buffer.alloc(0);
  let bytesOut = 0;
  let writes = 0;
  const fail = (why) => {
    process.stderr.write(`tcp echo: FAILED: ${why}\n`);
    process.exit(1);
  };
  const s = createConnection({ host, port }, () => {
    s.setNoDelay(true);
    let sent = 0;
    const sendOne = () => {
      if (sent >= count) return;
      sentAt[sent] = performance.now();
      const b = payload(sent);
      s.write(b);
      bytesOut += b.length;
      writes++;
      sent++;
    };
    sendOne();
    const ticker = setInterval(() => {
      sendOne();
      if (sent >= count) clearInterval(ticker);
    }, Math.max(1, intervalMs));
  });
  const watchdog = setTimeout(() => fail(`timeout (${rtts.length}/${count} echoed)`), count * intervalMs + 60_000);
  s.on('error', (e) => fail(e.message));
  s.on('data', (d) => {
    const now = performance.now();
    pending = pending.length === 0 ? d : Buffer.concat([pending, d]);
    while (pending.length >= size) {
      const m = pending.subarray(0, size);
      pending = pending.subarray(size);
      const i = rtts.length;
      if (!m.equals(payload(i))) fail(`echo ${i} differs or out of order`);
      rtts.push(now - sentAt[i]);
    }
    if (rtts.length === count) {
      clearTimeout(watchdog);
      const sorted = [...rtts].sort((a, b) => a - b);
      const pct = (p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
      const avg = sorted.reduce((a, b) => a + b, 0) / sorted.length;
      const f = (x) => x.toFixed(2);
      process.stdout.write(
        `rtt_ms avg=${f(avg)} p50=${f(pct(50))} p99=${f(pct(99))} max=${f(sorted.at(-1))} ` +
          `bytes_per_msg=${(bytesOut / count).toFixed(1)} writes_per_msg=${(writes / count).toFixed(2)}\n`,
      );
      process.stdout.write(`rtts ${rtts.map((x) => x.toFixed(2)).join(',')}\n`);
      s.end();
      s.on('close', () => process.exit(0));
    }
  });
} else {
  process.stderr.write('usage: tcp-echo.mjs listen HOST PORT | connect HOST PORT COUNT INTERVAL_MS SIZE\n');
  process.exit(2);
}
