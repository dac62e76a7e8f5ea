import { checkConfig } from '../core/errors.js';

/** Largest RTT sample accepted (ms); anything above is treated as garbage and ignored. */
export const MAX_RTT_SAMPLE_MS = 60_000;

/**
 * RFC 6298 smoothed RTT (srtt, rttvar; gains 1/8 and 1/4) plus the minimum seen. Before the first
 * sample the RTT is `initialRttMs` with no variance, so the first resend waits 1.25 × that.
 */
export class RttEstimator {
  private srtt: number;
  private rttvar = 0;
  private min = Infinity;
  private latest: number | undefined;
  private n = 0;

  /** @param initialRttMs RTT assumed before the first sample (ms, > 0); default 100 (the seed's figure). */
  constructor(initialRttMs = 100) {
    checkConfig(Number.isFinite(initialRttMs) && initialRttMs > 0, 'initialRttMs must be a finite number > 0');
    this.srtt = initialRttMs;
  }

  /** Feed one sample (ms). Returns false (and changes nothing) for a sample < 0, ≥ 60 s or not finite. */
  update(sampleMs: number): boolean {
    if (!Number.isFinite(sampleMs) || sampleMs < 0 || sampleMs >= MAX_RTT_SAMPLE_MS) return false;
    if (this.n === 0) {
      this.srtt = sampleMs;
      this.rttvar = sampleMs / 2;
    } else {
      this.rttvar = 0.75 * this.rttvar + 0.25 * Math.abs(this.srtt - sampleMs);
      this.srtt = 0.875 * this.srtt + 0.125 * sampleMs;
    }
    if (sampleMs < this.min) this.min = sampleMs;
    this.latest = sampleMs;
    this.n++;
    return true;
  }

  /** Smoothed RTT (ms); the initial value before any sample. */
  get srttMs(): number {
    return this.srtt;
  }

  /** RTT variation (ms). */
  get rttvarMs(): number {
    return this.rttvar;
  }

  /** Smallest sample seen (ms), or undefined before the first. */
  get minRttMs(): number | undefined {
    return this.n === 0 ? undefined : this.min;
  }

  /** Most recent sample (ms), or undefined. */
  get latestMs(): number | undefined {
    return this.latest;
  }

  /** Samples accepted so far. */
  get samples(): number {
    return this.n;
  }

  /**
   * Earliest a slice may be resent after its last transmission (ms):
   * `max(floorMs, 1.25 × srtt, srtt + 4 × rttvar)`, so never sooner than max(RTT × 1.25, floor).
   */
  resendDelayMs(floorMs: number): number {
    return Math.max(floorMs, 1.25 * this.srtt, this.srtt + 4 * this.rttvar);
  }
}
