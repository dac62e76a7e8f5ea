/**
 * Benchmark part 3: prediction with reconciliation over the world. A `StateServer` and a
 * `StateClient` with `predict` on the harness's connection; the client steers its own entity with
 * seeded inputs every frame, the server runs the same deterministic step in its `input` handler. What
 * the client draws of its own entity each frame is compared with the server's state of it at the
 * client's newest input tick (logged by the server's handler as it applies that input): when the
 * server agrees, the two must be equal within a millimetre on every frame. Optionally the server moves
 * the entity by 1 m outside the step once (an injected disagreement), and the bench follows how the
 * drawn entity reaches the corrected prediction.
 */
import type { Connection, ConnectionEvent } from '../../src/connection/connection.js';
import { BitReader } from '../../src/core/bits.js';
import { readU32LE } from '../../src/core/bytes.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { StateClient } from '../../src/state/client.js';
import { defineSchema, float, int } from '../../src/state/schema.js';
import { StateServer, type StateLink } from '../../src/state/server.js';
import { INPUTS, Kind, SNAPSHOTS, STATE_LANES } from '../../src/state/wire.js';
import { type HarnessContext, type HarnessLink, runHarness, type StateSystem } from './harness.js';

/** The scenario's schema: one player type at 1 mm precision; inputs are a direction. */
export const PREDICTION_SCHEMA = defineSchema(
  { player: { x: float(-1000, 1000, 0.001), y: float(-1000, 1000, 0.001) } },
  { dx: int(-1, 1), dy: int(-1, 1) },
);
type Pos = { x: number; y: number };
type Input = { dx: number; dy: number };

/** Metres per tick along x (y moves half as fast): not a whole number of millimetres, so quantization matters. */
export const SPEED_M_PER_TICK = 0.0937;
const BOUND_M = 900;

/** The game's step, run by the client's prediction and by the server for each input. */
export function step(v: Pos, input: Input): void {
  v.x = Math.max(-BOUND_M, Math.min(BOUND_M, v.x + input.dx * SPEED_M_PER_TICK));
  v.y = Math.max(-BOUND_M, Math.min(BOUND_M, v.y + input.dy * SPEED_M_PER_TICK * 0.5));
}

/** How many inputs an INPUT message carries (its EG0 count after the kind, tick and render time), or −1 if it is not one. */
export function inputsInMessage(bytes: Uint8Array): number {
  if (bytes.length < 10 || bytes[0] !== Kind.Input) return -1;
  const r = new BitReader(bytes, 1);
  r.bits(32);
  r.bits(32);
  const n = r.expGolomb(0) + 1;
  return r.overflow ? -1 : n;
}

/** Options of `runPrediction`. */
export interface PredictionOptions extends HarnessLink {
  seed: number;
  /** Server ticks (and input ticks) per second (default 60). */
  tickHz?: number;
  /** Server ticks to run (the client sends an input each tick once it holds its entity). */
  ticks: number;
  /** Server tick before which the server moves the entity 1 m along x outside the step (default none). */
  injectAtTick?: number;
  /** Chance per frame that the input changes (default 0.02). */
  changeChance?: number;
  /** Input ticks 1..countTo must each be applied once (default: every tick sent a round trip before the last server tick). */
  countTo?: number;
}

/** One drawn frame of the own entity, and the server's state at the frame's input tick. */
export interface PredictionFrame {
  t: number;
  /** The client's newest input tick at the frame. */
  tick: number;
  x: number;
  y: number;
  /** Distance (m) from the server's state after input `tick`; NaN if the server never applied it. */
  d: number;
}

/** What `runPrediction` measured. */
export interface PredictionRun {
  seed: number;
  tickHz: number;
  /** Input ticks the client sent (the newest tick of its last message). */
  inputsSent: number;
  /** Inputs the server applied (its handler's calls), and those of ticks it applied twice (must be 0). */
  inputsApplied: number;
  /** Input ticks 1..`countTo` the server never applied. */
  countTo: number;
  unapplied: number;
  appliedTwice: number;
  inputsDropped: number;
  /** The client's reconciliation figures at the end. */
  corrections: number;
  largestCorrectionM: number;
  /** Input messages sent, inputs per message (mean, max) from the client's unacknowledged count at each send, and from the wire. */
  inputMessages: number;
  perMessageMean: number;
  perMessageMax: number;
  perMessageWireMismatch: number;
  /** Input message bytes (lane payload) per second while inputs were sent, and the client's UDP payload bytes per second over the run (acks included). */
  inputBytesPerSec: number;
  clientUdpBytesPerSec: number;
  /** Frames drawn with the entity predicted, those compared (their input applied by the server), and those more than 1 mm off. */
  frames: PredictionFrame[];
  framesCompared: number;
  framesOff: number;
  largestFrameErrorM: number;
  /** The injection's time (virtual ms) and the first snapshot arrival at which the client counted it as a correction (NaN: none). */
  injectedAtMs: number;
  correctedAtMs: number;
}

