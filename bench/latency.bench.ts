/**
 * Message latency benchmark (not a test): `npm run bench:latency`. Prints tables, writes raw figures to
 * bench/results/latency.json, the RTT distributions to bench/results/latency-cdf.svg (vega-lite) and the
 * tables into the "## latency" section of bench/README.md.
 *
 * 1. KCP's test.cpp scenario (kcp.md §2.1) on the simulator: gamewire reliable-ordered with and without
 *    redundancy beside our Kcp in normal and fast modes (checked identical to the C ikcp.c on every run).
 * 2. The same message pattern at 100 ms RTT with 10 % and 20 % loss per direction.
 * 3. A 10 Mbit/s bottleneck shared by a 4 MiB block lane and a 20 Hz gameplay lane.
 * 4. (LATENCY_LINKEM=1, root) `gamewire echo` beside a kernel TCP (NODELAY) echo over linkem.py.
 *
 * LATENCY_PARTS=12 (any of 1, 2, 3, 4) runs only those parts, prints, and writes nothing in the tree
 * (LATENCY_SVG=file / LATENCY_JSON=file write the plot / raw figures elsewhere).
 * LATENCY_SEEDS=n sets the seeds per scenario (default 7).
 */
import { existsSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as vega from 'vega';
import * as vl from 'vega-lite';
import { ADDR_B, ipOut, LinkedNamespaces, sleep } from './linkem.js';
import { table, writeReadmeSection } from './readme.js';
import { NonCryptoRng } from '../src/core/rng.js';
import type { LinkConfig } from '../src/sim/config.js';
import { deriveSeed } from '../src/sim/link.js';
import { presets } from '../src/sim/presets.js';
import { World } from '../src/sim/world.js';
import { runTestCpp, type TestCppMode } from '../test/kcp/interop-testcpp.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const started = Date.now();
const load0 = loadavg()[0]!;
const SEEDS = Number(process.env.LATENCY_SEEDS ?? 7);
/** test.cpp stops once `next > rounds`: 1001 echoes. */
const ROUNDS = 1000;
const INTERVAL_MS = 20;
const MESSAGE_BYTES = 8;

// The connection layer needs src/ack and src/channels; loaded lazily so the KCP rows, the plot and the
// linkem plumbing run (and say so) on a tree where they are not merged yet.
type ConnectionModule = typeof import('../src/connection/host.js');
let connectionModule: ConnectionModule | undefined;
let connectionError: string | undefined;
async function loadConnection(): Promise<void> {
  try {
    connectionModule = await import('../src/connection/host.js');
  } catch (e) {
    connectionError = (e as Error).message.split('\n')[0];
  }
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Nearest-rank percentile (as `formatEchoSummary` in src/cli/kcp-echo.ts). */
function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

// ---------------------------------------------------------------------------------------------
// Parts 1 and 2: the echo scenario on the simulator

interface Scenario {
  key: string;
  title: string;
  link: Partial<LinkConfig>;
}

const SCENARIOS: Scenario[] = [
  { key: 'kcp-test', title: "KCP's test.cpp link: 5 % loss, one-way 30–61 ms", link: presets['kcp-test'] },
  {
    key: 'rtt100-loss10', title: '100 ms RTT, 10 % loss per direction',
    link: { ...presets['kcp-test'], latencyMs: 50, jitterMs: 0, shuffleBagLoss: { lost: 10, bagSize: 100 } },
  },
  {
    key: 'rtt100-loss20', title: '100 ms RTT, 20 % loss per direction',
    link: { ...presets['kcp-test'], latencyMs: 50, jitterMs: 0, shuffleBagLoss: { lost: 20, bagSize: 100 } },
  },
];

type SystemKey = 'gw-red' | 'gw-nored' | 'kcp-normal' | 'kcp-fast' | 'kcp-fast-exact';
const SYSTEMS: { key: SystemKey; label: string }[] = [
  { key: 'gw-red', label: 'gamewire reliable-ordered, redundancy auto (default)' },
  { key: 'gw-nored', label: 'gamewire reliable-ordered, redundancy 0' },
  { key: 'kcp-normal', label: 'KCP normal (ours = C)' },
  { key: 'kcp-fast', label: 'KCP fast (ours = C)' },
  { key: 'kcp-fast-exact', label: "KCP fast, test.cpp's exact settings (rx_minrto 10)" },
];

interface EchoRun {
  seed: number;
  /** Every RTT sample in ms, in arrival order. */
  rtts: number[];
  avg: number;
  p50: number;
  p99: number;
  max: number;
  /** Messages the client sent during the run. */
  messages: number;
  /** UDP payload bytes / datagrams the client sent (from its first message to the last echo) per message sent. */
  bytesPerMsg: number;
  datagramsPerMsg: number;
  /** KCP rows: ours and node-kcp gave the same datagram trace and figures. */
  sameAsC?: boolean;
  /** gamewire rows: both ends' packet-layer and lane counters and the client's stats at the end. */
  diag?: unknown;
  error?: string;
}

function summarise(seed: number, rtts: number[], messages: number, bytes: number, datagrams: number): EchoRun {
  const s = [...rtts].sort((a, b) => a - b);
  return {
    seed, rtts, avg: s.reduce((a, b) => a + b, 0) / Math.max(1, s.length), p50: percentile(s, 50), p99: percentile(s, 99),
    max: s[s.length - 1] ?? NaN, messages, bytesPerMsg: bytes / messages, datagramsPerMsg: datagrams / messages,
  };
}

function kcpRun(sys: SystemKey, sc: Scenario, seed: number): EchoRun {
  const mode: TestCppMode = sys === 'kcp-normal' ? 'normal' : 'fast';
  const exact = sys === 'kcp-fast-exact';
  const r = runTestCpp('ours', mode, { seed, link: sc.link, exact });
  const run = summarise(seed, r.rtts, r.messages, r.txBytes, r.tx);
  if (!exact) {
    const c = runTestCpp('c', mode, { seed, link: sc.link });
    run.sameAsC = c.trace === r.trace && c.avgRtt === r.avgRtt && c.maxRtt === r.maxRtt && c.tx === r.tx && !r.orderError;
  }
  if (r.orderError) run.error = 'order error';
  return run;
}

/**
 * test.cpp's pattern between two ConnectionHosts on a seeded World with the same per-direction link
 * seeds as `runTestCpp` (createLinkPair): after the handshake the client sends an 8-byte message every
 * 20 ms on a reliable-ordered lane, the server echoes it, until 1001 echoes came back in order.
 */
function gamewireRun(sc: Scenario, seed: number, redundancy: number | undefined): EchoRun {
  const { ConnectionHost } = connectionModule!;
  const world = new World({
    seed,
    routes: [
      { from: 'client', to: 'server', link: sc.link, seed: deriveSeed(seed, 100) },
      { from: 'server', to: 'client', link: sc.link, seed: deriveSeed(seed, 101) },
    ],
  });
  const channels = redundancy === undefined ? {} : { redundancy };
  const lanes = [{ mode: 'reliable-ordered' as const }];
  const server = new ConnectionHost({ lanes, listen: true, channels, random: seeded(seed * 2 + 1) });
  const client = new ConnectionHost({ lanes, channels, random: seeded(seed * 2 + 2) });
  world.add('server', server);
  world.add('client', client);
  const conn = client.connect(0, 'server');
  const sentAt: number[] = [];
  const rtts: number[] = [];
  let connectedAt: number | undefined;
  let base = { bytesSent: 0, datagramsSent: 0 };
  let error: string | undefined;
  const tick = (): void => {
    if (rtts.length > ROUNDS || error !== undefined) return;
    const i = sentAt.length;
    const m = new Uint8Array(MESSAGE_BYTES);
    const dv = new DataView(m.buffer);
    dv.setUint32(0, i, true);
    dv.setUint32(4, Math.floor(world.now) >>> 0, true);
    sentAt.push(world.now);
    conn.send(0, m);
    world.at(world.now + INTERVAL_MS, tick);
  };
  const r = world.runUntil(() => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      if (e.type === 'message') e.connection.send(e.lane, e.bytes);
    }
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) {
      if (e.type === 'connected' && connectedAt === undefined) {
        connectedAt = world.now;
        base = world.peerStats('client');
        world.at(world.now + INTERVAL_MS, tick);
      } else if (e.type === 'message') {
        const i = new DataView(e.bytes.buffer, e.bytes.byteOffset, e.bytes.byteLength).getUint32(0, true);
        if (i !== rtts.length) error ??= `echo ${i} out of order (expected ${rtts.length})`;
        rtts.push(world.now - sentAt[i]!);
      } else if (e.type === 'disconnected') {
        error ??= `disconnected (${e.reason})`;
      }
    }
    return rtts.length > ROUNDS || error !== undefined;
  }, { maxTimeMs: 600_000 });
  if (!r.ok) error ??= `stopped: ${r.reason} at ${r.now} ms with ${rtts.length} echoes`;
  const s = world.peerStats('client');
  const run = summarise(seed, rtts, sentAt.length, s.bytesSent - base.bytesSent, s.datagramsSent - base.datagramsSent);
  const { lanes: _lanes, ...clientStats } = conn.stats(world.now);
  run.diag = { client: conn.counters(), server: server.connections()[0]?.counters(), clientStats };
  if (error !== undefined) run.error = error;
  return run;
}

