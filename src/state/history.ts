import { checkConfig, checkKnownKeys, isInt, isNum, isObject } from '../core/config.js';
import { GamewireError, checkArg } from '../core/errors.js';
import { type SlotKind, blendSlots, checkKinds } from './lerp.js';

/** Options of a {@link StateHistory}. */
export interface HistoryOptions {
  /** Value slots per entity (the schema's layout), 1..65536. */
  slots: number;
  /** The server's tick interval (ms), e.g. 50 at 20 Hz. */
  tickMs: number;
  /** How far back states are kept (ms), 1..60000; default 1000 (Source's lag-compensation history). */
  historyMs?: number;
  /** Entity slots, indexed 0..maxEntities−1 (1..2^20). Memory is allocated for all of them at construction. */
  maxEntities: number;
}

const OPTION_KEYS: ReadonlySet<string> = new Set(['slots', 'tickMs', 'historyMs', 'maxEntities']);
/** Upper bound on stored values (8 bytes each): 256 MiB. */
const MAX_VALUES = 2 ** 25;

/**
 * The server's lag-compensation history: per entity slot, its state at each of the last `frames` server ticks
 * (`ceil(historyMs / tickMs) + 1`, so a full `historyMs` can be interpolated). One ring of `frames` entries per
 * entity, all in two typed arrays allocated at construction: `maxEntities × frames × (slots + 1) × 8` bytes, nothing
 * allocated after. Sans-IO: ticks are given, no clock is read.
 */
export class StateHistory {
  /** Ticks kept per entity. */
  readonly frames: number;
  private readonly slots: number;
  private readonly maxEntities: number;
  private readonly values: Float64Array;
  /** The tick stored in each ring entry; −1 when empty. */
  private readonly ticks: Float64Array;
  private newest = -1;
  private checkedKinds: readonly SlotKind[] | undefined;

  /** @throws GamewireError `invalid-config` on bad options or more than 2^25 values (256 MiB) in all. */
  constructor(options: HistoryOptions) {
    checkConfig(isObject(options), 'history options must be an object');
    checkKnownKeys(options, OPTION_KEYS, (k) => `unknown history option '${k}'`);
    const { slots, tickMs, maxEntities } = options;
    const historyMs = options.historyMs ?? 1000;
    checkConfig(isInt(slots, 1, 65_536), 'slots must be an integer in 1..65536');
    checkConfig(isNum(tickMs) && tickMs > 0 && tickMs <= 60_000, 'tickMs must be a number in (0, 60000]');
    checkConfig(isNum(historyMs, 1, 60_000), 'historyMs must be a number in 1..60000');
    checkConfig(isInt(maxEntities, 1, 2 ** 20), 'maxEntities must be an integer in 1..2^20');
    const frames = Math.ceil(historyMs / tickMs) + 1;
    checkConfig(maxEntities * frames * slots <= MAX_VALUES,
      `maxEntities × frames (${frames}) × slots must be at most 2^25 values (256 MiB)`);
    this.frames = frames;
    this.slots = slots;
    this.maxEntities = maxEntities;
    this.values = new Float64Array(maxEntities * frames * slots);
    this.ticks = new Float64Array(maxEntities * frames).fill(-1);
  }

  /** The newest tick recorded for any entity; −1 before the first. */
  get newestTick(): number {
    return this.newest;
  }

  /** The oldest tick {@link sample} can reach (`newestTick − frames + 1`, at least 0); −1 before the first record. */
  get oldestTick(): number {
    return this.newest < 0 ? -1 : Math.max(0, this.newest - this.frames + 1);
  }

  /** Bytes held by the history (its two typed arrays); fixed at construction. */
  get bytes(): number {
    return this.values.byteLength + this.ticks.byteLength;
  }