/** Run the prediction scenario once on the harness's world. */
export function runPrediction(o: PredictionOptions): PredictionRun {
  const tickHz = o.tickHz ?? 60;
  const server = new StateServer({ schema: PREDICTION_SCHEMA, tickHz, lagCompensation: { historyMs: 0, maxRewindMs: 0 } });
  const codec = PREDICTION_SCHEMA.type('player');
  // The server's state after each input tick, snapped as the server snaps it.
  const serverX: number[] = [];
  const serverY: number[] = [];
  let appliedTwice = 0;
  let applied = 0;
  const snapped: Pos = { x: 0, y: 0 };
  server.on('join', (p) => {
    p.entity = server.spawn('player', { x: 0, y: 0 });
  });
  server.on('input', (p, tick, input) => {
    const v = p.entity!.values as Pos;
    step(v, input);
    applied++;
    if (serverX[tick] !== undefined) appliedTwice++;
    snapped.x = v.x;
    snapped.y = v.y;
    codec.snap(snapped);
    serverX[tick] = snapped.x;
    serverY[tick] = snapped.y;
  });

  const rng = new NonCryptoRng(o.seed * 7919 + 17);
  const changeChance = o.changeChance ?? 0.02;
  let input: Input = { dx: 1, dy: 0 };
  const makeView = (link: StateLink) => new StateClient(link, { schema: PREDICTION_SCHEMA, predict: step });
  let view: ReturnType<typeof makeView> | undefined;
  let newestSent = 0;
  let sentThisCall = -1;
  let inputMessages = 0;
  let inputBytes = 0;
  let firstInputAt = NaN;
  let lastInputAt = NaN;
  const perMessage: number[] = [];
  let wireMismatch = 0;
  const frames: PredictionFrame[] = [];
  let injectedAtMs = NaN;
  let correctedAtMs = NaN;
  let stopInputsAt = Infinity;

  const wrap = (conn: Connection): StateLink => ({
    send(lane: number, bytes: Uint8Array, notice?: boolean): number {
      if (lane === INPUTS) {
        inputMessages++;
        inputBytes += bytes.length;
        newestSent = readU32LE(bytes, 1);
        sentThisCall = inputsInMessage(bytes);
      }
      return conn.send(lane, bytes, notice);
    },
    stats: (now?: number) => conn.stats(now),
  });

  const system: StateSystem = {
    name: 'gamewire prediction',
    lanes: STATE_LANES,
    serverTick(now: number, tick: number, _connection: Connection, ctx: HarnessContext): void {
      if (tick === 0) stopInputsAt = ctx.tickTime(ctx.ticks);
      if (o.injectAtTick !== undefined && tick === o.injectAtTick) {
        const p = [...server.players()][0];
        if (p?.entity !== undefined) {
          (p.entity.values as Pos).x += 1;
          injectedAtMs = now;
        }
      }
      server.tick(now);
    },
    serverEvent(_now: number, e: ConnectionEvent): void {
      server.handle(e);
    },
    clientEvent(now: number, e: ConnectionEvent): void {
      const v = (view ??= makeView(wrap(e.connection)));
      const before = v.stats(now).corrections;
      v.handle(now, e);
      if (e.type === 'message' && e.lane === SNAPSHOTS && Number.isNaN(correctedAtMs) && !Number.isNaN(injectedAtMs) && v.stats(now).corrections > before) correctedAtMs = now;
    },
    clientFrame(now: number): void {
      if (view === undefined) return;
      if (rng.nextFloat() < changeChance) input = { dx: rng.nextInt(3) - 1, dy: rng.nextInt(3) - 1 };
      if (now < stopInputsAt) {
        sentThisCall = -1;
        view.input(now, input);
        if (sentThisCall > 0) {
          const unacked = view.stats(now).inputsUnacked;
          perMessage.push(unacked);
          if (unacked !== sentThisCall) wireMismatch++;
          if (Number.isNaN(firstInputAt)) firstInputAt = now;
          lastInputAt = now;
        }
      }
      const own = view.sample(now).find((e) => e.predicted);
      if (own === undefined || newestSent === 0) return;
      const v = own.values as Pos;
      frames.push({ t: now, tick: newestSent, x: v.x, y: v.y, d: NaN });
    },
    finish(): Record<string, unknown> {
      if (view === undefined) throw new Error('prediction: the client saw no event');
      return {};
    },
  };
  const run = runHarness(system, { ...o, seed: o.seed, ticks: o.ticks, tickHz, clientFrameHz: 60, joinSettleMs: 1000 / tickHz });
  // The server's state at a frame's tick is known only once the server applied it, often after the frame.
  let compared = 0;
  let off = 0;
  let largest = 0;
  for (const f of frames) {
    const sx = serverX[f.tick];
    if (sx === undefined) {
      f.d = NaN;
      continue;
    }
    f.d = Math.hypot(f.x - sx, f.y - serverY[f.tick]!);
    compared++;
    if (f.d > 0.001) off++;
    if (f.d > largest) largest = f.d;
  }
  if (wireMismatch > 0) throw new Error(`prediction, seed ${o.seed}: ${wireMismatch} input messages carried another count than the client's inputsUnacked`);
  const countTo = o.countTo ?? newestSent - Math.ceil((tickHz * 2 * (o.oneWayMs ?? 50)) / 1000) - 3;
  let unapplied = 0;
  for (let t = 1; t <= countTo; t++) if (serverX[t] === undefined) unapplied++;
  const s = view!.stats(run.joinAtMs + run.ticks * run.tickMs);
  const p = [...server.players()][0]!.stats();
  const runMs = run.firstTickAtMs + run.ticks * run.tickMs + 2000;
  return {
    seed: o.seed,
    tickHz,
    inputsSent: newestSent,
    inputsApplied: applied,
    countTo,
    unapplied,
    appliedTwice,
    inputsDropped: p.inputsDropped,
    corrections: s.corrections,
    largestCorrectionM: s.largestCorrection,
    inputMessages,
    perMessageMean: perMessage.reduce((a, b) => a + b, 0) / perMessage.length,
    perMessageMax: Math.max(...perMessage),
    perMessageWireMismatch: wireMismatch,
    inputBytesPerSec: inputBytes / ((lastInputAt - firstInputAt) / 1000),
    clientUdpBytesPerSec: run.clientBytes / (runMs / 1000),
    frames,
    framesCompared: compared,
    framesOff: off,
    largestFrameErrorM: largest,
    injectedAtMs,
    correctedAtMs,
  };
}