interface SystemResult {
  system: SystemKey;
  label: string;
  runs: EchoRun[];
  /** Medians over seeds of each run's figure. */
  avg: number;
  p50: number;
  p99: number;
  max: number;
  bytesPerMsg: number;
  datagramsPerMsg: number;
  sameAsC?: boolean;
  errors: string[];
  notRun?: string;
}

interface ScenarioResult {
  key: string;
  title: string;
  link: Partial<LinkConfig>;
  seeds: number[];
  systems: SystemResult[];
}

function runScenario(sc: Scenario): ScenarioResult {
  const seeds = Array.from({ length: SEEDS }, (_, i) => i + 1);
  const systems: SystemResult[] = [];
  for (const { key, label } of SYSTEMS) {
    if (key.startsWith('gw') && connectionModule === undefined) {
      systems.push({
        system: key, label, runs: [], avg: NaN, p50: NaN, p99: NaN, max: NaN, bytesPerMsg: NaN, datagramsPerMsg: NaN, errors: [],
        notRun: `not run: the connection layer does not load (${connectionError})`,
      });
      continue;
    }
    const runs = seeds.map((seed) => (key.startsWith('gw') ? gamewireRun(sc, seed, key === 'gw-nored' ? 0 : undefined) : kcpRun(key, sc, seed)));
    const m = (f: (r: EchoRun) => number): number => median(runs.map(f));
    const res: SystemResult = {
      system: key, label, runs, avg: m((r) => r.avg), p50: m((r) => r.p50), p99: m((r) => r.p99), max: m((r) => r.max),
      bytesPerMsg: m((r) => r.bytesPerMsg), datagramsPerMsg: m((r) => r.datagramsPerMsg),
      errors: runs.flatMap((r) => (r.error === undefined ? [] : [`seed ${r.seed}: ${r.error}`])),
    };
    if (key === 'kcp-normal' || key === 'kcp-fast') res.sameAsC = runs.every((r) => r.sameAsC === true);
    systems.push(res);
  }
  return { key: sc.key, title: sc.title, link: sc.link, seeds, systems };
}

