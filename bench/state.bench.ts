/**
 * Game-state benchmark (not a test): `npm run bench:state` (issue 21's "Benchmark"). Prints one table
 * per part, writes raw figures to bench/results/state.json and the tables into the "## state" section
 * of bench/README.md. Every system runs in bench/state/harness.ts: two `ConnectionHost`s on a seeded
 * `World`, the same seeded traces (bench/state/trace.ts) for every system. `npm run bench:state`
 * bundles this file with esbuild (bench/.state.bench.mjs, beside it so that its relative paths hold)
 * and runs the bundle with node, so the µs figures carry no loader's per-call overhead.
 *
 * 1. Bytes. S1 (900 entities, 10 % move a tick, 20 Hz): colyseus patches (float32 and quantized to 16
 *    bits) on a reliable-ordered lane beside gamewire's snapshots; bytes per tick and state age at 0 %
 *    and 10 % loss, seeds 1..3. S2 (Gaffer's 901 cubes at 60 Hz): bits per cube per snapshot beside his
 *    published figure. Encode cost per client and shared (bench/state/encode.ts).
 * 2. Interpolation against @geckos.io/snapshot-interpolation: its rows come from bench/state/interp.ts.
 * 3. Prediction (bench/state/prediction.ts): 10,000 inputs at 100 ms RTT, 10 % loss; an injected
 *    disagreement.
 * 4. Rate: the path's rate steps from 1 Mbit/s to 128 kbit/s mid-run; bytes per 1 s window against it;
 *    update rates per priority under a binding budget (bench/state/priority.ts).
 * 5. Lag compensation (bench/state/lagcomp.ts): the rewound target against what the client drew, at
 *    100 and 200 ms RTT.
 *
 * Parts without a system yet print "pending". STATE_PARTS=14 (any of 1..5) runs only those parts,
 * prints, and writes nothing in the tree; STATE_SEEDS=n sets the seeds (default 3).
 */
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { table, writeReadmeSection } from './readme.js';
import { colyseusSystem } from './state/colyseus.js';
import { encodeCost, type EncodeCost } from './state/encode.js';
import { fmt, PENDING, pct, range, type Verdict, verdictTable } from './state/format.js';
import { DEFAULT_MAX_REWIND_MS } from '../src/state/server.js';
import { interpTable, interpTargets, runInterpBench } from './state/interp.js';
import { gamewireSystem } from './state/gamewire.js';
import {
  EntityLag, lateShare, lateThresholdMs, median, percentile, rateStep, rateWindows, runHarness, type HarnessContext, type HarnessLink,
  type HarnessOptions, type HarnessRun, type RateWindow, type StateSystem,
} from './state/harness.js';
import { BLEND_TICKS, runLagComp, type LagCompRun, TARGET_STEP_M } from './state/lagcomp.js';
import { runPrediction, settle, SPEED_M_PER_TICK } from './state/prediction.js';
import { PRIORITY_TYPES, PRIORITY_WARM_TICKS, runPriority, type PriorityRun } from './state/priority.js';
import { s1Trace, s2Trace, traceSummary, type Trace } from './state/trace.js';

const HERE = dirname(fileURLToPath(import.meta.url));
/** `npm run bench:state` runs an esbuild bundle of this file (bench/.state.bench.mjs) with node: no loader between the calls timed. */
const BUNDLED = import.meta.url.endsWith('.mjs');
const TIMING = BUNDLED
  ? 'Timings (µs) come from the bundled build (esbuild bundle of the bench, run by node), wall time on this machine.'
  : 'Timings (µs) come from the TypeScript source run under a loader, whose per-call module getters inflate them: `npm run bench:state` runs the bundled build.';
/** Clients of the encode split's second run (bench/state/encode.ts). */
const ENCODE_CLIENTS = 17;
const started = Date.now();
const load0 = loadavg()[0]!;
const SEEDS = Array.from({ length: Number(process.env.STATE_SEEDS ?? 3) }, (_, i) => i + 1);
const S1_TICKS = 1200;
const S2_TICKS = 3600;
const ONE_WAY_MS = 50;
const LOSSES = [0, 0.1];
/** Gaffer's S2 runs: no loss and his demo's default loss (5 %). */
const S2_LOSSES = [0, 0.05];
/** Gaffer's "Snapshot Compression" final: "less than 0.25 Mbit" at 60 snapshots/s of 901 cubes, headers included. */
const GAFFER_BITS_PER_CUBE = 250_000 / 60 / 901;

// ---------------------------------------------------------------------------------------------
// The systems

/**
 * A row of bench:state: how to make a fresh system for one run from that run's trace. A row whose
 * `make` is undefined prints "pending".
 */
interface SystemEntry {
  key: string;
  label: string;
  make?: (trace: Trace) => StateSystem;
  /** Connection options the system wants beside the lane list (default: every default). */
  connection?: HarnessOptions['connection'];
}

/**
 * The gamewire state layer (bench/state/gamewire.ts): a StateServer on the harness's server-side
 * connection replays the trace, a StateClient decodes; samples read by the tables: `messageBytes`
 * (snapshot bytes per tick) and `encodeUs` (the whole tick with one client; part 1's encode figure
 * per client comes from bench/state/encode.ts).
 */
const GAMEWIRE_S1: SystemEntry = { key: 'gamewire', label: 'gamewire snapshots', make: (t) => gamewireSystem(t) };
const GAMEWIRE_S2: SystemEntry = { key: 'gamewire', label: 'gamewire snapshots', make: (t) => gamewireSystem(t) };

const S1_SYSTEMS: SystemEntry[] = [
  { key: 'colyseus-f32', label: 'colyseus float32, reliable-ordered lane', make: (t) => colyseusSystem(t, 'float32') },
  { key: 'colyseus-q16', label: 'colyseus quantized16, reliable-ordered lane', make: (t) => colyseusSystem(t, 'quantized16') },
  GAMEWIRE_S1,
];
const S2_SYSTEMS: SystemEntry[] = [GAMEWIRE_S2];

// ---------------------------------------------------------------------------------------------
// Part 1: bytes

/** One run's figures (one system, one loss, one seed). */
interface RunFigures {
  seed: number;
  messageMedian: number;
  messageP95: number;
  udpMedian: number;
  udpP95: number;
  udpMean: number;
  ageP50: number;
  ageP99: number;
  ageMax: number;
  /** Share of ticks with age > one way + jitter + one tick (never-held ticks included). */
  late: number;
  /** Share of ticks with age > one way: the research note's count, for the comparison. */
  lateOneWay: number;
  neverHeld: number;
  encodeUs: number;
  joinBytes: number;
  joinHeldMs: number;
  wallMs: number;
  finish: Record<string, unknown> | undefined;
}

/** Medians over seeds of each figure, and the runs. */
interface RowResult {
  system: string;
  label: string;
  loss: number;
  pending: boolean;
  median?: Omit<RunFigures, 'seed' | 'finish' | 'wallMs'>;
  runs: (RunFigures & { bytesPerTick: number[]; ages: number[]; samples: Record<string, { median: number; p95: number; count: number }> })[];
}

function figures(run: HarnessRun, link: HarnessLink, wallMs: number): RunFigures {
  const s = run.samples;
  const sum = run.bytesPerTick.reduce((a, b) => a + b, 0);
  return {
    seed: run.seed,
    messageMedian: median(s.messageBytes ?? []),
    messageP95: percentile(s.messageBytes ?? [], 95),
    udpMedian: median(run.bytesPerTick),
    udpP95: percentile(run.bytesPerTick, 95),
    udpMean: sum / run.ticks,
    ageP50: percentile(run.ages, 50),
    ageP99: percentile(run.ages, 99),
    ageMax: percentile(run.ages, 100),
    late: lateShare(run.ages, lateThresholdMs(link, run.tickMs)),
    lateOneWay: lateShare(run.ages, link.oneWayMs ?? 50),
    neverHeld: run.ages.filter((a) => Number.isNaN(a)).length,
    encodeUs: median(s.encodeUs ?? []),
    joinBytes: run.joinBytes,
    joinHeldMs: run.joinHeldMs,
    wallMs,
    finish: run.finish,
  };
}

function medianFigures(runs: RunFigures[]): RowResult['median'] {
  const m = (f: (r: RunFigures) => number): number => median(runs.map(f));
  return {
    messageMedian: m((r) => r.messageMedian), messageP95: m((r) => r.messageP95), udpMedian: m((r) => r.udpMedian), udpP95: m((r) => r.udpP95),
    udpMean: m((r) => r.udpMean), ageP50: m((r) => r.ageP50), ageP99: m((r) => r.ageP99), ageMax: m((r) => r.ageMax), late: m((r) => r.late),
    lateOneWay: m((r) => r.lateOneWay), neverHeld: m((r) => r.neverHeld), encodeUs: m((r) => r.encodeUs), joinBytes: m((r) => r.joinBytes),
    joinHeldMs: m((r) => r.joinHeldMs),
  };
}

