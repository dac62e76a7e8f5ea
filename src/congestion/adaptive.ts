import { checkConfig, checkKnownKeys, isNum, isObject } from '../core/config.js';
import type { RateController } from './controller.js';
import type { RttEstimator } from './rtt.js';

/** Phase of an `AdaptiveRate` controller; see docs/congestion.md for the transitions. */
export type AdaptiveRateState = 'startup' | 'steady' | 'probe-rtt';

/** Tuning of `AdaptiveRate`. Every field is optional; rates are wire bytes per second, times ms. */
export interface AdaptiveRateOptions {
  /** Lowest pacing rate (bytes/s, > 0). Default 16 000 (128 kbit/s). */
  minRateBytesPerSec?: number;
  /** Highest pacing rate (bytes/s, ≥ min). Default 125 000 000 (1 Gbit/s). */
  maxRateBytesPerSec?: number;
  /** Pacing rate before the first RTT sample (bytes/s, within min..max). Default 122 800 (ten 1228-byte datagrams per 100 ms). */
  initialRateBytesPerSec?: number;
  /**
   * Bytes released at the maximum rate before the first ack (a packet train whose acks measure the
   * bottleneck; TCP's initial window does the same). Also sets the rate floor of startup to this many
   * bytes per minimum RTT. 0 disables the train. Default 12 280 (ten 1228-byte datagrams).
   */
  initialBurstBytes?: number;
  /** Standing queue the controller aims to keep at the bottleneck (ms, > 0), on top of two datagrams of its own. Default 2. */
  targetQueueDelayMs?: number;
  /** How long a minimum-RTT sample stays trusted before a brief half-rate dip re-measures it (ms, ≥ 100). Default 10 000. */
  minRttWindowMs?: number;
}

/** Defaults of every `AdaptiveRateOptions` field. */
export const ADAPTIVE_RATE_DEFAULTS: Readonly<Required<AdaptiveRateOptions>> = Object.freeze({
  minRateBytesPerSec: 16_000,
  maxRateBytesPerSec: 125_000_000,
  initialRateBytesPerSec: 122_800,
  initialBurstBytes: 12_280,
  targetQueueDelayMs: 2,
  minRttWindowMs: 10_000,
});

/** A snapshot of an `AdaptiveRate`'s estimates (for diagnostics, tests and benchmarks). */
export interface AdaptiveRateStats {
  /** Current phase. */
  state: AdaptiveRateState;
  /** Rate the controller paces at now, bytes/s (within min..max). */
  pacingRate: number;
  /** Bottleneck delivery-rate estimate, bytes/s acked (0 before the first sample). */
  bandwidth: number;
  /** The path's minimum RTT (current window), ms (Infinity before the first sample). */
  minRttMs: number;
  /** The path's smoothed RTT (RFC 6298), ms (0 before the first sample). */
  smoothedRttMs: number;
  /** Filtered queueing delay (recent RTT minimum − minimum RTT), ms. */
  queueDelayMs: number;
  /** Standing queue currently aimed for, ms (config, or more on fast-varying or jittery paths). */
  targetQueueMs: number;
  /** Jitter used for the target (decaying peak of the path's jitter estimate), ms. */
  jitterMs: number;
  /** Baseline loss fraction the controller tolerates without backing off (0..1). */
  baselineLoss: number;
  /** Times loss was judged to be congestion and the rate was cut. */
  lossBackoffs: number;
  /** Times a queue that did not drain was taken for a longer path and the minimum RTT re-based. */
  rttRebases: number;
}

const STARTUP_GAIN = 2;
const DRAIN_RTTS = 1.5;
/** Most ack events and minimum-filter entries kept; both rings start empty and double from 8 up to this. */
const RING = 256;
const DEQUE = 256;
const FIRST_CAP = 8;
/** Fields per ack event (time, acked total, queueing delay, raw queueing delay) and per deque entry (time, RTT). */
const ACK_EVENT_STRIDE = 4;
const MIN_RTTS_STRIDE = 2;
const NO_SAMPLES: Float64Array<ArrayBuffer> = new Float64Array(0);

