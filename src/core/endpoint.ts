/**
 * The addressed drive contract: one sans-IO object that talks to any number of remotes (a server, a
 * host of many peers, a test world's node). Addresses are opaque strings to the core: an adapter maps
 * them to sockets (`"127.0.0.1:9000"`), data channels or simulated hosts, and must give one remote
 * the same string every time.
 *
 * The caller owns the clock and the socket:
 * - feed inputs with `handleDatagram(now, from, bytes)` and `handleTimeout(now)` (when `now ≥ pollTimeout()`);
 * - after any input or command, drain `pollTransmit(now, out)` and `pollEvent()` until they return `undefined`;
 * - `now` is monotonic milliseconds chosen by the caller (any origin; fractions allowed).
 */
export type Address = string;

/** One datagram written by `pollTransmit`: its length (bytes, in `out`) and where it goes. */
export interface Transmit {
  /** Bytes written at the start of the caller's `out` buffer. */
  length: number;
  /** Destination. */
  to: Address;
}

/** A sans-IO object with addresses: the contract every host, server and world node implements. */
export interface Endpoint<E = unknown> {
  /**
   * Process one datagram that arrived from `from` at `now` (ms). Never throws on bad bytes. `bytes` is
   * only valid during the call (callers reuse receive buffers): copy whatever must be kept.
   */
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void;
  /** Run timers due at or before `now` (ms). */
  handleTimeout(now: number): void;
  /**
   * Write the next datagram into `out` (whose length is the largest datagram the caller accepts) and
   * return its length and destination, or `undefined` when nothing is due now. The returned object may
   * be reused by the next call: read it before polling again.
   */
  pollTransmit(now: number, out: Uint8Array): Transmit | undefined;
  /** Absolute time (ms) at which `handleTimeout` must next be called, or `undefined` if none. */
  pollTimeout(): number | undefined;
  /** The next event for the user, or `undefined`. */
  pollEvent(): E | undefined;
  /**
   * Optional wake hook. A driver registers `waker` (`undefined` removes it); the object calls it,
   * synchronously and cheaply, whenever a command (send, cancel, close…) leaves work for the driver,
   * so the user never has to poke the driver after a command. Calling it is a notification only.
   */
  setWaker?(waker: (() => void) | undefined): void;
}