const round3 = (xs: number[]): number[] => xs.map((x) => Math.round(x * 1000) / 1000);

function runRow(sys: SystemEntry, traces: Map<number, Trace>, link: HarnessLink, ticks: number, tickHz: number, joinSettleMs?: number): RowResult {
  const row: RowResult = { system: sys.key, label: sys.label, loss: link.loss ?? 0, pending: sys.make === undefined, runs: [] };
  if (sys.make === undefined) return row;
  for (const seed of SEEDS) {
    const t0 = performance.now();
    const run = runHarness(sys.make(traces.get(seed)!), { ...link, seed, ticks, tickHz, connection: sys.connection, joinSettleMs });
    const f = figures(run, link, performance.now() - t0);
    const samples = Object.fromEntries(Object.entries(run.samples).map(([k, v]) => [k, { median: median(v), p95: percentile(v, 95), count: v.length }]));
    row.runs.push({ ...f, bytesPerTick: run.bytesPerTick, ages: round3(run.ages), samples });
  }
  row.median = medianFigures(row.runs);
  return row;
}

const spread = (row: RowResult, f: (r: RunFigures) => number, d = 0): string => {
  const xs = row.runs.map(f);
  return `${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)}`;
};

function s1Table(rows: RowResult[], enc: EncodeCost | undefined): string {
  return table(
    ['system', 'loss / dir', 'message B median (p95)', 'server UDP B per tick median (p95)', 'mean', 'state age p50 / p99 / max ms',
      'late (> 100 ms)', 'encode µs/tick', 'spread over seeds: UDP median; age p99', 'client = server'],
    rows.map((r) => {
      const m = r.median;
      if (m === undefined) return [r.label, pct(r.loss, 0), PENDING, PENDING, PENDING, PENDING, PENDING, PENDING, '', ''];
      const encode = r.system !== 'gamewire' ? fmt(m.encodeUs, 1)
        : enc === undefined ? '–' : `${fmt(enc.perClient.median, 1)} per client + ${fmt(enc.shared.median, 1)} shared`;
      return [
        r.label, pct(r.loss, 0), `${fmt(m.messageMedian)} (${fmt(m.messageP95)})`, `${fmt(m.udpMedian)} (${fmt(m.udpP95)})`, fmt(m.udpMean),
        `${fmt(m.ageP50, 1)} / ${fmt(m.ageP99, 1)} / ${fmt(m.ageMax, 1)}`, pct(m.late) + (m.neverHeld > 0 ? ` (${fmt(m.neverHeld)} never)` : ''),
        encode, `${spread(r, (x) => x.udpMedian)}; ${spread(r, (x) => x.ageP99, 1)}`, `yes, ${r.runs.length} of ${r.runs.length} runs`,
      ];
    }),
    ['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---'],
  );
}

/** The table issue 21 quotes (its research note's §6, measured 2026-11-27 with a throwaway script). */
const NOTE_S6: Record<string, { patch: number; udp: number; p50: number; p99: number; max: number; late: number }> = {
  'colyseus-f32@0': { patch: 1672, udp: 2252, p50: 50, p99: 50, max: 115, late: 0.002 },
  'colyseus-f32@0.1': { patch: 1672, udp: 2406, p50: 50, p99: 300, max: 500, late: 0.44 },
  'colyseus-q16@0': { patch: 1124, udp: 1143, p50: 50, p99: 50, max: 57, late: 0.001 },
  'colyseus-q16@0.1': { patch: 1124, udp: 1286, p50: 50, p99: 336, max: 463, late: 0.28 },
};

/**
 * The note's rows beside this run's: `rows` as this bench measures them, `noteWay` the same systems
 * measured the note's way (ticks from the join on, no settle).
 */
function noteTable(rows: RowResult[], noteWay: RowResult[]): string {
  const out: (string | number)[][] = [];
  for (const r of rows) {
    const n = NOTE_S6[`${r.system}@${r.loss}`];
    const w = noteWay.find((x) => x.system === r.system && x.loss === r.loss)?.median;
    if (n === undefined || r.median === undefined || w === undefined) continue;
    const m = r.median;
    const ages = (x: { ageP50: number; ageP99: number; ageMax: number }): string => `${fmt(x.ageP50, 1)} / ${fmt(x.ageP99, 1)} / ${fmt(x.ageMax, 1)}`;
    out.push([`${r.label}, ${pct(r.loss, 0)}`, 'issue 21 (note §6)', fmt(n.patch), fmt(n.udp), `${n.p50} / ${n.p99} / ${n.max}`, pct(n.late)]);
    out.push(['', 'here, the note\'s way: ticks from the join; mean; late > 50 ms', fmt(w.messageMedian), fmt(w.udpMean), ages(w), pct(w.lateOneWay)]);
    out.push(['', 'here, this bench\'s way: 1 s after the join; median; late > 100 ms', fmt(m.messageMedian), fmt(m.udpMedian), ages(m), pct(m.late)]);
  }
  return table(['row', 'source', 'patch B median', 'server UDP B per tick', 'state age p50 / p99 / max ms', 'late'], out,
    ['---', '---', '---:', '---:', '---:', '---:']);
}

interface S2Result {
  traces: { seed: number; changedMedian: number; changedP95: number; changedMax: number; changedShare: number; generateMs: number }[];
  rows: (RowResult & { bitsPerCube?: number; bitsPerCubeMedian?: number; bitsPerCubeP95?: number })[];
}

function s2Tables(r: S2Result): string {
  const traceRows = r.traces.map((t) => [t.seed, `${t.changedMedian} / ${t.changedP95} / ${t.changedMax}`, pct(t.changedShare, 2), fmt(t.generateMs)]);
  const sysRows = r.rows.map((row) => {
    if (row.pending) return [row.label, pct(row.loss, 0), PENDING, PENDING, fmt(GAFFER_BITS_PER_CUBE, 2), PENDING];
    return [row.label, pct(row.loss, 0), `${fmt(row.bitsPerCube!, 2)} (${fmt(row.bitsPerCubeMedian!, 2)}, ${fmt(row.bitsPerCubeP95!, 2)})`,
      fmt((row.median!.udpMean * 8 * 60) / 1000, 1), fmt(GAFFER_BITS_PER_CUBE, 2), `${fmt(row.bitsPerCube! / GAFFER_BITS_PER_CUBE, 2)}×`];
  });
  return [
    table(['S2 trace seed', 'cubes changed per tick median / p95 / max (of 901)', 'share changed', 'generated in ms'], traceRows,
      ['---:', '---:', '---:', '---:']),
    '',
    table(['system', 'loss / dir', 'bits per cube per snapshot: mean (median, p95)', 'kbit/s (mean)', "Gaffer's final", 'ratio'], sysRows,
      ['---', '---:', '---:', '---:', '---:', '---:']),
  ].join('\n');
}

