/**
 * `npm run bench:browser` (root, Debian's chromium): a browser's echo RTT over a real lossy path.
 * Chromium in one network namespace, the Node server (bench/browser-server.ts) in another, joined
 * by linkem.py: 50 ms one way (100 ms RTT), 10 Mbit/s, and in one invocation two sections: 10 % and
 * 1 % loss each way. In turn, per section: gamewire over WebRTC and over its WebSocket transport (a
 * reliable-ordered lane each), a plain WebSocket (kernel TCP), geckos.io 3.1.0's reliable messages and
 * a bare data channel; one 100-byte message every 20 ms, echoed; then a 16 MiB upload browser → server
 * and a 16 MiB download server → browser on the gamewire block lane over each transport and over the
 * plain WebSocket, against the link's floor. Writes the "## browser" section of bench/README.md and
 * bench/results/browser.json.
 *   BROWSER_BENCH_COUNT (default 500) messages per run; BROWSER_BENCH_ROUNDS (default 10 for gamewire,
 *   gamewire-latency, gamewire-ws and websocket, 3 for geckos and raw) rounds; BROWSER_BENCH_BLOCK=0 skips the blocks;
 *   BROWSER_BENCH_SYSTEMS=gamewire,raw runs only those (of gamewire, gamewire-latency (a gateway with
 *   webrtcFavor 'latency', the browser riding twice), gamewire-ws, websocket, geckos, raw; an upload and
 *   a download run for each of gamewire, gamewire-ws, websocket chosen); BROWSER_BENCH_LOSS=0.1
 *   (a fraction, or several comma-separated) only that loss; BROWSER_BENCH_WS_RATE=adaptive:50 (AdaptiveRate
 *   aiming at a 50 ms queue) or fixed:12500000 (FixedRate, bytes/s) is the rate controller of gamewire's
 *   client over its WebSocket transport instead of the path's own; BROWSER_BENCH_SPLIT=webrtc or websocket sends
 *   the echoes of gamewire's uploads on a second connection over that transport (its own token and slot),
 *   the block alone on the first; BROWSER_BENCH_BULK=0 keeps gamewire's block lane on the connection's
 *   transport (by default an upload's client opens a WebSocket of its own for it, `ConnectOptions.bulk`);
 *   BROWSER_BENCH_SERVER_REDUNDANCY=2 gives the server's lanes that `channels.redundancy` (over WebRTC the
 *   default is 1). With any of these set nothing is written.
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
const ENV = process.env;
const COUNT = Number(ENV.BROWSER_BENCH_COUNT ?? 500);
const BLOCK = ENV.BROWSER_BENCH_BLOCK !== '0';
const LOSSES = (ENV.BROWSER_BENCH_LOSS?.split(',') ?? ['0.1', '0.01']).map(Number);
const WS_RATE = ENV.BROWSER_BENCH_WS_RATE;
const SPLIT = ENV.BROWSER_BENCH_SPLIT;
const BULK = ENV.BROWSER_BENCH_BULK !== '0' && SPLIT === undefined;
const WRITE = ENV.BROWSER_BENCH_COUNT === undefined && ENV.BROWSER_BENCH_ROUNDS === undefined && ENV.BROWSER_BENCH_SYSTEMS === undefined
  && ENV.BROWSER_BENCH_LOSS === undefined && BLOCK && WS_RATE === undefined && SPLIT === undefined && ENV.BROWSER_BENCH_BULK === undefined
  && ENV.BROWSER_BENCH_SERVER_REDUNDANCY === undefined;
const ALL_SYSTEMS = ['gamewire', 'gamewire-latency', 'gamewire-ws', 'websocket', 'geckos', 'raw'] as const;
type System = (typeof ALL_SYSTEMS)[number];
const SYSTEMS = (ENV.BROWSER_BENCH_SYSTEMS?.split(',') ?? ALL_SYSTEMS) as readonly System[];
for (const s of SYSTEMS) {
  if (!(ALL_SYSTEMS as readonly string[]).includes(s)) {
    console.error(`BROWSER_BENCH_SYSTEMS: unknown system "${s}" (give some of ${ALL_SYSTEMS.join(', ')}, comma-separated)`);
    process.exit(2);
  }
}
for (const l of LOSSES) {
  if (!(l >= 0 && l < 1)) {
    console.error(`BROWSER_BENCH_LOSS: "${ENV.BROWSER_BENCH_LOSS}" is not a fraction in [0, 1) (or several, comma-separated)`);
    process.exit(2);
  }
}
if (WS_RATE !== undefined && !/^(adaptive:\d+(\.\d+)?|fixed:\d+)$/.test(WS_RATE)) {
  console.error(`BROWSER_BENCH_WS_RATE: "${WS_RATE}" is neither adaptive:MS (the target queue, ms) nor fixed:BYTES_PER_SEC`);
  process.exit(2);
}
if (ENV.BROWSER_BENCH_BULK !== undefined && ENV.BROWSER_BENCH_BULK !== '0' && ENV.BROWSER_BENCH_BULK !== '1') {
  console.error(`BROWSER_BENCH_BULK: "${ENV.BROWSER_BENCH_BULK}" is neither 0 (the block lane on the connection's transport) nor 1 (on a WebSocket of its own, the default)`);
  process.exit(2);
}
if (ENV.BROWSER_BENCH_SERVER_REDUNDANCY !== undefined && !/^[0-3]$/.test(ENV.BROWSER_BENCH_SERVER_REDUNDANCY)) {
  console.error(`BROWSER_BENCH_SERVER_REDUNDANCY: "${ENV.BROWSER_BENCH_SERVER_REDUNDANCY}" is not a ride count 0..3`);
  process.exit(2);
}
if (SPLIT !== undefined && SPLIT !== 'webrtc' && SPLIT !== 'websocket') {
  console.error(`BROWSER_BENCH_SPLIT: "${SPLIT}" is neither webrtc nor websocket`);
  process.exit(2);
}
/** Rounds per system: the targets' systems run enough for "every run" to mean something; geckos.io takes ~30 s a run. */
const DEFAULT_ROUNDS: Record<System, number> = { gamewire: 10, 'gamewire-latency': 10, 'gamewire-ws': 10, websocket: 10, geckos: 3, raw: 3 };
const roundsOf = (s: System): number => (ENV.BROWSER_BENCH_ROUNDS === undefined ? DEFAULT_ROUNDS[s] : Number(ENV.BROWSER_BENCH_ROUNDS));
const LABEL: Record<string, string> = {
  gamewire: 'gamewire over WebRTC, reliable-ordered',
  'gamewire-latency': 'gamewire over WebRTC, webrtcFavor \'latency\' (2 rides each way), reliable-ordered',
  'gamewire-ws': 'gamewire over its WebSocket transport, reliable-ordered',
  websocket: 'WebSocket (kernel TCP)',
  geckos: 'geckos.io 3.1.0, reliable messages',
  raw: 'bare data channel, unreliable (no resend)',
  block: BULK ? 'gamewire block lane, WebRTC client (the lane on a WebSocket of its own)' : 'gamewire block lane over WebRTC',
  'block-gamewire-ws': BULK ? 'gamewire block lane, WebSocket client (the lane on a second WebSocket)' : 'gamewire block lane over its WebSocket transport',
  'block-ws': 'WebSocket (kernel TCP), 64 KiB messages',
};
for (const k of ['block', 'block-gamewire-ws', 'block-ws']) LABEL[k.replace('block', 'block-down')] = LABEL[k]!;
if (WS_RATE !== undefined) for (const k of ['gamewire-ws', 'block-gamewire-ws']) LABEL[k] += ` (rate controller ${WS_RATE})`;
if (ENV.BROWSER_BENCH_SERVER_REDUNDANCY !== undefined) LABEL.gamewire += ` (server redundancy ${ENV.BROWSER_BENCH_SERVER_REDUNDANCY})`;
if (SPLIT !== undefined) for (const k of ['block', 'block-gamewire-ws', 'block-down', 'block-down-gamewire-ws']) LABEL[k] += `, echoes on a second connection over ${SPLIT}`;
/** The upload and download runs for each echo system that has them. */
const BLOCK_OF: Partial<Record<System, string[]>> = {
  gamewire: ['block', 'block-down'], 'gamewire-ws': ['block-gamewire-ws', 'block-down-gamewire-ws'], websocket: ['block-ws', 'block-down-ws'],
};
const isDownload = (system: string): boolean => system.startsWith('block-down');
const BLOCK_BYTES = 16 << 20;
const pctText = (loss: number): string => `${+(loss * 100).toFixed(2)} %`;
const linkText = (loss: number): string => `50 ms one way (100 ms RTT), ${pctText(loss)} loss each way, 10 Mbit/s (linkem.py, queue 200 ms)`;

