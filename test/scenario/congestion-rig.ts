import { ChunkReceiver, ChunkSender, type ChunkSenderOptions } from '../../src/chunk/index.js';
import type { Address, Endpoint, Transmit } from '../../src/core/endpoint.js';
import type { LinkConfig } from '../../src/sim/index.js';
import { World } from '../../src/sim/world.js';

// Congestion scenarios on the N-peer simulator world: chunk transfers (default sender, so the default
// AdaptiveRate) and constant-rate competitors over one bottleneck whose links change mid-run.

/** Wire bytes of one full slice datagram (1200 bytes + 28 of UDP/IPv4). */
export const SLICE_WIRE = 1228;

/** A chunk transfer in a world: sender at `s<i>`, receiver at `r<i>`, goodput sampled every tick. */
export interface Flow {
  sender: ChunkSender;
  receiver: ChunkReceiver;
  from: Address;
  to: Address;
  /** Slices the receiver had accepted at each tick (index k: time k × tickMs). */
  accepted: number[];
  /** Virtual time (ms) the last block was delivered to the receiver, or undefined. */
  doneAt: number | undefined;
  /** Blocks still to queue (kept topped up to two in flight, so a long transfer needs no huge block). */
  left: number;
  block: Uint8Array;
  started: boolean;
}

/** Sends `bytes`-byte datagrams to `to` every `intervalMs` from `startMs`; ignores what it receives. */
export class ConstantRate implements Endpoint {
  private next: number;
  private readonly t: Transmit;

  constructor(to: Address, private readonly bytes: number, private readonly intervalMs: number, startMs = 0) {
    this.next = startMs;
    this.t = { length: bytes, to };
  }

  handleDatagram(): void {}
  handleTimeout(): void {}
  pollTimeout(): number | undefined {
    return this.next;
  }
  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    if (now < this.next) return undefined;
    this.next += this.intervalMs;
    out.fill(0, 0, this.bytes);
    return this.t;
  }
  pollEvent(): undefined {
    return undefined;
  }
}

/** Takes datagrams and does nothing. */
export class Sink implements Endpoint {
  handleDatagram(): void {}
  handleTimeout(): void {}
  pollTimeout(): undefined {
    return undefined;
  }
  pollTransmit(): undefined {
    return undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
}

/** A world sampled every `tickMs` (flows' accepted slices), for windowed utilisation checks. */
export class Scene {
  readonly world: World;
  readonly flows: Flow[] = [];
  readonly tickMs: number;
  private ticks = 0;

  constructor(seed: number, opts: { tickMs?: number; bottlenecks?: Record<string, Partial<LinkConfig>> } = {}) {
    this.world = new World({ seed, bottlenecks: opts.bottlenecks, reuseReceiveBuffer: true });
    this.tickMs = opts.tickMs ?? 100;
    const tick = (): void => {
      for (const f of this.flows) {
        while (f.accepted.length < this.ticks) f.accepted.push(f.accepted.length > 0 ? f.accepted[f.accepted.length - 1] : 0);
        f.accepted.push(f.receiver.counters().slicesAccepted);
      }
      this.ticks++;
      this.world.at(this.ticks * this.tickMs, tick);
    };
    this.world.at(0, tick);
  }

  /**
   * A transfer of `blocks` blocks of `bytes` bytes (default one) starting at `startMs`, over `forward`
   * (A→B) and `back` (B→A) links, optionally crossing the shared bottleneck `via` on the way forward.
   */
  flow(opts: {
    bytes: number; blocks?: number; startMs?: number; forward: Partial<LinkConfig>; back: Partial<LinkConfig>; via?: string;
    sender?: ChunkSenderOptions;
  }): Flow {
    const i = this.flows.length;
    const from = `s${i}`;
    const to = `r${i}`;
    const sender = new ChunkSender({ sessionId: 0x5ce00000 + i, ...opts.sender });
    const receiver = new ChunkReceiver({ maxBlockBytes: opts.bytes });
    const f: Flow = {
      sender, receiver, from, to, accepted: [], doneAt: undefined, left: opts.blocks ?? 1, block: new Uint8Array(opts.bytes), started: false,
    };
    this.world.route(from, to, { link: opts.forward, via: opts.via });
    this.world.route(to, from, { link: opts.back });
    this.world.addPeer(from, sender, to);
    this.world.addPeer(to, receiver, from);
    this.world.at(opts.startMs ?? 0, () => {
      f.started = true;
      this.topUp(f);
    });
    this.flows.push(f);
    return f;
  }

  private topUp(f: Flow): void {
    while (f.started && f.left > 0 && f.sender.progress(this.world.now).queuedBlocks < 2) {
      f.sender.sendBlock(f.block);
      f.left--;
    }
  }

  /** Run until `untilMs` (virtual), draining events so nothing piles up. */
  run(untilMs: number): void {
    const eps = this.world.addresses.map((a) => this.world.endpoint(a));
    this.world.runUntil(() => {
      for (const ep of eps) while (ep.pollEvent() !== undefined);
      for (const f of this.flows) {
        this.topUp(f);
        if (f.doneAt === undefined && f.left === 0 && f.sender.progress(this.world.now).queuedBlocks === 0) f.doneAt = this.world.now;
      }
      return this.world.now >= untilMs;
    }, { maxTimeMs: untilMs - this.world.now });
  }

  /** Goodput of `f` over [fromMs, toMs) in wire bits/s (new slices × 1228 bytes). */
  rate(f: Flow, fromMs: number, toMs: number): number {
    const a = Math.round(fromMs / this.tickMs);
    const b = Math.round(toMs / this.tickMs);
    const at = (k: number): number => f.accepted[Math.min(k, f.accepted.length - 1)] ?? 0;
    return ((at(b) - at(a)) * SLICE_WIRE * 8000) / (toMs - fromMs);
  }
}

/**
 * First time (ms, a window end) from which every `windowMs` window of `f` ending in (t, endMs] has a
 * goodput ≥ `share` × `bitsPerSec`; undefined if the last window is below.
 */
export function recoveredAt(s: Scene, f: Flow, bitsPerSec: number, share: number, fromMs: number, endMs: number, windowMs = 500): number | undefined {
  let ok: number | undefined;
  for (let t = fromMs + windowMs; t <= endMs; t += s.tickMs) {
    if (s.rate(f, t - windowMs, t) >= share * bitsPerSec) ok ??= t;
    else ok = undefined;
  }
  return ok;
}