  /**
   * Store `entity`'s state at server `tick`: `values[offset..offset+slots)`, copied. Call once per tick per live entity
   * (an entity not recorded at a tick has no state there: {@link sample} returns false across the gap); recording a
   * tick again replaces it.
   * @throws GamewireError `invalid-argument` for an entity out of range, a tick that is not a safe integer ≥ 0 or is
   * older than the kept range, or too few values.
   */
  record(tick: number, entity: number, values: ArrayLike<number>, offset = 0): void {
    this.checkEntity(entity);
    checkArg(Number.isSafeInteger(tick) && tick >= 0, 'tick must be a safe integer ≥ 0');
    if (tick <= this.newest - this.frames) throw new GamewireError('invalid-argument', `tick ${tick} is older than the kept history`);
    if (!isInt(offset, 0) || offset + this.slots > values.length) {
      throw new GamewireError('invalid-argument', `values must hold ${this.slots} values from offset`);
    }
    const frame = entity * this.frames + (tick % this.frames);
    this.ticks[frame] = tick;
    const at = frame * this.slots;
    for (let i = 0; i < this.slots; i++) this.values[at + i] = values[offset + i];
    if (tick > this.newest) this.newest = tick;
  }

  /**
   * Drop everything recorded for `entity`. Call it when the slot is given to a new entity, so the new one never
   * returns the old one's past; until then the past of a destroyed entity stays sampleable (a shot at what a client
   * still saw can hit it).
   * @throws GamewireError `invalid-argument` for an entity out of range.
   */
  forget(entity: number): void {
    this.checkEntity(entity);
    this.ticks.fill(-1, entity * this.frames, (entity + 1) * this.frames);
  }

  /**
   * `entity`'s state at fractional server tick `at`, into `out[0..slots)`: exactly the recorded values at a whole tick;
   * between two recorded ticks, blended slot by slot by `kinds` with the same maths as the client's interpolation
   * ({@link blendSlots}). Returns false (and leaves `out` alone) when `at` is not finite or outside
   * `oldestTick..newestTick`, or the entity has no record at the ticks around `at`.
   * @throws GamewireError `invalid-argument` for an entity out of range or an `out` shorter than `slots`;
   * `invalid-config` for `kinds` that do not fit the layout.
   */
  sample(entity: number, at: number, kinds: readonly SlotKind[], out: Float64Array): boolean {
    this.checkEntity(entity);
    if (out.length < this.slots) throw new GamewireError('invalid-argument', `out must have ${this.slots} values`);
    if (kinds !== this.checkedKinds) {
      checkKinds(kinds, this.slots);
      this.checkedKinds = kinds;
    }
    if (!(at >= 0) || this.newest < 0 || at > this.newest || at < this.newest - this.frames + 1) return false;
    const t0 = Math.floor(at);
    const f0 = entity * this.frames + (t0 % this.frames);
    if (this.ticks[f0] !== t0) return false;
    const a = f0 * this.slots;
    const t = at - t0;
    if (t === 0) {
      for (let i = 0; i < this.slots; i++) out[i] = this.values[a + i];
      return true;
    }
    const f1 = entity * this.frames + ((t0 + 1) % this.frames);
    if (this.ticks[f1] !== t0 + 1) return false;
    blendSlots(this.values, a, this.values, f1 * this.slots, t, kinds, out);
    return true;
  }

  private checkEntity(entity: number): void {
    if (!isInt(entity, 0, this.maxEntities - 1)) {
      throw new GamewireError('invalid-argument', `entity must be an integer in 0..${this.maxEntities - 1}`);
    }
  }
}

/**
 * The server tick (fractional) to rewind to for a client that reports rendering at `atTick`, at server tick `nowTick`:
 * never later than `nowTick` (no client sees the future) and never more than `maxRewindMs` before it (beyond that the
 * shooter leads the target, as Overwatch does past about 220 ms). A non-finite `atTick` (bad input from the network)
 * gives `nowTick`: no rewind. Pass `maxRewindMs` ≤ the history's `historyMs` so the result stays inside it.
 * @throws GamewireError `invalid-argument` if `tickMs` is not > 0 or `maxRewindMs` is not a finite number ≥ 0.
 */
export function clampRewind(atTick: number, nowTick: number, tickMs: number, maxRewindMs: number): number {
  checkArg(isNum(tickMs) && tickMs > 0, 'tickMs must be a finite number > 0');
  checkArg(isNum(maxRewindMs, 0), 'maxRewindMs must be a finite number ≥ 0');
  if (!Number.isFinite(atTick)) return nowTick;
  const oldest = nowTick - maxRewindMs / tickMs;
  return atTick < oldest ? oldest : atTick > nowTick ? nowTick : atTick;
}
