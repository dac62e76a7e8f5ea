import { checkConfig } from '../core/errors.js';

/** Largest RTT sample accepted (ms); anything above is treated as garbage and ignored. */
export const MAX_RTT_SAMPLE_MS = 60_000;

/** Samples over which the jitter estimate is a plain average before it becomes an EWMA. */
const JITTER_PLAIN_SAMPLES = 16;

/**
 * The RTT estimate of one path, shared by every lane and by the rate controller: RFC 6298 smoothed
 * RTT (srtt, rttvar; gains 1/8 and 1/4) and retransmission delay, the minimum RTT (the path's base
 * delay, re-based by the controller when the path gets longer), the latest sample, and jitter (RFC
 * 3550 style: the mean absolute change between consecutive samples). Before the first sample the
 * RTT is `initialRttMs` with no variance, so the first resend waits 1.25 × that. All times in ms.
 */
export class RttEstimator {
  private srtt: number;
  private rttvar = 0;
  private min = Infinity;
  private minAt = 0;
  private latest: number | undefined;
  private jitter = 0;
  private n = 0;

  /** @param initialRttMs RTT assumed before the first sample (ms, > 0); default 100 (the seed's figure). */
  constructor(initialRttMs = 100) {
    checkConfig(Number.isFinite(initialRttMs) && initialRttMs > 0, 'initialRttMs must be a finite number > 0');
    this.srtt = initialRttMs;
  }

  /**
   * Feed one sample `sampleMs` (ack delay already removed) measured at `now` (ms). Returns false
   * (and changes nothing) for a sample < 0, ≥ 60 s or not finite.
   */
  update(now: number, sampleMs: number): boolean {
    if (!Number.isFinite(sampleMs) || sampleMs < 0 || sampleMs >= MAX_RTT_SAMPLE_MS) return false;
    if (this.n === 0) {
      this.srtt = sampleMs;
      this.rttvar = sampleMs / 2;
    } else {
      this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - sampleMs);
      this.srtt = 0.875 * this.srtt + 0.125 * sampleMs;
      this.jitter += (Math.abs(sampleMs - this.latest!) - this.jitter) / Math.min(JITTER_PLAIN_SAMPLES, this.n);
    }
    if (sampleMs < this.min) {
      this.min = sampleMs;
      this.minAt = now;
    }
    this.latest = sampleMs;
    this.n++;
    return true;
  }

  /**
   * Replace the minimum RTT by `minMs`, as measured at `now` (ms): the path got longer (a route
   * change) and the old minimum no longer exists. Smaller samples lower it again as usual.
   */
  rebaseMin(now: number, minMs: number): void {
    if (this.n === 0 || !Number.isFinite(minMs) || minMs < 0 || minMs >= MAX_RTT_SAMPLE_MS) return;
    this.min = minMs;
    this.minAt = now;
  }

  /** Smoothed RTT (ms); the initial value before any sample. */
  get srttMs(): number {
    return this.srtt;
  }

  /** RTT variation (ms). */
  get rttvarMs(): number {
    return this.rttvar;
  }

  /** Smallest sample since the first one or the last `rebaseMin` (ms), or undefined before the first. */
  get minRttMs(): number | undefined {
    return this.n === 0 ? undefined : this.min;
  }

  /** When the current minimum was measured (ms), or undefined before the first sample. */
  get minRttAtMs(): number | undefined {
    return this.n === 0 ? undefined : this.minAt;
  }

  /** Most recent sample (ms), or undefined. */
  get latestMs(): number | undefined {
    return this.latest;
  }

  /**
   * Jitter (ms): mean absolute difference between consecutive samples, a plain average over the
   * first 16 differences, then an EWMA with gain 1/16 (RFC 3550 §6.4.1). 0 before two samples.
   */
  get jitterMs(): number {
    return this.jitter;
  }

  /** Samples accepted so far. */
  get samples(): number {
    return this.n;
  }

  /**
   * Earliest a datagram may be resent after its last transmission (ms):
   * `max(floorMs, 1.25 × srtt, srtt + 4 × rttvar)`, so never sooner than max(RTT × 1.25, floor).
   */
  resendDelayMs(floorMs: number): number {
    return Math.max(floorMs, 1.25 * this.srtt, this.srtt + 4 * this.rttvar);
  }
}