function part1Verdicts(s1: RowResult[], s2: S2Result, enc: EncodeCost | undefined): Verdict[] {
  const get = (sys: string, loss: number): RowResult | undefined => s1.find((r) => r.system === sys && r.loss === loss);
  const out: Verdict[] = [];
  for (const loss of LOSSES) {
    const q = get('colyseus-q16', loss)?.median;
    const g = get('gamewire', loss)?.median;
    out.push({
      what: `S1 at ${pct(loss, 0)} loss: server UDP B per tick ≤ colyseus quantized16's (median and mean)`,
      figures: g === undefined ? `colyseus quantized16 ${fmt(q?.udpMedian ?? NaN)} median, ${fmt(q?.udpMean ?? NaN)} mean; gamewire pending`
        : `gamewire ${fmt(g.udpMedian)} / ${fmt(g.udpMean)} vs ${fmt(q!.udpMedian)} / ${fmt(q!.udpMean)}`,
      met: g === undefined || q === undefined ? undefined : g.udpMedian <= q.udpMedian && g.udpMean <= q.udpMean,
    });
  }
  const q10 = get('colyseus-q16', 0.1)?.median;
  const g10 = get('gamewire', 0.1)?.median;
  const bound = 0.45 * (q10?.ageP99 ?? NaN);
  out.push({
    what: 'S1 at 10 % loss: state age p99 ≤ 0.45 × colyseus quantized16\'s',
    figures: g10 === undefined ? `bound 0.45 × ${fmt(q10?.ageP99 ?? NaN, 1)} = ${fmt(bound, 1)} ms; gamewire pending`
      : `gamewire ${fmt(g10.ageP99, 1)} ms vs ${fmt(bound, 1)} ms`,
    met: g10 === undefined ? undefined : g10.ageP99 <= bound,
  });
  const g2 = s2.rows.find((r) => r.system === 'gamewire' && r.loss === 0.05);
  out.push({
    what: `S2 at 5 % loss: bits per cube per snapshot ≤ 2 × Gaffer's ${fmt(GAFFER_BITS_PER_CUBE, 2)}`,
    figures: g2?.bitsPerCube === undefined ? `bound ${fmt(2 * GAFFER_BITS_PER_CUBE, 2)}; gamewire pending` : `gamewire ${fmt(g2.bitsPerCube, 2)}`,
    met: g2?.bitsPerCube === undefined ? undefined : g2.bitsPerCube <= 2 * GAFFER_BITS_PER_CUBE,
  });
  const ce = get('colyseus-q16', 0)?.median;
  const colyseus = `colyseus quantized16's \`encode()\` ${fmt(ce?.encodeUs ?? NaN, 1)} µs per tick (one patch for every client)`;
  out.push({
    what: 'S1: encode ≤ 50 µs per client per tick (median over runs)',
    figures: enc === undefined ? `${colyseus}; gamewire pending`
      : `gamewire ${fmt(enc.perClient.median, 1)} µs per client (runs ${range(enc.pairs.map((p) => p.perClient), 1)}), + ${fmt(enc.shared.median, 1)} µs shared per tick; ${colyseus}`,
    met: enc === undefined ? undefined : enc.perClient.median <= 50,
  });
  return out;
}

/** Part 1's encode table: gamewire's split (bench/state/encode.ts) beside colyseus's `encode()` and the harness's whole tick. */
function encodeTable(enc: EncodeCost, s1: RowResult[]): string {
  const sp = (x: { median: number; min: number; max: number }): string => `${fmt(x.median, 1)} (${fmt(x.min, 1)}–${fmt(x.max, 1)})`;
  const n = enc.clients;
  const rows: (string | number)[][] = [
    ['gamewire', `per client: (T${n} − T1) / ${n - 1}`, sp(enc.perClient)],
    ['gamewire', 'shared per tick: T1 − per client (reading and quantizing 900 entities)', sp(enc.shared)],
    ['gamewire', 'T1: `tick` with 1 client', sp(enc.t1)],
    ['gamewire', `T${n}: \`tick\` with ${n} clients`, sp(enc.tn)],
  ];
  const world = s1.find((r) => r.system === 'gamewire' && r.loss === 0);
  if (world !== undefined) {
    rows.push(['gamewire', '`tick` with 1 client on the world (part 1\'s harness runs, 0 % loss; median of seeds)', `${fmt(world.median!.encodeUs, 1)} (${spread(world, (x) => x.encodeUs, 1)})`]);
  }
  for (const key of ['colyseus-q16', 'colyseus-f32']) {
    const r = s1.find((x) => x.system === key && x.loss === 0);
    if (r?.median === undefined) continue;
    rows.push([r.label, '`encode()` per tick: one patch, broadcast alike to every client, so also its cost per client with one (median of seeds)', `${fmt(r.median.encodeUs, 1)} (${spread(r, (x) => x.encodeUs, 1)})`]);
  }
  return table(['system', 'figure', 'µs per tick: median (spread over runs)'], rows, ['---', '---', '---:']);
}

function part1(): { data: unknown; text: string } {
  const s1Traces = new Map(SEEDS.map((seed) => [seed, s1Trace({ seed, ticks: S1_TICKS })]));
  const s1: RowResult[] = [];
  for (const sys of S1_SYSTEMS) {
    for (const loss of LOSSES) {
      const row = runRow(sys, s1Traces, { oneWayMs: ONE_WAY_MS, loss }, S1_TICKS, 20);
      s1.push(row);
      console.error(`part 1 S1: ${sys.label} at ${pct(loss, 0)}: ${row.pending ? 'pending' : `${row.runs.map((r) => fmt(r.wallMs)).join(', ')} ms`}`);
    }
  }
  const noteWay = S1_SYSTEMS.filter((sys) => sys.key.startsWith('colyseus'))
    .flatMap((sys) => LOSSES.map((loss) => runRow(sys, s1Traces, { oneWayMs: ONE_WAY_MS, loss }, S1_TICKS, 20, 0)));
  const s2Traces = new Map<number, Trace>();
  const s2: S2Result = { traces: [], rows: [] };
  for (const seed of SEEDS) {
    const t0 = performance.now();
    const tr = s2Trace({ seed, ticks: S2_TICKS });
    s2.traces.push({ seed, ...traceSummary(tr), generateMs: performance.now() - t0 });
    s2Traces.set(seed, tr);
  }
  for (const sys of S2_SYSTEMS) {
    for (const loss of S2_LOSSES) {
      const row: S2Result['rows'][number] = runRow(sys, s2Traces, { oneWayMs: ONE_WAY_MS, loss }, S2_TICKS, 60);
      if (row.median !== undefined) {
        row.bitsPerCube = (row.median.udpMean * 8) / 901;
        row.bitsPerCubeMedian = (row.median.udpMedian * 8) / 901;
        row.bitsPerCubeP95 = (row.median.udpP95 * 8) / 901;
      }
      s2.rows.push(row);
    }
  }
  const enc = S1_SYSTEMS.some((x) => x.key === 'gamewire' && x.make !== undefined)
    ? encodeCost(SEEDS.map((seed) => ({ seed, trace: s1Traces.get(seed)! })), { clients: ENCODE_CLIENTS, repeats: 2 * SEEDS.length })
    : undefined;
  console.error(`part 1 encode: ${enc === undefined ? 'pending' : `${enc.pairs.length} pairs`}`);
  const verdicts = part1Verdicts(s1, s2, enc);
  const thr = lateThresholdMs({ oneWayMs: ONE_WAY_MS }, 50);
  const text = [
    '### 1. Bytes',
    '',
    `**S1**: 900 entities (x, y in [−500, 500] m, heading), 20 Hz, each tick 90 of them (drawn at random) take one random-walk`,
    `step of 50–300 mm (bench/state/trace.ts); ${S1_TICKS} ticks; seeds ${SEEDS.join(', ')} (trace and links); medians over seeds of each seed's`,
    'figure. Two `ConnectionHost`s (unsecured, default options) on the `World`, 50 ms one way, i.i.d. loss per direction, no jitter.',
    'The client connects; when the server\'s end is connected it sends the join (tick 0: the full state), the trace\'s tick 1 one second',
    'later, then a tick every 50 ms; figures are over ticks 1..1200 (the join apart). Message B: state bytes handed to the connection',
    'per tick (a colyseus patch is `encode()` after the tick\'s assignments, then `discardChanges()`; one message per tick on a',
    'reliable-ordered lane; the client decodes with colyseus\'s `Decoder`). Server UDP B per tick: every datagram the server sent in',
    'the tick\'s 50 ms window (all lanes, framing and acks, lost ones too), counted by the world as sent. State age of tick k: from',
    `the server's tick k to the first time the client holds tick k or a later one; late: age > one way + one tick = ${thr} ms (a tick`,
    'never held counts as late). Encode µs/tick: colyseus\'s `encode()` alone; gamewire\'s per client and shared parts of `tick`, from',
    'the encode runs below. Client = server: at the end the client\'s decoded map equals the server\'s and the trace\'s within the',
    `precision (the bench stops otherwise). ${TIMING}`,
    '',
    s1Table(s1, enc),
    '',
    ...(enc === undefined ? [] : [
      `**Encode cost.** gamewire's \`tick\` does work once per tick (read and quantize every entity) and then builds one snapshot per client,`,
      `so its figure per client is measured apart from the network (bench/state/encode.ts): the S1 trace replayed by a \`StateServer\` with 1`,
      `and with ${ENCODE_CLIENTS} clients on fake connections (every snapshot acknowledged two ticks later, as at 100 ms RTT, 0 % loss; each client`,
      `gets the same snapshots, ${fmt(median(enc.pairs.map((p) => p.snapshotBytes)))} B median as on the world), T1 and T${ENCODE_CLIENTS} the median µs per tick of each run`,
      `(ticks 101..1200). ${enc.pairs.length} pairs of runs, the order of the two alternating, over seeds ${SEEDS.join(', ')}'s traces (after one pair not kept);`,
      'each pair gives one split; shown: the median over pairs and their spread. colyseus encodes one patch per tick and sends the same',
      'bytes to every client (no per-client view in this scenario), so its `encode()` is the whole cost per tick whatever the number of',
      'clients, and for one client its cost per client.',
      '',
      encodeTable(enc, s1),
      '',
    ]),
    'Against the figures issue 21 quotes (its research note: a throwaway script, another trace of the same scenario). Its method,',
    'as far as this bench can reproduce it: the ticks start at the join (the join\'s backlog then delays the first ticks), "server UDP',
    'B per tick" is the mean and "ticks late" the share with age > one way (50 ms); the colyseus rows run that way too, on the same',
    'traces and links. A patch\'s size depends on the movers\' colyseus refIds (1, 2 or 3 bytes each), so another trace differs slightly.',
    '',
    noteTable(s1, noteWay),
    '',
    `**S2** (Gaffer's cubes): 901 cubes, 60 Hz, position and orientation, a player cube pushing the others (bench/state/trace.ts); ${S2_TICKS}`,
    'ticks; at 0 % and his demo\'s 5 % loss per direction, 50 ms one way. Bits per cube per snapshot = server UDP B per tick × 8 / 901 (his',
    `figure is an average and counts headers too; the ratio is of the means). Gaffer's final: "less than 0.25 Mbit/s" = ${fmt(GAFFER_BITS_PER_CUBE, 2)} bits per cube per snapshot.`,
    '',
    s2Tables(s2),
    '',
    verdictTable(verdicts),
  ].join('\n');
  return { data: { s1, s1NoteWay: noteWay, s2, encode: enc, targets: verdicts }, text };
}

