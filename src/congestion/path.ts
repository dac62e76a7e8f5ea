import { checkConfig, checkKnownKeys, isInt, isNum, isObject } from '../core/config.js';
import { AdaptiveRate } from './adaptive.js';
import type { RateController } from './controller.js';
import { PacingBudget } from './pacer.js';
import { RttEstimator } from './rtt.js';

/** Bytes UDP over IPv4 adds to every datagram (8 UDP + 20 IPv4 header). */
export const UDP_IPV4_OVERHEAD_BYTES = 28;
/** Bytes UDP over IPv6 adds to every datagram (8 UDP + 40 IPv6 header). */
export const UDP_IPV6_OVERHEAD_BYTES = 48;

/** Options of a `Path`; every field is optional. */
export interface PathOptions {
  /** The path's send-rate controller. Default `new AdaptiveRate()`. */
  rateController?: RateController;
  /** RTT assumed before the first sample, ms (0 < x ≤ 60 000). Default 100. */
  initialRttMs?: number;
  /**
   * Bytes the transport underneath adds to every datagram, counted as wire bytes for pacing and by
   * the controller (0..1024). Default 28 (`UDP_IPV4_OVERHEAD_BYTES`); 48 for IPv6; more under DTLS or SCTP.
   */
  overheadBytes?: number;
  /**
   * Largest datagram a lane is expected to send, bytes without the overhead (1..1 048 576): the pacing
   * budget can always hold two. A larger datagram raises it when first paced. Default 1200.
   */
  maxDatagramBytes?: number;
  /** Cap on the saved pacing budget, ms of the pacing rate (0..10 000). Default 10. */
  pacingBurstMs?: number;
  /**
   * In-flight cap while the peer is silent: no fresh data may go once the wire bytes of fresh data
   * sent since the peer was last heard exceed max(this × pacing rate × srtt, `unackedFloorBytes`).
   * 0 disables. Default 2 (BDPs).
   */
  unackedBdpMultiple?: number;
  /** Floor of that cap, wire bytes. Default 65 536. */
  unackedFloorBytes?: number;
  /** Cap on the learned ack holding time of the peer added to the resend delay, ms (0..1000). Default 25. */
  maxAckDelayMs?: number;
  /**
   * The transport underneath delivers every datagram, in order (TCP under a WebSocket): a packet is
   * never declared lost by timeout (only when the peer acks a later one without it, which then means
   * the peer discarded it), and the resend delay of what is still resent on a timer (block slices)
   * is at least `RELIABLE_RESEND_FLOOR_MS`, so TCP's own recovery is not duplicated. Default false.
   */
  reliableTransport?: boolean;
}

/**
 * Floor of the resend delay on a reliable transport, ms: above what TCP's head-of-line blocking after
 * one loss usually costs (its minimum retransmission timeout, 200 ms on Linux, plus an RTT), so a
 * timer resend there is rare and only recovers what the peer discarded.
 */
export const RELIABLE_RESEND_FLOOR_MS = 1000;

/** The fields of `PathOptions` that describe the transport under a path. */
type PathTransportOptions = Pick<PathOptions, 'overheadBytes' | 'reliableTransport'>;

/** `overheadBytes` and `reliableTransport` with their defaults; throws `invalid-config` on bad values. */
function resolveTransport(o: PathTransportOptions): { overhead: number; reliable: boolean } {
  const overhead = o.overheadBytes ?? UDP_IPV4_OVERHEAD_BYTES;
  checkConfig(isInt(overhead, 0, 1024), 'overheadBytes must be an integer in 0..1024');
  checkConfig(o.reliableTransport === undefined || typeof o.reliableTransport === 'boolean', 'reliableTransport must be a boolean');
  return { overhead, reliable: o.reliableTransport ?? false };
}

const PATH_KEYS: ReadonlySet<string> = new Set([
  'rateController', 'initialRttMs', 'overheadBytes', 'maxDatagramBytes', 'pacingBurstMs', 'unackedBdpMultiple',
  'unackedFloorBytes', 'maxAckDelayMs', 'reliableTransport',
]);

/** Largest resend-delay multiplier while the peer stays silent (RFC 6298 style backoff). */
const MAX_BACKOFF = 16;

/**
 * Everything that is a property of the network path rather than of one lane (quinn's `PathData`):
 * one RTT estimate, the rate controller, the pacer, the in-flight cap while the peer is silent, the
 * probe backoff and the per-datagram overhead of the transport. Every lane of a connection (the chunk
 * sender, the message channels) takes the same `Path`, so they share one rate and one RTT. Sans-IO:
 * every method takes `now` in ms.
 *
 * A lane calls `update(now)` before deciding what to send, asks `covers(wire)` (pacing) and
 * `freshAllowed()` (in-flight cap), then reports with `spend`, `onSent`, `onResend`/`onLoss`; on
 * input it reports `onPeerHeard`, `onRttSample` and `onAck`. Sizes passed in are wire bytes
 * (`wireBytes(datagram)`), except where the name says datagram.
 */
