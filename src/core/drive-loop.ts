import { deferStuck } from './deadline-heap.js';
import type { Address, Endpoint } from './endpoint.js';
import { checkConfig, isInt, isNum, isObject } from './config.js';

/**
 * What a platform gives a {@link DriveLoop}: a clock, a datagram sink, one timer and a way to run a
 * task after the current one. The loop never reads a clock or sets a timer by itself, so it runs the
 * same on Node UDP, in a browser and on a virtual clock in tests.
 */
export interface DrivePlatform<T = unknown> {
  /** Monotonic clock, ms (any origin; fractions allowed). */
  now(): number;
  /**
   * Send the first `length` bytes of `bytes` to `to`. `bytes` is the buffer last returned by
   * `buffer()` (or the loop's own scratch buffer when the platform has no `buffer`): the loop writes
   * the next datagram into a fresh `buffer()` answer, so a platform that sends asynchronously must
   * hand out another buffer until this one is free.
   */
  send(bytes: Uint8Array, length: number, to: Address): void;
  /** Call `fire` once after `delayMs` (ms, ≥ 1). Returns a handle for `clearTimer`. */
  setTimer(delayMs: number, fire: () => void): T;
  /** Cancel a timer from `setTimer` that has not fired. */
  clearTimer(timer: T): void;
  /**
   * Run `task` once, after the current task and after input that is already waiting (Node:
   * `setImmediate`, which runs after the poll phase has read the sockets).
   */
  defer(task: () => void): void;
  /**
   * Optional: the buffer the next datagram is written into (its length is the largest datagram the
   * platform sends), or `undefined` when none is free; the loop then stops sending until `wake()`.
   * Asking twice without a `send` in between must return the same buffer.
   */
  buffer?(): Uint8Array | undefined;
}

/** Options of a {@link DriveLoop}. */
export interface DriveLoopOptions<E> {
  /** Receives every event polled from the endpoint, in order. May issue commands and call `close`. */
  onEvent: (event: E) => void;
  /**
   * Receives what `onEvent` threw, with the event it was handling; the loop has caught it and goes
   * on (the next events, transmits, the timer). Without it, the drain still completes and then
   * rethrows the error to its caller (an `AggregateError` when several handlers threw), as if
   * `onEvent` had thrown after the drain. Each is counted (`handlerErrors`) either way.
   */
  onError?: (error: unknown, event: E) => void;
  /** Size of the scratch buffer used when the platform has no `buffer()`, bytes (default 1472). */
  maxDatagramBytes?: number;
  /**
   * Most datagrams sent per drain (default 256); the rest go out in a deferred drain, after input that
   * arrived meanwhile (acks) has been fed.
   */
  maxTransmitsPerTurn?: number;
  /** Resolution of the platform's timer, ms (default 1): the shortest delay asked for, and the re-arm slack. */
  timerResolutionMs?: number;
}

/**
 * How {@link DriveLoop.close} lingers. Times in ms. The remote counts as quiet once no datagram
 * arrived for `quietMs` AND for 2.5 times the gap between its last two datagrams: a remote that
 * backs off exponentially resends within about twice its last gap, so a long gap does not end the
 * linger early.
 */
export interface LingerOptions {
  /** Shortest quiet time that ends the linger (default 1000). */
  quietMs?: number;
  /** …but at most this long after `close` (default 10 000). */
  maxMs?: number;
}

/** `'running'`, `'lingering'` (closing, still answering) or `'closed'`. */
export type DriveLoopState = 'running' | 'lingering' | 'closed';

// The linger's quiet time is at least this many times the remote's last inter-datagram gap.
const LINGER_GAP_FACTOR = 2.5;

// After timers and transmits, a deadline already due (a command issued from an event handler) is
// served again in the same drain, this many times at most; then the timer takes over, one timer
// resolution on (the stuck-deadline rule, `deferStuck`).
const MAX_ROUNDS = 8;

/**
 * The one loop that drives any {@link Endpoint} on any platform. A drain runs due timeouts,
 * transmits every datagram due (up to `maxTransmitsPerTurn`), delivers every event, then re-arms
 * ONE timer at `pollTimeout()`. Datagrams are fed to the endpoint as they arrive
 * (`handleDatagram`) and drained once per turn through `defer`, so a burst is answered with one
 * drain (a receiver acks the batch). Commands wake it: `wake()`, or the endpoint's `setWaker` hook.
 */
export class DriveLoop<E = unknown, T = unknown> {
  /** @internal read with `counters()`. */
  timerWakeups = 0;
  /** @internal read with `counters()`. */
  handlerErrors = 0;

