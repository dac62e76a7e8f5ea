import { checkConfig, checkKnownKeys, isInt, isNum, isObject } from '../core/config.js';
import { GamewireError, checkArg } from '../core/errors.js';
import { type SlotKind, angleDelta, checkKinds } from './lerp.js';

/** Options of a {@link Predictor}; `I` is the game's input type. */
export interface PredictorOptions<I> {
  /** Value slots of the predicted state (the schema's layout for the entity), ≥ 1. */
  slots: number;
  /**
   * Advance `state` in place by one tick with `input`. Must be deterministic: the server runs the same step, and a
   * replay from the server's state must reproduce what the server computed.
   */
  step(state: Float64Array, input: I, tick: number): void;
  /**
   * Snap `state` in place to the precision the wire carries. Called after every step, as the server quantizes the
   * state it stores, so client and server replay from identical numbers.
   */
  quantize(state: Float64Array): void;
  /**
   * Visual distance between two states in the game's units (e.g. metres). Default: the largest per-slot difference,
   * angles the short way round (radians), quaternions component-wise in the same hemisphere.
   */
  error?(a: Float64Array, b: Float64Array): number;
  /** How each slot smooths a correction (see {@link SlotKind}; `'step'` slots snap). Default: every slot `'linear'`. */
  kinds?: readonly SlotKind[];
  /**
   * Inputs kept until acknowledged, 1..65536; default 64 (about 1 s at 60 Hz, 3.2 s at 20 Hz). They all ride again in
   * every input message and are replayed at every reconcile. At the limit the oldest is dropped (counted
   * `inputsDropped`) and the next reconcile that does not cover it snaps to the server (counted `resyncs`).
   */
  maxUnacked?: number;
  /** Time (ms) in which a correction's visible offset decays to exactly zero; 0 snaps. Default 100. */
  smoothMs?: number;
  /** Errors at or below this (game units) are not counted as corrections. Default 0.001 (1 mm in metres). */
  correctionThreshold?: number;
  /** Errors above this (game units) snap instead of smoothing (a teleport, a respawn). Default `Infinity`. */
  snapAbove?: number;
}

/** What a {@link Predictor} has done; every field is a count unless named otherwise. */
export interface PredictorStats {
  /** Tick of the predicted present (the last input applied, or the tick the server state was adopted at); −1 before. */
  presentTick: number;
  /** Newest acknowledged input tick reconciled to; −1 before the first. */
  lastAckTick: number;
  /** Inputs applied by `apply`. */
  inputsApplied: number;
  /** Inputs held now, waiting for an acknowledgement (≤ `maxUnacked`). */
  inputsUnacked: number;
  /** Inputs dropped unacknowledged because `maxUnacked` were held. */
  inputsDropped: number;
  /** Reconciles that rewound to a server state. */
  reconciles: number;
  /** Steps re-run by those reconciles. */
  replayedSteps: number;
  /** Reconciles whose error exceeded `correctionThreshold`. */
  corrections: number;
  /** Largest error seen (game units). */
  largestCorrection: number;
  /** Error of the latest reconcile (game units). */
  lastError: number;
  /** Corrections above `snapAbove`, shown at once instead of smoothed. */
  snaps: number;
  /** Reconciles that could not replay every input since the ack (some were dropped at `maxUnacked`): snapped. */
  resyncs: number;
  /** Acks at or below the newest already reconciled (late or duplicate snapshots): ignored. */
  staleAcks: number;
  /** Acks that are not a tick or name a tick never applied: ignored. */
  invalidAcks: number;
}

const OPTION_KEYS: ReadonlySet<string> = new Set([
  'slots', 'step', 'quantize', 'error', 'kinds', 'maxUnacked', 'smoothMs', 'correctionThreshold', 'snapAbove',
]);

/**
 * Client-side prediction of one entity (the player's own) with reconciliation and smoothing. Sans-IO: the caller
 * passes local time (`now`, ms) where it matters and sends and receives the messages itself.
 *
 * Each local tick, {@link apply} runs the game's step on the predicted present and keeps the input until the server
 * acknowledges it; {@link forEachUnacked} lists what the next input message carries. When a snapshot reports the
 * server's state after the inputs up to some tick, {@link reconcile} rewinds to it and replays the rest; a difference
 * from what was predicted becomes a visual offset that {@link render} fades out over `smoothMs`, while {@link state}
 * (what game logic reads) takes the corrected value at once. Memory is fixed at construction: `maxUnacked` input
 * references and four `slots`-long arrays; nothing is allocated per tick.
 */
export class Predictor<I> {
  private readonly slots: number;
  private readonly stepFn: (state: Float64Array, input: I, tick: number) => void;
  private readonly quantizeFn: (state: Float64Array) => void;
  private readonly errorFn: ((a: Float64Array, b: Float64Array) => number) | undefined;
  private readonly kinds: readonly SlotKind[];
  private readonly maxUnacked: number;
  private readonly smoothMs: number;
  private readonly threshold: number;
  private readonly snapAbove: number;

