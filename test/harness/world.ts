import { checkArg, GamewireError } from '../../src/core/errors.js';
import type { SansIoPeer } from '../../src/core/peer.js';
import { createLinkPair, type LinkConfig, type LinkCounters, type LinkPair } from '../../src/sim/index.js';

/** Direction of traffic: `aToB` carries A's datagrams to B. */
export type Direction = 'aToB' | 'bToA';

/**
 * Called for every datagram a link delivers, before the receiving peer sees it. Mutate `bytes` in
 * place, or return `null` to drop it, a `Uint8Array` to replace it, or an array to deliver several
 * (injection, duplication); `undefined` delivers `bytes` as is.
 */
export type DeliverHook = (
  dir: Direction,
  bytes: Uint8Array,
  now: number,
) => Uint8Array | readonly Uint8Array[] | null | undefined | void;

/** Called for every datagram a peer transmits, before its link sees it; `bytes` is only valid during the call. */
export type TransmitHook = (dir: Direction, bytes: Uint8Array, now: number) => void;

/** Construction options of a `World`. */
export interface WorldOptions {
  /** Seed of both links (each direction derives its own). */
  seed: number;
  /** Impairments of A→B: a config or preset name. Default: perfect link. */
  aToB?: Partial<LinkConfig> | string;
  /** Impairments of B→A. Default: same as `aToB`. */
  bToA?: Partial<LinkConfig> | string;
  /** Size (bytes) of the buffer handed to `pollTransmit`, i.e. the largest datagram a peer may emit. Default 1500. */
  mtu?: number;
  /** Peers, if known at construction; otherwise call `attach`. */
  a?: SansIoPeer;
  b?: SansIoPeer;
  /** Virtual time at start (ms). Default 0. */
  startMs?: number;
  /** Round every event time up to a whole ms (for peers with integer clocks, e.g. KCP). Default false. */
  integerTime?: boolean;
  /** How far (ms) a stuck peer's timer is pushed back after a firing that made no progress. Default 1. */
  stallStepMs?: number;
  /** Timer firings of one peer allowed at one instant before it is pushed back like a stuck peer. Default 10 000. */
  maxFiresPerInstant?: number;
  /** `pollTransmit` calls per drain before the world stops draining that peer for now. Default 1 000 000. */
  maxTransmitsPerDrain?: number;
  /**
   * Deliver every datagram in one reused buffer instead of a fresh copy (no allocation per datagram).
   * Only for peers (and hooks) that copy what they keep: the bytes are overwritten by the next delivery. Default false.
   */
  reuseReceiveBuffer?: boolean;
}

/** Traffic and timer counts of one peer in a `World`. */
export interface PeerStats {
  /** Datagrams the peer returned from `pollTransmit`. */
  datagramsSent: number;
  /** Bytes of those datagrams. */
  bytesSent: number;
  /** Datagrams handed to the peer's `handleDatagram` (after the deliver hook; injections included). */
  datagramsReceived: number;
  /** Bytes of those datagrams. */
  bytesReceived: number;
  /** `handleTimeout` calls. */
  timeoutsFired: number;
  /** Firings that made no progress (or exceeded maxFiresPerInstant), after which the timer was pushed back. */
  stalls: number;
  /** Drains cut short at `maxTransmitsPerDrain`. */
  drainCapHits: number;
  /** Datagrams the deliver hook dropped on their way to this peer. */
  droppedByHook: number;
}

/** Everything a `World` counted. */
export interface WorldStats {
  /** Counters of the A→B link. */
  aToB: LinkCounters;
  /** Counters of the B→A link. */
  bToA: LinkCounters;
  a: PeerStats;
  b: PeerStats;
  /** Steps processed since construction. */
  steps: number;
  /** Current virtual time (ms). */
  now: number;
}

/** Why `runUntil` returned. */
export type RunStopReason = 'pred' | 'deadline' | 'idle' | 'max-steps';

/** Outcome of `runUntil` / `runFor`. */
export interface RunResult {
  /** True when the predicate held. */
  ok: boolean;
  /** Virtual time (ms) at return. */
  now: number;
  /** Steps processed by this call. */
  steps: number;
  reason: RunStopReason;
}

