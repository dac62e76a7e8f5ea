import { checkConfig, isInt, isNum, isObject, checkKnownKeys } from '../core/config.js';
import { checkArg } from '../core/errors.js';
import { angleDelta, blendSlots, type SlotKind } from './lerp.js';

export type { SlotKind };

/**
 * What `Track.sample` did:
 * - `'interpolated'`: the render time is within what is known (between two samples, or after the last
 *   one but not past `knownTick`, where the entity is known unchanged): the values are the entity's.
 * - `'extrapolated'`: past `knownTick` by at most the bound: a guess from the last two samples.
 * - `'held'`: past `knownTick` beyond the bound: frozen where the extrapolation stopped (a stall).
 * - `'early'`: before the track's first sample (an entity seen for the first time, or samples older
 *   than the capacity): the first sample's values.
 * - `'empty'`: no sample yet; `out` is untouched.
 */
export type SampleOutcome = 'interpolated' | 'extrapolated' | 'held' | 'early' | 'empty';

/** Options of a `Playback`. All times in ms. */
export interface PlaybackOptions {
  /** The server's snapshot interval (ms, > 0): 50 at 20 Hz. Ticks are `tick × tickMs` apart. */
  tickMs: number;
  /**
   * Smallest interpolation delay (ms, ≥ 0) behind the fastest snapshots; default `tickMs` (less than one
   * interval means extrapolating between every two snapshots).
   */
  minDelayMs?: number;
  /**
   * Largest interpolation delay (ms, ≥ minDelayMs); default 500. A path that needs more stalls
   * instead of lagging further. `Playback.track` sizes tracks to cover it.
   */
  maxDelayMs?: number;
  /**
   * How far past the newest snapshot entities are extrapolated before they hold (ms, ≥ 0); default 100
   * (two ticks at 20 Hz). More rides out longer gaps without freezing, at the cost of larger errors
   * on curved or stopping motion (a body turning at a m/s² is off by a·t²/2 after t).
   */
  maxExtrapolationMs?: number;
  /**
   * Fraction of time (0..0.5) the delay may leave playback past the newest snapshot (covered by
   * extrapolation); default 0.05. The delay is this upper quantile of the newest snapshot's age: a
   * smaller fraction buys fewer extrapolated frames with more delay.
   */
  lateFraction?: number;
  /**
   * Half-life (ms, ≥ 1000) of the arrival statistics the delay is chosen from; default 60000. Longer
   * keeps the delay steadier (each change of delay is seen as a brief slow or fast motion) and makes it
   * shrink later after the path gets cleaner; a worse path raises the quantile within a few seconds
   * either way, since the tail that sets it is a small fraction of the weight.
   */
  memoryMs?: number;
  /**
   * Largest change of playback speed (0..0.5) when the delay moves: playback runs between
   * 1 − this and 1 + this times real time; default 0.1. Larger settles faster and is more visible.
   */
  maxTimeScale?: number;
}

/** Figures of a `Playback` (times in ms). */
export interface PlaybackStats {
  /** Current delay of playback behind the fastest snapshots' arrival (ms). */
  delayMs: number;
  /** The delay playback is steering to (ms). */
  targetDelayMs: number;
  /** Local time minus server time of the fastest recent snapshots (ms): transit plus clock offset. */
  clockOffsetMs: number;
  /** Playback speed relative to real time at the last frame (1 ± maxTimeScale). */
  timeScale: number;
  /** Render time at the last frame (ticks), −Infinity before playback starts. */
  renderTick: number;
  /** Newest tick received, −1 before any. */
  newestTick: number;
  /** Snapshot arrivals given to `received` (duplicates included). */
  snapshots: number;
  /** Arrivals older than the newest tick already received (reordered, late or duplicate). */
  late: number;
  /** Arrivals ignored: tick not a non-negative integer, or `now` not finite. */
  ignored: number;
  /** Frames (`advance` calls after playback started). */
  frames: number;
  /** Frames whose render time was past the newest tick (extrapolated or held). */
  framesStarved: number;
  /** Frames past the newest tick by more than the extrapolation bound (entities frozen). */
  framesHeld: number;
  /** Time spent past the newest tick within the extrapolation bound (ms of real time). */
  extrapolatedMs: number;
  /** Time spent past the extrapolation bound (ms of real time). */
  heldMs: number;
  /** Longest run of frames past the extrapolation bound (ms of real time). */
  longestHeldMs: number;
  /** Times the target delay rose (more jitter or loss, or stalls beyond 0.2 % of the time). */
  delayIncreases: number;
  /** Forward jumps of the render time (playback more than `maxDelayMs` behind its target; not the start). */
  forwardJumps: number;
}