const f1 = (x: number): string => (Number.isFinite(x) ? x.toFixed(1) : '–');
const f2 = (x: number): string => (Number.isFinite(x) ? x.toFixed(2) : '–');

function scenarioTable(r: ScenarioResult): string {
  return table(
    ['system', 'avg ms', 'p50 ms', 'p99 ms', 'max ms', 'bytes/msg', 'datagrams/msg', 'notes'],
    r.systems.map((s) => [
      s.label, f1(s.avg), f1(s.p50), f1(s.p99), f1(s.max), f1(s.bytesPerMsg), f2(s.datagramsPerMsg),
      s.notRun ?? [s.sameAsC === undefined ? '' : s.sameAsC ? '= C on every seed' : '**differs from C**', ...s.errors].filter((x) => x !== '').join('; '),
    ]),
    ['---', '---:', '---:', '---:', '---:', '---:', '---:', '---'],
  );
}

interface Verdict {
  what: string;
  figures: string;
  met: boolean | undefined;
}

function echoVerdicts(results: ScenarioResult[]): Verdict[] {
  const out: Verdict[] = [];
  const get = (sc: string, sys: SystemKey): SystemResult | undefined =>
    results.find((r) => r.key === sc)?.systems.find((s) => s.system === sys);
  const kcp = results.find((r) => r.key === 'kcp-test');
  if (kcp !== undefined) {
    for (const fastKey of ['kcp-fast', 'kcp-fast-exact'] as const) {
      const fast = get('kcp-test', fastKey)!;
      for (const gw of ['gw-red', 'gw-nored'] as const) {
        const g = get('kcp-test', gw)!;
        const what = `1: ${g.label}: avg and max ≤ 0.8 × ${fast.label}, bytes/msg ≤ its`;
        if (g.notRun !== undefined) {
          out.push({ what, figures: 'not run', met: undefined });
          continue;
        }
        const ra = g.avg / fast.avg;
        const rm = g.max / fast.max;
        out.push({
          what,
          figures: `avg ${f1(g.avg)} / ${f1(fast.avg)} = ${f2(ra)}×, max ${f1(g.max)} / ${f1(fast.max)} = ${f2(rm)}×, bytes/msg ${f1(g.bytesPerMsg)} vs ${f1(fast.bytesPerMsg)}`,
          met: ra <= 0.8 && rm <= 0.8 && g.bytesPerMsg <= fast.bytesPerMsg,
        });
      }
    }
  }
  if (results.some((r) => r.key === 'rtt100-loss10')) {
    for (const gw of ['gw-red', 'gw-nored'] as const) {
      const g = get('rtt100-loss10', gw)!;
      out.push({
        what: `2: ${g.label} at 10 % loss: p99 ≤ 200 ms`,
        figures: g.notRun !== undefined ? 'not run' : `p99 ${f1(g.p99)} ms (median over seeds; worst seed ${f1(Math.max(...g.runs.map((r) => r.p99)))})`,
        met: g.notRun !== undefined ? undefined : g.p99 <= 200,
      });
    }
  }
  return out;
}

function verdictTable(v: Verdict[]): string {
  return table(['target', 'measured', 'met'], v.map((x) => [x.what, x.figures, x.met === undefined ? 'not measured' : x.met ? 'yes' : '**no**']), ['---', '---', ':---:']);
}

// ---------------------------------------------------------------------------------------------
// Part 3: block lane + gameplay lane on a 10 Mbit/s bottleneck

const BLOCK_BYTES = 4 * 1024 * 1024;
const P3_RATE = 10e6;
const P3_ONE_WAY_MS = 50;
const P3_QUEUE_BYTES = 125_000; // 100 ms at 10 Mbit/s
const GAMEPLAY_HZ = 20;
const GAMEPLAY_BYTES = 100;
const UDP_IP = 28;
const DATAGRAM = 1200;

/** The physical floor (as in chunk.bench.ts): the block in full 1200-byte datagrams + 28 bytes each, at the rate, + the one-way delay. */
function blockFloorMs(): number {
  const datagrams = Math.ceil(BLOCK_BYTES / DATAGRAM);
  return (((BLOCK_BYTES + datagrams * UDP_IP) * 8) / P3_RATE) * 1000 + P3_ONE_WAY_MS;
}

interface BulkRun {
  seed: number;
  completionMs: number | undefined;
  gameplayRtts: number[];
  gameplayP50: number;
  gameplayP99: number;
  gameplayMax: number;
  error?: string;
}