/** Limits of one `runUntil` call. */
export interface RunLimits {
  /** Give up this many ms of virtual time after the call (finite, ≥ 0). */
  maxTimeMs: number;
  /** Give up after this many steps. Default: unlimited. */
  maxSteps?: number;
}

function newPeerStats(): PeerStats {
  return {
    datagramsSent: 0, bytesSent: 0, datagramsReceived: 0, bytesReceived: 0, timeoutsFired: 0, stalls: 0,
    drainCapHits: 0, droppedByHook: 0,
  };
}

const EV_AB = 0;
const EV_BA = 1;
const EV_A = 2;
const EV_B = 3;

/**
 * A deterministic world: two sans-IO peers joined by one seeded `sim/` link per direction, driven
 * by a virtual clock. Each `step()` advances to whichever of link A→B, link B→A, peer A's timer or
 * peer B's timer is due first (ties in that order), processes it, and drains `pollTransmit` of both
 * peers. No wall clock, no sleeps; a run is fully defined by (peers, options, seed).
 */
export class World {
  /** Both links; send into them directly to inject traffic that crosses the impairments. */
  readonly links: LinkPair;
  /** Inspect, mutate, drop or multiply datagrams as they are delivered. */
  onDeliver: DeliverHook | undefined;
  /** Inspect datagrams as peers transmit them. */
  onTransmit: TransmitHook | undefined;

  private peerA: SansIoPeer | undefined;
  private peerB: SansIoPeer | undefined;
  private clock: number;
  private readonly out: Uint8Array;
  private rx: Uint8Array | undefined;
  private readonly integerTime: boolean;
  private readonly stallStepMs: number;
  private readonly maxFiresPerInstant: number;
  private readonly maxTransmitsPerDrain: number;
  private readonly statsA = newPeerStats();
  private readonly statsB = newPeerStats();
  private stepCount = 0;
  // Per peer (index 0 = A, 1 = B): timer pushed back to at least this time after a stall.
  private readonly deferUntil = [-Infinity, -Infinity];
  private readonly lastFireAt = [NaN, NaN];
  private readonly firesAtInstant = [0, 0];
  private nextTime = 0;

  constructor(opts: WorldOptions) {
    checkArg(typeof opts === 'object' && opts !== null, 'World options required');
    const mtu = opts.mtu ?? 1500;
    checkArg(Number.isInteger(mtu) && mtu >= 1, 'mtu must be an integer ≥ 1');
    const start = opts.startMs ?? 0;
    checkArg(Number.isFinite(start), 'startMs must be finite');
    this.stallStepMs = opts.stallStepMs ?? 1;
    checkArg(Number.isFinite(this.stallStepMs) && this.stallStepMs > 0, 'stallStepMs must be > 0');
    this.maxFiresPerInstant = opts.maxFiresPerInstant ?? 10_000;
    checkArg(Number.isInteger(this.maxFiresPerInstant) && this.maxFiresPerInstant >= 1, 'maxFiresPerInstant must be an integer ≥ 1');
    this.maxTransmitsPerDrain = opts.maxTransmitsPerDrain ?? 1_000_000;
    checkArg(Number.isInteger(this.maxTransmitsPerDrain) && this.maxTransmitsPerDrain >= 1, 'maxTransmitsPerDrain must be an integer ≥ 1');
    const ab = opts.aToB ?? {};
    this.links = createLinkPair(ab, opts.seed, opts.bToA ?? ab);
    this.out = new Uint8Array(mtu);
    if (opts.reuseReceiveBuffer === true) this.rx = new Uint8Array(mtu);
    this.clock = start;
    this.integerTime = opts.integerTime ?? false;
    if (this.integerTime) this.clock = Math.ceil(start);
    if (opts.a !== undefined || opts.b !== undefined) {
      checkArg(opts.a !== undefined && opts.b !== undefined, 'give both peers a and b, or neither');
      this.attach(opts.a!, opts.b!);
    }
  }

  /** Set the two peers (once). */
  attach(a: SansIoPeer, b: SansIoPeer): void {
    if (this.peerA !== undefined) throw new GamewireError('invalid-state', 'peers already attached');
    checkArg(a !== undefined && b !== undefined && a !== b, 'two distinct peers required');
    this.peerA = a;
    this.peerB = b;
  }