const DEFAULTS = {
  maxDelayMs: 500,
  maxExtrapolationMs: 100,
  lateFraction: 0.05,
  memoryMs: 60_000,
  maxTimeScale: 0.1,
};

/** Bins of the age histogram between 0 and maxDelayMs (one more holds everything above). */
const BINS = 256;
/** Sub-windows of the clock offset's windowed minimum, and the whole window (ms). */
const OFFSET_SLOTS = 8;
const OFFSET_WINDOW_MS = 10_000;
/** Time constant of the steering towards the target delay (ms): an error e is corrected at e/τ per ms. */
const STEER_TAU_MS = 500;
/**
 * The target moves only when the wanted delay leaves a band of this fraction of it on either side:
 * up at once, down at SHRINK_RATE ms per ms.
 */
const BAND_FRACTION = 0.05;
const SHRINK_RATE = 0.01;
/** Stalls beyond this fraction of the recent time (weighted like the statistics) make the target grow. */
const STALL_FRACTION = 0.002;
/** Playback starts this long after the first snapshot (ms, or snapshot intervals if longer), at the measured delay. */
const WARMUP_MS = 1000;
const WARMUP_TICKS = 20;
/** One gap in arrivals adds at most this many × maxDelayMs of time past maxDelayMs to the statistics. */
const GAP_WEIGHT_CAP = 1;
/** Shortest blend of `Playback.track`'s tracks (ms). */
const BLEND_MS = 100;

/**
 * The client's playback clock: maps server ticks to local time and runs a delay behind the newest
 * snapshot, so that `Track`s interpolate between snapshots already received.
 *
 * - **Clock offset**: a windowed minimum (10 s, 8 sub-windows) of `now − tick × tickMs` over every
 *   arrival: the fastest snapshots' transit plus the clocks' offset, not moved by any one late packet
 *   and following drift and route changes within the window. The delay is kept relative to it, and a
 *   change of the estimate alone does not move playback.
 * - **Delay**: the upper `lateFraction` quantile of how far the fastest-path clock has run past the
 *   newest snapshot, weighted by time (a histogram of 256 bins up to `maxDelayMs` that decays with
 *   `memoryMs`). It measures the snapshot interval, jitter and loss in one figure. The target rises at
 *   once when that quantile is more than 5 % above it, and shrinks at 1 % of real time while it is
 *   more than 5 % below. When playback stalled (past the extrapolation bound) for more than 0.2 % of
 *   the recent time, each further stall raises the target by its length (at most two intervals).
 * - **Dilation**: playback reaches its target by running at 1 ± maxTimeScale of real time (the error
 *   corrected with a 500 ms time constant), so the render time never decreases. It jumps forward only
 *   when more than `maxDelayMs` behind its target (`forwardJumps`).
 * - **Start-up**: playback starts 1 s (or 20 intervals, if longer) after the first snapshot, at the
 *   delay measured by then; until then `advance` returns −Infinity (tracks show their first sample).
 *
 * Sans-IO: no clock or timer; every method takes `now` (local ms, monotonic). Memory is fixed (about
 * 3 KiB). One `Playback` per server connection; a new session (ticks starting again) needs a new one.
 */
export class Playback {
  private readonly tickMs: number;
  private readonly minDelay: number;
  private readonly maxDelay: number;
  private readonly maxExtrap: number;
  private readonly lateFraction: number;
  private readonly halfLife: number;
  private readonly maxScale: number;
  private readonly binMs: number;

  private readonly hist = new Float64Array(BINS + 1);
  private histTotal = 0;
  private heldWeight = 0;
  private histRef = 0;
  private statAt = 0;
  private gapOverflow = 0;
  private shiftMs = 0;

  private readonly slotMin = new Float64Array(OFFSET_SLOTS);
  private readonly slotId = new Float64Array(OFFSET_SLOTS).fill(-Infinity);
  private base = NaN;

