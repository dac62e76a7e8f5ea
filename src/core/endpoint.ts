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

/**
 * The transport prefix of `address`, the one parser of it: for a remote of another transport carried
 * beside UDP on the same endpoint (`"webrtc:17"`), its name and colon (`"webrtc:"`); `""` for any other
 * address (a UDP address key `"1.2.3.4:5"` or `"[::1]:5"`, a simulated host's name without a colon). A
 * prefix is a lowercase letter, then lowercase letters or digits, then `:`. `UdpDriver.attachTransport`
 * routes by it and the netcode `Server` picks a client's carry by it (`registerTransport`).
 */
export function transportOf(address: Address): string {
  const first = address.charCodeAt(0);
  if (first < 97 || first > 122) return ''; // UDP keys start with a digit or '['
  for (let i = 1; i < address.length; i++) {
    const c = address.charCodeAt(i);
    if (c === 58) return address.slice(0, i + 1);
    if ((c < 97 || c > 122) && (c < 48 || c > 57)) return '';
  }
  return '';
}

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