  private readonly present: Float64Array;
  private readonly before: Float64Array;
  private readonly drawn: Float64Array;
  private readonly offset: Float64Array;
  private offsetAt = 0;
  private smoothing = false;

  private readonly ring: (I | undefined)[];
  private head = 0;
  private count = 0;
  private presentTick = -1;
  private lastAck = -1;
  /** Newest snapshot tick reconciled (−Infinity: none, or the caller passes none). */
  private lastServerTick = -Infinity;
  /** Newest tick dropped at `maxUnacked` and not yet covered by an ack; −1 when none. */
  private droppedThrough = -1;

  private readonly c = {
    inputsApplied: 0, inputsDropped: 0, reconciles: 0, replayedSteps: 0, corrections: 0, largestCorrection: 0,
    lastError: 0, snaps: 0, resyncs: 0, staleAcks: 0, invalidAcks: 0,
  };

  /**
   * @param initial the entity's state to predict from (copied; `slots` values, as the spawn snapshot gave it).
   * @throws GamewireError `invalid-config` on bad options or an `initial` of the wrong length.
   */
  constructor(initial: ArrayLike<number>, options: PredictorOptions<I>) {
    checkConfig(isObject(options), 'predictor options must be an object');
    checkKnownKeys(options, OPTION_KEYS, (k) => `unknown predictor option '${k}'`);
    const o = options;
    checkConfig(isInt(o.slots, 1, 65_536), 'slots must be an integer in 1..65536');
    checkConfig(typeof o.step === 'function', 'step must be a function');
    checkConfig(typeof o.quantize === 'function', 'quantize must be a function');
    checkConfig(o.error === undefined || typeof o.error === 'function', 'error must be a function');
    const kinds = o.kinds ?? new Array<SlotKind>(o.slots).fill('linear');
    checkKinds(kinds, o.slots);
    const maxUnacked = o.maxUnacked ?? 64;
    checkConfig(isInt(maxUnacked, 1, 65_536), 'maxUnacked must be an integer in 1..65536');
    const smoothMs = o.smoothMs ?? 100;
    checkConfig(isNum(smoothMs, 0, 60_000), 'smoothMs must be a number in 0..60000');
    const threshold = o.correctionThreshold ?? 0.001;
    checkConfig(isNum(threshold, 0), 'correctionThreshold must be a finite number ≥ 0');
    const snapAbove = o.snapAbove ?? Infinity;
    checkConfig(snapAbove === Infinity || isNum(snapAbove, 0), 'snapAbove must be a number ≥ 0 or Infinity');
    checkConfig(initial !== null && typeof initial === 'object' && initial.length === o.slots,
      `initial state must have ${o.slots} values`);

    this.slots = o.slots;
    this.stepFn = o.step;
    this.quantizeFn = o.quantize;
    this.errorFn = o.error;
    this.kinds = [...kinds];
    this.maxUnacked = maxUnacked;
    this.smoothMs = smoothMs;
    this.threshold = threshold;
    this.snapAbove = snapAbove;
    this.present = Float64Array.from(initial);
    this.before = new Float64Array(o.slots);
    this.drawn = new Float64Array(o.slots);
    this.offset = new Float64Array(o.slots);
    this.ring = new Array<I | undefined>(maxUnacked).fill(undefined);
  }

  /**
   * The predicted present: authoritative for game logic, corrected at once by {@link reconcile}. A live view (not a
   * copy) that the predictor overwrites on `apply` and `reconcile`; do not write to it.
   */
  get state(): Float64Array {
    return this.present;
  }

  /** Tick of the predicted present (see {@link PredictorStats.presentTick}); −1 before any input or ack. */
  get tick(): number {
    return this.presentTick;
  }

  /**
   * Apply the local input for `tick` to the predicted present (step, then quantize) and keep it, by reference, until
   * acknowledged: do not mutate `input` afterwards. While inputs are unacknowledged, ticks go up by exactly 1 per
   * call; the first tick, and the first after every input was acknowledged, may be any later tick.
   * @throws GamewireError `invalid-argument` for a tick that is not a safe integer ≥ 0 or breaks that order.
   */
  apply(tick: number, input: I): void {
    checkArg(Number.isSafeInteger(tick) && tick >= 0, 'tick must be a safe integer ≥ 0');
    if (this.count > 0 ? tick !== this.presentTick + 1 : tick <= this.presentTick || tick <= this.lastAck) {
      throw new GamewireError('invalid-argument', this.count > 0
        ? `tick ${tick} must follow ${this.presentTick} by 1`
        : `tick ${tick} must be after ${Math.max(this.presentTick, this.lastAck)}`);
    }
    if (this.count === this.maxUnacked) {
      this.droppedThrough = this.presentTick - this.count + 1;
      this.ring[this.head] = undefined;
      this.head = this.head + 1 === this.maxUnacked ? 0 : this.head + 1;
      this.count--;
      this.c.inputsDropped++;
    }
    let at = this.head + this.count;
    if (at >= this.maxUnacked) at -= this.maxUnacked;
    this.ring[at] = input;
    this.count++;
    this.stepFn(this.present, input, tick);
    this.quantizeFn(this.present);
    this.presentTick = tick;
    this.c.inputsApplied++;
  }