  private newest = -1;
  private started = false;
  private render = -Infinity;
  private lastNow = 0;
  private target: number;
  private scale = 1;
  private rising = false;
  private firstAt = 0;
  private heldRun = 0;

  private readonly s = {
    snapshots: 0,
    late: 0,
    ignored: 0,
    frames: 0,
    framesStarved: 0,
    framesHeld: 0,
    extrapolatedMs: 0,
    heldMs: 0,
    longestHeldMs: 0,
    delayIncreases: 0,
    forwardJumps: 0,
  };

  /** @throws GamewireError `invalid-config` for a missing or out-of-range option or an unknown key. */
  constructor(options: PlaybackOptions) {
    checkConfig(isObject(options), 'Playback options must be an object');
    checkKnownKeys(options, { tickMs: 0, minDelayMs: 0, ...DEFAULTS }, (k) => `unknown Playback option "${k}"`);
    const tickMs = options.tickMs;
    checkConfig(isNum(tickMs, 0.001, 60_000), 'tickMs must be a finite number > 0 (ms)');
    const min = options.minDelayMs ?? tickMs;
    const max = options.maxDelayMs ?? DEFAULTS.maxDelayMs;
    const extrap = options.maxExtrapolationMs ?? DEFAULTS.maxExtrapolationMs;
    const late = options.lateFraction ?? DEFAULTS.lateFraction;
    const memory = options.memoryMs ?? DEFAULTS.memoryMs;
    const scale = options.maxTimeScale ?? DEFAULTS.maxTimeScale;
    checkConfig(isNum(min, 0, 60_000), 'minDelayMs must be a finite number ≥ 0 (ms)');
    checkConfig(isNum(max, Math.max(min, 1), 60_000), 'maxDelayMs must be a finite number ≥ minDelayMs and ≥ 1 (ms)');
    checkConfig(isNum(extrap, 0, 60_000), 'maxExtrapolationMs must be a finite number ≥ 0 (ms)');
    checkConfig(isNum(late, 0, 0.5), 'lateFraction must be a number in 0..0.5');
    checkConfig(isNum(memory, 1000, 3_600_000), 'memoryMs must be a finite number ≥ 1000 (ms)');
    checkConfig(isNum(scale, 0, 0.5), 'maxTimeScale must be a number in 0..0.5');
    this.tickMs = tickMs;
    this.minDelay = min;
    this.maxDelay = max;
    this.maxExtrap = extrap;
    this.lateFraction = late;
    this.halfLife = memory;
    this.maxScale = scale;
    this.binMs = max / BINS;
    this.target = clamp(2 * tickMs, min, max);
  }

  /**
   * A snapshot of server tick `tick` (an integer ≥ 0) arrived at local time `now` (ms). Any order;
   * duplicates are fine. Anything else is ignored and counted (`ignored`), never thrown.
   */
  received(now: number, tick: number): void {
    if (!Number.isFinite(now) || !isInt(tick, 0)) {
      this.s.ignored++;
      return;
    }
    this.s.snapshots++;
    this.offsetSample(now, now - tick * this.tickMs);
    if (tick <= this.newest) {
      this.s.late++;
      return;
    }
    if (this.newest >= 0) this.account(now);
    else this.statAt = this.firstAt = now;
    this.newest = tick;
    this.gapOverflow = 0;
  }

  /**
   * The render time at local time `now` (ms), in server ticks (fractional): where `Track.sample`
   * samples this frame. Never less than any value returned before: a later delay is reached by
   * running playback slower or faster, within 1 ± maxTimeScale. −Infinity until playback starts
   * (1 s after the first snapshot).
   * Call once per rendered frame; a `now` smaller than the previous one counts as the previous one.
   */
  advance(now: number): number {
    if (this.newest < 0 || !Number.isFinite(now)) return this.render;
    const T = this.tickMs;
    if (!this.started) {
      if (now - this.firstAt < Math.max(WARMUP_MS, WARMUP_TICKS * T)) return this.render;
      this.started = true;
      this.lastNow = now;
      this.account(now);
      this.target = clamp(this.quantile(), this.minDelay, this.maxDelay);
      this.render = (now - this.base - this.target) / T;
      this.scale = 1;
      return this.render;
    }
    const dt = Math.max(0, now - this.lastNow);
    this.lastNow = Math.max(this.lastNow, now);
    this.account(this.lastNow);
    this.updateTarget(dt);
    const err = (this.lastNow - this.base - this.target) / T - (this.render + dt / T);
    const errMs = err * T;
    if (errMs > this.maxDelay) {
      this.render += err + dt / T;
      this.s.forwardJumps++;
      this.scale = 1;
    } else {
      const lim = this.maxScale * dt;
      const corr = clamp((errMs * dt) / STEER_TAU_MS, -lim, lim);
      this.render += (dt + corr) / T;
      this.scale = dt > 0 ? (dt + corr) / dt : 1;
    }
    this.frameStats(dt);
    return this.render;
  }