/** `buf` (entries of `stride` numbers in a ring of `cap` entries, `len` of them from `head`) grown to twice its entries, oldest first. */
function grow(buf: Float64Array, stride: number, cap: number, head: number, len: number): Float64Array<ArrayBuffer> {
  const next = new Float64Array(Math.max(FIRST_CAP, cap * 2) * stride);
  for (let k = 0; k < len; k++) next.set(buf.subarray(((head + k) % cap) * stride, ((head + k) % cap + 1) * stride), k * stride);
  return next;
}
const JITTER_GAIN = 3;
const JITTER_DECAY = 0.98;
const JITTER_WINDOW = 8;
const P_UP = 0.25;
const P_DOWN = 0.5;
const PROBE_MAX = 0.25;
const PROBE_BELOW = 0.5;
const LOSS_EPOCH_DATAGRAMS = 128;
const LOSS_PRIOR_DATAGRAMS = 128;
const WARMUP_EPOCHS = 8;
const DEFAULT_DATAGRAM = 1228;
const MIN_RISE_MS = 0.01;
const TRAIN_MIN_STEPS = 3;
/** Rounds in a row whose queue did not drain while the rate was held below the bottleneck before the base RTT is re-measured. */
const REBASE_ROUNDS = 3;
/** Datagrams of its own each flow keeps queued on top of the target (Vegas, Copa): a smaller flow aims higher and grows. */
const FAIR_DATAGRAMS = 2;
/** A round counts as held below the bottleneck when its mean pacing multiplier was under this. */
const REBASE_BELOW = 0.95;
/** Jitter multiple of the queue level that ends start-up (steady state aims at JITTER_GAIN × jitter). */
const STARTUP_JITTER_GAIN = 1;
/** Growth per round of the learnt buffer ceiling, so a ceiling from an older path is forgotten. */
const CEILING_RELAX = 1.01;
/** Most a not-busy delivery sample may raise the bandwidth in steady state (1 + P_UP + PROBE_MAX). */
const STEADY_MAX_GROWTH = 1.5;
/**
 * Shortest RTT the ramp's slow-down is scaled against (ms). Below it the 1 ms timer and the 10 ms pacing
 * burst, not the path, set how fast a queue builds; on loopback (0.05 ms RTT, ~0.5 ms of scheduling jitter)
 * the unfloored ratio slowed the ramp ~100-fold, and after one low delivery sample the loop sat idle for seconds.
 */
const RAMP_MIN_RTT_MS = 10;

/**
 * Adaptive pacing for bulk transfer: probes upward, backs off on rising queueing delay, and treats
 * loss as congestion only when it comes with a standing queue or far above the path's baseline, so
 * random loss does not collapse the rate. Sans-IO; see docs/congestion.md for the algorithm.
 */
export class AdaptiveRate implements RateController {
  private readonly minRate: number;
  private readonly maxRate: number;
  private readonly burstBytes: number;
  private readonly targetMs: number;
  private readonly rttWindowMs: number;

  private phase: AdaptiveRateState = 'startup';
  private rate: number;
  private bandwidth = 0;
  private probeLevel = 0;
  private burstLeft: number;
  private gotAck = false;
  private appLimited = false;
  private maxDatagram = DEFAULT_DATAGRAM;

  private rtt: RttEstimator | undefined;
  private minRtt = Infinity;
  private srtt = 0;
  // Sliding-window minimum of RTT samples: a ring of (time, RTT) pairs, minRttsCap entries.
  private minRtts = NO_SAMPLES;
  private minRttsCap = 0;
  private minRttsHead = 0;
  private minRttsLen = 0;
  private jitPeak = 0;
  private rawQueueDelay = 0;
  private queueDelay = 0;
  private lastIdleAt = -Infinity;

  // Recent ack events, a ring of ACK_EVENT_STRIDE numbers per entry (ackEventsCap entries; see pushEvent).
  private ackEvents = NO_SAMPLES;
  private ackEventsCap = 0;
  private ackEventsHead = 0;
  private ackEventsLen = 0;
  private ackedTotal = 0;

  private roundStart = NaN;
  private roundSent = 0;
  private roundMaxQueueDelay = 0;
  private roundMinQueueDelay = Infinity;
  private roundMinRtt = Infinity;
  private roundMult = 0;
  private roundAcked = 0;
  private roundLost = 0;
  private roundMultN = 0;
  private prevMinQueueDelay = Infinity;
  private prevDrainMs = 0;
  private stuckRounds = 0;
  private normalBandwidth = 0;
  private roundStartBandwidth = 0;
  private rebases = 0;
  private ceilingMs = Infinity;
  private prevRoundMaxQueueDelay = 0;
  private jumped = false;
  private jitterQuietUntil = -Infinity;
  private lowerOnly = false;

