import type { LinkConfig } from '../../sim/config.js';
import { Link } from '../../sim/link.js';

/**
 * One direction of a real transport passed through a simulated `Link` on the real clock: what goes
 * in is delivered (or lost, delayed, duplicated, reordered) by the link's rules, on timers.
 */
export class RealTimeLink {
  private link: Link | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private timerAt = Infinity;

  /** `deliver` gets each datagram out of the link; `now` is the clock (ms). */
  constructor(private readonly deliver: (bytes: Uint8Array) => void, private readonly now: () => number, private readonly seed: number) {}

  /** Impairments from now on (`undefined`: none; what is in flight still arrives). Throws `invalid-config`. */
  configure(config: Partial<LinkConfig> | undefined): void {
    if (config === undefined) {
      this.link = undefined;
      return;
    }
    if (this.link === undefined) this.link = new Link(config, this.seed);
    else this.link.reconfigure(this.now(), config);
  }

  /** Put `bytes` on the link (copied), or deliver them at once when no impairment is set. */
  send(bytes: Uint8Array): void {
    if (this.link === undefined) {
      this.deliver(bytes);
      return;
    }
    this.link.send(this.now(), bytes);
    this.flush();
  }

  private flush(): void {
    const link = this.link;
    if (link === undefined) return;
    const now = this.now();
    for (let b = link.pollDeliver(now); b !== undefined; b = link.pollDeliver(now)) this.deliver(b);
    const next = link.pollTimeout();
    if (next === undefined || next >= this.timerAt) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timerAt = next;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerAt = Infinity;
      this.flush();
    }, Math.max(0, next - now));
  }
}