interface Part3 {
  blockLane: 'built' | 'not built yet';
  blockLaneDetail: string;
  floorMs: number;
  rttMs: number;
  block?: { runs: BulkRun[]; completionMs: number; ratio: number; gameplayP99: number };
  substitute?: { description: string; runs: BulkRun[]; completionMs: number; ratio: number; gameplayP99: number };
}

/**
 * A client sends `BLOCK_BYTES` on lane 1 (one message on a block lane, or 64 KiB reliable-ordered
 * messages on the substitute) while sending 100-byte gameplay messages at 20 Hz on lane 0 (priority 0),
 * which the server echoes; both directions 50 ms one way, 10 Mbit/s, 125 kB drop-tail queue, no loss.
 * Completion: from the first block send to the server holding every block byte. Gameplay RTTs: messages
 * sent while the block was in transfer.
 */
function bulkRun(seed: number, blockLane: boolean): BulkRun {
  const { ConnectionHost } = connectionModule!;
  const lanes = blockLane
    ? [{ mode: 'reliable-ordered' as const, priority: 0 }, { mode: 'block' as const }]
    : [{ mode: 'reliable-ordered' as const, priority: 0 }, { mode: 'reliable-ordered' as const, priority: 1, maxQueuedBytes: 2 * BLOCK_BYTES }];
  const link = { latencyMs: P3_ONE_WAY_MS, rateBitsPerSec: P3_RATE, queueBytes: P3_QUEUE_BYTES };
  const world = new World({
    seed,
    routes: [
      { from: 'client', to: 'server', link, seed: deriveSeed(seed, 100) },
      { from: 'server', to: 'client', link, seed: deriveSeed(seed, 101) },
    ],
  });
  const server = new ConnectionHost({ lanes, listen: true, random: seeded(seed * 2 + 1) });
  const client = new ConnectionHost({ lanes, random: seeded(seed * 2 + 2) });
  world.add('server', server);
  world.add('client', client);
  const conn = client.connect(0, 'server');
  const sentAt: number[] = [];
  const rttOf = new Map<number, number>();
  let blockStart: number | undefined;
  let blockDone: number | undefined;
  let blockGot = 0;
  let error: string | undefined;
  const gameplay = (): void => {
    if (blockDone !== undefined) return;
    const m = new Uint8Array(GAMEPLAY_BYTES);
    new DataView(m.buffer).setUint32(0, sentAt.length, true);
    sentAt.push(world.now);
    conn.send(0, m);
    world.at(world.now + 1000 / GAMEPLAY_HZ, gameplay);
  };
  const startBlock = (): void => {
    blockStart = world.now;
    if (blockLane) conn.send(1, new Uint8Array(BLOCK_BYTES));
    else for (let o = 0; o < BLOCK_BYTES; o += 65536) conn.send(1, new Uint8Array(Math.min(65536, BLOCK_BYTES - o)));
  };
  const r = world.runUntil(() => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      if (e.type !== 'message') continue;
      if (e.lane === 0) e.connection.send(0, e.bytes);
      else {
        blockGot += e.bytes.length;
        if (blockGot >= BLOCK_BYTES && blockDone === undefined) blockDone = world.now;
      }
    }
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) {
      if (e.type === 'connected') {
        // One second of gameplay alone first (the path's RTT estimate settles), then the block.
        world.at(world.now, gameplay);
        world.at(world.now + 1000, startBlock);
      } else if (e.type === 'message' && e.lane === 0) {
        const i = new DataView(e.bytes.buffer, e.bytes.byteOffset, e.bytes.byteLength).getUint32(0, true);
        rttOf.set(i, world.now - sentAt[i]!);
      } else if (e.type === 'disconnected') error ??= `disconnected (${e.reason})`;
    }
    return (blockDone !== undefined && rttOf.size === sentAt.length) || error !== undefined;
  }, { maxTimeMs: 120_000 });
  if (!r.ok) error ??= `stopped: ${r.reason} at ${r.now} ms, ${blockGot} block bytes in`;
  const rtts: number[] = [];
  for (let i = 0; i < sentAt.length; i++) {
    if (blockStart !== undefined && sentAt[i]! >= blockStart && (blockDone === undefined || sentAt[i]! <= blockDone)) {
      const x = rttOf.get(i);
      if (x !== undefined) rtts.push(x);
    }
  }
  const s = [...rtts].sort((a, b) => a - b);
  const run: BulkRun = {
    seed, completionMs: blockDone === undefined || blockStart === undefined ? undefined : blockDone - blockStart,
    gameplayRtts: rtts, gameplayP50: percentile(s, 50), gameplayP99: percentile(s, 99), gameplayMax: s[s.length - 1] ?? NaN,
  };
  if (error !== undefined) run.error = error;
  return run;
}