  private epStart = NaN;
  private epAcked = 0;
  private epLost = 0;
  private epMaxQueueDelay = 0;
  private prevEpMaxQueueDelay = 0;
  private lossBase = 0;
  private lossEpochs = 0;
  private cumTotal = 0;
  private cumLost = 0;
  private lastCutAt = -Infinity;
  private cuts = 0;

  private slowUntil = -Infinity;
  private collectUntil = -Infinity;
  private collectMin = Infinity;

  /** @param config optional tuning; throws `GamewireError('invalid-config')` on out-of-range values. */
  constructor(config: AdaptiveRateOptions = {}) {
    checkConfig(isObject(config), 'adaptive rate config must be an object');
    checkKnownKeys(config, ADAPTIVE_RATE_DEFAULTS, (k) => `unknown adaptive rate config key '${k}'`);
    const c = { ...ADAPTIVE_RATE_DEFAULTS };
    for (const [k, v] of Object.entries(config)) if (v !== undefined) (c as Record<string, unknown>)[k] = v;
    checkConfig(isNum(c.minRateBytesPerSec) && c.minRateBytesPerSec > 0, 'minRateBytesPerSec must be a finite number > 0');
    checkConfig(isNum(c.maxRateBytesPerSec, c.minRateBytesPerSec),
      'maxRateBytesPerSec must be a finite number ≥ minRateBytesPerSec');
    checkConfig(isNum(c.initialRateBytesPerSec, c.minRateBytesPerSec, c.maxRateBytesPerSec), 'initialRateBytesPerSec must lie within min..max');
    checkConfig(isNum(c.initialBurstBytes, 0), 'initialBurstBytes must be a finite number ≥ 0');
    checkConfig(isNum(c.targetQueueDelayMs) && c.targetQueueDelayMs > 0, 'targetQueueDelayMs must be a finite number > 0');
    checkConfig(isNum(c.minRttWindowMs, 100), 'minRttWindowMs must be a finite number ≥ 100');
    this.minRate = c.minRateBytesPerSec;
    this.maxRate = c.maxRateBytesPerSec;
    this.rate = c.initialRateBytesPerSec;
    this.burstBytes = c.initialBurstBytes;
    this.burstLeft = c.initialBurstBytes;
    this.targetMs = c.targetQueueDelayMs;
    this.rttWindowMs = c.minRttWindowMs;
  }

  /** Current phase: 'startup' (exponential search), 'steady' (delay-targeting), 'probe-rtt' (min-RTT refresh). */
  get state(): AdaptiveRateState {
    return this.phase;
  }

  /** Pacing rate in bytes/s at `now` (ms), always within the configured min..max. */
  pacingRate(now: number): number {
    if (!this.gotAck && this.burstLeft > 0) return this.maxRate;
    let r = this.rate;
    if (now < this.slowUntil) r *= 0.5;
    return this.clamp(r);
  }

  /** A datagram of `wireBytes` (UDP/IP overhead included) left at `now` (ms). Non-finite or ≤ 0 sizes are ignored. */
  onSent(now: number, wireBytes: number): void {
    if (!isNum(now) || !isNum(wireBytes) || wireBytes <= 0) return;
    if (wireBytes > this.maxDatagram) this.maxDatagram = Math.min(wireBytes, 65_535);
    if (!this.gotAck && this.burstLeft > 0) this.burstLeft -= wireBytes;
    if (Number.isNaN(this.roundStart)) this.roundStart = now;
    if (Number.isNaN(this.epStart)) this.epStart = now;
    this.roundSent += wireBytes;
  }