  private readonly endpoint: Endpoint<E>;
  private readonly platform: DrivePlatform<T>;
  private readonly onEvent: (event: E) => void;
  private readonly onError: ((error: unknown, event: E) => void) | undefined;
  // Handler errors of the running drain, without `onError`: rethrown once it is done.
  private readonly thrown: unknown[] = [];
  private readonly scratch: Uint8Array | undefined;
  private readonly maxPerTurn: number;
  private readonly resolution: number;
  private timer: T | undefined;
  private timerAt = Infinity;
  private deferred = false;
  private draining = false;
  private again = false;
  private starved = false;
  private state_: DriveLoopState = 'running';
  private stopAfterDrain = false;
  private lingerStart = 0;
  private lingerQuiet = 0;
  private lingerMax = 0;
  private lastIn = -Infinity;
  private prevIn = -Infinity;
  private readonly closers: (() => void)[] = [];
  private readonly onTimerBound = (): void => {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.state_ === 'closed') return;
    this.timerWakeups++;
    this.drain();
  };
  private readonly onDeferredBound = (): void => {
    this.deferred = false;
    if (this.state_ !== 'closed') this.drain();
  };

  /**
   * @param endpoint the sans-IO object to drive (a `SansIoPeer` through `PeerEndpoint`)
   * @param platform clock, datagram sink, timer and deferral of the platform
   * @param options event sink and limits
   */
  constructor(endpoint: Endpoint<E>, platform: DrivePlatform<T>, options: DriveLoopOptions<E>) {
    const maxDatagram = options.maxDatagramBytes ?? 1472;
    const perTurn = options.maxTransmitsPerTurn ?? 256;
    const resolution = options.timerResolutionMs ?? 1;
    checkConfig(isInt(maxDatagram, 1), 'maxDatagramBytes must be a positive integer');
    checkConfig(isInt(perTurn, 1), 'maxTransmitsPerTurn must be a positive integer');
    checkConfig(isNum(resolution, Number.MIN_VALUE), 'timerResolutionMs must be > 0');
    this.endpoint = endpoint;
    this.platform = platform;
    this.onEvent = options.onEvent;
    this.onError = options.onError;
    this.scratch = platform.buffer === undefined ? new Uint8Array(maxDatagram) : undefined;
    this.maxPerTurn = perTurn;
    this.resolution = resolution;
    endpoint.setWaker?.(() => this.wake());
  }

  /** `'running'`, `'lingering'` or `'closed'`. */
  get state(): DriveLoopState {
    return this.state_;
  }

  /** Platform clock at the last datagram fed, ms (`-Infinity` if none). */
  get lastDatagramAt(): number {
    return this.lastIn;
  }

  /** A copy of the counters: `timerWakeups`, times the one timer fired; `handlerErrors`, exceptions thrown by `onEvent`. */
  counters(): { timerWakeups: number; handlerErrors: number } {
    return { timerWakeups: this.timerWakeups, handlerErrors: this.handlerErrors };
  }

  /**
   * Feed one datagram that arrived from `from` now; the drain follows once per turn. `bytes` is only
   * read during the call. Ignored once closed.
   */
  handleDatagram(from: Address, bytes: Uint8Array): void {
    if (this.state_ === 'closed') return;
    const now = this.platform.now();
    this.prevIn = this.lastIn;
    this.lastIn = now;
    this.endpoint.handleDatagram(now, from, bytes);
    this.wake();
  }

  /** Schedule one drain after the current task (coalesced); inside a drain, run one more pass. */
  wake(): void {
    if (this.state_ === 'closed') return;
    if (this.draining) {
      this.again = true;
      return;
    }
    if (this.deferred) return;
    this.deferred = true;
    this.platform.defer(this.onDeferredBound);
  }

  /**
   * Drain now: run due timeouts, send what is due, deliver events, re-arm the timer. Inside an event
   * handler it only asks the running drain for one more pass. No-op once closed.
   */
  drain(): void {
    if (this.state_ === 'closed') return;
    if (this.draining) {
      this.again = true;
      return;
    }
    this.draining = true;
    let now = this.platform.now();
    try {
      let sent = 0;
      for (let round = 0; ; round++) {
        this.again = false;
        now = this.platform.now();
        if (this.state_ === 'lingering' && now >= this.lingerDeadline()) this.stopAfterDrain = true;
        const final = this.stopAfterDrain;
        const due = this.endpoint.pollTimeout();
        if (due !== undefined && due <= now) this.endpoint.handleTimeout(now);
        const budget = this.maxPerTurn - sent;
        const n = this.transmit(now, budget);
        sent += n;
        this.deliverEvents();
        if (this.starved) break; // the platform wakes us when a buffer is free
        if (n === budget) {
          // The turn's budget is spent: continue after pending input (acks) has been fed.
          this.deferDrain();
          break;
        }
        if (final || round >= MAX_ROUNDS) break;
        if (this.again || this.stopAfterDrain) continue;
        const next = this.endpoint.pollTimeout();
        if (next === undefined || next > now) break;
      }
    } finally {
      this.draining = false;
      if (this.stopAfterDrain) this.stop();
      else this.arm(now);
    }
    if (this.thrown.length > 0) {
      const errors = this.thrown.splice(0);
      throw errors.length === 1 ? errors[0] : new AggregateError(errors, `${errors.length} event handlers threw`);
    }
  }

  /**
   * Close. Without `linger`: one last drain (what is due leaves, queued events are delivered), then
   * stop; inside an event handler, at the end of the running drain. With `linger`: keep running —
   * receiving, answering, delivering events — until the remote is quiet (see {@link LingerOptions}),
   * at most `maxMs`, so it gets the acks it still needs; then stop. Resolves once stopped; the
   * endpoint's waker is removed and the timer cleared. Calling it again returns the same outcome
   * (a second call without linger ends a linger at once).
   */
  close(linger?: LingerOptions | boolean): Promise<void> {
    if (this.state_ === 'closed') return Promise.resolve();
    const o = linger === undefined || linger === false ? undefined : linger === true ? {} : linger;
    checkConfig(o === undefined || isObject(o), 'linger must be a boolean or { quietMs, maxMs }');
    const quiet = o?.quietMs ?? 1000;
    const max = o?.maxMs ?? 10_000;
    checkConfig(isNum(quiet, 0) && isNum(max, 0), 'linger quietMs and maxMs must be finite and ≥ 0');
    const done = new Promise<void>((resolve) => this.closers.push(resolve));
    if (o !== undefined && this.state_ === 'running') {
      this.state_ = 'lingering';
      this.lingerStart = this.platform.now();
      this.lingerQuiet = quiet;
      this.lingerMax = max;
      this.drain();
      return done;
    }
    if (linger === undefined || linger === false) this.stopAfterDrain = true;
    this.drain();
    return done;
  }

  /** When a linger ends: quiet since the last datagram (or since `close`), capped by `maxMs`. */
  private lingerDeadline(): number {
    const gap = this.lastIn - this.prevIn; // NaN/Infinity until two datagrams: then the floor alone
    const quiet = Number.isFinite(gap) ? Math.max(this.lingerQuiet, LINGER_GAP_FACTOR * gap) : this.lingerQuiet;
    const quietEnd = Math.max(this.lastIn, this.lingerStart) + quiet;
    return Math.min(quietEnd, this.lingerStart + this.lingerMax);
  }

  private stop(): void {
    this.state_ = 'closed';
    this.stopAfterDrain = false;
    this.clearTimer();
    this.endpoint.setWaker?.(undefined);
    for (const resolve of this.closers.splice(0)) resolve();
  }

  /** Returns how many datagrams were sent; sets `starved` when the platform has no free buffer. */
  private transmit(now: number, budget: number): number {
    const p = this.platform;
    this.starved = false;
    let sent = 0;
    while (sent < budget) {
      const buf = this.scratch ?? p.buffer!();
      if (buf === undefined) {
        this.starved = true;
        break;
      }
      const t = this.endpoint.pollTransmit(now, buf);
      if (t === undefined) break;
      p.send(buf, t.length, t.to);
      sent++;
    }
    return sent;
  }

  private deliverEvents(): void {
    for (let ev = this.endpoint.pollEvent(); ev !== undefined; ev = this.endpoint.pollEvent()) {
      try {
        this.onEvent(ev);
      } catch (err) {
        this.handlerErrors++;
        if (this.onError === undefined) this.thrown.push(err);
        else this.onError(err, ev);
      }
      if (this.state_ === 'closed') return;
    }
  }

  private deferDrain(): void {
    if (this.deferred || this.state_ === 'closed') return;
    this.deferred = true;
    this.platform.defer(this.onDeferredBound);
  }

  /**
   * The re-arm rule. One timer, aimed at the earliest of the endpoint's deadline and the linger's
   * end. An armed timer is kept when it fires no later than one timer resolution after the new
   * deadline: waking early is harmless (the drain re-arms), while re-arming on every datagram — a
   * pacing sender moves its deadline by fractions of a ms each time — costs a clear and a set for
   * nothing, since the timer cannot fire more precisely than its resolution anyway. No deadline
   * clears the timer, so no stray wake-up is left armed. The delay is rounded up to whole resolutions; a deadline at or
   * before `now` is one resolution on (`deferStuck`), so it cannot spin.
   */
  private arm(now: number): void {
    let due = this.endpoint.pollTimeout();
    if (this.state_ === 'lingering') {
      const l = this.lingerDeadline();
      if (due === undefined || l < due) due = l;
    }
    if (due === undefined) {
      this.clearTimer();
      return;
    }
    if (this.timer !== undefined && this.timerAt - this.resolution <= due) return;
    this.clearTimer();
    const r = this.resolution;
    const delay = deferStuck(due, now, r) > due ? r : Math.max(r, Math.ceil((due - now) / r) * r);
    this.timerAt = now + delay;
    this.timer = this.platform.setTimer(delay, this.onTimerBound);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.platform.clearTimer(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
  }
}