interface Run {
  loss: number;
  system: string;
  round: number;
  sent: number;
  missing: number;
  connectMs: number;
  avg: number;
  p50: number;
  p99: number;
  max: number;
  /** Largest gap between consecutive echo arrivals in the page, less the 20 ms send interval (ms). */
  stallMs: number;
  /** IP bytes and packets the browser's namespace sent during the run, per message (an upload: per upload). */
  ipBytesPerMsg: number;
  ipPacketsPerMsg: number;
  /** The same for the server's namespace. */
  serverIpBytesPerMsg: number;
  serverIpPacketsPerMsg: number;
  blockMs?: number;
  blockAckedBytes?: number;
  /** Echoes on the same connection during an upload: sent, unanswered, p99 RTT (ms). */
  duringSent?: number;
  duringMissing?: number;
  duringP99?: number;
  error?: string;
}

function median(xs: readonly number[]): number {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const pct = (sorted: readonly number[], p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
const f0 = (x: number): string => (Number.isFinite(x) ? x.toFixed(0) : '—');
const f1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : '—');
const f2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '—');
const num = (x: number | null | undefined): number => (typeof x === 'number' ? x : NaN);
const verdict = (ok: boolean): string => (ok ? 'met' : '**missed**');

function summarise(loss: number, round: number, line: string): Run {
  const j = JSON.parse(line) as {
    system: string; sent: number; rtts: number[]; missing: number; stallMs: number | null; connectMs?: number | null; ipBytes: number; ipPackets: number;
    serverIpBytes: number | null; serverIpPackets: number | null; blockMs?: number; blockAckedBytes?: number; duringRtts?: number[]; duringSent?: number;
    duringMissing?: number; error?: string;
  };
  const r = [...j.rtts].sort((a, b) => a - b);
  const run: Run = {
    loss, system: j.system, round, sent: j.sent, missing: j.missing, connectMs: num(j.connectMs),
    avg: r.length === 0 ? NaN : r.reduce((a, b) => a + b, 0) / r.length, p50: pct(r, 0.5), p99: pct(r, 0.99), max: r[r.length - 1] ?? NaN,
    stallMs: j.rtts.length < 2 ? NaN : num(j.stallMs), ipBytesPerMsg: j.ipBytes / j.sent, ipPacketsPerMsg: j.ipPackets / j.sent,
    serverIpBytesPerMsg: num(j.serverIpBytes) / j.sent, serverIpPacketsPerMsg: num(j.serverIpPackets) / j.sent,
  };
  if (j.blockMs !== undefined) run.blockMs = j.blockMs;
  if (j.blockAckedBytes !== undefined) run.blockAckedBytes = j.blockAckedBytes;
  if (j.duringRtts !== undefined) {
    run.duringSent = j.duringSent ?? 0;
    run.duringMissing = j.duringMissing ?? 0;
    run.duringP99 = pct([...j.duringRtts].sort((a, b) => a - b), 0.99);
  }
  if (j.error !== undefined) run.error = j.error;
  return run;
}