function part3(): { data: Part3; text: string } {
  const floor = blockFloorMs();
  const rtt = 2 * P3_ONE_WAY_MS;
  const data: Part3 = { blockLane: 'not built yet', blockLaneDetail: '', floorMs: floor, rttMs: rtt };
  const seeds = Array.from({ length: Math.min(SEEDS, 3) }, (_, i) => i + 1);
  const sum = (runs: BulkRun[]): { completionMs: number; ratio: number; gameplayP99: number } => {
    const c = median(runs.map((x) => x.completionMs ?? Infinity));
    return { completionMs: c, ratio: c / floor, gameplayP99: median(runs.map((x) => x.gameplayP99)) };
  };
  if (connectionModule === undefined) {
    data.blockLaneDetail = `not run: the connection layer does not load (${connectionError})`;
  } else {
    try {
      new connectionModule.ConnectionHost({ lanes: [{ mode: 'block' as never }] });
      data.blockLane = 'built';
    } catch (e) {
      data.blockLaneDetail = `ConnectionHost refuses a lane of mode 'block': ${(e as Error).message}`;
    }
    if (data.blockLane === 'built') {
      const runs = seeds.map((s) => bulkRun(s, true));
      data.block = { runs, ...sum(runs) };
    }
    const runs = seeds.map((s) => bulkRun(s, false));
    data.substitute = {
      description: 'for comparison: the 4 MiB as 64 reliable-ordered messages of 64 KiB on a priority-1 lane',
      runs, ...sum(runs),
    };
  }
  const row = (label: string, x: Part3['block']): (string | number)[] => {
    if (x === undefined) return [label, '–', '–', '–', '–', '–', '–'];
    const errs = x.runs.flatMap((r) => (r.error === undefined ? [] : [`seed ${r.seed}: ${r.error}`]));
    return [
      label, `${f1(x.gameplayP99)} (≤ ${rtt + 50})`, x.gameplayP99 <= rtt + 50 ? 'yes' : '**no**',
      `${f1(x.completionMs)} (floor ${f1(floor)})`, `${f2(x.ratio)}× (≤ 1.3)`, x.ratio <= 1.3 ? 'yes' : '**no**', errs.join('; '),
    ];
  };
  const rows: (string | number)[][] = [];
  if (data.block !== undefined) rows.push(row('block lane (4 MiB) + 20 Hz gameplay lane', data.block));
  else rows.push(['block lane (4 MiB) + 20 Hz gameplay lane', 'not built yet', '–', 'not built yet', '–', '–', data.blockLaneDetail]);
  if (data.substitute !== undefined) rows.push(row(data.substitute.description, data.substitute));
  const text = [
    '### 3. A block lane and a gameplay lane on a 10 Mbit/s bottleneck',
    '',
    `Both directions: ${P3_ONE_WAY_MS} ms one way (RTT ${rtt} ms), ${P3_RATE / 1e6} Mbit/s, ${P3_QUEUE_BYTES / 1000} kB drop-tail queue, no loss.`,
    `After the handshake the client sends a ${GAMEPLAY_BYTES}-byte message at ${GAMEPLAY_HZ} Hz on lane 0 (reliable-ordered, priority 0),`,
    'echoed by the server; one second later it queues 4 MiB on lane 1: one block on a block lane (served below the',
    'message lanes, on the same path), or, as a substitute for comparison, 64 KiB reliable-ordered messages on a',
    'priority-1 lane. Gameplay p99 = echo RTT of the',
    'gameplay messages sent while the block was in transfer; completion = first block send to the last block byte at',
    `the server. Floor = the block in full ${DATAGRAM}-byte datagrams (+${UDP_IP} bytes UDP/IPv4 each) at the link rate + one way`,
    `(as in the chunk section). Medians over seeds ${seeds.join(', ')}.`,
    '',
    table(['run', 'gameplay p99 ms', 'met', 'completion ms', 'vs floor', 'met', 'notes'], rows, ['---', '---:', ':---:', '---:', '---:', ':---:', '---']),
  ].join('\n');
  return { data, text };
}

// ---------------------------------------------------------------------------------------------
// Part 4: gamewire echo vs kernel TCP over linkem.py

const NS_A = 'gwlat-a';
const NS_B = 'gwlat-b';
const LINKEM_COUNT = Number(process.env.LATENCY_LINKEM_COUNT ?? 1000);
const LINKEM_ROUNDS = Number(process.env.LATENCY_LINKEM_ROUNDS ?? 2);

interface LinkemRun {
  system: 'gamewire' | 'tcp';
  round: number;
  avg: number;
  p50: number;
  p99: number;
  max: number;
  /** As the client itself reports it (gamewire: UDP payload bytes and datagrams; tcp: bytes written, writes). */
  clientLine: string;
  /** IP bytes (headers included) and IP packets out of the client's namespace, per message. */
  ipBytesPerMsg: number;
  ipPacketsPerMsg: number;
  rtts?: number[];
  error?: string;
}

interface Part4 {
  ran: boolean;
  why?: string;
  link: string;
  count: number;
  runs: LinkemRun[];
  gamewire?: { avg: number; p50: number; p99: number; max: number };
  tcp?: { avg: number; p50: number; p99: number; max: number };
}

function parseSummary(line: string): { avg: number; p50: number; p99: number; max: number } {
  const m = /avg=([\d.]+) p50=([\d.]+) p99=([\d.]+) max=([\d.]+)/.exec(line);
  if (m === null) throw new Error(`no rtt_ms summary in: ${line}`);
  return { avg: Number(m[1]), p50: Number(m[2]), p99: Number(m[3]), max: Number(m[4]) };
}