  /**
   * An ack at `now` (ms) newly confirmed `ackedWireBytes`; `rttMs` is the fresh RTT sample it carried
   * (already fed to `rtt`, the path's estimator, which this controller reads) or undefined. Invalid
   * sizes count as 0 and invalid samples are ignored (never throws).
   */
  onAck(now: number, ackedWireBytes: number, rttMs: number | undefined, rtt: RttEstimator): void {
    if (!isNum(now)) return;
    this.rtt = rtt;
    const before = this.minRtt;
    this.readRtt();
    const bytes = isNum(ackedWireBytes) && ackedWireBytes > 0 ? ackedWireBytes : 0;
    this.gotAck = true;
    this.ackedTotal += bytes;
    this.epAcked += bytes;
    this.roundAcked += bytes;
    if (Number.isNaN(this.epStart)) this.epStart = now;
    if (Number.isNaN(this.roundStart)) this.roundStart = now;
    if (isNum(rttMs) && rttMs >= 0) {
      // A path that got shorter: for about one old RTT, acks of both paths interleave and every step
      // between them reads as jitter (tens of ms) that would inflate the target for seconds.
      if (this.phase !== 'startup' && rttMs < before - Math.max(2, 3 * this.jitPeak)) this.jitterQuietUntil = now + 2 * before;
      this.rttSample(now, rttMs);
    }
    this.pushEvent(now);
    if (bytes > 0) this.bandwidthSample(now);
    this.control(now);
    this.endRound(now);
    this.endLossEpoch(now);
  }

  /** The sender concluded at `now` (ms) that `lostWireBytes` were lost. Invalid sizes are ignored. */
  onLoss(now: number, lostWireBytes: number): void {
    if (!isNum(now) || !isNum(lostWireBytes) || lostWireBytes <= 0) return;
    if (Number.isNaN(this.epStart)) this.epStart = now;
    this.epLost += lostWireBytes;
    this.roundLost += lostWireBytes;
    this.endLossEpoch(now);
  }

  /** A snapshot of the controller's estimates at `now` (ms). */
  stats(now: number): AdaptiveRateStats {
    return {
      state: this.phase,
      pacingRate: this.pacingRate(now),
      bandwidth: this.bandwidth,
      minRttMs: this.minRtt,
      smoothedRttMs: this.srtt,
      queueDelayMs: this.queueDelay,
      targetQueueMs: this.target(),
      jitterMs: this.jitPeak,
      baselineLoss: this.lossBase,
      lossBackoffs: this.cuts,
      rttRebases: this.rebases,
    };
  }

  private clamp(r: number): number {
    return r < this.minRate ? this.minRate : r > this.maxRate ? this.maxRate : r;
  }

  /**
   * Target standing queue (ms): the configured delay plus two datagrams at this flow's own rate (the
   * per-flow share that makes flows on one bottleneck converge), and at least `jitterGain` × jitter so
   * that delay noise is not taken for a queue — but that allowance stays within half the buffer the
   * queue was seen to overflow at (`ceilingMs`).
   */
  private target(jitterGain = JITTER_GAIN): number {
    let q = this.targetMs;
    if (this.bandwidth > 0) q += (FAIR_DATAGRAMS * this.maxDatagram * 1000) / this.bandwidth;
    return Math.max(q, Math.min(jitterGain * this.jitPeak, this.ceilingMs / 2));
  }

  /** Filtering window (ms): a quarter of the minimum RTT, longer on jittery paths. */
  private window(): number {
    return Math.max(this.minRtt / 4, JITTER_WINDOW * this.jitPeak);
  }

  /** Cache the path estimator's minimum and smoothed RTT (Infinity and 0 before its first sample). */
  private readRtt(): void {
    const e = this.rtt!;
    this.minRtt = e.minRttMs ?? Infinity;
    this.srtt = e.samples > 0 ? e.srttMs : 0;
  }

