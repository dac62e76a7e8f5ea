import { checkConfig } from '../core/errors.js';

/** Budget shortfall (bytes) still treated as covered, so float rounding never leaves a due send stuck. */
const EPSILON_BYTES = 1e-6;

/**
 * The seed's byte-budget accumulator: `refill(now, rate)` adds `rate × dt`, a datagram may go when
 * the budget covers it, `spend` takes it out. The budget starts full and is capped at
 * `max(rate × burstMs, minCapBytes)`, so an idle sender cannot save up a flood; `readyAt` says when
 * a given size will be covered.
 */
export class PacingBudget {
  /** Cap on the saved budget, in ms of the current rate. */
  readonly burstMs: number;
  private floor: number;
  private bytes = 0;
  private last: number | undefined;
  private rate = 0;

  /**
   * @param burstMs cap on the saved budget, ms of the current rate (≥ 0); default 10.
   * @param minCapBytes floor of the cap, bytes (> 0); default 2400 (two 1200-byte datagrams).
   */
  constructor(burstMs = 10, minCapBytes = 2400) {
    checkConfig(Number.isFinite(burstMs) && burstMs >= 0, 'burstMs must be a finite number ≥ 0');
    checkConfig(Number.isFinite(minCapBytes) && minCapBytes > 0, 'minCapBytes must be a finite number > 0');
    this.burstMs = burstMs;
    this.floor = minCapBytes;
  }

  /** The cap never goes below this many bytes (so the largest datagram can always be covered). */
  get minCapBytes(): number {
    return this.floor;
  }

  /**
   * Make sure a datagram of `n` bytes can always be covered: raise the cap's floor to `2 × n` if it
   * is lower (a path shared by lanes that send datagrams of different sizes). Never lowers it.
   */
  fit(n: number): void {
    if (Number.isFinite(n) && 2 * n > this.floor) this.floor = 2 * n;
  }

  /** Add `rateBytesPerSec × (now − previous refill)` (time going backwards adds nothing), then cap. */
  refill(now: number, rateBytesPerSec: number): void {
    const rate = Number.isFinite(rateBytesPerSec) && rateBytesPerSec > 0 ? rateBytesPerSec : 0;
    const cap = Math.max((rate * this.burstMs) / 1000, this.floor);
    if (this.last === undefined) this.bytes = cap;
    else if (now > this.last) this.bytes += (this.rate * (now - this.last)) / 1000;
    if (this.last === undefined || now > this.last) this.last = now;
    this.rate = rate;
    if (this.bytes > cap) this.bytes = cap;
  }

  /** Bytes currently available (may be fractional). */
  get available(): number {
    return this.bytes;
  }

  /** The rate (bytes/s) given at the last refill. */
  get rateBytesPerSec(): number {
    return this.rate;
  }

  /** True when the budget covers `n` bytes. */
  covers(n: number): boolean {
    return this.bytes + EPSILON_BYTES >= n;
  }

  /** Take `n` bytes out (the budget never goes below zero). */
  spend(n: number): void {
    this.bytes = this.bytes > n ? this.bytes - n : 0;
  }

  /** Drop whatever was saved (after an unpaced burst, so the burst is not followed by a second one). */
  clear(): void {
    this.bytes = 0;
  }

  /**
   * Absolute time (ms) at which `n` bytes will be covered at the last refill's rate: the last
   * refill time if already covered, `undefined` before any refill or while the rate is 0.
   */
  readyAt(n: number): number | undefined {
    if (this.last === undefined) return undefined;
    if (this.covers(n)) return this.last;
    if (this.rate <= 0) return undefined;
    return this.last + ((n - this.bytes) * 1000) / this.rate;
  }
}