// ---------------------------------------------------------------------------------------------
// Part 4: rate step

/** Entity lag figures (ms) over every (entity, sample instant) pair of a phase (harness.ts `EntityLag`). */
interface LagSummary {
  mean: number;
  p99: number;
  max: number;
  /** Share of pairs with the client behind (lag > 0). */
  behind: number;
}

function lagSummary(xs: readonly number[]): LagSummary {
  return {
    mean: xs.reduce((a, b) => a + b, 0) / xs.length, p99: percentile(xs, 99), max: percentile(xs, 100), behind: xs.filter((x) => x > 0).length / xs.length,
  };
}

/** How the gamewire budget followed the step: from the connection's pacing rate at each tick and the snapshot budget taken from it. */
interface PacingFollow {
  /** From the step to the first tick whose pacing rate was at or below the link's new rate (ms). */
  followMs: number;
  /** From one RTT after the step to the last tick: the pacing rate (kbit/s) and the budget (B per snapshot), lowest / median / p95 / highest. */
  pacingKbps: number[];
  budgetBytes: number[];
}

interface RateRun {
  seed: number;
  windows: RateWindow[];
  beforeMaxKbps: number;
  afterMaxKbps: number;
  beforeOver: number;
  afterOver: number;
  queueDrops: number;
  ageBefore: { p50: number; p99: number };
  /** `never`: ticks of the phase not held whole while the trace ran (never, or only once it stopped changing). */
  ageAfter: { p50: number; p99: number; max: number; never: number; ticks: number };
  lagBefore: LagSummary;
  lagAfter: LagSummary;
  pacing?: PacingFollow;
}

/** Entity lag is sampled every this many ticks, half a tick after the tick ran. */
const LAG_EVERY_TICKS = 5;
/** Budgets (`budget.maxBytes`) of the priority scenario. */
const PRIORITY_BUDGETS = [300, 400, 600];

const lmh = (xs: readonly number[]): number[] => [Math.min(...xs), median(xs), percentile(xs, 95), Math.max(...xs)];

function rateRuns(): { rows: { system: string; label: string; pending: boolean; runs: RateRun[] }[]; desc: ReturnType<typeof rateStep>; settleMs: number } {
  const ticks = S1_TICKS;
  const settleMs = 2 * ONE_WAY_MS;
  const systems: SystemEntry[] = [S1_SYSTEMS.find((s) => s.key === 'colyseus-q16')!, GAMEWIRE_S1];
  const traces = new Map(SEEDS.map((seed) => [seed, s1Trace({ seed, ticks })]));
  const lags = new Map(SEEDS.map((seed) => [seed, new EntityLag(traces.get(seed)!)]));
  const rows: { system: string; label: string; pending: boolean; runs: RateRun[] }[] = [];
  let desc = rateStep(ticks);
  for (const sys of systems) {
    const row = { system: sys.key, label: sys.label, pending: sys.make === undefined, runs: [] as RateRun[] };
    rows.push(row);
    if (sys.make === undefined) continue;
    for (const seed of SEEDS) {
      const step = rateStep(ticks);
      desc = step;
      const system = sys.make(traces.get(seed)!);
      const lagBefore: number[] = [];
      const lagAfter: number[] = [];
      const onStart = (ctx: HarnessContext): void => {
        step.onStart(ctx);
        const held = (id: number): number => system.heldTickOf?.(id) ?? -1;
        for (let k = 1; k <= ticks; k += LAG_EVERY_TICKS) {
          const at = ctx.tickTime(k) + ctx.tickMs / 2;
          ctx.world.at(at, () => {
            const phase = at < step.stepAtMs() ? lagBefore : at >= step.stepAtMs() + settleMs ? lagAfter : undefined;
            if (phase !== undefined) lags.get(seed)!.sample(ctx.world.now, k, ctx.tickTime, held, phase);
          });
        }
      };
      // A reliable stream held behind the slower link needs long after its last tick to deliver everything.
      const run = runHarness(system, { seed, ticks, oneWayMs: ONE_WAY_MS, link: step.link, onStart, drainMs: 120_000, connection: sys.connection });
      const windows = rateWindows(run, step, settleMs);
      const kbps = (w: RateWindow): number => (w.wireBytes * 8) / 1000;
      const phase = (p: 'before' | 'after'): RateWindow[] => windows.filter((w) => w.phase === p);
      const stepTick = Math.round((step.stepAtMs() - run.firstTickAtMs) / run.tickMs) + 1;
      const before = run.ages.slice(0, stepTick - 1);
      const after = run.ages.slice(stepTick - 1);
      const endMs = run.firstTickAtMs + ticks * run.tickMs;
      const heldLate = after.filter((a, i) => Number.isNaN(a) || run.firstTickAtMs + (stepTick - 1 + i) * run.tickMs + a >= endMs).length;
      let pacing: PacingFollow | undefined;
      const rate = run.samples.pacingBytesPerSec;
      if (rate !== undefined) {
        const tickAt = (k: number): number => run.firstTickAtMs + (k - 1) * run.tickMs;
        let follow = NaN;
        for (let k = stepTick; k <= ticks; k++) {
          if (rate[k - 1]! * 8 <= step.toBitsPerSec) {
            follow = tickAt(k) - step.stepAtMs();
            break;
          }
        }
        const from = stepTick + Math.ceil(settleMs / run.tickMs);
        pacing = {
          followMs: follow,
          pacingKbps: lmh(rate.slice(from - 1).map((x) => (x * 8) / 1000)),
          budgetBytes: lmh(run.samples.budgetBytes!.slice(from - 1)),
        };
      }
      row.runs.push({
        seed, windows,
        beforeMaxKbps: Math.max(...phase('before').map(kbps)), afterMaxKbps: Math.max(...phase('after').map(kbps)),
        beforeOver: phase('before').filter((w) => !w.within).length, afterOver: phase('after').filter((w) => !w.within).length,
        queueDrops: (run.diag.serverToClient as { droppedQueue: number }).droppedQueue,
        ageBefore: { p50: percentile(before, 50), p99: percentile(before, 99) },
        ageAfter: {
          p50: percentile(after, 50), p99: percentile(after, 99), max: percentile(after, 100), never: heldLate, ticks: after.length,
        },
        lagBefore: lagSummary(lagBefore), lagAfter: lagSummary(lagAfter), pacing,
      });
    }
    console.error(`part 4: ${sys.label}: done`);
  }
  return { rows, desc, settleMs };
}

/** The priority scenario's figures of one budget: per seed, and per type the medians over seeds. */
interface PriorityRow {
  maxBytes: number;
  runs: PriorityRun[];
  types: { type: string; priority: number; wanted: number; mean: number; min: number; max: number; ratio: number; ratioRange: [number, number]; worstError: number }[];
}

