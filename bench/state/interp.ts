/**
 * Benchmark part 2 of `bench:state` (not a test): gamewire's interpolation buffer (`Playback` +
 * `Track`, src/state/interpolation.ts) beside `@geckos.io/snapshot-interpolation` 1.1.1 on the same
 * seeded arrival trace, side by side in one run.
 *
 * Scenario (the geckos test of the state research note): server at 20 Hz, client frames at 60 fps,
 * one way 50 ms ± J uniform (packets reorder when the jitter exceeds the interval), i.i.d. loss; one
 * entity on a Lissajous path at 4–9 m/s. Per seed and J the trace (which ticks are lost, when the
 * others arrive) is drawn once and fed to both systems. Client and server clocks agree, so a frame's
 * display delay is `now − render time`. Error: the distance between what a system shows and the
 * ground truth delayed by that system's mean display delay over the run (so a delay that moves costs
 * error, as it does on screen); a frozen frame shows what was shown last. Frames count from the first
 * that shows an interpolated position: geckos after its 150 ms buffer fills, gamewire after its 1 s
 * start-up. geckos runs with `Date.now` mocked to the virtual clock (`SI.snapshot.add()` on
 * arrival, `calcInterpolation('x y')` per frame), gamewire with its default options.
 *
 * The per-frame cost is measured separately: 900 entities on the same kind of path (time-shifted),
 * 20 s of frames per run, the systems alternating run by run; per run the median frame cost.
 */
import { table } from '../readme.js';
import { performance } from 'node:perf_hooks';
import geckos from '@geckos.io/snapshot-interpolation';
import { NonCryptoRng } from '../../src/core/rng.js';
import { Playback, Track, type PlaybackOptions, type SlotKind } from '../../src/state/interpolation.js';

const { SnapshotInterpolation } = geckos;

/** One configuration of the trace. */
export interface InterpScenario {
  /** Label in the table. */
  name: string;
  /** Half-width of the uniform one-way jitter (ms). */
  jitterMs: number;
  /** I.i.d. loss per snapshot (0..1). */
  loss: number;
}

export interface InterpBenchOptions {
  /** Seeds (default 1..10). */
  seeds?: number[];
  /** Simulated seconds per seed (default 120). */
  seconds?: number;
  /** Scenarios (default ±15 ms and ±40 ms with 10 % loss, and 0 jitter without loss as a calibration). */
  scenarios?: InterpScenario[];
  /** Runs per system of the 900-entity cost (default 5; 0 skips it). */
  costRuns?: number;
  /** Simulated seconds per cost run (default 20). */
  costSeconds?: number;
  /** Options for gamewire's Playback (tickMs is set here). */
  playback?: Omit<PlaybackOptions, 'tickMs'>;
}

/** Figures of one system on one seed of one scenario. */
export interface InterpRun {
  seed: number;
  /** Frames counted (from the first that showed an interpolated position). */
  frames: number;
  /** Frames where the entity was frozen (geckos: no result; gamewire: 'held'). */
  stalledFrames: number;
  /** Frames extrapolated (gamewire only). */
  extrapolatedFrames: number;
  /** Longest run of frozen frames (ms of real time). */
  longestStallMs: number;
  /** Mean and standard deviation of `now − render time` (ms). */
  meanDelayMs: number;
  sdDelayMs: number;
  /** RMS and 99th percentile of the error against truth delayed by the mean display delay (mm). */
  rmsMm: number;
  p99Mm: number;
  /** RMS error against truth delayed by each frame's own display delay (mm): the path's shape only. */
  shapeRmsMm: number;
  /** RMS error over the frames after the first SETTLE_MS, against truth delayed by their own mean delay (mm). */
  settledRmsMm: number;
  /** Frames whose render time was below the previous frame's. */
  backwardJumps: number;
  /** gamewire only: Playback stats at the end. */
  forwardJumps?: number;
  delayIncreases?: number;
}

/** Means over seeds of one system on one scenario (longest stall: the largest over seeds). */
export interface InterpRow {
  system: 'gamewire' | 'geckos';
  scenario: string;
  seeds: number;
  stalledPct: number;
  extrapolatedPct: number;
  longestStallMs: number;
  meanDelayMs: number;
  sdDelayMs: number;
  rmsMm: number;
  p99Mm: number;
  shapeRmsMm: number;
  settledRmsMm: number;
  backwardJumps: number;
  /** Per-frame cost for 900 entities (ms, median over runs of each run's median frame); NaN if not measured. */
  frameMs900: number;
}