  private rttSample(now: number, rtt: number): void {
    if (now < this.collectUntil && rtt < this.collectMin) this.collectMin = rtt;
    const jit = this.rtt!.jitterMs;
    // While the mean is still a plain average (first 16 samples) the peak follows it down: one
    // outlier among the first samples (an event-loop stall, a slow first ack) must fade as 1/n, not 2 % per round.
    if (now >= this.jitterQuietUntil && (this.rtt!.samples <= 16 || jit > this.jitPeak)) this.jitPeak = jit;
    // Sliding-window minimum (monotonic deque): jitter only ever adds delay.
    while (this.minRttsLen > 0 && this.minRtts[((this.minRttsHead + this.minRttsLen - 1) % this.minRttsCap) * MIN_RTTS_STRIDE + 1] >= rtt) this.minRttsLen--;
    if (this.minRttsLen === this.minRttsCap) {
      if (this.minRttsCap < DEQUE) {
        this.minRtts = grow(this.minRtts, MIN_RTTS_STRIDE, this.minRttsCap, this.minRttsHead, this.minRttsLen);
        this.minRttsCap = this.minRtts.length / MIN_RTTS_STRIDE;
        this.minRttsHead = 0;
      } else {
        this.minRttsHead = (this.minRttsHead + 1) % this.minRttsCap;
        this.minRttsLen--;
      }
    }
    const win = this.minRtts;
    const cap = this.minRttsCap;
    const tail = (this.minRttsHead + this.minRttsLen) % cap;
    win[tail * MIN_RTTS_STRIDE] = now;
    win[tail * MIN_RTTS_STRIDE + 1] = rtt;
    this.minRttsLen++;
    const from = now - this.window();
    while (win[this.minRttsHead * MIN_RTTS_STRIDE] < from) {
      this.minRttsHead = (this.minRttsHead + 1) % cap;
      this.minRttsLen--;
    }
    this.queueDelay = Math.max(0, win[this.minRttsHead * MIN_RTTS_STRIDE + 1] - this.minRtt);
    this.rawQueueDelay = rtt - this.minRtt;
    if (this.queueDelay <= this.target() / 2) this.lastIdleAt = now;
    if (this.queueDelay > this.roundMaxQueueDelay) this.roundMaxQueueDelay = this.queueDelay;
    if (this.queueDelay < this.roundMinQueueDelay) this.roundMinQueueDelay = this.queueDelay;
    if (rtt < this.roundMinRtt) this.roundMinRtt = rtt;
    if (this.queueDelay > this.epMaxQueueDelay) this.epMaxQueueDelay = this.queueDelay;
  }

  /**
   * Queueing delay over the last quarter of the minimum RTT only (ms): the monotonic deque holds the
   * minimum of every suffix of the filtering window, so this is its first entry that recent.
   */
  private recentQueue(now: number): number {
    const from = now - this.minRtt / 4;
    for (let k = 0; k < this.minRttsLen; k++) {
      const i = ((this.minRttsHead + k) % this.minRttsCap) * MIN_RTTS_STRIDE;
      if (this.minRtts[i] >= from) return this.minRtts[i + 1] - this.minRtt;
    }
    return 0;
  }

  private pushEvent(now: number): void {
    if (this.ackEventsLen === this.ackEventsCap && this.ackEventsCap < RING) {
      this.ackEvents = grow(this.ackEvents, ACK_EVENT_STRIDE, this.ackEventsCap, this.ackEventsHead, this.ackEventsLen);
      this.ackEventsHead = this.ackEventsLen;
      this.ackEventsCap = this.ackEvents.length / ACK_EVENT_STRIDE;
    }
    const i = this.ackEventsHead * ACK_EVENT_STRIDE;
    this.ackEvents[i] = now;
    this.ackEvents[i + 1] = this.ackedTotal;
    this.ackEvents[i + 2] = this.queueDelay;
    this.ackEvents[i + 3] = this.rawQueueDelay;
    this.ackEventsHead = (this.ackEventsHead + 1) % this.ackEventsCap;
    if (this.ackEventsLen < this.ackEventsCap) this.ackEventsLen++;
  }

  /** Ack event `i`'s time, acked total, queueing delay and raw queueing delay. */
  private ackEventTime(i: number): number {
    return this.ackEvents[i * ACK_EVENT_STRIDE]!;
  }

  private ackEventAcked(i: number): number {
    return this.ackEvents[i * ACK_EVENT_STRIDE + 1]!;
  }

  private ackEventQueueDelay(i: number): number {
    return this.ackEvents[i * ACK_EVENT_STRIDE + 2]!;
  }

  private ackEventRawQueueDelay(i: number): number {
    return this.ackEvents[i * ACK_EVENT_STRIDE + 3]!;
  }