  /** Peer A. Throws `invalid-state` before `attach`. */
  get a(): SansIoPeer {
    if (this.peerA === undefined) throw new GamewireError('invalid-state', 'no peers attached');
    return this.peerA;
  }

  /** Peer B. Throws `invalid-state` before `attach`. */
  get b(): SansIoPeer {
    if (this.peerB === undefined) throw new GamewireError('invalid-state', 'no peers attached');
    return this.peerB;
  }

  /** Current virtual time (ms). */
  get now(): number {
    return this.clock;
  }

  /** A snapshot of all counters. */
  get stats(): WorldStats {
    return {
      aToB: this.links.aToB.counters(),
      bToA: this.links.bToA.counters(),
      a: { ...this.statsA },
      b: { ...this.statsB },
      steps: this.stepCount,
      now: this.clock,
    };
  }

  /** Drain `pollTransmit` of both peers into their links at the current time (call after issuing commands). */
  drain(): void {
    this.drainPeer(0);
    this.drainPeer(1);
  }

  /**
   * Process the next due event (drain first, so commands issued since the last step go out).
   * Returns false, without advancing time, when nothing at all is pending.
   */
  step(): boolean {
    this.drain();
    const ev = this.nextEvent();
    if (ev < 0) return false;
    this.process(ev);
    return true;
  }

  /**
   * Step until `pred()` holds, `limits.maxTimeMs` of virtual time pass (events due after the
   * deadline are not processed and the clock stops at the deadline), `maxSteps` steps run, or
   * nothing is pending. `pred` is checked before the first step and after each one.
   */
  runUntil(pred: () => boolean, limits: RunLimits): RunResult {
    checkArg(typeof limits === 'object' && limits !== null && Number.isFinite(limits.maxTimeMs) && limits.maxTimeMs >= 0,
      'maxTimeMs must be a finite number ≥ 0');
    const maxSteps = limits.maxSteps ?? Infinity;
    checkArg(maxSteps >= 0, 'maxSteps must be ≥ 0');
    const deadline = this.clock + limits.maxTimeMs;
    let steps = 0;
    for (;;) {
      if (pred()) return { ok: true, now: this.clock, steps, reason: 'pred' };
      if (steps >= maxSteps) return { ok: false, now: this.clock, steps, reason: 'max-steps' };
      this.drain();
      const ev = this.nextEvent();
      if (ev < 0) return { ok: false, now: this.clock, steps, reason: 'idle' };
      if (this.nextTime > deadline) {
        this.clock = Math.max(this.clock, deadline);
        return { ok: false, now: this.clock, steps, reason: 'deadline' };
      }
      this.process(ev);
      steps++;
    }
  }

  /** Process every event due within the next `durationMs` and leave the clock exactly `durationMs` later. */
  runFor(durationMs: number, maxSteps?: number): RunResult {
    const deadline = this.clock + durationMs;
    const r = this.runUntil(() => false, { maxTimeMs: durationMs, maxSteps });
    if (r.reason === 'idle') this.clock = Math.max(this.clock, deadline);
    return { ...r, now: this.clock };
  }

  /** Hand `bytes` straight to the peer that `dir` leads to, now, bypassing the link and hooks; then drain. */
  inject(dir: Direction, bytes: Uint8Array): void {
    checkArg(bytes instanceof Uint8Array, 'bytes must be a Uint8Array');
    const to = dir === 'aToB' ? 1 : 0;
    this.receive(to, bytes);
    this.drain();
  }

  /** Returns the event index due next (EV_*) and sets `nextTime`, or -1 when idle. */
  private nextEvent(): number {
    let best = -1;
    let t = Infinity;
    const ab = this.links.aToB.pollTimeout();
    if (ab !== undefined && ab < t) { t = ab; best = EV_AB; }
    const ba = this.links.bToA.pollTimeout();
    if (ba !== undefined && ba < t) { t = ba; best = EV_BA; }
    const ta = this.peerTimeout(0);
    if (ta !== undefined && ta < t) { t = ta; best = EV_A; }
    const tb = this.peerTimeout(1);
    if (tb !== undefined && tb < t) { t = tb; best = EV_B; }
    if (best >= 0) {
      if (this.integerTime) t = Math.ceil(t);
      this.nextTime = t < this.clock ? this.clock : t;
    }
    return best;
  }

