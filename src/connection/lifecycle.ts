import { TimerTable } from '../core/timer-table.js';
import type { ConnectionStats, Lanes, WireCounts } from './session.js';

/**
 * The named timers of a connection, whatever its framing (numbers into its `TimerTable`).
 *
 * Action timers come first: when one expires, `handleTimeout` stops it and hands it to the framing
 * (`Framing.onTimer`), in this order, each at most once per call. Send timers follow: they say when
 * the framing's next packet of that kind is due, which its `write` checks (`timers.expired`), so a
 * wake-up for one does nothing but let the driver poll for output (as quinn's pacing timer).
 */
export const Timer = {
  /** Open: nothing valid heard from the remote for the idle timeout. */
  Idle: 0,
  /** Netcode client, handshaking: the connect token expires. */
  TokenExpiry: 1,
  /** Handshaking: give up (unsecured: `handshakeTimeoutMs`; netcode client: the token's timeout per request or response state). */
  Handshake: 2,
  /** Handshaking: the next handshake packet is due (CONNECT; netcode's request or response). */
  Resend: 3,
  /** Open, netcode: a keep-alive is due (100 ms after the last packet sent). */
  KeepAlive: 4,
} as const;

const ACTION_TIMERS = 3;
const TIMER_COUNT = 5;

/** Where a connection is: handshaking, open (its session carries the lanes), closed. */
export const Phase = { Handshake: 0, Open: 1, Closed: 2 } as const;

/**
 * One connection lifecycle, whatever the framing: the phase, the latest `now`, when the remote was
 * last heard and the idle timeout, the timer table, the redundant DISCONNECTs drained while closed,
 * the events (the framing's own first, then the session's messages, then the end events, so a
 * message that arrived before the end is always seen before it), the driver's waker, the rule
 * that a send after close is a counted drop, and the wire counts (`WireCounts`: every datagram
 * `transmit` gives out; every datagram the framing reports `accepted`). The framings extend it (the unsecured `Connection`,
 * netcode's `ServerClient` and `Client`): their handshakes and how a packet goes on the wire.
 *
 * Output is never signalled through a deadline: a driver polls for output after every input,
 * wake-up and command (the waker), and that is when a pending packet is written. Not exported from
 * the package: its framings are.
 */
export abstract class Lifecycle<E> {
  /** Latest `now` seen (ms). */
  protected now: number;
  /** When the remote was last heard from (ms). */
  protected heardAt: number;
  /** The connection's named timers (`Timer`). */
  protected readonly timers = new TimerTable(TIMER_COUNT);
  /** @internal The lanes, once the framing has made them (netcode: when connected; undefined in raw mode). */
  protected session: Lanes<E> | undefined = undefined;
  private phase_: number;
  private readonly copies: number;
  private idleMs: number;
  private disconnectsLeft = 0;
  private readonly events: E[] = [];
  // The end events (at most two), raised after the session's messages: fields, not an array per connection.
  private endFirst: E | undefined = undefined;
  private endSecond: E | undefined = undefined;
  private waker: (() => void) | undefined = undefined;
  private readonly wire: WireCounts = { datagramsSent: 0, bytesSent: 0, datagramsReceived: 0, bytesReceived: 0 };

  /**
   * @param copies DISCONNECT copies sent on a close that tells the peer (each unreliable; the
   *   peer's idle timeout covers all being lost)
   * @param idleMs idle timeout once open (ms; Infinity for none)
   * @param now the time (ms) it starts at
   * @param phase the `Phase` it starts in
   */
  protected constructor(copies: number, idleMs: number, now: number, phase: number) {
    this.copies = copies;
    this.idleMs = idleMs;
    this.now = this.heardAt = now;
    this.phase_ = phase;
  }

  /** Action timer `timer` (a `Timer`) expired at `now` (ms) and was stopped: end, or move the handshake on. */
  protected abstract onTimer(now: number, timer: number): void;

  /**
   * While not closed: write the next datagram (a handshake packet, a session body, a keep-alive)
   * into `out` and return its length, or `undefined` when nothing is due at `now` (ms).
   */
  protected abstract write(now: number, out: Uint8Array): number | undefined;

  /** Write one copy of the DISCONNECT into `out`; its length. */
  protected abstract writeDisconnect(out: Uint8Array): number;

  /** A send was refused because the connection had closed: count it. */
  protected abstract sentAfterClose(): void;

  /** Driver hook (`Endpoint.setWaker`). */
  setWaker(waker: (() => void) | undefined): void {
    this.waker = waker;
  }

  /** Run the timers due at `now` (ms): each expired action timer goes to the framing, then the session's. */
  handleTimeout(now: number): void {
    this.tick(now);
    if (this.phase_ === Phase.Closed) return;
    const timers = this.timers;
    for (let t = timers.nextExpired(now, -1, ACTION_TIMERS); t >= 0; t = timers.nextExpired(now, t, ACTION_TIMERS)) {
      timers.stop(t);
      this.onTimer(now, t);
      if (this.phase_ === Phase.Closed) return;
    }
    if (this.phase_ === Phase.Open) this.session?.handleTimeout(now);
  }