  /**
   * Delivery-rate sample over recent acks. When the samples show the bottleneck stayed busy (queue
   * present throughout, or growing) the sample measures the bottleneck itself and replaces the
   * estimate; otherwise it is only a lower bound and can only raise it.
   */
  private bandwidthSample(now: number): void {
    const minBytes = 4 * this.maxDatagram;
    const wantSpan = this.window();
    const cap = this.ackEventsCap;
    const newest = (this.ackEventsHead + cap - 1) % cap;
    let pick = -1;
    for (let k = 1; k < this.ackEventsLen; k++) {
      const i = (newest + cap - k) % cap;
      const dB = this.ackedTotal - this.ackEventAcked(i);
      const dt = now - this.ackEventTime(i);
      if (dB >= minBytes && dt > 0) {
        pick = i;
        if (dt >= wantSpan) break;
      }
    }
    if (pick < 0) return;
    const dt = now - this.ackEventTime(pick);
    const sample = ((this.ackedTotal - this.ackEventAcked(pick)) * 1000) / dt;
    const q = this.target();
    let busy: boolean;
    if (this.phase === 'startup') {
      busy = this.trainDispersed(pick, dt, q);
    } else {
      const rise = this.queueDelay - this.ackEventQueueDelay(pick);
      busy = (this.ackEventQueueDelay(pick) > q / 2 && this.lastIdleAt < this.ackEventTime(pick))
        || rise > Math.max(MIN_RISE_MS, Math.min(q / 8, (dt - rise) / 2));
    }
    if (busy) {
      if (this.phase === 'startup') {
        this.bandwidth = sample;
        this.exitStartup();
      } else {
        const prev = this.ackEventTime((newest + cap - 1) % cap);
        const w = Math.min(1, (now - prev) / this.minRtt);
        this.bandwidth += (sample - this.bandwidth) * w;
      }
    } else if (sample > this.bandwidth && (this.phase !== 'startup' || dt >= wantSpan)) {
      // In start-up the ring holds few acks: a span shorter than the window can be a compressed burst
      // of acks (reordering, head-of-line jitter), e.g. 7 datagrams in 0.6 ms read as 111 Mbit/s on 10.
      // In steady state we never send above 1.5 × the bandwidth (p + probe ≤ 0.5), so more than that delivered is
      // acks arriving bunched (a path that got shorter overtakes what was in flight).
      this.bandwidth = this.phase === 'startup' || this.bandwidth <= 0 ? sample : Math.min(sample, STEADY_MAX_GROWTH * this.bandwidth);
    }
  }

  /**
   * Start-up's exact-sample test (packet-pair dispersion): over the span the raw queueing delay rose
   * by more than half the span the datagrams were sent in (the bottleneck spaced them, not the
   * sender) and never fell (jitter would make it wobble).
   */
  private trainDispersed(pick: number, dt: number, q: number): boolean {
    // Two or three acks can rise by chance (reordering jitter) and would set a rate many times the path's.
    const cap = this.ackEventsCap;
    if ((this.ackEventsHead + cap - 1 - pick) % cap < TRAIN_MIN_STEPS) return false;
    const rise = this.rawQueueDelay - this.ackEventRawQueueDelay(pick);
    if (!(rise > Math.max(MIN_RISE_MS, Math.min(q / 8, (dt - rise) / 2)))) return false;
    let prev = this.ackEventRawQueueDelay(pick);
    for (let i = (pick + 1) % cap; ; i = (i + 1) % cap) {
      if (this.ackEventRawQueueDelay(i) < prev - MIN_RISE_MS) return false;
      prev = this.ackEventRawQueueDelay(i);
      if (i === (this.ackEventsHead + cap - 1) % cap) return true;
    }
  }

  private exitStartup(): void {
    this.phase = 'steady';
    this.probeLevel = 0;
  }

  private control(now: number): void {
    const q = this.target();
    if (this.phase === 'startup') {
      let r = this.rate;
      if (this.minRtt > 0 && this.minRtt < Infinity) r = Math.max(r, (this.burstBytes * 1000) / this.minRtt);
      r = Math.max(r, STARTUP_GAIN * this.bandwidth);
      this.rate = this.clamp(r);
      // The rate doubles per round: a queue as large as the jitter is already a round too late on a
      // shallow buffer, and so is a filter as long as the steady state's (8 × jitter) while it grows.
      if (this.queueDelay > q || this.recentQueue(now) > this.target(STARTUP_JITTER_GAIN)) {
        this.exitStartup();
      } else {
        return;
      }
    }
    if (this.bandwidth <= 0) return;
    const T = Math.max(DRAIN_RTTS * this.minRtt, 4 * q);
    // On a jittery path the filter spans 8 × jitter (several RTTs) and lags a growing queue by as much;
    // the minimum of the last quarter RTT is noisier but already shows it (a shallow buffer fills in one RTT).
    const e = (q - Math.max(this.queueDelay, this.recentQueue(now))) / T;
    // The loop reacts a filtering window after the queue does: where the window outlasts the RTT
    // (jitter), every increase per round must shrink with it or the queue overshoots a shallow buffer.
    const up = Math.min(1, Math.max(this.minRtt, RAMP_MIN_RTT_MS) / (1.5 * this.window()));
    const p = e > P_UP * up ? P_UP * up : e < -P_DOWN ? -P_DOWN : e;
    const probe = this.probeLevel === 0 ? 0 : up * Math.min(PROBE_MAX, 2 ** this.probeLevel / 128);
    let m = 1 + p + probe;
    if (m < 0.5) m = 0.5;
    const lossComp = 1 / (1 - Math.min(this.lossBase, 0.5));
    this.rate = this.clamp(this.bandwidth * lossComp * m);
    this.roundMult += m;
    this.roundMultN++;
  }

