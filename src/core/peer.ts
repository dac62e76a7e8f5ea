/**
 * The drive contract shared by every point-to-point sans-IO protocol object (chunk sender/receiver,
 * KCP session, …). The caller owns the clock and the socket:
 * - feed inputs with `handleDatagram(now, bytes)` and `handleTimeout(now)` (when `now ≥ pollTimeout()`);
 * - after any input or command, drain `pollTransmit(now, out)` until it returns `undefined`;
 * - `now` is monotonic milliseconds chosen by the caller (any origin; fractions allowed).
 */
export interface SansIoPeer {
  /**
   * Process one datagram received from the peer at `now` (ms). Never throws on bad bytes. `bytes` is
   * only valid during the call (callers reuse receive buffers): copy whatever must be kept.
   */
  handleDatagram(now: number, bytes: Uint8Array): void;
  /** Run timers due at or before `now` (ms). */
  handleTimeout(now: number): void;
  /**
   * Write the next datagram to send into `out` (whose length is the largest datagram the caller
   * accepts) and return its length in bytes, or `undefined` when nothing is due now.
   */
  pollTransmit(now: number, out: Uint8Array): number | undefined;
  /** Absolute time (ms) at which `handleTimeout` must next be called, or `undefined` if none. */
  pollTimeout(): number | undefined;
}