function failed(loss: number, system: string, round: number, sent: number, error: string): Run {
  return {
    loss, system, round, sent, missing: sent, connectMs: NaN, avg: NaN, p50: NaN, p99: NaN, max: NaN, stallMs: NaN,
    ipBytesPerMsg: NaN, ipPacketsPerMsg: NaN, serverIpBytesPerMsg: NaN, serverIpPacketsPerMsg: NaN, error,
  };
}

/** One section: the link at `loss`, the server, every echo round, then the uploads. */
async function measure(loss: number, runs: Run[]): Promise<string> {
  const maxRounds = Math.max(...SYSTEMS.map(roundsOf));
  const blocks = BLOCK ? [false, true].flatMap((down) => SYSTEMS.flatMap((s) => (BLOCK_OF[s] ?? []).filter((b) => isDownload(b) === down))) : [];
  const seconds = SYSTEMS.reduce((a, s) => a + roundsOf(s) * (COUNT * 0.02 + (s === 'geckos' ? 90 : 40)), 0) + blocks.length * 260 + 120;
  const link = await LinkedNamespaces.open(NS_A, NS_B, ['--delay-ms', '50', '--loss', String(loss), '--rate-mbit', '10', '--seed', '1'], seconds);
  try {
    // A browser gathers host candidates only on the interface of its default route: without one its offer
    // has none, and connect() gives WebRTC up at once (no-candidates).
    await link.run(NS_A, ['ip', 'route', 'add', 'default', 'via', ADDR_B], 5000);
    const cc = (ns: string): Promise<string> => link.run(ns, ['cat', '/proc/sys/net/ipv4/tcp_congestion_control'], 5000).then((o) => o.trim());
    const tcpCc = [...new Set([await cc(NS_A), await cc(NS_B)])].join(' / ');
    let ready: string[] | undefined;
    const server = link.start(NS_B, ['node', '--import', 'tsx', join(HERE, 'browser-server.ts'), ADDR_B], (l) => {
      if (l.startsWith('ready')) ready = l.split(' ');
    });
    for (let i = 0; ready === undefined; i++) {
      if (server.exitCode !== null || i > 600) throw new Error('bench/browser-server.ts did not start');
      await sleep(100);
    }
    const [, gatewayUrl, serverPid] = ready;
    if (gatewayUrl !== `http://${ADDR_B}:8080/gamewire`) throw new Error(`the gateway listens at ${gatewayUrl}, the page connects to http://${ADDR_B}:8080/gamewire`);
    const client = (system: string): Promise<string> =>
      link.run(NS_A, ['node', '--import', 'tsx', join(HERE, 'browser-client.ts'), ADDR_B, String(COUNT), system, serverPid!], 900_000);
    for (let round = 0; round < maxRounds; round++) {
      // Rotate the order: a system is not always first after the page load.
      const order = SYSTEMS.map((_, i) => SYSTEMS[(i + round) % SYSTEMS.length]!).filter((s) => round < roundsOf(s));
      for (const system of order) {
        try {
          const run = summarise(loss, round, (await client(system)).trim().split('\n').at(-1)!);
          runs.push(run);
          console.error(`${pctText(loss)} round ${round + 1} ${system}: connect ${f0(run.connectMs)} ms, avg ${f1(run.avg)} p50 ${f1(run.p50)} p99 ${f1(run.p99)} `
            + `max ${f1(run.max)} stall ${f0(run.stallMs)} ms, missing ${run.missing}, ${f1(run.ipBytesPerMsg)} / ${f1(run.serverIpBytesPerMsg)} B/msg`
            + `${run.error ? `, ${run.error}` : ''}`);
        } catch (e) {
          runs.push(failed(loss, system, round, COUNT, (e as Error).message));
          console.error(`${pctText(loss)} round ${round + 1} ${system}: ${(e as Error).message}`);
        }
      }
    }
    for (const system of blocks) {
      try {
        const run = summarise(loss, 0, (await client(system)).trim().split('\n').at(-1)!);
        runs.push(run);
        console.error(`${pctText(loss)} ${system}: ${f1((run.blockMs ?? NaN) / 1000)} s, ${f1((run.blockAckedBytes ?? 0) / 2 ** 20)} MiB, `
          + `echo p99 meanwhile ${f0(run.duringP99 ?? NaN)} ms${run.error ? `, ${run.error}` : ''}`);
      } catch (e) {
        runs.push(failed(loss, system, 0, 1, (e as Error).message));
        console.error(`${pctText(loss)} ${system}: ${(e as Error).message}`);
      }
    }
    return tcpCc;
  } finally {
    link.cleanup();
  }
}