  private peerTimeout(i: number): number | undefined {
    const p = i === 0 ? this.peerA : this.peerB;
    if (p === undefined) return undefined;
    const t = p.pollTimeout();
    if (t === undefined) return undefined;
    if (typeof t !== 'number' || Number.isNaN(t)) {
      throw new GamewireError('invalid-state', `peer ${i === 0 ? 'A' : 'B'} pollTimeout() returned ${String(t)}`);
    }
    return t < this.deferUntil[i] ? this.deferUntil[i] : t;
  }

  private process(ev: number): void {
    this.clock = this.nextTime;
    this.stepCount++;
    if (ev === EV_AB || ev === EV_BA) {
      const link = ev === EV_AB ? this.links.aToB : this.links.bToA;
      let bytes: Uint8Array;
      if (this.rx === undefined) {
        bytes = link.pollDeliver(this.clock)!;
      } else {
        const need = link.peekLength()!;
        if (need > this.rx.length) this.rx = new Uint8Array(need);
        bytes = this.rx.subarray(0, link.pollDeliverInto(this.clock, this.rx));
      }
      const to = ev === EV_AB ? 1 : 0;
      const hook = this.onDeliver;
      if (hook === undefined) {
        this.receive(to, bytes);
      } else {
        const r = hook(ev === EV_AB ? 'aToB' : 'bToA', bytes, this.clock);
        if (r === null) (to === 0 ? this.statsA : this.statsB).droppedByHook++;
        else if (r === undefined) this.receive(to, bytes);
        else if (r instanceof Uint8Array) this.receive(to, r);
        else for (const d of r) this.receive(to, d);
      }
      this.drain();
    } else {
      this.fire(ev === EV_A ? 0 : 1);
    }
  }

  private receive(to: number, bytes: Uint8Array): void {
    const s = to === 0 ? this.statsA : this.statsB;
    s.datagramsReceived++;
    s.bytesReceived += bytes.length;
    (to === 0 ? this.a : this.b).handleDatagram(this.clock, bytes);
  }

  private fire(i: number): void {
    const p = i === 0 ? this.a : this.b;
    const s = i === 0 ? this.statsA : this.statsB;
    const now = this.clock;
    if (this.lastFireAt[i] === now) this.firesAtInstant[i]++;
    else { this.lastFireAt[i] = now; this.firesAtInstant[i] = 1; }
    const sentBefore = s.datagramsSent;
    s.timeoutsFired++;
    p.handleTimeout(now);
    this.drain();
    const t = p.pollTimeout();
    const stuck = t !== undefined && t <= now && s.datagramsSent === sentBefore;
    if (stuck || this.firesAtInstant[i] >= this.maxFiresPerInstant) {
      s.stalls++;
      this.deferUntil[i] = now + this.stallStepMs;
    } else {
      this.deferUntil[i] = -Infinity;
    }
  }

  private drainPeer(i: number): void {
    const p = i === 0 ? this.peerA : this.peerB;
    if (p === undefined) return;
    const s = i === 0 ? this.statsA : this.statsB;
    const link = i === 0 ? this.links.aToB : this.links.bToA;
    const dir: Direction = i === 0 ? 'aToB' : 'bToA';
    const out = this.out;
    for (let n = 0; n < this.maxTransmitsPerDrain; n++) {
      const len = p.pollTransmit(this.clock, out);
      if (len === undefined) return;
      if (!Number.isInteger(len) || len < 0 || len > out.length) {
        throw new GamewireError('invalid-state', `peer ${i === 0 ? 'A' : 'B'} pollTransmit returned length ${String(len)} (buffer ${out.length})`);
      }
      const view = out.subarray(0, len);
      s.datagramsSent++;
      s.bytesSent += len;
      this.onTransmit?.(dir, view, this.clock);
      link.send(this.clock, view);
    }
    s.drainCapHits++;
  }
}