export interface InterpCost {
  /** gamewire (x, y), gamewire with an angle and a quaternion too (7 slots), or geckos (x, y). */
  system: 'gamewire' | 'gamewire x y angle quat' | 'geckos';
  /** Each run's median per-frame cost (ms) for 900 entities. */
  runsMs: number[];
  medianMs: number;
  /** Each run's median cost of taking in one snapshot of 900 entities (ms). */
  ingestRunsMs: number[];
  ingestMedianMs: number;
}

export interface InterpBenchResult {
  rows: InterpRow[];
  runs: { system: string; scenario: string; runs: InterpRun[] }[];
  cost: InterpCost[];
  path: { minSpeed: number; maxSpeed: number; maxAccel: number };
  config: { tickMs: number; fps: number; baseOneWayMs: number; seeds: number[]; seconds: number };
}

const TICK_MS = 50;
const FPS = 60;
const ONE_WAY_MS = 50;
const FRAME_MS = 1000 / FPS;
/** Start-up excluded from the "settled" error (ms of the run). */
const SETTLE_MS = 10_000;

export const DEFAULT_SCENARIOS: InterpScenario[] = [
  { name: '±15 ms, 10 % loss', jitterMs: 15, loss: 0.1 },
  { name: '±40 ms, 10 % loss', jitterMs: 40, loss: 0.1 },
  { name: '0 ms, no loss', jitterMs: 0, loss: 0 },
];

// ---------------------------------------------------------------------------------------------
// The path: a 1:2 Lissajous figure (x = A sin θ, y = 0.5668 A sin 2θ, θ = ωt + a seeded phase)
// whose speed runs between 4 and 9 m/s (that ratio fixes B / A; ω sets the slowest point to 4 m/s).
// A = PATH_A_M is the one free size: with it geckos's error with no jitter and no loss (pure
// interpolation error) is close to the research note's 4.1 mm, so the path is about as curved.

const PATH_A_M = 3.5;
const PATH_B_OVER_A = 0.5667945;
/** |dC/dθ| at its slowest for A = 1 (at B / A above; the fastest is 2.25 times it). */
const PATH_MIN_UNIT_SPEED = 0.6718354;

/** Ground truth: the entity's position at any time (ms). */
export class Path {
  readonly minSpeed: number;
  readonly maxSpeed: number;
  readonly maxAccel: number;
  private readonly a: number;
  private readonly b: number;
  private readonly w: number;
  private readonly phase: number;

  constructor(seed: number, sizeM = PATH_A_M) {
    this.a = sizeM;
    this.b = sizeM * PATH_B_OVER_A;
    this.w = 4 / (PATH_MIN_UNIT_SPEED * sizeM) / 1000;
    this.phase = new NonCryptoRng(seed ^ 0x5eed).nextFloat() * 2 * Math.PI;
    let minV = Infinity;
    let maxV = 0;
    let maxA = 0;
    for (let i = 0; i < 100_000; i++) {
      const th = (i / 100_000) * 2 * Math.PI;
      const v = Math.hypot(this.a * Math.cos(th), 2 * this.b * Math.cos(2 * th)) * this.w * 1000;
      const acc = Math.hypot(this.a * Math.sin(th), 4 * this.b * Math.sin(2 * th)) * (this.w * 1000) ** 2;
      if (v < minV) minV = v;
      if (v > maxV) maxV = v;
      if (acc > maxA) maxA = acc;
    }
    this.minSpeed = minV;
    this.maxSpeed = maxV;
    this.maxAccel = maxA;
  }

  /** Position (m) at `tMs`, written to `out`. */
  at(tMs: number, out: { x: number; y: number }): void {
    const th = this.w * tMs + this.phase;
    out.x = this.a * Math.sin(th);
    out.y = this.b * Math.sin(2 * th);
  }
}