  /**
   * Call `fn` for each input not yet acknowledged, oldest first, with its tick (consecutive ticks, the newest being
   * {@link tick}). Returns how many: what the next input message carries. Allocates nothing.
   */
  forEachUnacked(fn: (input: I, tick: number) => void): number {
    const first = this.presentTick - this.count + 1;
    for (let k = 0; k < this.count; k++) {
      let at = this.head + k;
      if (at >= this.maxUnacked) at -= this.maxUnacked;
      fn(this.ring[at] as I, first + k);
    }
    return this.count;
  }

  /**
   * The server's authoritative state after applying every input up to `ackTick` (a snapshot reports both). Rewinds
   * the present to `serverState`, forgets the inputs up to `ackTick` and replays the rest (step, quantize). If the
   * replayed present differs from the one predicted, {@link state} takes the new value and the difference becomes a
   * visual offset that fades to zero over `smoothMs` from `now` (local ms), starting from what was drawn at `now`, so
   * the drawn state never jumps. Until the first input is applied, adopts `serverState` as the present at `ackTick`.
   *
   * `serverTick`, the snapshot's own tick, lets a later snapshot with the same `ackTick` count: the server may have
   * changed the entity without an input (a push, a respawn), and its newer state is reconciled too.
   *
   * Returns the error (game units, see `error`), or −1 when the ack is ignored: older than the newest reconciled, or
   * equal to it without a newer `serverTick` (`staleAcks`), not a tick, or after the present (`invalidAcks`). These
   * come from the network and never throw.
   * @throws GamewireError `invalid-argument` if `serverState` does not have `slots` values.
   */
  reconcile(now: number, ackTick: number, serverState: ArrayLike<number>, serverTick?: number): number {
    if (serverState === null || typeof serverState !== 'object' || serverState.length !== this.slots) {
      throw new GamewireError('invalid-argument', `server state must have ${this.slots} values`);
    }
    if (!Number.isSafeInteger(ackTick) || ackTick < 0) {
      this.c.invalidAcks++;
      return -1;
    }
    const newer = serverTick !== undefined && serverTick > this.lastServerTick;
    if (ackTick < this.lastAck || (ackTick === this.lastAck && !newer)) {
      this.c.staleAcks++;
      return -1;
    }
    if (serverTick !== undefined && serverTick > this.lastServerTick) this.lastServerTick = serverTick;
    if (this.c.inputsApplied === 0) {
      this.present.set(serverState);
      this.presentTick = ackTick;
      this.lastAck = ackTick;
      this.c.reconciles++;
      return 0;
    }
    if (ackTick > this.presentTick) {
      this.c.invalidAcks++;
      return -1;
    }

    const acked = ackTick - (this.presentTick - this.count + 1) + 1;
    for (let k = 0; k < acked; k++) {
      this.ring[this.head] = undefined;
      this.head = this.head + 1 === this.maxUnacked ? 0 : this.head + 1;
    }
    if (acked > 0) this.count -= acked;
    const resync = this.droppedThrough > ackTick;
    this.droppedThrough = -1;
    this.lastAck = ackTick;

    this.before.set(this.present);
    this.present.set(serverState);
    const first = this.presentTick - this.count + 1;
    for (let k = 0; k < this.count; k++) {
      let at = this.head + k;
      if (at >= this.maxUnacked) at -= this.maxUnacked;
      this.stepFn(this.present, this.ring[at] as I, first + k);
      this.quantizeFn(this.present);
    }
    this.c.reconciles++;
    this.c.replayedSteps += this.count;

    const err = this.errorFn !== undefined ? this.errorFn(this.before, this.present) : this.defaultError(this.before, this.present);
    this.c.lastError = err;
    if (err > this.threshold) {
      this.c.corrections++;
      if (err > this.c.largestCorrection) this.c.largestCorrection = err;
    }
    if (resync || err > this.snapAbove || this.smoothMs === 0) {
      if (resync) this.c.resyncs++;
      else if (err > this.snapAbove) this.c.snaps++;
      this.smoothing = false;
    } else if (!sameValues(this.before, this.present)) {
      this.startOffset(now);
    }
    return err;
  }