/** The tables and target lines of the section at `loss`. */
function section(loss: number, all: readonly Run[]): string[] {
  const runs = all.filter((r) => r.loss === loss);
  const ok = (s: string): Run[] => runs.filter((r) => r.system === s && r.error === undefined);
  const med = (s: string, f: (r: Run) => number): number => median(ok(s).map(f));
  const echoRows = runs.filter((r) => !r.system.startsWith('block')).map((r) => [
    LABEL[r.system] ?? r.system, r.round + 1, f0(r.connectMs), f1(r.avg), f1(r.p50), f1(r.p99), f1(r.max), f0(r.stallMs), r.missing,
    f1(r.ipBytesPerMsg), f2(r.ipPacketsPerMsg), f1(r.serverIpBytesPerMsg), f2(r.serverIpPacketsPerMsg), r.error ?? '',
  ]);
  const medRows = SYSTEMS.map((s) => [
    LABEL[s]!, ok(s).length, f0(med(s, (r) => r.connectMs)), f1(med(s, (r) => r.avg)), f1(med(s, (r) => r.p50)), f1(med(s, (r) => r.p99)),
    f1(med(s, (r) => r.max)), f0(med(s, (r) => r.stallMs)), f1(med(s, (r) => r.ipBytesPerMsg)), f2(med(s, (r) => r.ipPacketsPerMsg)),
    f1(med(s, (r) => r.serverIpBytesPerMsg)), f2(med(s, (r) => r.serverIpPacketsPerMsg)),
  ]);

  const lines: string[] = [];
  lines.push(`### ${pctText(loss)} loss`, '', `Link: ${linkText(loss)}.`, '');
  lines.push(table(['system', 'round', 'connect ms', 'avg ms', 'p50 ms', 'p99 ms', 'max ms', 'stall ms', 'missing', 'up B/msg', 'up pkts/msg',
    'down B/msg', 'down pkts/msg', 'error'], echoRows));
  lines.push('', 'Medians over rounds:', '');
  lines.push(table(['system', 'runs', 'connect ms', 'avg ms', 'p50 ms', 'p99 ms', 'max ms', 'stall ms', 'up B/msg', 'up pkts/msg', 'down B/msg',
    'down pkts/msg'], medRows));

  const floorMs = ((BLOCK_BYTES * 8) / (10e6 * (1 - loss))) * 1000;
  const blockRuns = runs.filter((r) => r.system.startsWith('block') && !isDownload(r.system));
  const downRuns = runs.filter((r) => isDownload(r.system));
  const blockTable = (head: string, rs: readonly Run[]): string => table([head, 'delivered', 's', '× floor', 'Mbit/s', 'up MB', 'up pkts', 'down MB',
    'down pkts', 'echo sent', 'echo missing', 'echo p99 ms', 'error'], rs.map((r) => {
      const bytes = r.blockAckedBytes ?? 0;
      const done = r.missing === 0 && r.error === undefined;
      return [LABEL[r.system] ?? r.system, done ? 'yes' : `${f1(bytes / 2 ** 20)} MiB in 180 s`, f1((r.blockMs ?? NaN) / 1000),
        done ? f2((r.blockMs ?? NaN) / floorMs) : '—', f1((bytes * 8) / ((r.blockMs ?? NaN) * 1000)), f1(r.ipBytesPerMsg / 1e6), f0(r.ipPacketsPerMsg),
        f1(r.serverIpBytesPerMsg / 1e6), f0(r.serverIpPacketsPerMsg), r.duringSent ?? '—', r.duringMissing ?? '—', f0(r.duringP99 ?? NaN), r.error ?? ''];
    }));
  if (blockRuns.length > 0) {
    lines.push('', `16 MiB browser → server; the link's floor (16 MiB at 10 Mbit/s × ${f2(1 - loss)} for the loss) is ${f1(floorMs / 1000)} s. `
      + 'Up/down: IP bytes and packets the browser\'s and the server\'s namespace sent for the upload; echo: 100 B every 20 ms on the same connection '
      + 'meanwhile (gamewire: its reliable-ordered lane), its p99 RTT.', '');
    lines.push(blockTable('upload', blockRuns));
  }
  if (downRuns.length > 0) {
    lines.push('', '16 MiB server → browser, the same floor, asked for by the page (gamewire: a 4-byte block; the WebSocket: a 4-byte message) '
      + `and timed until it had the whole block; the same columns. ${BULK ? 'gamewire\'s server, like the browser, leaves the block lane\'s rate on its WebSocket to TCP.'
        : 'gamewire\'s block lane stays on the connection\'s transport.'}`, '');
    lines.push(blockTable('download', downRuns));
  }

  const gwRuns = ok('gamewire');
  const wsRuns = ok('websocket');
  const gwwsRuns = ok('gamewire-ws');
  const list = (xs: readonly number[], f: (x: number) => string): string => xs.map(f).join(', ');
  /** Item 4's target lines for the runs of `system` over WebRTC. */
  const item4 = (system: System, head: string): void => {
    const okRuns = ok(system);
    const all = runs.filter((r) => r.system === system).length;
    if (all === 0) return;
    lines.push('', `${head} (${okRuns.length} runs${okRuns.length < all ? `, ${all - okRuns.length} failed: **missed** whatever the lines say` : ''}):`);
    if (okRuns.length === 0) return;
    const stalls = okRuns.map((r) => r.stallMs);
    lines.push(`- no stall > 500 ms in any run (stall: the largest gap between consecutive echo arrivals in the page less the 20 ms send interval): `
      + `${list(stalls, f0)} ms: ${verdict(stalls.every((x) => x <= 500))}. Largest RTT per run: ${list(okRuns.map((r) => r.max), f0)} ms.`);
    if (wsRuns.length > 0) {
      const wsUp = median(wsRuns.map((r) => r.ipBytesPerMsg));
      const wsDown = median(wsRuns.map((r) => r.serverIpBytesPerMsg));
      const upOk = okRuns.every((r) => r.ipBytesPerMsg <= 2 * wsUp);
      const downOk = okRuns.every((r) => r.serverIpBytesPerMsg <= 2 * wsDown);
      lines.push(`- IP bytes per message ≤ 2 × the WebSocket's (its medians: ${f1(wsUp)} B up, ${f1(wsDown)} B down): browser → server `
        + `${list(okRuns.map((r) => r.ipBytesPerMsg), f0)} B: ${verdict(upOk)}; server → browser ${list(okRuns.map((r) => r.serverIpBytesPerMsg), f0)} B: `
        + `${verdict(downOk)}.`);
      const wsP99 = median(wsRuns.map((r) => r.p99));
      const ratios = okRuns.map((r) => r.p99 / wsP99);
      const paired = okRuns.map((r) => r.p99 / num(wsRuns.find((w) => w.round === r.round)?.p99));
      lines.push(`- p99 ≤ 0.5 × the WebSocket's in every run: against its median p99 (${f1(wsP99)} ms) ${list(ratios, f2)}: ${verdict(ratios.every((x) => x <= 0.5))}; `
        + `against the WebSocket's run of the same round ${list(paired, f2)}: ${verdict(paired.every((x) => x <= 0.5))}.`);
    }
    const connects = okRuns.map((r) => r.connectMs);
    lines.push(`- median connect time ≤ 1.5 s (from calling connect to the netcode \`connected\` event): ${f0(median(connects))} ms `
      + `(${list(connects, f0)}): ${verdict(median(connects) <= 1500)}.`);
  };
  item4('gamewire', `Targets at ${pctText(loss)} loss${loss === 0.1 ? '' : ' (item 4\'s are set at 10 % loss: here for reference)'}, per run of gamewire over WebRTC`);
  if (gwwsRuns.length > 0) {
    lines.push(`- for comparison, gamewire over its WebSocket transport: stalls ${list(gwwsRuns.map((r) => r.stallMs), f0)} ms, connect median `
      + `${f0(median(gwwsRuns.map((r) => r.connectMs)))} ms, p99 median ${f1(median(gwwsRuns.map((r) => r.p99)))} ms`
      + `${wsRuns.length > 0 ? ` (${f2(median(gwwsRuns.map((r) => r.p99)) / median(wsRuns.map((r) => r.p99)))}× the kernel WebSocket's)` : ''}.`);
  }
  const gk = ok('geckos');
  if (gwRuns.length > 0 && gk.length > 0) {
    const a = median(gwRuns.map((r) => r.avg));
    const b = median(gwRuns.map((r) => r.ipBytesPerMsg));
    const ga = median(gk.map((r) => r.avg));
    const gb = median(gk.map((r) => r.ipBytesPerMsg));
    lines.push(`- avg ≤ geckos.io's at no more bytes per message: gamewire ${f1(a)} ms and ${f1(b)} B/msg, geckos.io ${f1(ga)} ms and ${f1(gb)} B/msg: `
      + `${verdict(a <= ga && b <= gb)}.`);
  }
  const bound = loss === 0.01 ? 1.5 : loss === 0.1 ? 3 : undefined;
  for (const system of ['block', 'block-gamewire-ws', 'block-ws', 'block-down', 'block-down-gamewire-ws', 'block-down-ws']) {
    const r = runs.find((x) => x.system === system);
    if (r === undefined) continue;
    const ratio = r.missing === 0 && r.error === undefined ? (r.blockMs ?? NaN) / floorMs : Infinity;
    const time = Number.isFinite(ratio) ? `${f1((r.blockMs ?? NaN) / 1000)} s, ${f2(ratio)}× the floor` : `not delivered within 180 s (${f1((r.blockAckedBytes ?? 0) / 2 ** 20)} MiB)`;
    const target = system.endsWith('-ws') && !system.includes('gamewire') ? 'the reference'
      : isDownload(system) ? 'no target (item 5 sets the uploads\')' : bound === undefined ? 'no target at this loss' : `target ≤ ${bound}× the floor: ${verdict(ratio <= bound)}`;
    lines.push(`- 16 MiB ${isDownload(system) ? 'download' : 'upload'}, ${LABEL[system]}: ${time}; ${target}; echo p99 meanwhile ${f0(r.duringP99 ?? NaN)} ms.`);
  }
  item4('gamewire-latency', 'The same, per run of gamewire over WebRTC with the gateway\'s `webrtcFavor: \'latency\'` and two rides from the browser (an option, not the default)');
  return lines;
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const load0 = loadavg()[0]!;
  if (!existsSync('/usr/bin/chromium')) throw new Error('needs /usr/bin/chromium (apt-get install chromium)');
  const runs: Run[] = [];
  let tcpCc = '?';
  for (const loss of LOSSES) tcpCc = await measure(loss, runs);
  const load1 = loadavg()[0]!;
  const seconds = (Date.now() - t0) / 1000;

  const text = [
    '## browser',
    '',
    '`npm run bench:browser` (bench/browser.bench.ts; raw figures in bench/results/browser.json). Root and Debian\'s chromium.',
    '',
    'Headless Chromium (playwright-core) in one network namespace, the Node server (bench/browser-server.ts) in another, joined by linkem.py:',
    `50 ms one way (100 ms RTT), 10 Mbit/s, queue 200 ms, and ${LOSSES.map(pctText).join(' then ')} loss each way (one section each), the same real loss for`,
    `every system. One 100-byte message every 20 ms, ${COUNT} per run, echoed by the server; RTT per message from send to its echo in the page`,
    '(`performance.now()`). Each system in turn, the order rotated each round. gamewire runs over WebRTC and over its WebSocket transport,',
    'both served by one `BrowserGateway` (one HTTP port and path) into one netcode `Server`. Connect: from the connect call to the connection',
    'being usable (gamewire: its `connected` event; the page\'s token fetch excluded). Stall: the largest gap between consecutive echo arrivals in',
    'the page less the 20 ms send interval. Up and down B/msg and pkts/msg = IP bytes and packets the browser\'s and the server\'s namespace sent',
    'during the run, per message (handshakes and page load excluded). geckos.io sends each reliable message as JSON, again every 150 ms (10',
    `times); the WebSockets and gamewire send 100 bytes once. The kernel's TCP congestion control in both namespaces: ${tcpCc}. The bare data`,
    'channel row is no protocol of ours: the same messages on an unordered channel without retransmission, echoed by node-datachannel; its lost',
    'messages are "missing" and its RTTs are those of the messages that arrived, i.e. what the data channel itself adds to a delivered datagram.',
    'The data channel runs SCTP\'s congestion control under our own pacing, and SCTP halves its window on every loss; over the WebSocket',
    `gamewire's path is marked reliable (no loss by timeout, no redundancy, block slices resent no sooner than 1 s) and kernel TCP (${tcpCc}) does the rest.`,
    'The `webrtcFavor: \'latency\'` row is an option, not the default: a second `BrowserGateway` and netcode `Server` in the same process, whose',
    'data channels never resend a lost chunk and whose lanes ride each piece twice, with the page riding twice too (`channels: { redundancy: 2 }`).',
    '',
    ...LOSSES.flatMap((loss) => [...section(loss, runs), '']),
    `Machine: ${cpus()[0]?.model ?? 'unknown'} × ${cpus().length}, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version}; ` +
      `${new Date(t0).toISOString().slice(0, 10)}; load average ${load0.toFixed(2)} at start, ${load1.toFixed(2)} at end (the machine is shared); `
      + `bench took ${seconds.toFixed(0)} s.`,
  ].join('\n');
  console.log(text);
  if (!WRITE) return;
  writeFileSync(join(HERE, 'results', 'browser.json'), `${JSON.stringify({
    date: new Date(t0).toISOString(), link: LOSSES.map(linkText), count: COUNT, losses: LOSSES, loadavgStart: load0, loadavgEnd: load1, seconds, runs,
  }, null, 1)}\n`);
  writeReadmeSection('## browser', `${text}\n`);
}

await main();