/** When each tick's snapshot arrives (NaN: lost), in order of tick. */
export function arrivalTrace(seed: number, scenario: InterpScenario, ticks: number): Float64Array {
  const rng = new NonCryptoRng(seed * 7919 + scenario.jitterMs * 31 + Math.round(scenario.loss * 1000));
  const at = new Float64Array(ticks);
  for (let k = 0; k < ticks; k++) {
    const lost = rng.chance(scenario.loss);
    const j = (rng.nextFloat() * 2 - 1) * scenario.jitterMs;
    at[k] = lost ? NaN : k * TICK_MS + ONE_WAY_MS + j;
  }
  return at;
}

/** Arrival events sorted by time: [time, tick]. */
function arrivals(trace: Float64Array): { times: Float64Array; ticks: Int32Array } {
  const idx: number[] = [];
  for (let k = 0; k < trace.length; k++) if (!Number.isNaN(trace[k]!)) idx.push(k);
  idx.sort((a, b) => trace[a]! - trace[b]! || a - b);
  return { times: Float64Array.from(idx, (k) => trace[k]!), ticks: Int32Array.from(idx) };
}

interface FrameLog {
  t: Float64Array;
  x: Float64Array;
  y: Float64Array;
  delay: Float64Array;
  frozen: Uint8Array;
  extrapolated: Uint8Array;
  n: number;
  backward: number;
}

function newLog(frames: number): FrameLog {
  return {
    t: new Float64Array(frames),
    x: new Float64Array(frames),
    y: new Float64Array(frames),
    delay: new Float64Array(frames),
    frozen: new Uint8Array(frames),
    extrapolated: new Uint8Array(frames),
    n: 0,
    backward: 0,
  };
}

function summarise(seed: number, log: FrameLog, path: Path): InterpRun {
  const n = log.n;
  let sum = 0;
  for (let i = 0; i < n; i++) sum += log.delay[i]!;
  const mean = sum / n;
  let varSum = 0;
  const errs = new Float64Array(n);
  let sq = 0;
  let shapeSq = 0;
  let stalled = 0;
  let extrap = 0;
  let run = 0;
  let longest = 0;
  const p = { x: 0, y: 0 };
  for (let i = 0; i < n; i++) {
    varSum += (log.delay[i]! - mean) ** 2;
    path.at(log.t[i]! - mean, p);
    const e = Math.hypot(log.x[i]! - p.x, log.y[i]! - p.y) * 1000;
    errs[i] = e;
    sq += e * e;
    path.at(log.t[i]! - log.delay[i]!, p);
    shapeSq += (Math.hypot(log.x[i]! - p.x, log.y[i]! - p.y) * 1000) ** 2;
    if (log.frozen[i]) {
      stalled++;
      run += FRAME_MS;
      if (run > longest) longest = run;
    } else run = 0;
    if (log.extrapolated[i]) extrap++;
  }
  errs.sort();
  let settledSum = 0;
  let settledN = 0;
  for (let i = 0; i < n; i++) {
    if (log.t[i]! < SETTLE_MS) continue;
    settledSum += log.delay[i]!;
    settledN++;
  }
  const settledMean = settledSum / settledN;
  let settledSq = 0;
  for (let i = 0; i < n; i++) {
    if (log.t[i]! < SETTLE_MS) continue;
    path.at(log.t[i]! - settledMean, p);
    settledSq += (Math.hypot(log.x[i]! - p.x, log.y[i]! - p.y) * 1000) ** 2;
  }
  return {
    seed,
    frames: n,
    stalledFrames: stalled,
    extrapolatedFrames: extrap,
    longestStallMs: longest,
    meanDelayMs: mean,
    sdDelayMs: Math.sqrt(varSum / n),
    rmsMm: Math.sqrt(sq / n),
    p99Mm: errs[Math.min(n - 1, Math.ceil(0.99 * n) - 1)]!,
    shapeRmsMm: Math.sqrt(shapeSq / n),
    settledRmsMm: Math.sqrt(settledSq / settledN),
    backwardJumps: log.backward,
  };
}

const KINDS_XY: readonly SlotKind[] = ['linear', 'linear'];

