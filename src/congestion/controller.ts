import type { RttEstimator } from './rtt.js';

/**
 * A send-rate controller: decides how fast a path may put bytes on the wire. One per `Path`, shared
 * by every lane on it (message lanes and the block lane). Sans-IO: every method takes `now` in ms; nothing
 * reads a clock.
 *
 * The path calls `onSent` for every datagram written (wire bytes, including the transport's
 * per-datagram overhead), `onAck` whenever an ack newly confirms delivered bytes or carries an RTT
 * sample, and `onLoss` when a lane concludes bytes were lost. A datagram of `n` wire bytes may go
 * when the path's pacing budget (refilled at `pacingRate(now)` bytes/s) covers `n`.
 */
export interface RateController {
  /** Current pacing rate in bytes per second (wire bytes, including the per-datagram overhead). */
  pacingRate(now: number): number;
  /** A datagram of `wireBytes` was sent at `now`. */
  onSent(now: number, wireBytes: number): void;
  /**
   * An ack at `now` newly confirmed `ackedWireBytes`. `rttMs` is the fresh RTT sample (ms) it
   * carried, already fed to `rtt`, or undefined. `rtt` is the path's estimator, the one RTT estimate
   * a controller reads (srtt, min RTT, jitter); a controller may re-base its minimum (`rebaseMin`).
   */
  onAck(now: number, ackedWireBytes: number, rttMs: number | undefined, rtt: RttEstimator): void;
  /** A lane concluded at `now` that `lostWireBytes` were lost (a resend became due). */
  onLoss(now: number, lostWireBytes: number): void;
}
