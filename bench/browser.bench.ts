/**
 * `npm run bench:browser` (root, Debian's chromium): a browser's echo RTT over a real lossy path.
 * Chromium in one network namespace, the Node server (bench/browser-server.ts) in another, joined
 * by linkem.py: 50 ms one way (100 ms RTT), 10 % loss each way, 10 Mbit/s. In turn, in one run:
 * gamewire over WebRTC (reliable-ordered lane), a WebSocket (kernel TCP), geckos.io 3.1.0's reliable
 * messages; one 100-byte message every 20 ms, echoed; and a 16 MiB block browser → server on the
 * gamewire block lane against the link's floor. Writes the "## browser" section of bench/README.md
 * and bench/results/browser.json.
 *   BROWSER_BENCH_COUNT (default 500) messages per run, BROWSER_BENCH_ROUNDS (default 3) rounds,
 *   BROWSER_BENCH_BLOCK=0 skips the block, BROWSER_BENCH_SYSTEMS=gamewire,raw runs only those (of
 *   gamewire, websocket, geckos, raw); with any of these set nothing is written.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADDR_B, LinkedNamespaces, sleep } from './linkem.js';
import { table, writeReadmeSection } from './readme.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const NS_A = 'gwbr-a';
const NS_B = 'gwbr-b';
const COUNT = Number(process.env.BROWSER_BENCH_COUNT ?? 500);
const ROUNDS = Number(process.env.BROWSER_BENCH_ROUNDS ?? 3);
const BLOCK = process.env.BROWSER_BENCH_BLOCK !== '0';
const WRITE = process.env.BROWSER_BENCH_COUNT === undefined && process.env.BROWSER_BENCH_ROUNDS === undefined
  && process.env.BROWSER_BENCH_SYSTEMS === undefined && BLOCK;
const LINK = '50 ms one way (100 ms RTT), 10 % loss each way, 10 Mbit/s (linkem.py, queue 200 ms)';
const ALL_SYSTEMS = ['gamewire', 'websocket', 'geckos', 'raw'] as const;
type System = (typeof ALL_SYSTEMS)[number];
const SYSTEMS = (process.env.BROWSER_BENCH_SYSTEMS?.split(',') ?? ALL_SYSTEMS) as readonly System[];
for (const s of SYSTEMS) {
  if (!(ALL_SYSTEMS as readonly string[]).includes(s)) {
    console.error(`BROWSER_BENCH_SYSTEMS: unknown system "${s}" (give some of ${ALL_SYSTEMS.join(', ')}, comma-separated)`);
    process.exit(2);
  }
}
const LABEL: Record<System, string> = {
  gamewire: 'gamewire over WebRTC, reliable-ordered',
  websocket: 'WebSocket (kernel TCP)',
  geckos: 'geckos.io 3.1.0, reliable messages',
  raw: 'bare data channel, unreliable (no resend)',
};
const BLOCK_BYTES = 16 << 20;

interface Run {
  system: string;
  round: number;
  sent: number;
  missing: number;
  avg: number;
  p50: number;
  p99: number;
  max: number;
  ipBytesPerMsg: number;
  ipPacketsPerMsg: number;
  blockMs?: number;
  blockAckedBytes?: number;
  error?: string;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
const f1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : '—');

function summarise(round: number, line: string): Run {
  const j = JSON.parse(line) as {
    system: string; sent: number; rtts: number[]; missing: number; ipBytes: number; ipPackets: number; blockMs?: number; blockAckedBytes?: number; error?: string;
  };
  const r = [...j.rtts].sort((a, b) => a - b);
  const run: Run = {
    system: j.system, round, sent: j.sent, missing: j.missing,
    avg: r.reduce((a, b) => a + b, 0) / Math.max(1, r.length), p50: pct(r, 0.5), p99: pct(r, 0.99), max: r[r.length - 1] ?? NaN,
    ipBytesPerMsg: j.ipBytes / j.sent, ipPacketsPerMsg: j.ipPackets / j.sent,
  };
  if (j.blockMs !== undefined) run.blockMs = j.blockMs;
  if (j.blockAckedBytes !== undefined) run.blockAckedBytes = j.blockAckedBytes;
  if (j.error !== undefined) run.error = j.error;
  return run;
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const load0 = loadavg()[0]!;
  if (!existsSync('/usr/bin/chromium')) throw new Error('needs /usr/bin/chromium (apt-get install chromium)');
  const runs: Run[] = [];
  let tcpCc = '?';
  const seconds = ROUNDS * (SYSTEMS.length * (COUNT * 0.02 + 80)) + (BLOCK ? 2 * 260 : 0) + 120;
  const link = await LinkedNamespaces.open(NS_A, NS_B, ['--delay-ms', '50', '--loss', '0.1', '--rate-mbit', '10', '--seed', '1'], seconds);
  try {
    const cc = (ns: string): Promise<string> => link.run(ns, ['cat', '/proc/sys/net/ipv4/tcp_congestion_control'], 5000).then((o) => o.trim());
    tcpCc = [...new Set([await cc(NS_A), await cc(NS_B)])].join(' / ');
    let ready = false;
    const server = link.start(NS_B, ['node', '--import', 'tsx', join(HERE, 'browser-server.ts'), ADDR_B], (l) => {
      if (l.startsWith('ready')) ready = true;
    });
    for (let i = 0; !ready; i++) {
      if (server.exitCode !== null || i > 600) throw new Error('bench/browser-server.ts did not start');
      await sleep(100);
    }
    const client = (systems: string): Promise<string> =>
      link.run(NS_A, ['node', '--import', 'tsx', join(HERE, 'browser-client.ts'), ADDR_B, String(COUNT), systems], 900_000);
    for (let round = 0; round < ROUNDS; round++) {
      // Rotate the order: a system is not always first after the page load.
      const order = SYSTEMS.map((_, i) => SYSTEMS[(i + round) % SYSTEMS.length]!);
      for (const system of order) {
        try {
          const out = await client(system);
          const run = summarise(round, out.trim().split('\n').at(-1)!);
          runs.push(run);
          console.error(`round ${round + 1} ${system}: avg ${f1(run.avg)} p50 ${f1(run.p50)} p99 ${f1(run.p99)} max ${f1(run.max)} ms, missing ${run.missing}${run.error ? `, ${run.error}` : ''}`);
        } catch (e) {
          runs.push({ system, round, sent: COUNT, missing: COUNT, avg: NaN, p50: NaN, p99: NaN, max: NaN, ipBytesPerMsg: NaN, ipPacketsPerMsg: NaN, error: (e as Error).message });
          console.error(`round ${round + 1} ${system}: ${(e as Error).message}`);
        }
      }
    }
    for (const system of BLOCK ? ['block', 'block-ws'] : []) {
      try {
        const run = summarise(0, (await client(system)).trim().split('\n').at(-1)!);
        runs.push(run);
        console.error(`${system}: ${f1((run.blockMs ?? NaN) / 1000)} s, ${f1((run.blockAckedBytes ?? 0) / 2 ** 20)} MiB${run.error ? `, ${run.error}` : ''}`);
      } catch (e) {
        runs.push({ system, round: 0, sent: 1, missing: 1, avg: NaN, p50: NaN, p99: NaN, max: NaN, ipBytesPerMsg: NaN, ipPacketsPerMsg: NaN, error: (e as Error).message });
      }
    }
  } finally {
    link.cleanup();
  }

  const agg = (s: System): { avg: number; p50: number; p99: number; max: number; bytes: number; missing: number } => {
    const rs = runs.filter((r) => r.system === s && r.error === undefined);
    return {
      avg: median(rs.map((r) => r.avg)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), max: median(rs.map((r) => r.max)),
      bytes: median(rs.map((r) => r.ipBytesPerMsg)), missing: rs.reduce((a, r) => a + r.missing, 0),
    };
  };
  const gw = agg('gamewire');
  const ws = agg('websocket');
  const gk = agg('geckos');
  const echoRows = runs.filter((r) => !r.system.startsWith('block')).map((r) => [
    LABEL[r.system as System], r.round + 1, f1(r.avg), f1(r.p50), f1(r.p99), f1(r.max), r.missing, f1(r.ipBytesPerMsg), r.ipPacketsPerMsg.toFixed(2), r.error ?? '',
  ]);
  const medRows = SYSTEMS.map((s) => {
    const a = agg(s);
    return [LABEL[s], f1(a.avg), f1(a.p50), f1(a.p99), f1(a.max), f1(a.bytes)];
  });
  const p99Ratio = gw.p99 / ws.p99;
  const verdicts = [
    `- p99 ≤ 0.5 × WebSocket's: gamewire ${f1(gw.p99)} ms / WebSocket ${f1(ws.p99)} ms = ${p99Ratio.toFixed(2)}×: ${p99Ratio <= 0.5 ? 'met' : '**missed**'}.`,
    `- avg ≤ geckos.io's at no more bytes per message: gamewire ${f1(gw.avg)} ms and ${f1(gw.bytes)} B/msg, geckos.io ${f1(gk.avg)} ms and ${f1(gk.bytes)} B/msg: ` +
      `${gw.avg <= gk.avg && gw.bytes <= gk.bytes ? 'met' : '**missed**'}.`,
  ];
  const floorMs = ((BLOCK_BYTES * 8) / 10e6 / 0.9) * 1000;
  const blockLine = (r: Run | undefined, what: string): string => {
    if (r === undefined) return `${what}: not run.`;
    if (r.error !== undefined) return `${what}: ${r.error}.`;
    const mib = (r.blockAckedBytes ?? 0) / 2 ** 20;
    const rate = `${f1(((r.blockAckedBytes ?? 0) * 8) / ((r.blockMs ?? 1) * 1000))} Mbit/s`;
    return `${what}: ${r.missing === 0 ? `${f1((r.blockMs ?? NaN) / 1000)} s (${rate}), ${((r.blockMs ?? NaN) / floorMs).toFixed(2)}× the floor`
      : `not delivered within 180 s (${f1(mib)} MiB acknowledged: ${rate})`}; ${f1(r.ipBytesPerMsg / 1e6)} MB of IP sent by the browser.`;
  };
  const blockText = [
    `16 MiB browser → server; the link's floor (16 MiB at 10 Mbit/s × 0.9 for the loss) is ${f1(floorMs / 1000)} s.`,
    '',
    `- ${blockLine(runs.find((r) => r.system === 'block'), 'gamewire block lane over WebRTC')}`,
    `- ${blockLine(runs.find((r) => r.system === 'block-ws'), 'the same bytes over the WebSocket (64 KiB messages, counted by the server)')}`,
    '',
    'The data channel runs SCTP\'s congestion control under our own pacing, and SCTP halves its window on every loss: at 10 % loss it,',
    `not the link, sets the block lane's rate. Kernel TCP here runs ${tcpCc}${tcpCc.includes('bbr') ? ', which does not take random loss for congestion' : ''}.`,
  ];
  const text = [
    '## browser',
    '',
    '`npm run bench:browser` (bench/browser.bench.ts; raw figures in bench/results/browser.json). Root and Debian\'s chromium.',
    '',
    `Headless Chromium (playwright-core) in one network namespace, the Node server (bench/browser-server.ts) in another, joined by linkem.py: ${LINK}, `,
    `the same real loss for every system. One 100-byte message every 20 ms, ${COUNT} per run, echoed by the server; RTT per message from send to its`,
    'echo in the page (`performance.now()`). Each system in turn, the order rotated each round. B/msg = IP bytes the browser\'s namespace sent during',
    'the run, per message (handshakes and page load excluded). geckos.io sends each reliable message as JSON, again every 150 ms (10 times);',
    `the WebSocket and gamewire send 100 bytes once. The kernel's TCP congestion control in both namespaces: ${tcpCc}. The bare data channel row is no protocol of ours: the same messages on an unordered channel`,
    'without retransmission, echoed by node-datachannel; its lost messages are "missing" and its RTTs are those of the messages that arrived, i.e.',
    'what the data channel itself adds to a delivered datagram.',
    '',
    table(['system', 'round', 'avg ms', 'p50 ms', 'p99 ms', 'max ms', 'missing', 'B/msg', 'IP packets/msg', 'error'], echoRows),
    '',
    `Medians over rounds:`,
    '',
    table(['system', 'avg ms', 'p50 ms', 'p99 ms', 'max ms', 'B/msg'], medRows),
    '',
    'Targets:',
    ...verdicts,
    '',
    ...blockText,
    '',
    `Machine: ${cpus()[0]?.model ?? 'unknown'} × ${cpus().length}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version}; ` +
      `${new Date(t0).toISOString().slice(0, 10)}; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end; bench took ${((Date.now() - t0) / 1000).toFixed(0)} s.`,
  ].join('\n');
  console.log(text);
  if (!WRITE) return;
  writeFileSync(join(HERE, 'results', 'browser.json'), `${JSON.stringify({ date: new Date(t0).toISOString(), link: LINK, count: COUNT, runs }, null, 1)}\n`);
  writeReadmeSection('## browser', `${text}\n`);
}

await main();