export class Path {
  private rttEstimator: RttEstimator;
  private rateController: RateController;
  private readonly initialRttMs: number;
  private readonly ownController: boolean;
  private overhead: number;
  private reliable: boolean;
  private readonly pacer: PacingBudget;
  private readonly bdpMultiple: number;
  private readonly floorBytes: number;
  private readonly maxAckDelay: number;
  private rate = 0;
  private freshUnacked = 0;
  private freshCap = Infinity;
  private backoff = 1;
  private heardAt = -Infinity;
  private probeAt = -Infinity;
  private peerAckDelay = 0;

  /** @param config optional settings; throws `GamewireError('invalid-config')` on bad values. */
  constructor(config: PathOptions = {}) {
    checkConfig(isObject(config), 'path config must be an object');
    checkKnownKeys(config, PATH_KEYS, (k) => `unknown path config key '${k}'`);
    const rc = config.rateController;
    checkConfig(rc === undefined || (typeof rc === 'object' && rc !== null && typeof rc.pacingRate === 'function'
      && typeof rc.onSent === 'function' && typeof rc.onAck === 'function' && typeof rc.onLoss === 'function'),
    'rateController must implement RateController');
    const { overhead, reliable } = resolveTransport(config);
    const maxDatagram = config.maxDatagramBytes ?? 1200;
    const burstMs = config.pacingBurstMs ?? 10;
    const multiple = config.unackedBdpMultiple ?? 2;
    const floor = config.unackedFloorBytes ?? 64 * 1024;
    const ackDelay = config.maxAckDelayMs ?? 25;
    checkConfig(isInt(maxDatagram, 1, 1 << 20), 'maxDatagramBytes must be an integer in 1..1048576');
    checkConfig(isNum(burstMs, 0, 10_000), 'pacingBurstMs must be a number in 0..10000');
    checkConfig(isNum(multiple, 0, 1000), 'unackedBdpMultiple must be a number in 0..1000');
    checkConfig(isInt(floor, 0, Number.MAX_SAFE_INTEGER), 'unackedFloorBytes must be an integer ≥ 0');
    checkConfig(isNum(ackDelay, 0, 1000), 'maxAckDelayMs must be a number in 0..1000');
    this.initialRttMs = config.initialRttMs ?? 100;
    this.rttEstimator = new RttEstimator(this.initialRttMs);
    this.ownController = rc === undefined;
    this.rateController = rc ?? new AdaptiveRate();
    this.overhead = overhead;
    this.reliable = reliable;
    this.pacer = new PacingBudget(burstMs, 2 * (maxDatagram + overhead));
    this.bdpMultiple = multiple;
    this.floorBytes = floor;
    this.maxAckDelay = ackDelay;
  }

  /** The path's RTT estimator: the one every lane and the controller read. */
  get rtt(): RttEstimator {
    return this.rttEstimator;
  }

  /** The path's send-rate controller. */
  get controller(): RateController {
    return this.rateController;
  }

  /** Bytes the transport adds to every datagram (`PathOptions.overheadBytes`). */
  get overheadBytes(): number {
    return this.overhead;
  }

  /** The transport delivers every datagram in order (`PathOptions.reliableTransport`). */
  get reliableTransport(): boolean {
    return this.reliable;
  }

  /**
   * The peer now sends from another network path (a new address or transport, proven): what was
   * learnt about the old one no longer holds (QUIC resets the same on a new path). The RTT estimate,
   * the pacing budget, the in-flight cap, the probe backoff and the peer's learnt ack delay start
   * over, and so does the rate controller when the path made it (a `rateController` given in the
   * options is kept as it is). `transport`: the new path's transport, when it is another one: its
   * `overheadBytes` and `reliableTransport`, as in `PathOptions` (with their defaults). Throws
   * `invalid-config` on bad values.
   */
  restart(transport?: PathTransportOptions): void {
    if (transport !== undefined) {
      const t = resolveTransport(transport);
      this.overhead = t.overhead;
      this.reliable = t.reliable;
    }
    this.rttEstimator = new RttEstimator(this.initialRttMs);
    if (this.ownController) this.rateController = new AdaptiveRate();
    this.pacer.clear();
    this.rate = 0;
    this.freshUnacked = 0;
    this.freshCap = Infinity;
    this.backoff = 1;
    this.heardAt = -Infinity;
    this.probeAt = -Infinity;
    this.peerAckDelay = 0;
  }

  /** Wire bytes of a datagram of `datagramBytes` (the transport's overhead added). */
  wireBytes(datagramBytes: number): number {
    return datagramBytes + this.overhead;
  }