function runGamewire(seed: number, path: Path, trace: Float64Array, seconds: number, opts: Omit<PlaybackOptions, 'tickMs'>): InterpRun {
  const ev = arrivals(trace);
  const pb = new Playback({ ...opts, tickMs: TICK_MS });
  const track = pb.track(2);
  const frames = Math.floor((seconds * 1000) / FRAME_MS);
  const log = newLog(frames);
  const out = new Float64Array(2);
  const vals = new Float64Array(2);
  const p = { x: 0, y: 0 };
  let e = 0;
  let prev = -Infinity;
  for (let f = 0; f < frames; f++) {
    const now = f * FRAME_MS;
    while (e < ev.times.length && ev.times[e]! <= now) {
      const k = ev.ticks[e]!;
      pb.received(ev.times[e]!, k);
      path.at(k * TICK_MS, p);
      vals[0] = p.x;
      vals[1] = p.y;
      track.push(k, vals);
      e++;
    }
    const r = pb.advance(now);
    const outcome = track.sample(r, pb.newestTick, KINDS_XY, pb.maxExtrapolationTicks, out);
    if (log.n === 0 && outcome !== 'interpolated') continue;
    if (r < prev) log.backward++;
    prev = r;
    const i = log.n++;
    log.t[i] = now;
    log.x[i] = out[0]!;
    log.y[i] = out[1]!;
    log.delay[i] = now - r * TICK_MS;
    log.frozen[i] = outcome === 'held' ? 1 : 0;
    log.extrapolated[i] = outcome === 'extrapolated' ? 1 : 0;
  }
  const run = summarise(seed, log, path);
  const st = pb.stats();
  run.forwardJumps = st.forwardJumps;
  run.delayIncreases = st.delayIncreases;
  return run;
}

/** Runs `fn` with `Date.now` answering `clock.now` (geckos reads the time only through it). */
function withMockedNow<T>(clock: { now: number }, fn: () => T): T {
  const real = Date.now;
  Date.now = () => clock.now;
  try {
    return fn();
  } finally {
    Date.now = real;
  }
}

function runGeckos(seed: number, path: Path, trace: Float64Array, seconds: number): InterpRun {
  const ev = arrivals(trace);
  const clock = { now: 0 };
  return withMockedNow(clock, () => {
    const SI = new SnapshotInterpolation(1000 / TICK_MS);
    const frames = Math.floor((seconds * 1000) / FRAME_MS);
    const log = newLog(frames);
    const p = { x: 0, y: 0 };
    let e = 0;
    let prev = -Infinity;
    let shown = false;
    let sx = 0;
    let sy = 0;
    for (let f = 0; f < frames; f++) {
      const now = f * FRAME_MS;
      while (e < ev.times.length && ev.times[e]! <= now) {
        const k = ev.ticks[e]!;
        clock.now = ev.times[e]!;
        path.at(k * TICK_MS, p);
        SI.snapshot.add({ id: String(k), time: k * TICK_MS, state: [{ id: 'e', x: p.x, y: p.y }] });
        e++;
      }
      clock.now = now;
      if (SI.timeOffset === -1) continue;
      const res = SI.calcInterpolation('x y');
      const serverTime = now - SI.timeOffset - SI.interpolationBuffer.get();
      let frozen = 0;
      if (res !== undefined) {
        const s = (res.state as unknown as { x: number; y: number }[])[0]!;
        sx = s.x;
        sy = s.y;
        shown = true;
      } else frozen = 1;
      if (!shown) continue;
      if (serverTime < prev) log.backward++;
      prev = serverTime;
      const i = log.n++;
      log.t[i] = now;
      log.x[i] = sx;
      log.y[i] = sy;
      log.delay[i] = now - serverTime;
      log.frozen[i] = frozen;
    }
    return summarise(seed, log, path);
  });
}

// ---------------------------------------------------------------------------------------------
// Per-frame cost for 900 entities.

const COST_ENTITIES = 900;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

interface CostRun {
  frameMs: number;
  ingestMs: number;
}

/** x, y, then (wide) an angle and a quaternion turning with the path. */
const KINDS_WIDE: readonly SlotKind[] = ['linear', 'linear', 'angle', 'quat'];