  /** Current delay of playback behind the fastest snapshots' arrival (ms); before playback starts, the target. */
  get delayMs(): number {
    return this.started ? this.lastNow - this.base - this.render * this.tickMs : this.target;
  }

  /** Newest tick received; −1 before any. Pass it to `Track.sample` as `knownTick`. */
  get newestTick(): number {
    return this.newest;
  }

  /** The extrapolation bound in ticks, for `Track.sample`. */
  get maxExtrapolationTicks(): number {
    return this.maxExtrap / this.tickMs;
  }

  /**
   * A `Track` of `slots` numbers per sample for this playback: `ceil(maxDelayMs / tickMs) + 4` samples
   * (enough for the largest delay) and blends of at least 100 ms.
   */
  track(slots: number): Track {
    return new Track(slots, Math.ceil(this.maxDelay / this.tickMs) + 4, BLEND_MS / this.tickMs);
  }

  /** A copy of the figures. */
  stats(): PlaybackStats {
    return {
      delayMs: this.delayMs,
      targetDelayMs: this.target,
      clockOffsetMs: this.base,
      timeScale: this.scale,
      renderTick: this.render,
      newestTick: this.newest,
      ...this.s,
    };
  }

  private frameStats(dt: number): void {
    const s = this.s;
    s.frames++;
    const past = (this.render - this.newest) * this.tickMs;
    if (past <= 0) {
      if (this.heldRun > 0) this.stallEnded(this.heldRun);
      this.heldRun = 0;
      return;
    }
    s.framesStarved++;
    if (past <= this.maxExtrap) {
      s.extrapolatedMs += dt;
      if (this.heldRun > 0) this.stallEnded(this.heldRun);
      this.heldRun = 0;
      return;
    }
    s.framesHeld++;
    s.heldMs += dt;
    this.heldWeight += dt * Math.pow(2, (this.lastNow - this.histRef) / this.halfLife);
    this.heldRun += dt;
    if (this.heldRun > s.longestHeldMs) s.longestHeldMs = this.heldRun;
  }

  /**
   * A stall (entities held for `heldMs`) ended. When stalls took more than STALL_FRACTION of the
   * recent time, more than the statistics foresaw, the target grows by the stall, at most two ticks.
   */
  private stallEnded(heldMs: number): void {
    // Against at least a full window's weight, so that one stall early on is not a large fraction.
    const full = (this.halfLife / Math.LN2) * Math.pow(2, (this.lastNow - this.histRef) / this.halfLife);
    if (this.heldWeight <= STALL_FRACTION * Math.max(this.histTotal, full)) return;
    const grown = Math.min(this.maxDelay, this.target + Math.min(heldMs, 2 * this.tickMs));
    if (grown > this.target) {
      this.target = grown;
      this.s.delayIncreases++;
      this.rising = true;
    }
  }

  /** Moves the target delay towards the wanted quantile: up at once beyond the band, down slowly. */
  private updateTarget(dt: number): void {
    const want = clamp(this.quantile(), this.minDelay, this.maxDelay);
    const band = BAND_FRACTION * this.target;
    if (want > this.target + band) {
      if (!this.rising) this.s.delayIncreases++;
      this.rising = true;
      this.target = want;
    } else {
      this.rising = false;
      if (want < this.target - band) this.target = Math.max(want + band, this.target - SHRINK_RATE * dt);
    }
  }

  /** The upper `lateFraction` quantile of the newest snapshot's age (ms); the target before any statistics. */
  private quantile(): number {
    if (this.histTotal <= 0) return this.target;
    const h = this.hist;
    let tail = this.histTotal * this.lateFraction;
    if (h[BINS]! > tail) return this.maxDelay;
    tail -= h[BINS]!;
    for (let b = BINS - 1; b >= 0; b--) {
      const w = h[b]!;
      if (w >= tail && w > 0) return (b + 1 - tail / w) * this.binMs;
      tail -= w;
    }
    return 0;
  }

