import { checkArg, GamewireError } from '../core/errors.js';
import type { SansIoPeer } from '../core/peer.js';
import type { LinkCounters } from './link.js';
import { deriveSeed } from './link.js';
import type { LinkPair } from './pair.js';
import { type LinkSpec, newPeerStats, type PeerStats, type RunLimits, type RunResult, World } from './world.js';

/** Direction of traffic in a `PairWorld`: `aToB` carries A's datagrams to B. */
export type Direction = 'aToB' | 'bToA';

/** `PairWorld`'s deliver hook: like `DeliverHook`, with a direction instead of two addresses. */
export type PairDeliverHook = (
  dir: Direction,
  bytes: Uint8Array,
  now: number,
) => Uint8Array | readonly Uint8Array[] | null | undefined | void;

/** `PairWorld`'s transmit hook; `bytes` is only valid during the call. */
export type PairTransmitHook = (dir: Direction, bytes: Uint8Array, now: number) => void;

/** Construction options of a `PairWorld`. */
export interface PairWorldOptions {
  /** Seed of both links (each direction derives its own, as `createLinkPair` does). Integer. */
  seed: number;
  /** Impairments of A→B: a config or preset name. Default: perfect link. */
  aToB?: LinkSpec;
  /** Impairments of B→A. Default: same as `aToB`. */
  bToA?: LinkSpec;
  /** Size (bytes) of the buffer handed to `pollTransmit`. Default 1500. */
  mtu?: number;
  /** Peer A, if known at construction (give both, or call `attach` later). */
  a?: SansIoPeer;
  /** Peer B, if known at construction. */
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
  /** Deliver every datagram in one reused buffer (see `WorldOptions.reuseReceiveBuffer`). Default false. */
  reuseReceiveBuffer?: boolean;
}

/** Everything a `PairWorld` counted. */
export interface PairWorldStats {
  /** Counters of the A→B link. */
  aToB: LinkCounters;
  /** Counters of the B→A link. */
  bToA: LinkCounters;
  /** Counters of peer A. */
  a: PeerStats;
  /** Counters of peer B. */
  b: PeerStats;
  /** Events processed since construction. */
  steps: number;
  /** Current virtual time (ms). */
  now: number;
}

const A = 'a';
const B = 'b';

/**
 * Two single-remote peers (`SansIoPeer`) joined by one seeded link per direction: a `World` with
 * endpoints at addresses `'a'` and `'b'` (reach it through `world` for everything else, e.g.
 * `world.at(t, fn)`). Links: `links.aToB`, `links.bToA` (reconfigure them mid-run).
 */
export class PairWorld {
  /** The underlying N-endpoint world (A is at address `'a'`, B at `'b'`). */
  readonly world: World;
  /** Both links; send into them directly to inject traffic that crosses the impairments, or reconfigure them. */
  readonly links: LinkPair;

  private peerA: SansIoPeer | undefined;
  private peerB: SansIoPeer | undefined;
  private deliverHook: PairDeliverHook | undefined;
  private transmitHook: PairTransmitHook | undefined;

  constructor(opts: PairWorldOptions) {
    checkArg(typeof opts === 'object' && opts !== null, 'World options required');
    checkArg(typeof opts.seed === 'number' && Number.isInteger(opts.seed), 'seed must be an integer');
    const ab = opts.aToB ?? {};
    this.world = new World({
      seed: opts.seed, mtu: opts.mtu, startMs: opts.startMs, integerTime: opts.integerTime, stallStepMs: opts.stallStepMs,
      maxFiresPerInstant: opts.maxFiresPerInstant, maxTransmitsPerDrain: opts.maxTransmitsPerDrain,
      reuseReceiveBuffer: opts.reuseReceiveBuffer, maxRoutes: 2,
      routes: [
        { from: A, to: B, link: ab, seed: deriveSeed(opts.seed, 100) },
        { from: B, to: A, link: opts.bToA ?? ab, seed: deriveSeed(opts.seed, 101) },
      ],
    });
    this.links = { aToB: this.world.link(A, B), bToA: this.world.link(B, A) };
    if (opts.a !== undefined || opts.b !== undefined) {
      checkArg(opts.a !== undefined && opts.b !== undefined, 'give both peers a and b, or neither');
      this.attach(opts.a!, opts.b!);
    }
  }

  /** Inspect, mutate, drop or multiply datagrams as they are delivered (see `DeliverHook`). */
  get onDeliver(): PairDeliverHook | undefined {
    return this.deliverHook;
  }

  set onDeliver(hook: PairDeliverHook | undefined) {
    this.deliverHook = hook;
    this.world.onDeliver = hook === undefined ? undefined : (from, _to, bytes, now) => hook(from === A ? 'aToB' : 'bToA', bytes, now);
  }

  /** Inspect datagrams as peers transmit them. */
  get onTransmit(): PairTransmitHook | undefined {
    return this.transmitHook;
  }

  set onTransmit(hook: PairTransmitHook | undefined) {
    this.transmitHook = hook;
    this.world.onTransmit = hook === undefined ? undefined : (from, _to, bytes, now) => hook(from === A ? 'aToB' : 'bToA', bytes, now);
  }

  /** Set the two peers (once). */
  attach(a: SansIoPeer, b: SansIoPeer): void {
    if (this.peerA !== undefined) throw new GamewireError('invalid-state', 'peers already attached');
    checkArg(a !== undefined && b !== undefined && a !== b, 'two distinct peers required');
    this.world.addPeer(A, a, B);
    this.world.addPeer(B, b, A);
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
    return this.world.now;
  }

  /** A snapshot of all counters. */
  get stats(): PairWorldStats {
    const s = this.world.stats;
    return {
      aToB: this.links.aToB.counters(), bToA: this.links.bToA.counters(),
      a: s.peers[A] ?? newPeerStats(), b: s.peers[B] ?? newPeerStats(), steps: s.steps, now: s.now,
    };
  }

  /** Drain `pollTransmit` of both peers into their links at the current time (call after issuing commands). */
  drain(): void {
    this.world.drain();
  }

  /** See `World.step`. */
  step(): boolean {
    return this.world.step();
  }

  /** See `World.runUntil`. */
  runUntil(pred: () => boolean, limits: RunLimits): RunResult {
    return this.world.runUntil(pred, limits);
  }

  /** See `World.runFor`. */
  runFor(durationMs: number, maxSteps?: number): RunResult {
    return this.world.runFor(durationMs, maxSteps);
  }

  /** Run `fn` at virtual time `atMs` (≥ now), before deliveries and timers due then: e.g. `at(2000, () => w.links.aToB.reconfigure(w.now, { latencyMs: 40 }))`. */
  at(atMs: number, fn: () => void): void {
    this.world.at(atMs, fn);
  }

  /** Hand `bytes` straight to the peer that `dir` leads to, now, bypassing the link and hooks; then drain. */
  inject(dir: Direction, bytes: Uint8Array): void {
    if (this.peerA === undefined) throw new GamewireError('invalid-state', 'no peers attached');
    if (dir === 'aToB') this.world.inject(A, B, bytes);
    else this.world.inject(B, A, bytes);
  }
}