function costGamewire(path: Path, trace: Float64Array, seconds: number, opts: Omit<PlaybackOptions, 'tickMs'>, wide: boolean): CostRun {
  const ev = arrivals(trace);
  const pb = new Playback({ ...opts, tickMs: TICK_MS });
  const slots = wide ? 7 : 2;
  const kinds = wide ? KINDS_WIDE : KINDS_XY;
  const tracks: Track[] = [];
  for (let i = 0; i < COST_ENTITIES; i++) tracks.push(pb.track(slots));
  const out = new Float64Array(slots);
  const vals = new Float64Array(slots);
  const p = { x: 0, y: 0 };
  const frames = Math.floor((seconds * 1000) / FRAME_MS);
  const frameCost: number[] = [];
  const ingestCost: number[] = [];
  let sink = 0;
  let e = 0;
  for (let f = 0; f < frames; f++) {
    const now = f * FRAME_MS;
    while (e < ev.times.length && ev.times[e]! <= now) {
      const k = ev.ticks[e]!;
      const t0 = performance.now();
      pb.received(ev.times[e]!, k);
      for (let i = 0; i < COST_ENTITIES; i++) {
        path.at(k * TICK_MS + i * 97, p);
        vals[0] = p.x + i;
        vals[1] = p.y;
        if (wide) {
          const a = (k * 0.07 + i) % (2 * Math.PI);
          vals[2] = a - Math.PI;
          vals[3] = 0;
          vals[4] = 0;
          vals[5] = Math.sin(a / 2);
          vals[6] = Math.cos(a / 2);
        }
        tracks[i]!.push(k, vals);
      }
      ingestCost.push(performance.now() - t0);
      e++;
    }
    const t0 = performance.now();
    const r = pb.advance(now);
    const known = pb.newestTick;
    const lim = pb.maxExtrapolationTicks;
    for (let i = 0; i < COST_ENTITIES; i++) {
      tracks[i]!.sample(r, known, kinds, lim, out);
      sink += out[0]!;
    }
    frameCost.push(performance.now() - t0);
  }
  if (Number.isNaN(sink)) throw new Error('unreachable');
  return { frameMs: median(frameCost), ingestMs: median(ingestCost) };
}

function costGeckos(path: Path, trace: Float64Array, seconds: number): CostRun {
  const ev = arrivals(trace);
  const clock = { now: 0 };
  return withMockedNow(clock, () => {
    const SI = new SnapshotInterpolation(1000 / TICK_MS);
    const p = { x: 0, y: 0 };
    const frames = Math.floor((seconds * 1000) / FRAME_MS);
    const frameCost: number[] = [];
    const ingestCost: number[] = [];
    let sink = 0;
    let e = 0;
    for (let f = 0; f < frames; f++) {
      const now = f * FRAME_MS;
      while (e < ev.times.length && ev.times[e]! <= now) {
        const k = ev.ticks[e]!;
        clock.now = ev.times[e]!;
        // Building the state object is the server's (and the decoder's) work, not the client buffer's.
        const state: { id: string; x: number; y: number }[] = [];
        for (let i = 0; i < COST_ENTITIES; i++) {
          path.at(k * TICK_MS + i * 97, p);
          state.push({ id: String(i), x: p.x + i, y: p.y });
        }
        const t0 = performance.now();
        SI.snapshot.add({ id: String(k), time: k * TICK_MS, state });
        ingestCost.push(performance.now() - t0);
        e++;
      }
      clock.now = now;
      if (SI.timeOffset === -1) continue;
      const t0 = performance.now();
      const res = SI.calcInterpolation('x y');
      frameCost.push(performance.now() - t0);
      if (res !== undefined) sink += (res.state as unknown as unknown[]).length;
    }
    if (Number.isNaN(sink)) throw new Error('unreachable');
    return { frameMs: median(frameCost), ingestMs: median(ingestCost) };
  });
}

// ---------------------------------------------------------------------------------------------