  /**
   * Adds the time from the last accounting to `now` to the age histogram. Over it the age of the
   * newest snapshot rises linearly, so the time spreads evenly over the bins it crosses; weights grow
   * by 2^(t / memoryMs) so that older time counts half as much per half-life.
   */
  private account(now: number): void {
    const from = this.statAt;
    if (now <= from) return;
    this.statAt = now;
    if (now - this.histRef > 20 * this.halfLife) this.rescale(now);
    const g = Math.pow(2, (now - this.histRef) / this.halfLife);
    const lift = this.base + this.newest * this.tickMs;
    let a0 = Math.max(0, from - lift);
    const a1 = Math.max(0, now - lift);
    if (a1 <= a0) return;
    const h = this.hist;
    const bw = this.binMs;
    const top = this.maxDelay;
    let added = 0;
    if (a0 < top) {
      const end = Math.min(a1, top);
      let b = Math.floor(a0 / bw);
      while (a0 < end) {
        const edge = Math.min((b + 1) * bw, end);
        h[b] = h[b]! + (edge - a0) * g;
        added += edge - a0;
        a0 = edge;
        b++;
      }
    }
    if (a1 > top) {
      const over = Math.min(a1 - Math.max(a0, top), Math.max(0, GAP_WEIGHT_CAP * top - this.gapOverflow));
      this.gapOverflow += over;
      h[BINS] = h[BINS]! + over * g;
      added += over;
    }
    this.histTotal += added * g;
  }

  private rescale(now: number): void {
    const k = Math.pow(2, -(now - this.histRef) / this.halfLife);
    const h = this.hist;
    for (let b = 0; b <= BINS; b++) h[b] = h[b]! * k;
    this.histTotal *= k;
    this.heldWeight *= k;
    this.histRef = now;
  }

  /** Windowed minimum of `now − tick × tickMs` over OFFSET_WINDOW_MS, in OFFSET_SLOTS sub-windows. */
  private offsetSample(now: number, v: number): void {
    const slotMs = OFFSET_WINDOW_MS / OFFSET_SLOTS;
    const id = Math.floor(now / slotMs);
    const i = ((id % OFFSET_SLOTS) + OFFSET_SLOTS) % OFFSET_SLOTS;
    if (this.slotId[i] !== id) {
      this.slotId[i] = id;
      this.slotMin[i] = v;
    } else if (v < this.slotMin[i]!) this.slotMin[i] = v;
    let m = Infinity;
    for (let j = 0; j < OFFSET_SLOTS; j++) {
      const sid = this.slotId[j]!;
      if (sid > id - OFFSET_SLOTS && sid <= id && this.slotMin[j]! < m) m = this.slotMin[j]!;
    }
    if (m !== this.base && Number.isFinite(this.base)) this.rebase(m - this.base);
    this.base = m;
  }

  /**
   * The fastest path's estimate moved by `d` ms: the ages recorded so far and the target are relative
   * to it, so they move by −d, and playback stays where it was until the statistics say otherwise.
   */
  private rebase(d: number): void {
    this.target = clamp(this.target - d, this.minDelay, this.maxDelay);
    this.shiftMs -= d;
    const k = Math.trunc(this.shiftMs / this.binMs);
    if (k === 0) return;
    this.shiftMs -= k * this.binMs;
    const h = this.hist;
    if (k > 0) {
      for (let b = BINS - 1; b >= 0; b--) {
        if (b + k >= BINS) h[BINS] = h[BINS]! + h[b]!;
        else h[b + k] = h[b]!;
        h[b] = 0;
      }
    } else {
      let low = 0;
      for (let b = 0; b < BINS; b++) {
        if (b + k < 0) low += h[b]!;
        else h[b + k] = h[b]!;
        h[b] = 0;
      }
      h[0] = h[0]! + low;
    }
  }
}

/**
 * One entity's recent samples, and what it last showed. Bounded: `capacity` samples (the oldest goes
 * when a newer one comes). Memory: one Float64Array of capacity × (slots + 1) + 2 × slots numbers and
 * the object; nothing is allocated after construction. Sampling costs a backwards search from the
 * newest sample (a few steps at the usual delay) and one pass over the slots.
 */
