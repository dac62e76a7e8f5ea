import { checkArg } from './errors.js';

/**
 * A fixed set of named timers of one protocol object (quinn's `TimerTable`): one absolute deadline
 * (ms, on the caller's clock) per timer, indexed by a small integer the owner names (a constant
 * object of timer numbers). The owner reports `next()` as its `pollTimeout()`, and in
 * `handleTimeout(now)` asks which timers expired (`nextExpired`) instead of re-deriving the reason
 * from its fields. Sans-IO: it never reads a clock.
 *
 * The deadlines are a plain array of numbers, not a typed array: there is one table per connection,
 * and a `Float64Array` carries a buffer object a packed array of a few doubles does not.
 */
export class TimerTable {
  private readonly at: number[];

  /** @param count how many timers (numbered 0..count − 1; 1..32), all stopped */
  constructor(count: number) {
    checkArg(Number.isInteger(count) && count >= 1 && count <= 32, 'a timer table holds 1..32 timers');
    // Exactly `count` slots (pushing one by one would reserve room to grow).
    this.at = new Array<number>(count).fill(Infinity);
  }

  /** Arm `timer` to expire at `at` (ms), replacing its deadline. `Infinity` stops it. */
  set(timer: number, at: number): void {
    this.at[timer] = at;
  }

  /** Stop `timer`. */
  stop(timer: number): void {
    this.at[timer] = Infinity;
  }

  /** Stop every timer. */
  stopAll(): void {
    this.at.fill(Infinity);
  }

  /** The deadline of `timer` (ms), or `undefined` when it is stopped. */
  get(timer: number): number | undefined {
    const t = this.at[timer]!;
    return t === Infinity ? undefined : t;
  }

  /** True when `timer` is armed and its deadline is at or before `now` (ms). */
  expired(timer: number, now: number): boolean {
    return this.at[timer]! <= now && this.at[timer]! !== Infinity;
  }

  /** The earliest deadline of any armed timer (ms), or `undefined` when all are stopped. */
  next(): number | undefined {
    const at = this.at;
    let t = Infinity;
    for (let i = 0; i < at.length; i++) if (at[i]! < t) t = at[i]!;
    return t === Infinity ? undefined : t;
  }

  /**
   * The lowest-numbered timer above `after` and below `below` that has expired at `now` (ms), or −1:
   * `for (let t = table.nextExpired(now); t >= 0; t = table.nextExpired(now, t))` visits each
   * expired timer once, in number order (the caller stops or re-arms it).
   */
  nextExpired(now: number, after = -1, below: number = this.at.length): number {
    const at = this.at;
    for (let i = after + 1; i < below; i++) if (at[i]! <= now && at[i]! !== Infinity) return i;
    return -1;
  }
}