  /**
   * What to draw at local time `now` (ms), into `out[0..slots)`: the predicted present plus the correction offset still
   * visible (it eases from full at the correction to zero `smoothMs` later, with no jump at either end). An `'angle'`
   * slot is given within π of the present's value, not wrapped, so it may leave the schema's range by that much.
   * @throws GamewireError `buffer-too-small` if `out` has fewer than `slots` values.
   */
  render(now: number, out: Float64Array): void {
    if (out.length < this.slots) throw new GamewireError('buffer-too-small', `out must have ${this.slots} values`);
    this.compose(this.present, now, out);
  }

  /** A snapshot of the counts (a fresh object). */
  stats(): PredictorStats {
    return { presentTick: this.presentTick, lastAckTick: this.lastAck, inputsUnacked: this.count, ...this.c };
  }

  /** `out` = `base` with the offset at `now` applied. */
  private compose(base: Float64Array, now: number, out: Float64Array): void {
    const n = this.slots;
    if (!this.smoothing || now - this.offsetAt >= this.smoothMs) {
      for (let i = 0; i < n; i++) out[i] = base[i];
      return;
    }
    const s = now <= this.offsetAt ? 0 : (now - this.offsetAt) / this.smoothMs;
    // Smoothstep: the offset leaves and lands with zero speed, so neither the correction's start nor its end shows.
    const w = 1 - s * s * (3 - 2 * s);
    const off = this.offset;
    const kinds = this.kinds;
    for (let i = 0; i < n; i++) {
      const k = kinds[i];
      if (k === 'linear' || k === 'angle') out[i] = base[i] + off[i] * w;
      else if (k === 'step') out[i] = base[i];
      else {
        // The rotation offset eased from itself towards identity (normalized lerp), then applied to the base.
        let x = w * off[i], y = w * off[i + 1], z = w * off[i + 2], qw = 1 - w + w * off[i + 3];
        const len = Math.sqrt(x * x + y * y + z * z + qw * qw);
        x /= len; y /= len; z /= len; qw /= len;
        quatMul(x, y, z, qw, base[i], base[i + 1], base[i + 2], base[i + 3], out, i);
        i += 3;
      }
    }
  }

  /** Offset = what was drawn at `now` (old present + old offset) relative to the new present. */
  private startOffset(now: number): void {
    this.compose(this.before, now, this.drawn);
    const d = this.drawn, p = this.present, off = this.offset, kinds = this.kinds;
    for (let i = 0; i < this.slots; i++) {
      const k = kinds[i];
      if (k === 'linear') off[i] = d[i] - p[i];
      else if (k === 'angle') off[i] = angleDelta(p[i], d[i]);
      else if (k === 'step') off[i] = 0;
      else {
        // drawn ⊗ p⁻¹, the rotation taking the new present to what was drawn; kept in the w ≥ 0 hemisphere.
        const px = p[i], py = p[i + 1], pz = p[i + 2], pw = p[i + 3];
        const n2 = px * px + py * py + pz * pz + pw * pw;
        quatMul(d[i], d[i + 1], d[i + 2], d[i + 3], -px / n2, -py / n2, -pz / n2, pw / n2, off, i);
        if (off[i + 3] < 0) {
          off[i] = -off[i]; off[i + 1] = -off[i + 1]; off[i + 2] = -off[i + 2]; off[i + 3] = -off[i + 3];
        }
        i += 3;
      }
    }
    this.offsetAt = now;
    this.smoothing = true;
  }

  private defaultError(a: Float64Array, b: Float64Array): number {
    let max = 0;
    const kinds = this.kinds;
    for (let i = 0; i < this.slots; i++) {
      const k = kinds[i];
      if (k === 'quat') {
        const sign = a[i] * b[i] + a[i + 1] * b[i + 1] + a[i + 2] * b[i + 2] + a[i + 3] * b[i + 3] < 0 ? -1 : 1;
        for (let j = i; j < i + 4; j++) max = Math.max(max, Math.abs(a[j] - sign * b[j]));
        i += 3;
      } else {
        max = Math.max(max, Math.abs(k === 'angle' ? angleDelta(a[i], b[i]) : a[i] - b[i]));
      }
    }
    return max;
  }
}

function sameValues(a: Float64Array, b: Float64Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Hamilton product (ax, ay, az, aw) ⊗ (bx, by, bz, bw) into out[o..o+3]. */
function quatMul(
  ax: number, ay: number, az: number, aw: number, bx: number, by: number, bz: number, bw: number, out: Float64Array, o: number,
): void {
  out[o] = aw * bx + ax * bw + ay * bz - az * by;
  out[o + 1] = aw * by - ax * bz + ay * bw + az * bx;
  out[o + 2] = aw * bz + ax * by - ay * bx + az * bw;
  out[o + 3] = aw * bw - ax * bx - ay * by - az * bz;
}
