import type { Address, Endpoint, Transmit } from './endpoint.js';

/**
 * The single-remote special case of `Endpoint` (chunk sender/receiver, KCP session, …): no addresses,
 * because there is only one remote. The caller owns the clock and the socket:
 * - feed inputs with `handleDatagram(now, bytes)` and `handleTimeout(now)` (when `now ≥ pollTimeout()`);
 * - after any input or command, drain `pollTransmit(now, out)` and `pollEvent()` until they return `undefined`;
 * - `now` is monotonic milliseconds chosen by the caller (any origin; fractions allowed).
 */
export interface SansIoPeer<E = unknown> {
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
  /** The next event for the user, or `undefined`. */
  pollEvent(): E | undefined;
  /** Optional wake hook for drivers, as `Endpoint.setWaker`. */
  setWaker?(waker: (() => void) | undefined): void;
}

/**
 * A `SansIoPeer` seen as an `Endpoint` with one remote: its datagrams go to `remote`, and datagrams
 * from any other address are dropped and counted in `foreignDatagrams`. `remote` may be left
 * `undefined` and set later (an adapter latching the first sender): until then nothing is sent.
 */
export class PeerEndpoint<E = unknown> implements Endpoint<E> {
  /** @internal read with `counters()`. */
  foreignDatagrams = 0;
  private readonly transmit: Transmit;

  /**
   * @param peer the single-remote object to wrap
   * @param remote the only address it talks to
   */
  constructor(
    readonly peer: SansIoPeer<E>,
    public remote: Address | undefined,
  ) {
    this.transmit = { length: 0, to: remote ?? '' };
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    if (from !== this.remote) {
      this.foreignDatagrams++;
      return;
    }
    this.peer.handleDatagram(now, bytes);
  }

  handleTimeout(now: number): void {
    this.peer.handleTimeout(now);
  }

  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    const remote = this.remote;
    if (remote === undefined) return undefined;
    const length = this.peer.pollTransmit(now, out);
    if (length === undefined) return undefined;
    this.transmit.length = length;
    this.transmit.to = remote;
    return this.transmit;
  }

  pollTimeout(): number | undefined {
    return this.peer.pollTimeout();
  }

  pollEvent(): E | undefined {
    return this.peer.pollEvent();
  }

  /** A copy of the counters: `foreignDatagrams`, datagrams dropped because they came from an address other than `remote`. */
  counters(): { foreignDatagrams: number } {
    return { foreignDatagrams: this.foreignDatagrams };
  }

  setWaker(waker: (() => void) | undefined): void {
    this.peer.setWaker?.(waker);
  }
}