function priorityRows(): PriorityRow[] {
  const out: PriorityRow[] = [];
  for (const maxBytes of PRIORITY_BUDGETS) {
    const runs = SEEDS.map((seed) => runPriority({ seed, maxBytes }));
    const types = PRIORITY_TYPES.map((t, i) => {
      const per = runs.map((r) => r.types[i]!);
      const ratios = per.map((x) => x.ratio);
      return {
        type: t.name, priority: t.priority, wanted: per[0]!.wanted, mean: median(per.map((x) => x.mean)), min: Math.min(...per.map((x) => x.min)),
        max: Math.max(...per.map((x) => x.max)), ratio: median(ratios), ratioRange: [Math.min(...ratios), Math.max(...ratios)] as [number, number],
        worstError: per.reduce((w, x) => (Math.abs(x.error) > Math.abs(w) ? x.error : w), 0),
      };
    });
    out.push({ maxBytes, runs, types });
    console.error(`part 4 priorities: budget ${maxBytes} B: done`);
  }
  return out;
}

function part4(): { data: unknown; text: string } {
  const { rows, desc, settleMs } = rateRuns();
  const prio = GAMEWIRE_S1.make === undefined ? [] : priorityRows();
  const m = (r: { runs: RateRun[] }, f: (x: RateRun) => number): number => median(r.runs.map(f));
  const lagCell = (r: { runs: RateRun[] }, p: 'lagBefore' | 'lagAfter'): string =>
    `${fmt(m(r, (x) => x[p].mean), 1)} / ${fmt(m(r, (x) => x[p].p99), 0)} / ${fmt(m(r, (x) => x[p].max), 0)} (${pct(m(r, (x) => x[p].behind))})`;
  const tableRows = rows.map((r) => {
    if (r.pending) return [r.label, PENDING, PENDING, PENDING, PENDING, PENDING, PENDING, PENDING];
    const sum = (f: (x: RateRun) => number): number => r.runs.reduce((a, x) => a + f(x), 0);
    const count = (p: 'before' | 'after'): number => r.runs.reduce((a, x) => a + x.windows.filter((w) => w.phase === p).length, 0);
    const never = sum((x) => x.ageAfter.never);
    return [
      r.label,
      `${fmt(m(r, (x) => x.beforeMaxKbps), 1)} (${sum((x) => x.beforeOver)} of ${count('before')} over)`,
      `${fmt(m(r, (x) => x.afterMaxKbps), 1)} (${sum((x) => x.afterOver)} of ${count('after')} over)`,
      fmt(m(r, (x) => x.queueDrops)),
      `${fmt(m(r, (x) => x.ageBefore.p50), 1)} / ${fmt(m(r, (x) => x.ageBefore.p99), 1)}`,
      `${fmt(m(r, (x) => x.ageAfter.p50), 0)} / ${fmt(m(r, (x) => x.ageAfter.p99), 0)} / ${fmt(m(r, (x) => x.ageAfter.max), 0)}`
        + (never > 0 ? ` (${fmt(never)} of ${fmt(sum((x) => x.ageAfter.ticks))} ticks not held whole before the last tick)` : ''),
      lagCell(r, 'lagBefore'),
      lagCell(r, 'lagAfter'),
    ];
  });
  const gw = rows.find((r) => r.system === 'gamewire')!;
  const toKbps = desc.toBitsPerSec / 1000;
  const pacingRows = gw.pending ? [] : gw.runs.map((x) => {
    const p = x.pacing!;
    const worst = Math.max(...x.windows.filter((w) => w.phase === 'after').map((w) => (w.wireBytes * 8) / 1000));
    return [
      x.seed, fmt(p.followMs, 0), p.pacingKbps.map((v) => fmt(v, 0)).join(' / '), p.budgetBytes.map((v) => fmt(v)).join(' / '),
      `${x.afterOver} of ${x.windows.filter((w) => w.phase === 'after').length}`, `${fmt(worst, 1)} (${worst > toKbps ? '+' : ''}${pct(worst / toKbps - 1)})`,
    ];
  });
  const prioRows = prio.flatMap((p) => p.types.map((t, i) => [
    i === 0 ? `${fmt(p.maxBytes)} B` : '', i === 0 ? `${fmt(median(p.runs.map((r) => r.sentPerTick)))} of 300` : '', t.type, t.priority,
    `${fmt(t.mean, 2)} (${fmt(t.min, 2)}–${fmt(t.max, 2)})`, `${fmt(t.ratio, 2)} (${fmt(t.ratioRange[0], 2)}–${fmt(t.ratioRange[1], 2)})`, fmt(t.wanted, 0),
    i === 0 ? '–' : `${t.worstError > 0 ? '+' : ''}${pct(t.worstError)}`,
  ]));
  const worstAfter = gw.pending ? NaN : Math.max(...gw.runs.map((x) => x.afterMaxKbps));
  const verdicts: Verdict[] = [
    {
      what: 'bytes sent ≤ the link\'s rate in every 1 s window, from one RTT after the step (and before it)',
      figures: gw.pending ? PENDING : `${gw.runs.reduce((a, x) => a + x.beforeOver + x.afterOver, 0)} of ${gw.runs.reduce((a, x) => a + x.windows.length, 0)} windows over; `
        + `the largest ${fmt(worstAfter, 1)} kbit/s, ${pct(worstAfter / toKbps - 1)} over ${fmt(toKbps)}`,
      met: gw.pending ? undefined : gw.runs.every((x) => x.beforeOver + x.afterOver === 0),
    },
    ...(prio.length === 0 ? [{ what: 'update rates follow the priority ratios within ± 10 %', figures: PENDING, met: undefined }] : prio.map((p) => {
      const worst = p.types.reduce((w, t) => (Math.abs(t.worstError) > Math.abs(w) ? t.worstError : w), 0);
      return {
        what: `update rates follow the priority ratios 1 : 2 : 4 within ± 10 % in every seed, budget ${fmt(p.maxBytes)} B`,
        figures: `ratios ${p.types.map((t) => fmt(t.ratio, 2)).join(' : ')} (medians over seeds); furthest off ${pct(worst)}`,
        met: Math.abs(worst) <= 0.1,
      };
    })),
  ];
  const text = [
    '### 4. Rate',
    '',
    `S1 (as part 1), 0 % loss, 50 ms one way; both directions cross a bottleneck of ${fmt(desc.fromBitsPerSec / 1000)} kbit/s that steps to`,
    `${fmt(toKbps)} kbit/s at trace tick ${S1_TICKS / 2} (the world's \`reconfigure\`: nothing in flight is lost); drop-tail queue of`,
    `12,500 wire bytes (100 ms at 1 Mbit/s, 780 ms at 128 kbit/s). Windows of 1 s of the server's datagrams: before the step (tick 1 to`,
    `the step, aligned to end at it) and after it (from one RTT, ${settleMs} ms, after the step to the last tick); wire bytes = UDP payload + 28`,
    'per datagram (what the link\'s rate is charged for), judged against the link\'s rate. Medians over seeds; windows over the rate',
    `summed over seeds ${SEEDS.join(', ')}. colyseus is here to show the scenario: a reliable patch stream of ~180 kbit/s cannot fit`,
    '128 kbit/s, so its backlog (and state age) grows for as long as the run lasts. State age is part 1\'s (a tick counts once the',
    'client holds all of it); under a budget that leaves entities out, a snapshot rarely carries a whole tick, so for gamewire after',
    `the step it is over the few ticks held whole. Entity lag measures both the same way: every ${LAG_EVERY_TICKS} ticks, half a tick after the`,
    'tick, for each entity, 0 if the client holds its current state, else the time since the server first changed it after the',
    'newest state the client holds of it (bench/state/harness.ts `EntityLag`); shown over all (entity, instant) pairs of the phase:',
    'mean / p99 / max ms (share of pairs behind).',
    '',
    table(['system', 'before: max kbit/s per window (windows over)', 'after: max kbit/s (windows over)', 'queue drops',
      'state age before p50 / p99 ms', 'state age after p50 / p99 / max ms', 'entity lag before', 'entity lag after'], tableRows,
    ['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
    '',
    ...(gw.pending ? [] : [
      `**How gamewire's budget follows the step.** The snapshot budget is 0.6 of the connection's pacing rate (its lowest over the last second)`,
      'per tick, less each datagram\'s overhead (200..4,096 B, `StateServer` `budget`), read each tick; the pacing rate is the rate controller\'s (congestion/: bandwidth × loss compensation ×',
      'gain, the gain probing above 1 in turns). Per seed: the time from the step to the first tick with the pacing rate at or below',
      `${fmt(toKbps)} kbit/s; from one RTT after the step to the end, the pacing rate and the budget (lowest / median / p95 / highest), and the`,
      'windows over the link\'s rate with the largest.',
      '',
      table(['seed', 'step → pacing ≤ link rate (ms)', 'pacing rate after, kbit/s', 'budget after, B per snapshot', 'windows over', 'largest window kbit/s (over the rate)'],
        pacingRows, ['---:', '---:', '---:', '---:', '---:', '---:']),
      '',
      ...(gw.runs.every((x) => x.afterOver === 0) ? [] : [
      'The budget takes 60 % of the pacing rate\'s lowest over the last second. The pacing rate falls to the new rate within a few ticks,',
      'but then swings above it while the controller probes for more bandwidth; 60 % of a probing rate, plus the framing,',
      'is more than the link carries, so a window in which the probes weigh most goes',
      `over, and the next (the controller backing off from the queue it built) comes under${gw.runs.every((x) => x.queueDrops === 0) ? '; the queue absorbs it (no drops)' : ''}.`,
      '',
      ]),
    ]),
    ...(prio.length === 0 ? [] : [
      `**Priority ratios.** ${fmt(300)} entities with S1's fields in three types, 100 each, priorities low 1, mid 2, high 4 (\`priorities\`), every`,
      'entity changing every tick (S1\'s random walk with all of them moving), 20 Hz, 1,200 ticks, 50 ms one way, no loss or rate limit;',
      'the budget is bound by `budget.maxBytes` (the rate allows more). Updates: the snapshots that carried an entity to the client',
      `(its newest held tick is the snapshot's), counted from tick ${PRIORITY_WARM_TICKS + 1} on; per entity per second; per type the mean over its entities`,
      '(lowest–highest entity over all seeds), the median over seeds, and its ratio to the low type\'s (the median over seeds, and the',
      'range over seeds); off by: the ratio\'s furthest seed from the priorities\' ratio.',
      '',
      table(['budget', 'entities sent per tick', 'type', 'priority', 'updates per entity per s: mean (lowest–highest)', 'ratio to low (seeds)', 'wanted', 'off by'],
        prioRows, ['---:', '---:', '---', '---:', '---:', '---:', '---:', '---:']),
      '',
      ...(prio.every((p) => p.types.every((t) => Math.abs(t.worstError) <= 0.1)) ? [] : [
        'The accumulator is reset to 0 when an entity is sent, so each entity goes out when its accumulated priority is among the',
        'highest, after a whole number of ticks: a type whose ideal interval is a few ticks is rounded up to the next whole tick and',
        'loses what it had accumulated beyond the cut-off. The ratios hold when the budget is tight enough that every type waits',
        'many ticks, and the highest priority falls short first as the budget grows.',
        '',
      ]),
    ]),
    verdictTable(verdicts),
  ].join('\n');
  return { data: { rows: rows.map((r) => ({ ...r, runs: r.runs })), priorities: prio, targets: verdicts }, text };
}


// ---------------------------------------------------------------------------------------------
// Part 3: prediction

/** Inputs each agreeing run must carry, the input (and server tick) rate, the link. */
const PRED_INPUTS = 10_000;
const PRED_HZ = 60;
const PRED_LINK: HarnessLink = { oneWayMs: 50, jitterMs: 15, loss: 0.1 };
/** The injected run: its server ticks, and the tick before which the server moves the entity 1 m. */
const INJECT_TICKS = 600;
const INJECT_AT_TICK = 300;
/** The largest share of a correction one frame may show for it to count as smoothed (not a jump). */
const JUMP_SHARE = 1 / 3;

function part3(): { data: unknown; text: string } {
  const agree = SEEDS.map((seed) => {
    // One second of ticks beyond the inputs counted, so the last of them are applied before the server stops.
    const { frames: _frames, ...r } = runPrediction({ seed, ticks: PRED_INPUTS + PRED_HZ, tickHz: PRED_HZ, countTo: PRED_INPUTS, ...PRED_LINK });
    return r;
  });
  console.error('part 3: agreeing runs done');
  const injected = SEEDS.map((seed) => {
    const r = runPrediction({ seed, ticks: INJECT_TICKS, tickHz: PRED_HZ, injectAtTick: INJECT_AT_TICK, ...PRED_LINK });
    const { frames, ...rest } = r;
    return {
      ...rest, settle: settle(frames, r.injectedAtMs, r.correctedAtMs),
      frames: frames.filter((f) => f.t >= r.injectedAtMs - 50 && f.t <= r.correctedAtMs + 200),
    };
  });
  console.error('part 3: injected runs done');
  const agreeRows = agree.map((r) => [
    r.seed, fmt(r.inputsSent), `${fmt(r.unapplied)} / ${fmt(r.appliedTwice)}`, fmt(r.inputsDropped),
    `${fmt(r.corrections)} (${fmt(r.largestCorrectionM * 1000, 2)} mm)`, `${fmt(r.framesOff)} of ${fmt(r.framesCompared)} (${fmt(r.largestFrameErrorM * 1000, 2)} mm)`,
    `${fmt(r.perMessageMean, 2)} / ${fmt(r.perMessageMax)}`, fmt(r.inputMessages), fmt(r.inputBytesPerSec), fmt(r.clientUdpBytesPerSec),
  ]);
  const share = (r: (typeof injected)[number]): number => r.settle.largestStepM / r.largestCorrectionM;
  const injRows = injected.map((r) => {
    const st = r.settle;
    return [
      r.seed, fmt(st.toCorrectionMs, 1), `${fmt(r.corrections)} (${fmt(r.largestCorrectionM * 1000, 1)} mm)`, fmt(st.offsetM * 1000, 1), fmt(st.lastOffMs, 1),
      fmt(st.firstWithinMs, 1), `${fmt(st.largestStepM * 1000, 1)} (${pct(share(r))})`, fmt(st.framesMoving), fmt(st.grew),
    ];
  });
  const maxLastOff = Math.max(...injected.map((r) => r.settle.lastOffMs));
  const maxShare = Math.max(...injected.map(share));
  const grew = injected.reduce((a, r) => a + r.settle.grew, 0);
  const verdicts: Verdict[] = [
    {
      what: `0 corrections > 1 mm per ${fmt(PRED_INPUTS)} inputs at 100 ms RTT, 10 % loss, when the server agrees`,
      figures: `${agree.map((r) => fmt(r.corrections)).join(', ')} corrections (seeds ${SEEDS.join(', ')}; largest ${fmt(Math.max(...agree.map((r) => r.largestCorrectionM)) * 1000, 2)} mm); `
        + `frames drawn > 1 mm from the server's state: ${fmt(agree.reduce((a, r) => a + r.framesOff, 0))} of ${fmt(agree.reduce((a, r) => a + r.framesCompared, 0))}`,
      met: agree.every((r) => r.corrections === 0 && r.framesOff === 0 && r.inputsSent >= PRED_INPUTS),
    },
    {
      what: `every input 1..${fmt(PRED_INPUTS)} applied by the server exactly once`,
      figures: `never applied ${fmt(agree.reduce((a, r) => a + r.unapplied, 0))}, twice ${fmt(agree.reduce((a, r) => a + r.appliedTwice, 0))}, dropped ${fmt(agree.reduce((a, r) => a + r.inputsDropped, 0))}`,
      met: agree.every((r) => r.unapplied === 0 && r.appliedTwice === 0 && r.inputsDropped === 0),
    },
    {
      what: 'an injected disagreement (1 m) is smoothed within 100 ms: every frame drawn 100 ms or more after the correction is within 1 mm',
      figures: `last frame > 1 mm off at ${injected.map((r) => fmt(r.settle.lastOffMs, 1)).join(', ')} ms after the correction`,
      met: injected.every((r) => r.corrections === 1) && maxLastOff <= 100,
    },
    {
      what: `it never jumps: no frame shows more than ${pct(JUMP_SHARE, 0)} of the correction, and the offset never grows`,
      figures: `largest change in one frame ${pct(maxShare)} of the correction; offset grew at ${fmt(grew)} frames`,
      met: maxShare <= JUMP_SHARE && grew === 0,
    },
  ];
  const text = [
    '### 3. Prediction',
    '',
    `A \`StateServer\` and a \`StateClient\` with \`predict\` on the harness's connection (bench/state/prediction.ts), ${PRED_HZ} Hz server ticks`,
    `and input ticks, client frames at 60 fps, 50 ms ± 15 ms one way, 10 % loss each way; seeds ${SEEDS.join(', ')}. The client's own entity`,
    `(x, y at 1 mm) moves by a deterministic step: ${SPEED_M_PER_TICK} m per tick along x and half that along y per unit of input (dx, dy in −1..1),`,
    'clamped to ±900 m; the input changes at random (2 % of frames, seeded); the server runs the same step in its `input` handler.',
    'Each frame the client calls `input` then `sample`; the bench compares what it draws of its entity with the server\'s state after',
    'the client\'s newest input tick, as the server\'s handler computed it (snapped to the wire\'s precision), once the server has',
    'applied that input. Inputs per message: the client\'s `inputsUnacked` after each send (equal to the count in the message on the',
    'wire, checked each time). Input B/s: the INPUT messages\' bytes on the lane while inputs were sent; client UDP B/s: every datagram',
    'the client sent over the run (its acks of 60 snapshots a second included). Corrections: the client\'s count of reconciliations',
    `that moved its prediction by more than 1 mm. ${fmt(PRED_INPUTS + PRED_HZ)} server ticks; the inputs counted are 1..${fmt(PRED_INPUTS)}.`,
    '',
    table(['seed', 'input ticks sent', `of 1..${fmt(PRED_INPUTS)}: never applied / applied twice`, 'dropped by the server', 'corrections > 1 mm (largest)',
      'frames > 1 mm from the server (largest)', 'inputs per message mean / max', 'input messages', 'input B/s', 'client UDP B/s'], agreeRows,
    ['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
    '',
    `**An injected disagreement**: the same scenario for ${fmt(INJECT_TICKS)} ticks; before tick ${INJECT_AT_TICK} the server moves the entity 1 m along x`,
    'outside the step, once. The correction arrives with the first snapshot that acknowledges an input applied after the move; the',
    'offset is the distance from what the client draws to the server\'s state at its input tick (1 m from the move until the',
    'correction, since the prediction does not know of it yet). Times from the snapshot that corrected the prediction.',
    '',
    table(['seed', 'move → correction ms', 'client corrections (largest)', 'offset at the first frame after, mm', 'last frame > 1 mm off, ms after',
      'first frame from which all ≤ 1 mm, ms after', 'largest change in one frame mm (of the correction)', 'frames the offset moved', 'frames it grew'], injRows,
    ['---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
    '',
    verdictTable(verdicts),
  ].join('\n');
  return { data: { link: PRED_LINK, tickHz: PRED_HZ, agree, injected, targets: verdicts }, text };
}

// ---------------------------------------------------------------------------------------------
// Part 5: lag compensation

/** The links of part 5. */
const LAG_LINKS = [
  { rttMs: 100, link: { oneWayMs: 50, jitterMs: 15, loss: 0.05 } },
  { rttMs: 200, link: { oneWayMs: 100, jitterMs: 30, loss: 0.1 } },
] as const;
/** The `maxRewindMs` chosen for RTT ≤ 200 ms (why: in part 5's text), and the library's default beside it. */
const LAG_MAX_REWIND_MS = 500;
const LAG_TICKS = 1200;
const LAG_HZ = 20;
const HIT_RADIUS_M = 0.1;
/** Shots off by more than a step kept per run in the raw results. */
const TAIL_SHOTS = 50;

interface LagRow {
  rttMs: number;
  link: HarnessLink;
  maxRewindMs: number;
  /** Per run, its figures and the first `TAIL_SHOTS` shots off by more than a step (and how many there were). */
  runs: (Omit<LagCompRun, 'matched' | 'delays'> & { over: number; tail: LagCompRun['matched'] })[];
  /** The client's interpolation delay over the frames that drew the target (ms). */
  delay: { p50: number; p99: number; max: number };
  shots: number;
  unmatched: number;
  frames: number;
  interpolatedFrames: number;
  depth: { p50: number; p99: number; max: number };
  clamped: number;
  errorMm: { p50: number; p99: number; max: number };
  within: number;
  bySource: Record<string, { n: number; maxMm: number; over: number }>;
  misses: number;
}

function lagRow(rttMs: number, link: HarnessLink, maxRewindMs: number): LagRow {
  const runs = SEEDS.map((seed) => runLagComp({ seed, ticks: LAG_TICKS, tickHz: LAG_HZ, maxRewindMs, hitRadiusM: HIT_RADIUS_M, ...link }));
  const shots = runs.flatMap((r) => r.matched);
  const err = shots.map((x) => x.error * 1000);
  const stepMm = TARGET_STEP_M * 1000;
  const bySource: LagRow['bySource'] = {};
  for (const src of ['clean', 'gap', 'blend']) {
    const xs = shots.filter((x) => x.drawnFrom === src).map((x) => x.error * 1000);
    bySource[src] = { n: xs.length, maxMm: xs.length === 0 ? NaN : Math.max(...xs), over: xs.filter((e) => e > stepMm).length };
  }
  const placed = (k: string): number => runs.reduce((a, r) => a + (r.placed[k] ?? 0), 0);
  return {
    rttMs, link, maxRewindMs,
    delay: { p50: percentile(runs.flatMap((r) => r.delays), 50), p99: percentile(runs.flatMap((r) => r.delays), 99), max: percentile(runs.flatMap((r) => r.delays), 100) },
    runs: runs.map(({ matched, delays: _delays, ...r }) => {
      const over = matched.filter((x) => x.error * 1000 > stepMm);
      return { ...r, over: over.length, tail: over.slice(0, TAIL_SHOTS) };
    }),
    shots: runs.reduce((a, r) => a + r.shots, 0),
    unmatched: runs.reduce((a, r) => a + r.unmatched, 0),
    frames: ['interpolated', 'extrapolated', 'held', 'empty'].reduce((a, k) => a + placed(k), 0),
    interpolatedFrames: placed('interpolated'),
    depth: { p50: percentile(shots.map((x) => x.depthMs), 50), p99: percentile(shots.map((x) => x.depthMs), 99), max: percentile(shots.map((x) => x.depthMs), 100) },
    clamped: runs.reduce((a, r) => a + r.clamped, 0),
    errorMm: { p50: percentile(err, 50), p99: percentile(err, 99), max: percentile(err, 100) },
    within: err.filter((e) => e <= stepMm).length / err.length,
    bySource,
    misses: runs.reduce((a, r) => a + r.misses, 0),
  };
}

function part5(): { data: unknown; text: string } {
  const rows: LagRow[] = [];
  for (const l of LAG_LINKS) {
    for (const maxRewindMs of [LAG_MAX_REWIND_MS, DEFAULT_MAX_REWIND_MS]) rows.push(lagRow(l.rttMs, l.link, maxRewindMs));
  }
  console.error('part 5: done');
  const src = (r: LagRow, k: string): string => {
    const b = r.bySource[k]!;
    return b.n === 0 ? '0' : `${fmt(b.n)}: ${fmt(b.maxMm, 1)} (${fmt(b.over)} over)`;
  };
  const tableRows = rows.map((r) => [
    `${r.rttMs} ms, ±${r.link.jitterMs} ms, ${pct(r.link.loss ?? 0, 0)}`, fmt(r.maxRewindMs), `${fmt(r.shots)} (${pct(r.interpolatedFrames / r.frames)} of frames)`,
    `${fmt(r.delay.p50, 0)} / ${fmt(r.delay.max, 0)}`, `${fmt(r.depth.p50, 0)} / ${fmt(r.depth.p99, 0)} / ${fmt(r.depth.max, 0)}`, fmt(r.clamped),
    `${fmt(r.errorMm.p50, 2)} / ${fmt(r.errorMm.p99, 1)} / ${fmt(r.errorMm.max, 1)}`, pct(r.within), src(r, 'clean'), src(r, 'gap'), src(r, 'blend'), fmt(r.misses),
  ]);
  const chosen = rows.filter((r) => r.maxRewindMs === LAG_MAX_REWIND_MS);
  const deepest = Math.max(...chosen.map((r) => r.depth.max));
  const r200 = chosen.find((r) => r.rttMs === 200)!;
  const d200 = rows.find((r) => r.rttMs === 200 && r.maxRewindMs === DEFAULT_MAX_REWIND_MS)!;
  const verdicts: Verdict[] = [
    ...chosen.map((r) => ({
      what: `RTT ${r.rttMs} ms: the rewound target within one quantization step (${fmt(TARGET_STEP_M * 1000)} mm) of what the client drew, every shot`,
      figures: `${pct(r.within, 2)} of ${fmt(r.shots)} within; largest ${fmt(r.errorMm.max, 1)} mm; clean frames ${fmt(r.bySource.clean!.maxMm, 2)} mm at most`,
      met: r.within === 1 && r.unmatched === 0,
    })),
    ...chosen.map((r) => ({
      what: `RTT ${r.rttMs} ms: 0 false negatives (every shot aimed at the drawn target, hit radius ${fmt(HIT_RADIUS_M * 1000)} mm)`,
      figures: `${fmt(r.misses)} misses of ${fmt(r.shots)} shots`,
      met: r.misses === 0 && r.unmatched === 0,
    })),
    {
      what: `maxRewindMs ${LAG_MAX_REWIND_MS} covers every rewind at RTT ≤ 200 ms (no shot clamped)`,
      figures: `deepest rewind ${fmt(deepest, 0)} ms; clamped ${fmt(chosen.reduce((a, r) => a + r.clamped, 0))} (the default ${DEFAULT_MAX_REWIND_MS} clamps ${fmt(d200.clamped)} of ${fmt(d200.shots)} at 200 ms RTT)`,
      met: deepest <= LAG_MAX_REWIND_MS && chosen.every((r) => r.clamped === 0),
    },
  ];
  const text = [
    '### 5. Lag compensation',
    '',
    `A \`StateServer\` (${LAG_HZ} Hz, history 1 s) and a \`StateClient\` on the harness's connection (bench/state/lagcomp.ts), client frames at 60 fps,`,
    `${fmt(LAG_TICKS)} ticks; seeds ${SEEDS.join(', ')}. A target (x, y at ${fmt(TARGET_STEP_M * 1000)} mm) follows a fixed Lissajous path (x = 15 sin(t / 2),`,
    'y = 10 sin(0.7 t + 1) m, t in s of server time: 1.1–10.2 m/s, up to 6.1 m/s²) set before each tick. Each frame the client samples; on a frame where the target was placed \'interpolated\' it',
    'fires at what it drew (the input carries the aim at 1 mm), else it does not fire. The server\'s `input` handler calls',
    '`rewind(player, past => past.get(target))`, which goes back to the render time the client reported with that input (in 1/256',
    'tick), at most `maxRewindMs` before the newest tick. Error: distance from the rewound target to what the client drew at the',
    `reported render time (the bench logs every drawn frame by its render time). Miss: the aim more than ${fmt(HIT_RADIUS_M * 1000)} mm from the rewound`,
    'target (a shot the client saw hit). Depth: newest tick the server held − the reported render time. By what the client drew from:',
    `clean (both snapshots around the render time received, no blend running); gap (one of them not received when the frame was`,
    `drawn: interpolated across a lost or late snapshot); blend (within ${BLEND_TICKS} ticks of render time after the target was extrapolated or`,
    'held, or after a snapshot arrived out of order: the client\'s track blends from what it showed, so nothing pops); each with its',
    'shots, largest error in mm, and shots over one step.',
    '',
    `**maxRewindMs.** How far back a shot is rewound: about the RTT + the client's interpolation delay + the wait for the server's next`,
    `tick + one tick per input message lost in a row (the next one carries the input). At 200 ms RTT with ±30 ms jitter that measured up`,
    `to ${fmt(r200.depth.max, 0)} ms (p99 ${fmt(r200.depth.p99, 0)} ms; interpolation delay up to ${fmt(r200.delay.max, 0)} ms): the default ${DEFAULT_MAX_REWIND_MS} ms clamps ${pct(d200.clamped / d200.shots, 0)} of the shots`,
    `there, and then the client must lead its target. Chosen: ${LAG_MAX_REWIND_MS} ms, for 200 ms RTT + ${fmt(r200.delay.max, 0)} ms of delay + a tick's wait (${fmt(1000 / LAG_HZ, 0)} ms) + two`,
    `lost input messages (${fmt(2 * 1000 / LAG_HZ, 0)} ms) = ${fmt(200 + r200.delay.max + 3 * 1000 / LAG_HZ, 0)} ms; beyond it a player on a worse path leads its target, as past Overwatch's limit.`,
    'Both values are shown.',
    '',
    table(['link: RTT, jitter (one way), loss', 'maxRewindMs', 'shots (frames interpolated)', 'interpolation delay p50 / max ms', 'rewind depth p50 / p99 / max ms',
      'clamped', 'error p50 / p99 / max mm', 'within one step', 'clean: shots: max mm (over a step)', 'gap', 'blend', 'misses'], tableRows,
    ['---', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:', '---:']),
    '',
    ...(chosen.every((r) => r.within === 1) ? [] : [
      'The shots off by more than a step were drawn across a lost snapshot or during a blend: the client drew something the',
      'server\'s history never held (across a lost snapshot the straight line between the two it had; after an extrapolated or held',
      'frame, or a late snapshot, its track blends from what it showed), while the server rewinds to its own state at every tick.',
      '',
    ]),
    verdictTable(verdicts),
  ].join('\n');
  return { data: { hz: LAG_HZ, hitRadiusM: HIT_RADIUS_M, rows, targets: verdicts }, text };
}

// ---------------------------------------------------------------------------------------------

/** Part 2: interpolation against @geckos.io/snapshot-interpolation (bench/state/interp.ts). */
function part2(): { data: unknown; text: string } {
  const seeds = Array.from({ length: Number(process.env.INTERP_SEEDS ?? 10) }, (_, i) => i + 1);
  const res = runInterpBench({ seeds, seconds: 120, costRuns: 5 });
  console.error('part 2: done');
  const c = res.config;
  const text = [
    '### 2. Interpolation',
    '',
    `Against @geckos.io/snapshot-interpolation 1.1.1 (bench/state/interp.ts), the same arrival trace for both: server ${1000 / c.tickMs} Hz, client`,
    `${c.fps} fps, one way ${c.baseOneWayMs} ms ± J (uniform), 10 % loss; one entity on a Lissajous path (${res.path.minSpeed.toFixed(1)}–${res.path.maxSpeed.toFixed(1)} m/s);`,
    `seeds ${seeds[0]}–${seeds[seeds.length - 1]}, ${c.seconds} s each, means over seeds (longest stall: the max). geckos runs its own clock (\`Date.now\``,
    'mocked) with serverFPS 20 (a 150 ms buffer). Error: against the true path delayed by the run\'s mean display delay ("shape": by',
    'each frame\'s own delay). Stalled: frames where the entity is frozen (geckos: no interpolation; gamewire: held past its',
    'extrapolation bound); gamewire extrapolates up to 100 ms past the newest snapshot first (its "extrapolated" column). Frames',
    'count from each system\'s first interpolated frame (gamewire measures the path for 1 s first). Cost: 900 entities sampled',
    'per frame, medians of alternating runs (wall time, bundled build).',
    '',
    interpTable(res),
    '',
    ...interpTargets(res).map((l) => `- ${l}`),
  ].join('\n');
  return { data: res, text };
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const only = process.env.STATE_PARTS;
  const wants = (p: string): boolean => only === undefined || only.includes(p);
  const texts: string[] = [];
  const data: Record<string, unknown> = {};
  for (const p of ['1', '2', '3', '4', '5']) {
    if (!wants(p)) continue;
    let r: { data: unknown; text: string };
    if (p === '1') r = part1();
    else if (p === '3') r = part3();
    else if (p === '4') r = part4();
    else if (p === '5') r = part5();
    else r = part2();
    data[`part${p}`] = r.data;
    texts.push(r.text);
    console.log(r.text + '\n');
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const machine =
    `Machine: ${cpu} × ${cpus().length} logical, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version}; ` +
    `${new Date(started).toISOString().slice(0, 10)}; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end; ` +
    `bench took ${((Date.now() - t0) / 1000).toFixed(0)} s; ${BUNDLED ? 'timings from the bundled build' : 'timings under a loader (not the bundled build)'}.`;
  console.log(machine);
  if (only !== undefined) return;
  const round = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v);
  const json = JSON.stringify({
    date: new Date(started).toISOString(),
    machine: { cpu, logical: cpus().length, totalmem: totalmem(), node: process.version, loadStart: load0, loadEnd: loadavg()[0] },
    seeds: SEEDS,
    ...data,
  }, round) + '\n';
  writeFileSync(join(HERE, 'results', 'state.json'), json);
  const section = [
    '## state',
    '',
    '`npm run bench:state` (bench/state.bench.ts; raw figures, per-tick bytes and ages included, in bench/results/state.json). Issue 21\'s',
    'benchmark on the simulator (virtual clock, seeded links and traces): every system runs in bench/state/harness.ts, two',
    '`ConnectionHost`s on a `World`, on the same traces (bench/state/trace.ts) and links. Rows marked pending have no system yet.',
    '',
    ...texts.flatMap((t) => [t, '']),
    machine,
    '',
  ].join('\n');
  writeReadmeSection('## state', section);
}

await main();