/** The gamewire echo server and client commands (the built CLI). */
function gamewireCommands(port: number): { server: string[]; client: string[] } {
  const cli = join(ROOT, 'dist', 'cli', 'gamewire.js');
  return {
    server: ['node', cli, 'echo', '--listen', String(port), '--host', ADDR_B, '--quiet'],
    client: [
      'node', cli, 'echo', '--connect', `${ADDR_B}:${port}`, '--mode', 'reliable-ordered', '--count', String(LINKEM_COUNT),
      '--interval', `${INTERVAL_MS}ms`, '--size', String(MESSAGE_BYTES), '--timeout', '30s',
    ],
  };
}

async function part4(): Promise<{ data: Part4; text: string }> {
  const linkDesc = '50 ms one way (100 ms RTT), 10 % loss each way, 10 Mbit/s (linkem.py, queue 200 ms)';
  const data: Part4 = { ran: false, link: linkDesc, count: LINKEM_COUNT, runs: [] };
  let link: LinkedNamespaces | undefined;
  try {
    if (!existsSync(join(ROOT, 'dist', 'cli', 'gamewire.js'))) throw new Error('dist/cli/gamewire.js missing: run npm run build first');
    const seconds = Math.ceil(LINKEM_ROUNDS * 2 * (LINKEM_COUNT * INTERVAL_MS / 1000 + 40)) + 60;
    link = await LinkedNamespaces.open(NS_A, NS_B, ['--delay-ms', '50', '--loss', '0.1', '--rate-mbit', '10', '--seed', '1'], seconds);
    const l = link;
    const gw = gamewireCommands(7000);
    const tcpEcho = join(HERE, 'tcp-echo.mjs');
    const servers = [l.start(NS_B, gw.server), l.start(NS_B, ['node', tcpEcho, 'listen', ADDR_B, '7001'])];
    await sleep(1500);
    for (const s of servers) if (s.exitCode !== null) throw new Error(`an echo server exited (${s.spawnargs.join(' ')})`);
    const timeout = LINKEM_COUNT * INTERVAL_MS + 60_000;
    for (let round = 0; round < LINKEM_ROUNDS; round++) {
      // Alternate the order, one system at a time (so each namespace counter delta is one system's).
      const order: ('gamewire' | 'tcp')[] = round % 2 === 0 ? ['gamewire', 'tcp'] : ['tcp', 'gamewire'];
      for (const system of order) {
        const before = ipOut(NS_A);
        let out: string;
        try {
          out = system === 'gamewire'
            ? await l.run(NS_A, gw.client, timeout)
            : await l.run(NS_A, ['node', tcpEcho, 'connect', ADDR_B, '7001', String(LINKEM_COUNT), String(INTERVAL_MS), String(MESSAGE_BYTES)], timeout);
        } catch (e) {
          data.runs.push({ system, round, avg: NaN, p50: NaN, p99: NaN, max: NaN, clientLine: '', ipBytesPerMsg: NaN, ipPacketsPerMsg: NaN, error: (e as Error).message });
          continue;
        }
        const after = ipOut(NS_A);
        const line = out.split('\n').find((l) => l.startsWith('rtt_ms')) ?? '';
        const rttLine = out.split('\n').find((l) => l.startsWith('rtts '));
        const run: LinkemRun = {
          system, round, ...parseSummary(line), clientLine: line,
          ipBytesPerMsg: (after.octets - before.octets) / LINKEM_COUNT, ipPacketsPerMsg: (after.packets - before.packets) / LINKEM_COUNT,
        };
        if (rttLine !== undefined) run.rtts = rttLine.slice(5).split(',').map(Number);
        data.runs.push(run);
        console.error(`linkem round ${round} ${system}: ${line}`);
      }
    }
    data.ran = true;
  } catch (e) {
    data.why = (e as Error).message;
  } finally {
    link?.cleanup();
  }
  const agg = (s: 'gamewire' | 'tcp'): Part4['gamewire'] => {
    const rs = data.runs.filter((r) => r.system === s && r.error === undefined);
    if (rs.length === 0) return undefined;
    return { avg: median(rs.map((r) => r.avg)), p50: median(rs.map((r) => r.p50)), p99: median(rs.map((r) => r.p99)), max: median(rs.map((r) => r.max)) };
  };
  data.gamewire = agg('gamewire');
  data.tcp = agg('tcp');
  const rows = data.runs.map((r) => [
    r.system === 'gamewire' ? 'gamewire echo, reliable-ordered' : 'kernel TCP echo, NODELAY', r.round + 1, f1(r.avg), f1(r.p50), f1(r.p99), f1(r.max),
    f1(r.ipBytesPerMsg), f2(r.ipPacketsPerMsg), r.error ?? '',
  ]);
  const failed = data.runs.filter((r) => r.error !== undefined).map((r) => r.system);
  const why = data.why ?? (failed.length > 0 ? `every ${[...new Set(failed)].join(' and ')} run failed, see the notes` : undefined);
  let verdict = 'Target p99 ≤ 0.5 × TCP\'s: not measured' + (why === undefined ? '' : ` (${why})`) + '.';
  if (data.gamewire !== undefined && data.tcp !== undefined) {
    const ratio = data.gamewire.p99 / data.tcp.p99;
    verdict = `Target p99 ≤ 0.5 × TCP's: gamewire ${f1(data.gamewire.p99)} ms / TCP ${f1(data.tcp.p99)} ms = ${f2(ratio)}× (medians over rounds): ${ratio <= 0.5 ? 'met' : '**missed**'}.`;
  }
  const text = [
    '### 4. Over a real kernel path (linkem.py)',
    '',
    `Two network namespaces joined by linkem.py (a userspace link emulator from the project's tools, not in the package: TUN devices in both namespaces joined through one process that delays, drops and rate-limits every IP packet): ${linkDesc}. Server side in one namespace:`,
    '`gamewire echo --listen` (the built CLI) and a Node TCP echo server (bench/tcp-echo.mjs); client side in the other:',
    `\`gamewire echo --connect … --mode reliable-ordered --count ${LINKEM_COUNT} --interval ${INTERVAL_MS}ms --size ${MESSAGE_BYTES}\` and the TCP client`,
    `(setNoDelay(true), same count, interval and size), one after the other through the same link process, ${LINKEM_ROUNDS} rounds`,
    'in alternating order. RTT figures as each client prints them (nearest-rank percentiles). IP bytes and packets',
    '= the client namespace\'s IpExt OutOctets / Ip OutRequests over the run, per message (headers, acks and',
    'retransmissions included; the same measure for both). Both clients start their messages once connected (the',
    'handshake\'s bytes and packets are counted, its time is not).',
    '',
    data.runs.length > 0
      ? table(['system', 'round', 'avg ms', 'p50 ms', 'p99 ms', 'max ms', 'IP bytes/msg', 'IP packets/msg', 'notes'], rows,
        ['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---'])
      : `Not run: ${data.why ?? 'LATENCY_LINKEM unset'}.`,
    '',
    verdict,
  ].join('\n');
  return { data, text };
}

