import { checkConfig } from '../core/errors.js';
import type { RateController } from './controller.js';

/**
 * Default pacing rate of `FixedRate`: 250 000 bytes/s (2 Mbit/s of wire bytes). Above the seed's
 * "aggressive" 1 Mbit/s (256 KiB in ~1.1 s) yet under the uplink of most home connections, so a
 * block does not flood the path that game traffic shares. Raise it when you know the path is faster.
 */
export const DEFAULT_RATE_BYTES_PER_SEC = 250_000;

/**
 * The seed's fixed-rate sender ("take your target bandwidth … add it multiplied by dt to an
 * accumulator"): `pacingRate` is constant and feedback is ignored by design (it is only totalled,
 * for inspection). The accumulator itself is the path's `PacingBudget`, refilled at this rate.
 */
export class FixedRate implements RateController {
  /** The constant pacing rate, bytes/s of wire bytes. */
  readonly rateBytesPerSec: number;
  private sent = 0;
  private acked = 0;
  private lost = 0;

  /** @param rateBytesPerSec wire bytes per second (finite, > 0); default `DEFAULT_RATE_BYTES_PER_SEC`. */
  constructor(rateBytesPerSec: number = DEFAULT_RATE_BYTES_PER_SEC) {
    checkConfig(typeof rateBytesPerSec === 'number' && Number.isFinite(rateBytesPerSec) && rateBytesPerSec > 0,
      'rateBytesPerSec must be a finite number > 0');
    this.rateBytesPerSec = rateBytesPerSec;
  }

  /** Always `rateBytesPerSec`. */
  pacingRate(_now: number): number {
    return this.rateBytesPerSec;
  }

  /** Totals `wireBytes` into `sentBytes`; the rate does not change. */
  onSent(_now: number, wireBytes: number): void {
    this.sent += wireBytes;
  }

  /** Totals `ackedWireBytes` into `ackedBytes`; the rate does not change. */
  onAck(_now: number, ackedWireBytes: number, _rttMs: number | undefined): void {
    this.acked += ackedWireBytes;
  }

  /** Totals `lostWireBytes` into `lostBytes`; the rate does not change. */
  onLoss(_now: number, lostWireBytes: number): void {
    this.lost += lostWireBytes;
  }

  /** Wire bytes reported sent so far. */
  get sentBytes(): number {
    return this.sent;
  }

  /** Wire bytes reported acked so far. */
  get ackedBytes(): number {
    return this.acked;
  }

  /** Wire bytes reported lost so far. */
  get lostBytes(): number {
    return this.lost;
  }
}