/** How an injected correction reached the drawn entity, from a run's frames. */
export interface Settle {
  /** From the injection to the snapshot that corrected the prediction (ms). */
  toCorrectionMs: number;
  /**
   * From that snapshot to the last frame more than `withinM` off the server (ms): every frame drawn
   * later is within it. And to the first of those frames within it (one frame interval later at most).
   */
  lastOffMs: number;
  firstWithinMs: number;
  /** The visible offset (drawn − server) at the correction (m). */
  offsetM: number;
  /** Largest change of the offset from one frame to the next after the correction (m), and as a share of `offsetM`. */
  largestStepM: number;
  largestStepShare: number;
  /** Frames over which the offset changed by more than `withinM`. */
  framesMoving: number;
  /** Frames at which the offset grew by more than `withinM` after the correction (a smoothed correction never grows). */
  grew: number;
}

/**
 * Follow the offset between what was drawn and the server's state (`frames[i].d`) after a correction
 * at `correctedAtMs`. Frames whose server state is unknown (d NaN) are skipped. `d` is a distance, so
 * this reads a correction along one direction (the injection's), as the scenario makes it.
 */
export function settle(frames: readonly PredictionFrame[], injectedAtMs: number, correctedAtMs: number, withinM = 0.001): Settle {
  const after = frames.filter((f) => f.t >= correctedAtMs && !Number.isNaN(f.d));
  let lastOff = -1;
  for (let i = 0; i < after.length; i++) if (after[i]!.d > withinM) lastOff = i;
  const lastOffAt = lastOff < 0 ? correctedAtMs : after[lastOff]!.t;
  const settledAt = lastOff + 1 < after.length ? after[lastOff + 1]!.t : NaN;
  let largest = 0;
  let moving = 0;
  let grew = 0;
  for (let i = 1; i < after.length; i++) {
    const ch = after[i]!.d - after[i - 1]!.d;
    if (Math.abs(ch) > largest) largest = Math.abs(ch);
    if (Math.abs(ch) > withinM) moving++;
    if (ch > withinM) grew++;
  }
  const offset = after[0]?.d ?? NaN;
  return {
    toCorrectionMs: correctedAtMs - injectedAtMs,
    lastOffMs: lastOffAt - correctedAtMs,
    firstWithinMs: settledAt - correctedAtMs,
    offsetM: offset,
    largestStepM: largest,
    largestStepShare: largest / offset,
    framesMoving: moving,
    grew,
  };
}