  /** Refill the pacing budget at the controller's rate and recompute the in-flight cap, at `now` (ms). */
  update(now: number): void {
    this.rate = this.rateController.pacingRate(now);
    this.pacer.refill(now, this.rate);
    const m = this.bdpMultiple;
    this.freshCap = m > 0 ? Math.max(m * this.rate * this.rttEstimator.srttMs * 0.001, this.floorBytes) : Infinity;
  }

  /** Pacing rate at the last `update`, wire bytes/s. */
  get pacingRateBytesPerSec(): number {
    return this.rate;
  }

  /** True when the pacing budget covers a datagram of `wireBytes` now. */
  covers(wireBytes: number): boolean {
    this.pacer.fit(wireBytes);
    return this.pacer.covers(wireBytes);
  }

  /** When (ms) the budget will cover `wireBytes` at the current rate; undefined while the rate is 0. */
  readyAt(wireBytes: number): number | undefined {
    this.pacer.fit(wireBytes);
    return this.pacer.readyAt(wireBytes);
  }

  /** Take a paced datagram's `wireBytes` out of the budget. */
  spend(wireBytes: number): void {
    this.pacer.spend(wireBytes);
  }

  /** Drop the saved budget (after an unpaced burst, so a second burst does not follow). */
  clearBudget(): void {
    this.pacer.clear();
  }

  /** False while the in-flight cap holds fresh data back (the peer has been silent for a while). */
  freshAllowed(): boolean {
    return this.freshUnacked <= this.freshCap;
  }

  /** A datagram of `wireBytes` went out at `now` (ms); `fresh` when it carried data never sent before. */
  onSent(now: number, wireBytes: number, fresh = false): void {
    if (fresh) this.freshUnacked += wireBytes;
    this.rateController.onSent(now, wireBytes);
  }

  /** Anything valid arrived from the peer at `now` (ms): the probe backoff and the in-flight cap reset. */
  onPeerHeard(now: number): void {
    this.heardAt = now;
    this.backoff = 1;
    this.freshUnacked = 0;
  }

  /**
   * An RTT sample (ms, the peer's ack delay already removed) measured at `now`; `peerAckDelayMs` is
   * how long the peer held the ack (learned as a slowly decaying maximum, QUIC's max_ack_delay).
   * Returns false when the estimator rejected the sample (< 0, ≥ 60 s, not finite).
   */
  onRttSample(now: number, sampleMs: number, peerAckDelayMs = 0): boolean {
    if (!this.rttEstimator.update(now, sampleMs)) return false;
    const held = Number.isFinite(peerAckDelayMs) && peerAckDelayMs > 0 ? peerAckDelayMs : 0;
    this.peerAckDelay = Math.max(Math.min(held, this.maxAckDelay), this.peerAckDelay * 0.98);
    return true;
  }

  /**
   * An ack at `now` (ms) newly confirmed `ackedWireBytes`; `sampled` when it also gave an RTT sample
   * (fed with `onRttSample` just before). Forwards to the controller.
   */
  onAck(now: number, ackedWireBytes: number, sampled: boolean): void {
    this.rateController.onAck(now, ackedWireBytes, sampled ? this.rttEstimator.latestMs : undefined, this.rttEstimator);
  }

  /** A lane concluded at `now` (ms) that `lostWireBytes` were lost. Forwards to the controller. */
  onLoss(now: number, lostWireBytes: number): void {
    this.rateController.onLoss(now, lostWireBytes);
  }

  /**
   * Minimum delay before unacked data is resent (ms): the RTT rule max(floorMs, 1.25 × srtt,
   * srtt + 4 × rttvar) plus the peer's learned ack delay, times the backoff (doubled by each probe
   * sent while the peer is silent, up to 16; reset when it is heard). On a reliable transport the
   * floor is at least `RELIABLE_RESEND_FLOOR_MS`.
   */
  resendDelayMs(floorMs: number): number {
    const floor = this.reliable && floorMs < RELIABLE_RESEND_FLOOR_MS ? RELIABLE_RESEND_FLOOR_MS : floorMs;
    return (this.rttEstimator.resendDelayMs(floor) + this.peerAckDelay) * this.backoff;
  }

  /**
   * When data last sent at `sentAt` may be resent, given the current `delayMs`. If nothing was
   * heard from the peer since it was sent (peer silent, or the RTT is larger than assumed), the
   * resend is a probe: at most one probe per delay on the whole path.
   */
  resendAt(sentAt: number, delayMs: number): number {
    const due = sentAt + delayMs;
    return sentAt > this.heardAt ? Math.max(due, this.probeAt + delayMs) : due;
  }

  /** Data last sent at `sentAt` was resent at `now` (ms): if it was a probe, double the backoff. */
  onResend(now: number, sentAt: number): void {
    if (sentAt > this.heardAt) {
      this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF);
      this.probeAt = now;
    }
  }
}
