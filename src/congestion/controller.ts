/**
 * A send-rate controller: decides how fast a sender may put bytes on the wire. Shared by `chunk/`
 * (and later `channels/`). Sans-IO: every method takes `now` in ms; nothing reads a clock.
 *
 * The sender calls `onSent` for every datagram it writes (wire bytes, including 28 bytes of UDP/IPv4
 * overhead), `onAck` whenever an ack newly confirms delivered bytes, with the RTT sample it measured
 * (if any), and `onLoss` when it concludes bytes were lost. It may send a datagram of `n` bytes when
 * its pacing budget (refilled at `pacingRate(now)` bytes/s) covers `n`.
 */
export interface RateController {
  /** Current pacing rate in bytes per second (wire bytes, including UDP/IP overhead). */
  pacingRate(now: number): number;
  /** A datagram of `wireBytes` was sent at `now`. */
  onSent(now: number, wireBytes: number): void;
  /**
   * An ack at `now` newly confirmed `ackedWireBytes`; `rttMs` is a fresh RTT sample in ms (undefined
   * when the ack could not be timed unambiguously).
   */
  onAck(now: number, ackedWireBytes: number, rttMs: number | undefined): void;
  /** The sender concluded at `now` that `lostWireBytes` were lost (a resend became due). */
  onLoss(now: number, lostWireBytes: number): void;
}