/** Runs both systems on every scenario and seed, then the 900-entity cost. */
export function runInterpBench(options: InterpBenchOptions = {}): InterpBenchResult {
  const seeds = options.seeds ?? [1, 2, 3, 4, 5, 6, 7, 8, 9, 10];
  const seconds = options.seconds ?? 120;
  const scenarios = options.scenarios ?? DEFAULT_SCENARIOS;
  const costRuns = options.costRuns ?? 5;
  const costSeconds = options.costSeconds ?? 20;
  const pbOpts = options.playback ?? {};
  const ticks = Math.ceil((seconds * 1000) / TICK_MS) + 4;
  const rows: InterpRow[] = [];
  const allRuns: InterpBenchResult['runs'] = [];
  let pathInfo = { minSpeed: Infinity, maxSpeed: 0, maxAccel: 0 };
  const paths = new Map<number, Path>();
  for (const seed of seeds) {
    const path = new Path(seed);
    paths.set(seed, path);
    pathInfo = {
      minSpeed: Math.min(pathInfo.minSpeed, path.minSpeed),
      maxSpeed: Math.max(pathInfo.maxSpeed, path.maxSpeed),
      maxAccel: Math.max(pathInfo.maxAccel, path.maxAccel),
    };
  }
  for (const sc of scenarios) {
    const gw: InterpRun[] = [];
    const gk: InterpRun[] = [];
    for (const seed of seeds) {
      const path = paths.get(seed)!;
      const trace = arrivalTrace(seed, sc, ticks);
      gw.push(runGamewire(seed, path, trace, seconds, pbOpts));
      gk.push(runGeckos(seed, path, trace, seconds));
    }
    allRuns.push({ system: 'gamewire', scenario: sc.name, runs: gw }, { system: 'geckos', scenario: sc.name, runs: gk });
    rows.push(aggregate('gamewire', sc.name, gw), aggregate('geckos', sc.name, gk));
  }
  const cost: InterpCost[] = [];
  if (costRuns > 0) {
    const sc = scenarios.find((s) => s.jitterMs === 40) ?? scenarios[0]!;
    const path = new Path(1);
    const trace = arrivalTrace(1, sc, Math.ceil((costSeconds * 1000) / TICK_MS) + 4);
    const gwRuns: CostRun[] = [];
    const gkRuns: CostRun[] = [];
    const wideRuns: CostRun[] = [];
    costGamewire(path, trace, Math.min(2, costSeconds), pbOpts, false);
    costGamewire(path, trace, Math.min(2, costSeconds), pbOpts, true);
    costGeckos(path, trace, Math.min(2, costSeconds));
    for (let r = 0; r < costRuns; r++) {
      gwRuns.push(costGamewire(path, trace, costSeconds, pbOpts, false));
      gkRuns.push(costGeckos(path, trace, costSeconds));
      wideRuns.push(costGamewire(path, trace, costSeconds, pbOpts, true));
    }
    for (const [system, runs] of [['gamewire', gwRuns], ['geckos', gkRuns], ['gamewire x y angle quat', wideRuns]] as const) {
      const runsMs = runs.map((r) => r.frameMs);
      const ingestRunsMs = runs.map((r) => r.ingestMs);
      cost.push({ system, runsMs, medianMs: median(runsMs), ingestRunsMs, ingestMedianMs: median(ingestRunsMs) });
    }
    for (const row of rows) row.frameMs900 = cost.find((c) => c.system === row.system)!.medianMs;
  }
  return { rows, runs: allRuns, cost, path: pathInfo, config: { tickMs: TICK_MS, fps: FPS, baseOneWayMs: ONE_WAY_MS, seeds, seconds } };
}

function aggregate(system: 'gamewire' | 'geckos', scenario: string, runs: InterpRun[]): InterpRow {
  const mean = (f: (r: InterpRun) => number): number => runs.reduce((s, r) => s + f(r), 0) / runs.length;
  return {
    system,
    scenario,
    seeds: runs.length,
    stalledPct: mean((r) => (100 * r.stalledFrames) / r.frames),
    extrapolatedPct: mean((r) => (100 * r.extrapolatedFrames) / r.frames),
    longestStallMs: Math.max(...runs.map((r) => r.longestStallMs)),
    meanDelayMs: mean((r) => r.meanDelayMs),
    sdDelayMs: mean((r) => r.sdDelayMs),
    rmsMm: mean((r) => r.rmsMm),
    p99Mm: mean((r) => r.p99Mm),
    shapeRmsMm: mean((r) => r.shapeRmsMm),
    settledRmsMm: mean((r) => r.settledRmsMm),
    backwardJumps: mean((r) => r.backwardJumps),
    frameMs900: NaN,
  };
}

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