  /**
   * A queue we hold the rate below the bottleneck for must drain: at multiplier m it loses
   * (1 − m) ms per ms. When the queueing delay stays well above target round after round while the
   * rate is held down, and does not fall as it would, it is no queue of ours: the path got longer (a
   * route change), or a competitor that does not yield keeps it full. Either way the old minimum is
   * stale; take the smallest RTT of the last round as the new base, and restore the bandwidth known
   * before the queue appeared (meanwhile the busy samples followed our own reduced rate down). Not
   * while loss runs above the baseline: a full buffer that stays full is a loss-based competitor's
   * (or overflow we cannot drain), and taking it as the base would only push the buffer over.
   */
  private checkStanding(now: number, dur: number, q: number): void {
    const m = this.roundMultN > 0 ? this.roundMult / this.roundMultN : 1;
    const total = this.roundAcked + this.roundLost;
    const lossy = total > 0 && this.roundLost / total > this.lossBase + 0.01;
    const stuck = !lossy && m < REBASE_BELOW && this.roundMinQueueDelay > 2 * q && this.roundMinQueueDelay > this.prevMinQueueDelay - this.prevDrainMs / 2;
    this.stuckRounds = stuck ? this.stuckRounds + 1 : 0;
    // The estimate as the round began: a path that got longer collapses it within the round (the first
    // acks after the gap span it), before the queue shows.
    if (this.roundMaxQueueDelay <= 2 * q) this.normalBandwidth = this.roundStartBandwidth;
    this.prevMinQueueDelay = this.roundMinQueueDelay;
    this.prevDrainMs = (1 - m) * dur;
    if (this.stuckRounds < REBASE_ROUNDS || this.roundMinRtt === Infinity) return;
    this.rtt!.rebaseMin(now, this.roundMinRtt);
    this.readRtt();
    this.bandwidth = Math.max(this.bandwidth, this.normalBandwidth);
    this.rebases++;
    this.stuckRounds = 0;
    this.prevMinQueueDelay = Infinity;
    this.probeLevel = 0;
    this.epMaxQueueDelay = 0;
    this.prevEpMaxQueueDelay = 0;
    this.minRttsLen = 0;
    this.queueDelay = 0;
    this.control(now);
  }

  private endRound(now: number): void {
    const len = this.srtt > 0 ? this.srtt : 100;
    if (now - this.roundStart < len) return;
    const dur = now - this.roundStart;
    this.appLimited = this.roundSent < (0.5 * this.rate * dur) / 1000;
    const q = this.target();
    if (this.phase !== 'startup') this.checkStanding(now, dur, q);
    if (this.phase === 'steady') {
      if (this.roundMaxQueueDelay > PROBE_BELOW * q) this.probeLevel = 0;
      else if (!this.appLimited) this.probeLevel++;
      // A queue that jumps from normal to well above target within a round, and stays up through the
      // next, is most often a newcomer's start-up (a burst of bunched acks passes within the round).
      // Dip (as in probe-rtt, but the minimum may only fall): with every flow backing off together the
      // shared queue drains, and the newcomer measures the true minimum RTT instead of taking our
      // standing queue for part of it (which would hand it most of the link).
      const jump = this.jumped && this.roundMinQueueDelay > 2 * q;
      this.jumped = this.roundMaxQueueDelay > 4 * q && this.prevRoundMaxQueueDelay <= 2 * q;
      if (jump || now - (this.rtt?.minRttAtMs ?? now) > this.rttWindowMs) {
        this.lowerOnly = jump;
        this.phase = 'probe-rtt';
        this.slowUntil = now + (jump ? Math.max(this.queueDelay, 2) : Math.max(2 * this.queueDelay + 1, 2));
        this.collectUntil = this.slowUntil + 1.5 * this.srtt + 5;
        this.collectMin = Infinity;
      }
    } else if (this.phase === 'probe-rtt' && now >= this.collectUntil) {
      const m = this.collectMin < Infinity ? this.collectMin : this.minRtt;
      this.rtt!.rebaseMin(now, this.lowerOnly ? Math.min(m, this.minRtt) : m);
      this.readRtt();
      this.phase = 'steady';
    }
    this.jitPeak = now < this.jitterQuietUntil ? this.jitPeak : Math.max(this.rtt?.jitterMs ?? 0, this.jitPeak * JITTER_DECAY);
    this.ceilingMs *= CEILING_RELAX;
    this.roundStart = now;
    this.roundSent = 0;
    this.prevRoundMaxQueueDelay = this.roundMaxQueueDelay;
    this.roundMaxQueueDelay = 0;
    this.roundMinQueueDelay = Infinity;
    this.roundMinRtt = Infinity;
    this.roundMult = 0;
    this.roundMultN = 0;
    this.roundAcked = 0;
    this.roundLost = 0;
    this.roundStartBandwidth = this.bandwidth;
  }