  /** When (ms) `handleTimeout` is next due: the earliest timer, and while open the session's deadline. */
  pollTimeout(): number | undefined {
    if (this.phase_ === Phase.Closed) return undefined;
    const t = this.timers.next();
    if (this.phase_ !== Phase.Open || this.session === undefined) return t;
    const s = this.session.pollTimeout();
    return s !== undefined && (t === undefined || s < t) ? s : t;
  }

  /** The next event: the framing's own, then the session's, then the end events. */
  pollEvent(): E | undefined {
    if (this.events.length > 0) return this.events.shift();
    const e = this.session?.pollEvent();
    if (e !== undefined) return e;
    const end = this.endFirst;
    this.endFirst = this.endSecond;
    this.endSecond = undefined;
    return end;
  }

  /** The current `Phase`. */
  protected get phase(): number {
    return this.phase_;
  }

  /** True once closed (locally, by the peer, a timeout or a failed handshake). */
  protected get ended(): boolean {
    return this.phase_ === Phase.Closed;
  }

  /** Move the latest `now` forward (ms). */
  protected tick(now: number): void {
    if (now > this.now) this.now = now;
  }

  /** The framing accepted a datagram of `length` bytes for this connection (counted in the wire counts). */
  protected accepted(length: number): void {
    this.wire.datagramsReceived++;
    this.wire.bytesReceived += length;
  }

  /** The session's figures at `now` (ms) with the wire counts; undefined without a session. */
  protected sessionStats(now: number): ConnectionStats | undefined {
    return this.session?.stats(now, this.wire);
  }

  /** The remote was heard at `now` (ms): while open, the idle timer restarts. */
  protected heard(now: number): void {
    this.heardAt = now;
    if (this.phase_ === Phase.Open) this.timers.set(Timer.Idle, now + this.idleMs);
  }

  /**
   * Start (again) at `now` (ms) in the handshake, with `idleMs` as the idle timeout once open: no
   * timers, no DISCONNECTs owed, no session, wire counts at zero, and end events not yet polled are
   * dropped (a netcode client's `connect` after an earlier connection).
   */
  protected restart(now: number, idleMs: number): void {
    const w = this.wire;
    w.datagramsSent = w.bytesSent = w.datagramsReceived = w.bytesReceived = 0;
    this.now = this.heardAt = now;
    this.idleMs = idleMs;
    this.phase_ = Phase.Handshake;
    this.timers.stopAll();
    this.disconnectsLeft = 0;
    this.endFirst = this.endSecond = undefined;
    this.session = undefined;
  }

  /** The handshake is done: the connection is open and the idle timer runs from the last time heard. */
  protected open(): void {
    this.phase_ = Phase.Open;
    this.timers.stop(Timer.TokenExpiry);
    this.timers.stop(Timer.Handshake);
    this.timers.stop(Timer.Resend);
    this.timers.set(Timer.Idle, this.heardAt + this.idleMs);
  }

  /** Queue one of the framing's own events (connected, a state change, a raw payload): before the session's. */
  protected push(event: E): void {
    this.events.push(event);
  }

  /**
   * End: closed, every timer stopped, `copies` DISCONNECTs owed when `tellPeer`, and `first` (then
   * `second`) raised after every event already queued. A command that ends it wakes the driver.
   */
  protected end(tellPeer: boolean, first: E, second?: E): void {
    this.phase_ = Phase.Closed;
    this.timers.stopAll();
    this.disconnectsLeft = tellPeer ? this.copies : 0;
    this.endFirst = first;
    this.endSecond = second;
  }

  /** The send-after-close rule: once closed, true (and counted): the caller queues nothing. */
  protected sendRefused(): boolean {
    if (this.phase_ !== Phase.Closed) return false;
    this.sentAfterClose();
    return true;
  }

  /** `Lanes.send` at the latest `now`, then wake the driver; −1 (counted) once closed. */
  protected sendOnLane(lane: number, bytes: Uint8Array, notice: boolean): number {
    if (this.sendRefused()) return -1;
    const id = this.session!.send(this.now, lane, bytes, notice);
    this.wake();
    return id;
  }

  /** `Lanes.cancel`, then wake the driver; false once closed (the blocks went with it). */
  protected cancelOnLane(lane: number, id: number): boolean {
    if (this.phase_ === Phase.Closed) return false;
    const r = this.session!.cancel(lane, id);
    this.wake();
    return r;
  }

  /** Tell the driver a command left work (output, events, a new deadline) outside any input. */
  protected wake(): void {
    this.waker?.();
  }

  /** The next datagram into `out` (counted): while closed the DISCONNECTs owed, else what the framing writes. */
  protected transmit(now: number, out: Uint8Array): number | undefined {
    this.tick(now);
    let n: number | undefined;
    if (this.phase_ === Phase.Closed) {
      if (this.disconnectsLeft === 0) return undefined;
      this.disconnectsLeft--;
      n = this.writeDisconnect(out);
    } else {
      n = this.write(now, out);
      if (n === undefined) return undefined;
    }
    this.wire.datagramsSent++;
    this.wire.bytesSent += n;
    return n;
  }
}
