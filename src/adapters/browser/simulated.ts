import type { Address, Endpoint, Transmit } from '../../core/endpoint.js';
import type { LinkConfig } from '../../sim/config.js';
import { Link } from '../../sim/link.js';

/**
 * An endpoint with both directions of its one remote passed through simulated `Link`s on the clock of
 * whoever drives it: sans-IO like what it wraps, so the connection's one `DriveLoop` (and its one
 * timer) serves the links too: `pollTimeout()` is the earliest of the inner deadline and both links'
 * next deliveries. With no impairment set, datagrams go straight through, not copied.
 */
export class SimulatedEndpoint<E> implements Endpoint<E> {
  private up: Link | undefined;
  private down: Link | undefined;
  private impaired = false;
  // The one remote: where what the up link carries goes, where what the down link carries came from.
  private upTo: Address = '';
  private downFrom: Address = '';
  private upScratch: Uint8Array | undefined;

  /** `inner` is the wrapped endpoint; `seed` seeds the links (`seed` up, `seed + 1` down). */
  constructor(private readonly inner: Endpoint<E>, private readonly seed: number) {}

  /**
   * Impairments of both directions from `now` (ms) on: merged onto the settings given so far, or
   * fresh links once none were set; `undefined`: none (what is in flight still arrives, unless
   * impairments are set again first). Throws `invalid-config`. The driver must drain after it: the
   * next delivery may have moved.
   */
  configure(now: number, config: Partial<LinkConfig> | undefined): void {
    if (config === undefined) {
      this.impaired = false;
      return;
    }
    if (!this.impaired || this.up === undefined || this.down === undefined) {
      const up = new Link(config, this.seed);
      this.down = new Link(config, this.seed + 1);
      this.up = up;
    } else {
      this.up.reconfigure(now, config);
      this.down.reconfigure(now, config);
    }
    this.impaired = true;
  }

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.deliverDown(now);
    if (!this.impaired) {
      this.inner.handleDatagram(now, from, bytes);
      return;
    }
    this.downFrom = from;
    this.down!.send(now, bytes);
  }

  handleTimeout(now: number): void {
    this.deliverDown(now);
    const due = this.inner.pollTimeout();
    if (due !== undefined && due <= now) this.inner.handleTimeout(now);
  }

  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    this.deliverDown(now);
    const up = this.up;
    if (up !== undefined) {
      if (this.impaired) {
        const scratch = (this.upScratch ??= new Uint8Array(out.length));
        for (let t = this.inner.pollTransmit(now, scratch); t !== undefined; t = this.inner.pollTransmit(now, scratch)) {
          this.upTo = t.to;
          up.send(now, scratch.subarray(0, t.length));
        }
      }
      const n = up.pollDeliverInto(now, out);
      if (n !== undefined) return { length: n, to: this.upTo };
    }
    if (!this.impaired) this.dropIdleLinks();
    return this.impaired ? undefined : this.inner.pollTransmit(now, out);
  }

  pollTimeout(): number | undefined {
    let t = this.inner.pollTimeout();
    const u = this.up?.pollTimeout();
    if (u !== undefined && (t === undefined || u < t)) t = u;
    const d = this.down?.pollTimeout();
    if (d !== undefined && (t === undefined || d < t)) t = d;
    return t;
  }

  pollEvent(): E | undefined {
    return this.inner.pollEvent();
  }

  setWaker(waker: (() => void) | undefined): void {
    this.inner.setWaker?.(waker);
  }

  private deliverDown(now: number): void {
    const down = this.down;
    if (down === undefined) return;
    for (let b = down.pollDeliver(now); b !== undefined; b = down.pollDeliver(now)) this.inner.handleDatagram(now, this.downFrom, b);
  }

  /** Once impairment is off and both links are empty, forget them (the next `configure` starts afresh). */
  private dropIdleLinks(): void {
    if (this.up?.pollTimeout() === undefined && this.down?.pollTimeout() === undefined) {
      this.up = undefined;
      this.down = undefined;
    }
  }
}