  /**
   * Loss is judged once per epoch (≥ one smoothed RTT and ≥ 64 datagrams' worth of outcomes). It is
   * congestion when it rises above the baseline while a queue stands well above target (overflow),
   * or when it exceeds twice the baseline plus 10 points (policer, shallow buffer).
   */
  private endLossEpoch(now: number): void {
    const total = this.epAcked + this.epLost;
    const dur = now - this.epStart;
    if (total < LOSS_EPOCH_DATAGRAMS * this.maxDatagram || dur < (this.srtt > 0 ? this.srtt : 100) || dur <= 0) return;
    const frac = this.epLost / total;
    // Loss of an epoch whose queue never drained below half the target may be our own overflow; learnt
    // as baseline it would be compensated, i.e. sustained: the queue would stay full for the whole transfer.
    const learn = this.lastIdleAt >= this.epStart;
    if (learn) {
      this.cumTotal += total;
      this.cumLost += this.epLost;
    }
    // Loss above the baseline while the queue never drained: the buffer overflows at about the largest
    // queue seen. Keep the jitter allowance of the target within half of that (a shallow buffer).
    const excess = frac - this.lossBase;
    if (!learn && excess > Math.max(0.005, 3 * Math.sqrt((Math.max(this.lossBase, 0.01) * (1 - this.lossBase)) / (total / this.maxDatagram)))) {
      const seen = Math.max(this.epMaxQueueDelay, this.prevEpMaxQueueDelay);
      if (seen > 0) this.ceilingMs = Math.min(this.ceilingMs, seen);
    }
    if (this.lossEpochs < WARMUP_EPOCHS) {
      this.lossBase = this.cumLost / (this.cumTotal + LOSS_PRIOR_DATAGRAMS * this.maxDatagram);
    } else {
      const base = this.lossBase;
      const q = this.target();
      const n = total / this.maxDatagram;
      const sigma = Math.sqrt((Math.max(base, 0.01) * (1 - base)) / n);
      const maxQueueDelay = Math.max(this.epMaxQueueDelay, this.prevEpMaxQueueDelay);
      const overflow = frac - base > Math.max(0.03, 3 * sigma) && maxQueueDelay > 4 * q;
      const congested = overflow || frac > 2 * base + 0.1;
      if (congested && now - this.lastCutAt > this.srtt) {
        const delivered = (this.epAcked * 1000) / dur / (1 - Math.min(base, 0.5));
        this.bandwidth = Math.max(this.bandwidth * 0.5, Math.min(this.bandwidth, delivered));
        this.probeLevel = 0;
        this.lastCutAt = now;
        this.cuts++;
        if (this.phase === 'startup') this.exitStartup();
        this.control(now);
      }
      if (learn) this.lossBase += (frac - base) * (congested ? 1 / 32 : 1 / 8);
    }
    this.lossEpochs++;
    this.epStart = now;
    this.epAcked = 0;
    this.epLost = 0;
    this.prevEpMaxQueueDelay = this.epMaxQueueDelay;
    this.epMaxQueueDelay = 0;
  }
}