export class Track {
  /** Value slots per sample. */
  readonly slots: number;
  /** Samples kept. */
  readonly capacity: number;
  /** Ticks at [0, capacity), values at V + j × slots, what was shown at SH, the blend's correction at CO. */
  private readonly buf: Float64Array;
  private readonly V: number;
  private readonly SH: number;
  private readonly CO: number;
  private head = 0;
  private n = 0;
  private shownTick = -Infinity;
  private shownNext = Infinity;
  private hasShown = false;
  private blendPending = false;
  private blendStart = 0;
  private blendEnd = -Infinity;
  private next = Infinity;
  private readonly minBlend: number;

  /**
   * `Playback.track(slots)` makes one sized for its playback.
   * @param slots numbers per sample (an integer 1..1024).
   * @param capacity samples kept (an integer 2..4096); default 32 (a 500 ms delay at up to 50 Hz).
   * @param minBlendTicks shortest blend after a stall or a late sample (ticks, ≥ 0); default 2.
   * @throws GamewireError `invalid-argument` for a value out of range.
   */
  constructor(slots: number, capacity = 32, minBlendTicks = 2) {
    checkArg(isInt(slots, 1, 1024), 'slots must be an integer in 1..1024');
    checkArg(isInt(capacity, 2, 4096), 'capacity must be an integer in 2..4096');
    checkArg(isNum(minBlendTicks, 0, 1e6), 'minBlendTicks must be a finite number ≥ 0');
    this.slots = slots;
    this.capacity = capacity;
    this.minBlend = minBlendTicks;
    this.V = capacity;
    this.SH = capacity * (slots + 1);
    this.CO = this.SH + slots;
    this.buf = new Float64Array(this.CO + slots);
  }

  /** Samples held now. */
  get size(): number {
    return this.n;
  }

  /** Newest sample's tick; −1 when empty. */
  get lastTick(): number {
    return this.n === 0 ? -1 : this.buf[this.at(this.n - 1)]!;
  }

  /**
   * The entity's values at server tick `tick` (copied from `values[0..slots)`). Any order; a duplicate
   * tick replaces; a tick older than the oldest kept is ignored when the track is full.
   *
   * `restUntil` (optional): a tick between the newest sample and `tick` through which the entity is
   * known to have kept the newest sample's values (for an entity sent only when it changes: the
   * baseline the snapshot was encoded against). The track then holds until that tick and moves only
   * after it, instead of interpolating across the whole quiet stretch.
   *
   * A sample that changes what the track would show at the tick it last showed makes the next
   * `sample` calls blend from what was shown to the new values, so nothing pops.
   * @throws GamewireError `invalid-argument` when `tick` is not an integer or `values` has too few numbers.
   */
  push(tick: number, values: ArrayLike<number>, restUntil?: number): void {
    checkArg(Number.isInteger(tick), 'tick must be an integer');
    checkArg(values.length >= this.slots, 'values must hold `slots` numbers');
    const S = this.slots;
    if (this.n > 0 && tick > this.lastTick) {
      if (restUntil !== undefined && restUntil > this.lastTick && restUntil < tick && Number.isInteger(restUntil)) {
        const from = this.V + this.at(this.n - 1) * S;
        const dst = this.V + this.append(restUntil) * S;
        this.buf.copyWithin(dst, from, from + S);
      }
      this.write(this.append(tick), values);
    } else if (this.n === 0) {
      this.write(this.append(tick), values);
    } else {
      let i = this.n - 1;
      while (i >= 0 && this.buf[this.at(i)]! > tick) i--;
      if (i >= 0 && this.buf[this.at(i)] === tick) {
        this.write(this.at(i), values);
      } else if (this.n === this.capacity) {
        if (i < 0) return;
        this.head = this.at(1);
        this.n--;
        this.insertAfter(i - 1, tick, values);
      } else {
        this.insertAfter(i, tick, values);
      }
    }
    if (this.hasShown && tick <= this.shownNext) this.blendPending = true;
  }

  /** Forget every sample and what was shown (an entity id reused for a new entity). */
  clear(): void {
    this.head = 0;
    this.n = 0;
    this.hasShown = false;
    this.blendPending = false;
    this.blendEnd = -Infinity;
    this.shownTick = -Infinity;
    this.shownNext = Infinity;
  }