// ---------------------------------------------------------------------------------------------
// CDF plot

const CDF_POINTS = 300;

function cdfPoints(rtts: number[], n = CDF_POINTS): { rtt: number; p: number }[] {
  const s = [...rtts].sort((a, b) => a - b);
  if (s.length === 0) return [];
  const out: { rtt: number; p: number }[] = [];
  const step = Math.max(1, Math.floor(s.length / n));
  for (let i = 0; i < s.length; i += step) out.push({ rtt: s[i]!, p: (i + 1) / s.length });
  // The tail in full: the last 2 % sample by sample.
  for (let i = Math.max(0, Math.floor(s.length * 0.98)); i < s.length; i++) out.push({ rtt: s[i]!, p: (i + 1) / s.length });
  return out.sort((a, b) => a.p - b.p);
}

async function writeCdf(results: ScenarioResult[], p3: Part3 | undefined, p4: Part4 | undefined): Promise<string> {
  const values: { scenario: string; system: string; rtt: number; p: number }[] = [];
  for (const r of results) {
    const fast = r.systems.find((s) => s.system === 'kcp-fast');
    for (const s of r.systems) {
      if (s.runs.length === 0) continue;
      // Drawn only where it differs from the fast row (it draws on top of it otherwise).
      if (s.system === 'kcp-fast-exact' && fast !== undefined && s.runs.every((x, i) => x.rtts.join() === fast.runs[i]?.rtts.join())) continue;
      for (const pt of cdfPoints(s.runs.flatMap((x) => x.rtts))) values.push({ scenario: r.title, system: s.label, ...pt });
    }
  }
  const bulk = p3?.block ?? p3?.substitute;
  if (bulk !== undefined) {
    const label = p3!.block !== undefined ? 'gameplay lane beside the block lane' : 'gameplay lane beside the 64 KiB-message substitute';
    for (const pt of cdfPoints(bulk.runs.flatMap((x) => x.gameplayRtts))) values.push({ scenario: '10 Mbit/s, 100 ms RTT, 4 MiB bulk', system: label, ...pt });
  }
  // Only when both clients gave every sample (the gamewire CLI prints its summary line only).
  const linkemRtts = (sys: 'gamewire' | 'tcp'): number[] => (p4?.runs ?? []).filter((r) => r.system === sys).flatMap((r) => r.rtts ?? []);
  for (const sys of ['gamewire', 'tcp'] as const) {
    const rtts = linkemRtts(sys);
    if (linkemRtts('gamewire').length > 0 && linkemRtts('tcp').length > 0) {
      const label = sys === 'gamewire' ? 'gamewire echo' : 'kernel TCP echo (NODELAY)';
      for (const pt of cdfPoints(rtts)) values.push({ scenario: 'linkem: 100 ms RTT, 10 % loss, 10 Mbit/s', system: label, ...pt });
    }
  }
  const spec: vl.TopLevelSpec = {
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: 'gamewire latency benchmark: echo RTT distributions (CDF, all seeds pooled)',
    data: { values },
    facet: { row: { field: 'scenario', type: 'nominal', title: null, sort: [...new Set(values.map((v) => v.scenario))], header: { labelAngle: 0, labelAlign: 'left', labelAnchor: 'start', labelOrient: 'top', labelFontSize: 12 } } },
    spec: {
      width: 640,
      height: 220,
      mark: { type: 'line', interpolate: 'step-after', strokeWidth: 1.5 },
      encoding: {
        x: { field: 'rtt', type: 'quantitative', title: 'echo RTT (ms)' },
        y: { field: 'p', type: 'quantitative', title: 'fraction of messages', scale: { domain: [0, 1] } },
        color: { field: 'system', type: 'nominal', title: 'system', legend: { orient: 'bottom', direction: 'vertical', labelLimit: 1000 } },
      },
    },
    resolve: { scale: { x: 'independent' } },
  };
  const view = new vega.View(vega.parse(vl.compile(spec).spec), { renderer: 'none' });
  const svg = await view.toSVG();
  view.finalize();
  return svg;
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const t0 = Date.now();
  const only = process.env.LATENCY_PARTS;
  const wants = (p: string): boolean => (only === undefined ? p !== '4' || process.env.LATENCY_LINKEM === '1' : only.includes(p));
  await loadConnection();
  if (connectionError !== undefined) console.error(`connection layer not loaded: ${connectionError}`);
  const results: ScenarioResult[] = [];
  const texts: string[] = [];
  if (wants('1') || wants('2')) {
    for (const sc of SCENARIOS) {
      if (sc.key === 'kcp-test' ? !wants('1') : !wants('2')) continue;
      const r = runScenario(sc);
      results.push(r);
      const head = sc.key === 'kcp-test' ? '### 1. KCP\'s own scenario' : `### 2. ${sc.title}`;
      const t = [head, '', `${sc.title}. Medians over seeds ${r.seeds[0]}..${r.seeds.at(-1)} of each seed's figure.`, '', scenarioTable(r)].join('\n');
      texts.push(t);
      console.log(t + '\n');
    }
  }
  const verdicts = echoVerdicts(results);
  if (verdicts.length > 0) console.log(verdictTable(verdicts) + '\n');
  let p3: { data: Part3; text: string } | undefined;
  if (wants('3')) {
    p3 = part3();
    console.log(p3.text + '\n');
  }
  let p4: { data: Part4; text: string } | undefined;
  if (wants('4')) {
    p4 = await part4();
    console.log(p4.text + '\n');
  }
  const svg = await writeCdf(results, p3?.data, p4?.data);
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const machine =
    `Machine: ${cpu} × ${cpus().length} logical, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version}; ` +
    `${new Date(started).toISOString().slice(0, 10)}; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end; ` +
    `bench took ${((Date.now() - t0) / 1000).toFixed(0)} s.`;
  console.log(machine);
  const round = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v);
  const json = JSON.stringify({
    date: new Date(started).toISOString(),
    machine: { cpu, logical: cpus().length, totalmem: totalmem(), node: process.version, loadStart: load0, loadEnd: loadavg()[0] },
    connectionLayer: connectionError === undefined ? 'loaded' : `not loaded: ${connectionError}`,
    echo: results,
    targets: verdicts,
    part3: p3?.data ?? 'not run',
    part4: p4?.data ?? 'not run (LATENCY_LINKEM unset)',
  }, round) + '\n';
  if (only !== undefined) {
    // Partial runs write nothing in the tree; these two let a developer look at the figures and the plot.
    if (process.env.LATENCY_SVG !== undefined) writeFileSync(process.env.LATENCY_SVG, svg);
    if (process.env.LATENCY_JSON !== undefined) writeFileSync(process.env.LATENCY_JSON, json);
    return;
  }
  writeFileSync(join(HERE, 'results', 'latency.json'), json);
  writeFileSync(join(HERE, 'results', 'latency-cdf.svg'), svg);
  const section = [
    '## latency',
    '',
    '`npm run bench:latency` (bench/latency.bench.ts; raw figures, every RTT sample included, in bench/results/latency.json;',
    'RTT distributions in `bench/results/latency-cdf.svg` in the repository, drawn with vega-lite). Parts 1–3 run on the',
    'simulator (virtual clock, seeded links); part 4 only with `LATENCY_LINKEM=1` (root).',
    '',
    'Parts 1 and 2 replay test.cpp\'s pattern (kcp.md §2.1): an 8-byte message every 20 ms from the client, echoed, until',
    '1001 echoes. KCP rows: `runTestCpp` (test/kcp/interop-testcpp.ts, as in the kcp section; 1 ms update loop), ours',
    'checked identical to node-kcp (C) on every seed in normal and fast mode (fast = what node-kcp can express: kcp1',
    'rx_minrto stays 30); the exact test.cpp fast settings (kcp1 rx_minrto 10) are a separate row, ours only. gamewire rows:',
    'two `ConnectionHost`s on a `World` whose two routes have the same link seeds as the KCP pair (createLinkPair),',
    'one reliable-ordered lane, default settings but `channels.redundancy`; messages start 20 ms after the handshake.',
    'bytes/msg and datagrams/msg: UDP payload bytes and datagrams the client sent (from its first message to the',
    'last echo, acks and lost datagrams included) / messages it sent in that time. Part 2\'s links are the kcp-test',
    'preset with a fixed 50 ms one way (no jitter) and a shuffle-bag loss of 10 or 20 per 100 datagrams per direction.',
    '',
    ...texts.flatMap((t) => [t, '']),
    '### Targets of parts 1 and 2',
    '',
    verdictTable(verdicts),
    '',
    p3?.text ?? '### 3. not run',
    '',
    p4?.text ?? '### 4. Over a real kernel path (linkem.py)\n\nNot run in this run (`LATENCY_LINKEM=1` runs it; needs root).',
    '',
    machine,
    '',
  ].join('\n');
  writeReadmeSection('## latency', section);
}

await main();