  /**
   * Writes the entity's values at render time `renderTick` into `out[0..slots)`. Call once per frame
   * with `Playback.advance`'s result.
   *
   * `knownTick`: the newest tick at which the entity's state is known (for an entity the server sends
   * whenever it changes: `Playback.newestTick`; when the server may leave a changed entity out, the
   * tick of its last sample). Between the last sample and `knownTick` the entity is known unchanged
   * and holds; past `knownTick` it extrapolates from its last two samples (at rest if the last sample
   * is older than `knownTick`) for at most `maxExtrapolationTicks`, then holds there.
   *
   * After a stall or a late sample the output continues from what this track last showed: the
   * difference from the new values shrinks linearly to nothing by the next sample's tick, and over at
   * least `minBlendTicks`, so nothing pops. `kinds[i]` says how slot `i` moves (missing: `'linear'`).
   */
  sample(renderTick: number, knownTick: number, kinds: readonly SlotKind[], maxExtrapolationTicks: number, out: Float64Array): SampleOutcome {
    checkArg(renderTick === renderTick, 'renderTick must be a number or -Infinity');
    if (this.n === 0) return 'empty';
    const r = renderTick;
    const outcome = this.estimate(r, knownTick, kinds, maxExtrapolationTicks, out, 0);
    const next = this.next;
    const S = this.slots;
    const buf = this.buf;
    if (this.hasShown && r >= this.shownTick) {
      if (this.blendPending) {
        this.blendPending = false;
        this.estimate(this.shownTick, knownTick, kinds, maxExtrapolationTicks, buf, this.CO);
        correction(buf, this.SH, this.CO, kinds, S);
        this.blendStart = this.shownTick;
        this.blendEnd = Math.max(next === Infinity ? -Infinity : next, this.shownTick + this.minBlend);
      }
      if (r < this.blendEnd) {
        applyCorrection(buf, this.CO, 1 - (r - this.blendStart) / (this.blendEnd - this.blendStart), kinds, S, out);
      } else {
        this.blendEnd = -Infinity;
      }
    } else {
      this.blendPending = false;
      this.blendEnd = -Infinity;
    }
    for (let k = 0; k < S; k++) buf[this.SH + k] = out[k]!;
    this.hasShown = r > -Infinity;
    this.shownTick = r;
    this.shownNext = next;
    return outcome;
  }

  /**
   * The values at `r` from the samples alone into `out` from `o`; sets `next` to the tick of the first
   * sample after `r` (Infinity if none).
   */
  private estimate(r: number, knownTick: number, kinds: readonly SlotKind[], maxExtrapolationTicks: number, out: Float64Array, o: number): SampleOutcome {
    const n = this.n;
    const ticks = this.buf;
    const V = this.V;
    const S = this.slots;
    let i = n - 1;
    while (i >= 0 && ticks[this.at(i)]! > r) i--;
    if (i < 0) {
      this.copyOut(this.at(0), out, o);
      this.next = ticks[this.at(0)]!;
      return 'early';
    }
    if (i < n - 1) {
      const a = this.at(i);
      const b = this.at(i + 1);
      const ta = ticks[a]!;
      const tb = ticks[b]!;
      this.next = tb;
      blendSlots(ticks, V + a * S, ticks, V + b * S, (r - ta) / (tb - ta), kinds, out, o, S);
      return 'interpolated';
    }
    this.next = Infinity;
    const last = this.at(n - 1);
    const tl = ticks[last]!;
    const known = knownTick > tl ? knownTick : tl;
    if (r <= known) {
      this.copyOut(last, out, o);
      return 'interpolated';
    }
    const lim = maxExtrapolationTicks > 0 ? maxExtrapolationTicks : 0;
    if (n >= 2 && tl === known) {
      const p = this.at(n - 2);
      const tp = ticks[p]!;
      blendSlots(ticks, V + p * S, ticks, V + last * S, 1 + (Math.min(r, known + lim) - tl) / (tl - tp), kinds, out, o, S);
    } else {
      this.copyOut(last, out, o);
    }
    return r - known <= lim ? 'extrapolated' : 'held';
  }

  private at(i: number): number {
    const j = this.head + i;
    return j >= this.capacity ? j - this.capacity : j;
  }

  private append(tick: number): number {
    if (this.n === this.capacity) {
      this.head = this.at(1);
      this.n--;
    }
    const j = this.at(this.n);
    this.buf[j] = tick;
    this.n++;
    return j;
  }

  private insertAfter(i: number, tick: number, values: ArrayLike<number>): void {
    const S = this.slots;
    for (let k = this.n; k > i + 1; k--) {
      const dst = this.at(k);
      const src = this.at(k - 1);
      this.buf[dst] = this.buf[src]!;
      this.buf.copyWithin(this.V + dst * S, this.V + src * S, this.V + src * S + S);
    }
    const j = this.at(i + 1);
    this.buf[j] = tick;
    this.n++;
    this.write(j, values);
  }

  private write(j: number, values: ArrayLike<number>): void {
    const S = this.slots;
    const from = this.V + j * S;
    for (let k = 0; k < S; k++) this.buf[from + k] = values[k]!;
  }

  private copyOut(j: number, out: Float64Array, o: number): void {
    const S = this.slots;
    const from = this.V + j * S;
    for (let k = 0; k < S; k++) out[o + k] = this.buf[from + k]!;
  }
}


/**
 * In place: the estimate at the tick last shown (`buf` from `co`) becomes the correction from it to
 * what was shown (`buf` from `sh`), slot by slot: a difference (angles the short way), for a
 * quaternion the rotation c with shown = c ⊗ estimate, on the shorter arc; step slots get none.
 */
function correction(buf: Float64Array, sh: number, co: number, kinds: readonly SlotKind[], S: number): void {
  for (let k = 0; k < S; k++) {
    const kind = kinds[k];
    if (kind === undefined || kind === 'linear') {
      buf[co + k] = buf[sh + k]! - buf[co + k]!;
    } else if (kind === 'angle') {
      buf[co + k] = angleDelta(buf[co + k]!, buf[sh + k]!);
    } else if (kind === 'quat' && k + 3 < S) {
      const sx = buf[sh + k]!, sy = buf[sh + k + 1]!, sz = buf[sh + k + 2]!, sw = buf[sh + k + 3]!;
      const ex = -buf[co + k]!, ey = -buf[co + k + 1]!, ez = -buf[co + k + 2]!, ew = buf[co + k + 3]!;
      let x = sw * ex + sx * ew + sy * ez - sz * ey;
      let y = sw * ey - sx * ez + sy * ew + sz * ex;
      let z = sw * ez + sx * ey - sy * ex + sz * ew;
      let w = sw * ew - sx * ex - sy * ey - sz * ez;
      if (w < 0) {
        x = -x;
        y = -y;
        z = -z;
        w = -w;
      }
      buf[co + k] = x;
      buf[co + k + 1] = y;
      buf[co + k + 2] = z;
      buf[co + k + 3] = w;
      k += 3;
    } else {
      buf[co + k] = 0;
    }
  }
}

/** out ⊕= the fraction `f` (0..1) of the correction `c`, slot by slot (see `correction`). */
function applyCorrection(c: Float64Array, co: number, f: number, kinds: readonly SlotKind[], S: number, out: Float64Array): void {
  for (let k = 0; k < S; k++) {
    const kind = kinds[k];
    if (kind === undefined || kind === 'linear' || kind === 'angle') {
      out[k] = out[k]! + c[co + k]! * f;
    } else if (kind === 'quat' && k + 3 < S) {
      // Part of the rotation: nlerp from identity to c by f, applied before out.
      let ax = c[co + k]! * f, ay = c[co + k + 1]! * f, az = c[co + k + 2]! * f, aw = 1 + (c[co + k + 3]! - 1) * f;
      const len = Math.sqrt(ax * ax + ay * ay + az * az + aw * aw);
      ax /= len;
      ay /= len;
      az /= len;
      aw /= len;
      const bx = out[k]!, by = out[k + 1]!, bz = out[k + 2]!, bw = out[k + 3]!;
      out[k] = aw * bx + ax * bw + ay * bz - az * by;
      out[k + 1] = aw * by - ax * bz + ay * bw + az * bx;
      out[k + 2] = aw * bz + ax * by - ay * bx + az * bw;
      out[k + 3] = aw * bw - ax * bx - ay * by - az * bz;
      k += 3;
    }
  }
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}
