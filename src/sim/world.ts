import { DeadlineHeap, deferStuck } from '../core/deadline-heap.js';
import type { Address, Endpoint } from '../core/endpoint.js';
import { checkArg, GamewireError } from '../core/errors.js';
import { PeerEndpoint, type SansIoPeer } from '../core/peer.js';
import { type LinkConfig, resolveLinkConfig } from './config.js';
import { deriveSeed, Link, type LinkCounters } from './link.js';
import { preset } from './presets.js';

/** Impairments of a link: a config, or the name of a preset (`'wifi'`, `'mobile'`, … see `presets`). */
export type LinkSpec = Partial<LinkConfig> | string;

/** How datagrams from one address to another travel. */
export interface RouteOptions {
  /** Impairments of this direction. Default: the world's `link` option. */
  link?: LinkSpec;
  /** Seed of this direction's link. Default: derived from the world's seed and both addresses. */
  seed?: number;
  /**
   * Name of a shared bottleneck (`WorldOptions.bottlenecks`) that datagrams cross first, before this
   * route's own link: every route `via` the same name competes for its rate and queue.
   */
  via?: string;
}

/** A route given at construction: one direction, `from` → `to`. */
export interface RouteSpec extends RouteOptions {
  /** Sending address. */
  from: Address;
  /** Receiving address. */
  to: Address;
}

/**
 * Called for every datagram a route delivers, before the receiving endpoint sees it. Mutate `bytes`
 * in place, or return `null` to drop it, a `Uint8Array` to replace it, or an array to deliver several
 * (injection, duplication); `undefined` delivers `bytes` as is.
 */
export type DeliverHook = (
  from: Address,
  to: Address,
  bytes: Uint8Array,
  now: number,
) => Uint8Array | readonly Uint8Array[] | null | undefined | void;

/** Called for every datagram an endpoint transmits, before its route sees it; `bytes` is only valid during the call. */
export type TransmitHook = (from: Address, to: Address, bytes: Uint8Array, now: number) => void;

/** Construction options of a `World`. */
export interface WorldOptions {
  /** Seed of every link (each derives its own); same seed, same run. Integer. */
  seed: number;
  /** Impairments of every route not configured otherwise. Default: a perfect link. */
  link?: LinkSpec;
  /** Routes with their own settings; the others are created with `link` on their first datagram. */
  routes?: readonly RouteSpec[];
  /** Shared bottlenecks by name, for routes to cross with `via`. */
  bottlenecks?: Readonly<Record<string, LinkSpec>>;
  /** Size (bytes) of the buffer handed to `pollTransmit`, i.e. the largest datagram an endpoint may emit. Default 1500. */
  mtu?: number;
  /** Virtual time at start (ms). Default 0. */
  startMs?: number;
  /** Round every event time up to a whole ms (for endpoints with integer clocks, e.g. KCP). Default false. */
  integerTime?: boolean;
  /** How far (ms) a stuck endpoint's timer is pushed back after a firing that made no progress. Default 1. */
  stallStepMs?: number;
  /** Timer firings of one endpoint allowed at one instant before it is pushed back like a stuck one. Default 10 000. */
  maxFiresPerInstant?: number;
  /** `pollTransmit` calls per drain before the world stops draining that endpoint for now. Default 1 000 000. */
  maxTransmitsPerDrain?: number;
  /** Most routes (directions with a link) the world creates; datagrams needing another are dropped as `unroutable`. Default 10 000. */
  maxRoutes?: number;
  /**
   * Deliver every datagram in one reused buffer instead of a fresh copy (no allocation per datagram).
   * Only for endpoints (and hooks) that copy what they keep: the bytes are overwritten by the next delivery. Default false.
   */
  reuseReceiveBuffer?: boolean;
}

/** Traffic and timer counts of one endpoint in a `World`. */
export interface PeerStats {
  /** Datagrams the endpoint returned from `pollTransmit`. */
  datagramsSent: number;
  /** Bytes of those datagrams. */
  bytesSent: number;
  /** Datagrams handed to the endpoint's `handleDatagram` (after the deliver hook; injections included). */
  datagramsReceived: number;
  /** Bytes of those datagrams. */
  bytesReceived: number;
  /** `handleTimeout` calls. */
  timeoutsFired: number;
  /** Firings that made no progress (or exceeded maxFiresPerInstant), after which the timer was pushed back. */
  stalls: number;
  /** Drains cut short at `maxTransmitsPerDrain`. */
  drainCapHits: number;
  /** Datagrams the deliver hook dropped on their way to this endpoint. */
  droppedByHook: number;
  /** Datagrams it sent that were dropped because no route could be created for them (`maxRoutes`). */
  unroutable: number;
}

/** Counters of one route (one direction between two addresses). */
export interface RouteStats {
  /** Sending address. */
  from: Address;
  /** Receiving address. */
  to: Address;
  /** The shared bottleneck it crosses, if any. */
  via: string | undefined;
  /** Counters of the route's own link (with `via`: what the bottleneck passed on to it). */
  link: LinkCounters;
}

/** Everything a `World` counted. */
export interface WorldStats {
  /** Per endpoint, by address (endpoints removed since are left out). */
  peers: Record<Address, PeerStats>;
  /** Every route, in creation order. */
  routes: RouteStats[];
  /** Counters of each shared bottleneck, by name. */
  bottlenecks: Record<string, LinkCounters>;
  /** Datagrams that arrived for an address with no endpoint (never added, or removed). */
  undeliverable: number;
  /** Events processed since construction. */
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
  /** Why it returned. */
  reason: RunStopReason;
}

/** Limits of one `runUntil` call. */
export interface RunLimits {
  /** Give up this many ms of virtual time after the call (finite, ≥ 0). */
  maxTimeMs: number;
  /** Give up after this many steps. Default: unlimited. */
  maxSteps?: number;
}

interface Slot {
  address: Address;
  readonly ep: Endpoint;
  readonly stats: PeerStats;
  /** Routes out of this address, by destination. */
  routes: Map<Address, Route>;
  /** Its id on the world's heap. */
  readonly id: number;
  /** Its deadline on the heap (`undefined`: none). */
  key: number | undefined;
  deferUntil: number;
  lastFireAt: number;
  firesAtInstant: number;
}

/** A link on the world's heap: a route's or a shared bottleneck's. */
interface Timed {
  readonly link: Link;
  readonly id: number;
  /** Its next delivery may have moved since the heap last read it. */
  stale: boolean;
}

interface Route extends Timed {
  readonly from: Address;
  readonly to: Address;
  readonly via: Bottleneck | undefined;
  /** Index in `Bottleneck.routes` (the tag its datagrams carry through the bottleneck). */
  readonly tag: number;
}

interface Bottleneck extends Timed {
  readonly name: string;
  readonly routes: Route[];
}

interface Action {
  readonly fn: () => void;
}

// Kinds of what the heap holds, in the order things due at the same instant run; within a kind,
// creation order. A heap rank is kind × RANK_KIND + that order.
const EV_ACTION = 0;
const EV_BOTTLENECK = 1;
const EV_ROUTE = 2;
const EV_TIMER = 3;
const RANK_KIND = 2 ** 48;

/** Zeroed `PeerStats` (for a world's own use and `PairWorld`'s before its peers are attached). */
export function newPeerStats(): PeerStats {
  return {
    datagramsSent: 0, bytesSent: 0, datagramsReceived: 0, bytesReceived: 0, timeoutsFired: 0, stalls: 0,
    drainCapHits: 0, droppedByHook: 0, unroutable: 0,
  };
}

function resolveSpec(spec: LinkSpec): Partial<LinkConfig> {
  return typeof spec === 'string' ? preset(spec) : spec;
}

/** FNV-1a of a string, for seeds derived from addresses (stable across versions: runs depend on it). */
function hash32(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/**
 * A deterministic network of sans-IO endpoints on a virtual clock. Each endpoint has an address;
 * every direction between two addresses (a *route*) gets its own seeded `Link`, created on its first
 * datagram with the default impairments unless configured (`routes`, `route()`); routes may also
 * cross a shared, named bottleneck (`via`). Links can be changed mid-run (`link(from, to).reconfigure`,
 * `at(time, fn)`) without losing what is in flight.
 *
 * Each `step()` drains every endpoint's `pollTransmit`, then advances to the earliest pending event
 * and processes it: a scheduled action, a bottleneck hand-over, a delivery, or an endpoint's timer
 * (ties in that order; among equals, in creation order). No wall clock, no sleeps: a run is fully
 * defined by (endpoints, options, seed, the caller's calls). Everything pending is on one deadline
 * heap: a link is re-keyed when its next delivery moves, an action when added; every endpoint is
 * drained and its `pollTimeout()` re-read at every step (an endpoint may send, or move its deadline,
 * after any call the caller makes on it). Cost per step: O(endpoints + log(routes + actions)).
 */
export class World {
  /** Inspect, mutate, drop or multiply datagrams as they are delivered. */
  onDeliver: DeliverHook | undefined;
  /** Inspect datagrams as endpoints transmit them. */
  onTransmit: TransmitHook | undefined;

  private readonly seed: number;
  private readonly defaultLink: Partial<LinkConfig>;
  private readonly slots: Slot[] = [];
  private readonly byAddress = new Map<Address, Slot>();
  /** Routes from addresses with no endpoint (configured before it is added, or used by `send`), by `from`. */
  private readonly orphanRoutes = new Map<Address, Map<Address, Route>>();
  private readonly routeList: Route[] = [];
  private readonly bottlenecks = new Map<string, Bottleneck>();
  private readonly bottleneckList: Bottleneck[] = [];
  /** Everything pending (actions, links, endpoint timers) by id; ties by rank (`EV_*`, then creation order). */
  private readonly heap = new DeadlineHeap(64);
  /** What each heap id stands for, and its `EV_*` kind. */
  private readonly owner: (Action | Bottleneck | Route | Slot | undefined)[] = [];
  private readonly kind: number[] = [];
  private readonly freeIds: number[] = [];
  private actionSeq = 0;
  private slotSeq = 0;
  /** Links whose next delivery must be read again before the next event is picked. */
  private staleLinks: Timed[] = [];
  private clock: number;
  private readonly out: Uint8Array;
  private rx: Uint8Array | undefined;
  private hop = new Uint8Array(1500);
  private readonly integerTime: boolean;
  private readonly stallStepMs: number;
  private readonly maxFiresPerInstant: number;
  private readonly maxTransmitsPerDrain: number;
  private readonly maxRoutes: number;
  private stepCount = 0;
  private undeliverable = 0;
  private nextTime = 0;
  private nextId = -1;

  constructor(opts: WorldOptions) {
    checkArg(typeof opts === 'object' && opts !== null, 'World options required');
    checkArg(typeof opts.seed === 'number' && Number.isInteger(opts.seed), 'seed must be an integer');
    this.seed = opts.seed;
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
    this.maxRoutes = opts.maxRoutes ?? 10_000;
    checkArg(Number.isInteger(this.maxRoutes) && this.maxRoutes >= 1, 'maxRoutes must be an integer ≥ 1');
    this.defaultLink = resolveSpec(opts.link ?? {});
    resolveLinkConfig(this.defaultLink); // validate now, not at the first datagram
    this.out = new Uint8Array(mtu);
    if (opts.reuseReceiveBuffer === true) this.rx = new Uint8Array(mtu);
    this.integerTime = opts.integerTime ?? false;
    this.clock = this.integerTime ? Math.ceil(start) : start;
    for (const [name, spec] of Object.entries(opts.bottlenecks ?? {})) this.addBottleneck(name, spec);
    for (const r of opts.routes ?? []) {
      checkArg(typeof r === 'object' && r !== null, 'routes[] entries must be objects');
      this.route(r.from, r.to, r);
    }
  }

  /** Current virtual time (ms). */
  get now(): number {
    return this.clock;
  }

  /** Addresses of the endpoints, in the order they were added. */
  get addresses(): Address[] {
    return this.slots.map((s) => s.address);
  }

  /** Add an addressed endpoint (a server, a host of many peers, …) at `address`. Throws `invalid-state` if the address is taken. */
  add(address: Address, endpoint: Endpoint): void {
    checkArg(typeof address === 'string', 'address must be a string');
    checkArg(typeof endpoint === 'object' && endpoint !== null, 'endpoint required');
    if (this.byAddress.has(address)) throw new GamewireError('invalid-state', `address '${address}' already has an endpoint`);
    const routes = this.orphanRoutes.get(address) ?? new Map<Address, Route>();
    this.orphanRoutes.delete(address);
    const id = this.takeId();
    const slot: Slot = {
      address, ep: endpoint, stats: newPeerStats(), routes, id, key: undefined, deferUntil: -Infinity, lastFireAt: NaN,
      firesAtInstant: 0,
    };
    this.owner[id] = slot;
    this.kind[id] = EV_TIMER;
    this.heap.setRank(id, EV_TIMER * RANK_KIND + this.slotSeq++);
    this.slots.push(slot);
    this.byAddress.set(address, slot);
  }

  /**
   * Add a single-remote peer (chunk sender/receiver, KCP session, …) at `address`, talking only to
   * `remote` (wrapped in a `PeerEndpoint`, which drops and counts datagrams from anyone else).
   * Returns the wrapper.
   */
  addPeer<E>(address: Address, peer: SansIoPeer<E>, remote: Address): PeerEndpoint<E> {
    checkArg(typeof peer === 'object' && peer !== null, 'peer required');
    checkArg(typeof remote === 'string', 'remote must be a string');
    const ep = new PeerEndpoint(peer, remote);
    this.add(address, ep);
    return ep;
  }

  /**
   * Take the endpoint at `address` out of the world: its timers stop, and datagrams still in flight to
   * it are dropped on arrival (counted in `undeliverable`). Its routes stay. Throws `invalid-state` if absent.
   */
  remove(address: Address): void {
    const slot = this.byAddress.get(address);
    if (slot === undefined) throw new GamewireError('invalid-state', `no endpoint at '${address}'`);
    this.byAddress.delete(address);
    this.slots.splice(this.slots.indexOf(slot), 1);
    this.orphanRoutes.set(address, slot.routes);
    this.releaseId(slot.id);
  }

  /**
   * Give the endpoint at `address` the address `to` from now on, as a NAT does when it rebinds (or a
   * phone moving from Wi-Fi to mobile): what it sends from now leaves from `to`, datagrams sent to
   * `to` reach it, and those still in flight to `address` are dropped on arrival (counted in
   * `undeliverable`). Datagrams it sent before still arrive from `address`. Throws `invalid-state`
   * if no endpoint is at `address` or one is at `to`.
   */
  rebind(address: Address, to: Address): void {
    checkArg(typeof to === 'string', 'address must be a string');
    const slot = this.byAddress.get(address);
    if (slot === undefined) throw new GamewireError('invalid-state', `no endpoint at '${address}'`);
    if (this.byAddress.has(to)) throw new GamewireError('invalid-state', `address '${to}' already has an endpoint`);
    this.byAddress.delete(address);
    this.orphanRoutes.set(address, slot.routes);
    slot.routes = this.orphanRoutes.get(to) ?? new Map<Address, Route>();
    this.orphanRoutes.delete(to);
    slot.address = to;
    this.byAddress.set(to, slot);
  }

  /** The endpoint at `address`. Throws `invalid-state` if absent. */
  endpoint(address: Address): Endpoint {
    const slot = this.byAddress.get(address);
    if (slot === undefined) throw new GamewireError('invalid-state', `no endpoint at '${address}'`);
    return slot.ep;
  }

  /**
   * Create the route `from` → `to` with `opts` (before its first datagram), or, without `opts`, get it
   * (creating it with the defaults if needed). Returns its `Link`: call `reconfigure(world.now, …)`
   * on it to change it mid-run, or `send` into it to put traffic through it. Throws `invalid-state` when
   * `opts` are given for a route that already exists, `invalid-config` on a bad config.
   */
  route(from: Address, to: Address, opts?: RouteOptions): Link {
    checkArg(typeof from === 'string' && typeof to === 'string', 'addresses must be strings');
    const existing = this.routesFrom(from).get(to);
    if (existing !== undefined) {
      if (opts !== undefined) throw new GamewireError('invalid-state', `route '${from}' → '${to}' already exists: reconfigure its link`);
      return existing.link;
    }
    return this.createRoute(from, to, opts ?? {}).link;
  }

  /** Shorthand for `route(from, to)`: the link of that direction, created with the defaults if needed. */
  link(from: Address, to: Address): Link {
    return this.route(from, to);
  }

  /** The shared bottleneck called `name` (reconfigure it like any link). Throws `invalid-state` if absent. */
  bottleneck(name: string): Link {
    const b = this.bottlenecks.get(name);
    if (b === undefined) throw new GamewireError('invalid-state', `no bottleneck '${name}'`);
    return b.link;
  }

  /** Add a shared bottleneck that routes can cross with `via: name`. Throws `invalid-state` if the name is taken. */
  addBottleneck(name: string, spec: LinkSpec, seed?: number): Link {
    checkArg(typeof name === 'string', 'bottleneck name must be a string');
    if (this.bottlenecks.has(name)) throw new GamewireError('invalid-state', `bottleneck '${name}' already exists`);
    const s = seed ?? deriveSeed(this.seed ^ hash32(`via\u0000${name}`), 7);
    const b: Bottleneck = { name, link: new Link(resolveSpec(spec), s), routes: [], id: this.takeId(), stale: false };
    this.register(b, EV_BOTTLENECK, this.bottleneckList.length);
    this.bottlenecks.set(name, b);
    this.bottleneckList.push(b);
    return b.link;
  }

  /**
   * Run `fn` at virtual time `atMs` (≥ now), before any delivery or timer due at that instant, then
   * drain every endpoint: for a route change or a command at a set time during `runUntil`. Actions
   * are the caller's own list: kept until due, in time order (equal times in the order added).
   */
  at(atMs: number, fn: () => void): void {
    checkArg(Number.isFinite(atMs) && atMs >= this.clock, 'atMs must be finite and ≥ now');
    checkArg(typeof fn === 'function', 'fn must be a function');
    const id = this.takeId();
    this.owner[id] = { fn };
    this.kind[id] = EV_ACTION;
    this.heap.setRank(id, EV_ACTION * RANK_KIND + this.actionSeq++);
    this.heap.set(id, atMs);
  }

  /** Counters of the endpoint at `address`. Throws `invalid-state` if absent. */
  peerStats(address: Address): PeerStats {
    const slot = this.byAddress.get(address);
    if (slot === undefined) throw new GamewireError('invalid-state', `no endpoint at '${address}'`);
    return { ...slot.stats };
  }

  /** A snapshot of all counters. */
  get stats(): WorldStats {
    const peers: Record<Address, PeerStats> = {};
    for (const s of this.slots) peers[s.address] = { ...s.stats };
    const bottlenecks: Record<string, LinkCounters> = {};
    for (const b of this.bottleneckList) bottlenecks[b.name] = b.link.counters();
    return {
      peers,
      routes: this.routeList.map((r) => ({ from: r.from, to: r.to, via: r.via?.name, link: r.link.counters() })),
      bottlenecks,
      undeliverable: this.undeliverable,
      steps: this.stepCount,
      now: this.clock,
    };
  }

  /** Drain `pollTransmit` of every endpoint into its routes at the current time (call after issuing commands). */
  drain(): void {
    const slots = this.slots;
    for (let i = 0; i < slots.length; i++) this.drainSlot(slots[i]);
  }

  /**
   * Process the next due event (drain first, so commands issued since the last step go out).
   * Returns false, without advancing time, when nothing at all is pending.
   */
  step(): boolean {
    this.drain();
    if (!this.findNext()) return false;
    this.process();
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
      if (!this.findNext()) return { ok: false, now: this.clock, steps, reason: 'idle' };
      if (this.nextTime > deadline) {
        this.clock = Math.max(this.clock, deadline);
        return { ok: false, now: this.clock, steps, reason: 'deadline' };
      }
      this.process();
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

  /** Put `bytes` on the route `from` → `to` now, as if `from` had sent them (through the impairments, without the transmit hook). */
  send(from: Address, to: Address, bytes: Uint8Array): void {
    checkArg(bytes instanceof Uint8Array, 'bytes must be a Uint8Array');
    checkArg(typeof from === 'string' && typeof to === 'string', 'addresses must be strings');
    const r = this.routesFrom(from).get(to) ?? this.createRoute(from, to, {});
    this.enter(r, bytes);
  }

  /** Hand `bytes` straight to the endpoint at `to` as if from `from`, now, bypassing links and hooks; then drain. */
  inject(from: Address, to: Address, bytes: Uint8Array): void {
    checkArg(bytes instanceof Uint8Array, 'bytes must be a Uint8Array');
    const slot = this.byAddress.get(to);
    if (slot === undefined) throw new GamewireError('invalid-state', `no endpoint at '${to}'`);
    this.receive(slot, from, bytes);
    this.drain();
  }

  private routesFrom(from: Address): Map<Address, Route> {
    const slot = this.byAddress.get(from);
    if (slot !== undefined) return slot.routes;
    let m = this.orphanRoutes.get(from);
    if (m === undefined) {
      m = new Map();
      this.orphanRoutes.set(from, m);
    }
    return m;
  }

  /** Throws `invalid-state` at `maxRoutes` (transmits check first and count `unroutable` instead). */
  private createRoute(from: Address, to: Address, opts: RouteOptions): Route {
    checkArg(typeof opts === 'object' && opts !== null, 'route options must be an object');
    if (this.routeList.length >= this.maxRoutes) throw new GamewireError('invalid-state', `maxRoutes (${this.maxRoutes}) reached`);
    let via: Bottleneck | undefined;
    if (opts.via !== undefined) {
      via = this.bottlenecks.get(opts.via);
      if (via === undefined) throw new GamewireError('invalid-config', `route '${from}' → '${to}' via unknown bottleneck '${opts.via}'`);
    }
    const seed = opts.seed ?? deriveSeed(this.seed ^ hash32(`${from}\u0000${to}`), 5);
    const link = new Link(opts.link === undefined ? this.defaultLink : resolveSpec(opts.link), seed);
    const r: Route = { from, to, link, via, tag: via === undefined ? 0 : via.routes.length, id: this.takeId(), stale: false };
    this.register(r, EV_ROUTE, this.routeList.length);
    via?.routes.push(r);
    this.routeList.push(r);
    this.routesFrom(from).set(to, r);
    return r;
  }

  private enter(r: Route, bytes: Uint8Array): void {
    if (r.via === undefined) r.link.send(this.clock, bytes);
    else r.via.link.send(this.clock, bytes, r.tag);
  }

  private takeId(): number {
    return this.freeIds.pop() ?? this.owner.length;
  }

  private releaseId(id: number): void {
    this.heap.delete(id);
    this.owner[id] = undefined;
    this.freeIds.push(id);
  }

  /** Puts a link on the heap for good; its hook marks it stale whenever its next delivery may move. */
  private register(t: Route | Bottleneck, kind: number, order: number): void {
    this.owner[t.id] = t;
    this.kind[t.id] = kind;
    this.heap.setRank(t.id, kind * RANK_KIND + order);
    t.link.watch(() => {
      if (t.stale) return;
      t.stale = true;
      this.staleLinks.push(t);
    });
  }

  /** Finds the event due next; sets nextId/nextTime. False when idle. */
  private findNext(): boolean {
    const heap = this.heap;
    if (this.staleLinks.length > 0) {
      const links = this.staleLinks;
      this.staleLinks = [];
      for (const t of links) {
        t.stale = false;
        const d = t.link.pollTimeout();
        if (d === undefined) heap.delete(t.id);
        else heap.set(t.id, d);
      }
    }
    const sl = this.slots;
    for (let i = 0; i < sl.length; i++) this.readTimer(sl[i]);
    const id = heap.peekId();
    if (id < 0) return false;
    let t = heap.peekTime()!;
    if (this.integerTime) t = Math.ceil(t);
    this.nextTime = t < this.clock ? this.clock : t;
    this.nextId = id;
    return true;
  }

  /** Re-keys `slot` by its `pollTimeout()`, held back to `deferUntil` after a stall. */
  private readTimer(slot: Slot): void {
    const t = slot.ep.pollTimeout();
    if (t === undefined) {
      if (slot.key !== undefined) {
        slot.key = undefined;
        this.heap.delete(slot.id);
      }
      return;
    }
    if (typeof t !== 'number' || Number.isNaN(t)) {
      throw new GamewireError('invalid-state', `endpoint '${slot.address}' pollTimeout() returned ${String(t)}`);
    }
    const key = t < slot.deferUntil ? slot.deferUntil : t;
    if (key !== slot.key) {
      slot.key = key;
      this.heap.set(slot.id, key);
    }
  }

  private process(): void {
    this.clock = this.nextTime;
    this.stepCount++;
    const id = this.nextId;
    switch (this.kind[id]) {
      case EV_ACTION: {
        const a = this.owner[id] as Action;
        this.releaseId(id);
        a.fn();
        this.drain();
        return;
      }
      case EV_BOTTLENECK: {
        const b = this.owner[id] as Bottleneck;
        const link = b.link;
        const need = link.peekLength()!;
        if (need > this.hop.length) this.hop = new Uint8Array(need);
        const n = link.pollDeliverInto(this.clock, this.hop)!;
        const r = b.routes[link.lastTag];
        r.link.send(this.clock, this.hop.subarray(0, n));
        return;
      }
      case EV_ROUTE:
        this.deliver(this.owner[id] as Route);
        return;
      default:
        this.fire(this.owner[id] as Slot);
    }
  }

  private deliver(r: Route): void {
    const link = r.link;
    let bytes: Uint8Array;
    if (this.rx === undefined) {
      bytes = link.pollDeliver(this.clock)!;
    } else {
      const need = link.peekLength()!;
      if (need > this.rx.length) this.rx = new Uint8Array(need);
      bytes = this.rx.subarray(0, link.pollDeliverInto(this.clock, this.rx));
    }
    const slot = this.byAddress.get(r.to);
    if (slot === undefined) {
      this.undeliverable++;
      return;
    }
    const hook = this.onDeliver;
    if (hook === undefined) {
      this.receive(slot, r.from, bytes);
    } else {
      const x = hook(r.from, r.to, bytes, this.clock);
      if (x === null) slot.stats.droppedByHook++;
      else if (x === undefined) this.receive(slot, r.from, bytes);
      else if (x instanceof Uint8Array) this.receive(slot, r.from, x);
      else for (const d of x) this.receive(slot, r.from, d);
    }
    this.drain();
  }

  private receive(slot: Slot, from: Address, bytes: Uint8Array): void {
    slot.stats.datagramsReceived++;
    slot.stats.bytesReceived += bytes.length;
    slot.ep.handleDatagram(this.clock, from, bytes);
  }

  private fire(slot: Slot): void {
    const s = slot.stats;
    const now = this.clock;
    if (slot.lastFireAt === now) slot.firesAtInstant++;
    else { slot.lastFireAt = now; slot.firesAtInstant = 1; }
    const sentBefore = s.datagramsSent;
    s.timeoutsFired++;
    slot.ep.handleTimeout(now);
    this.drain();
    const t = slot.ep.pollTimeout();
    const stuck = t !== undefined && t <= now && s.datagramsSent === sentBefore;
    if (stuck || slot.firesAtInstant >= this.maxFiresPerInstant) {
      s.stalls++;
      // Held off by the stuck-deadline rule as if it still asked for `now`, until its next firing.
      slot.deferUntil = deferStuck(now, now, this.stallStepMs);
    } else {
      slot.deferUntil = -Infinity;
    }
  }

  private drainSlot(slot: Slot): void {
    const s = slot.stats;
    const out = this.out;
    for (let n = 0; n < this.maxTransmitsPerDrain; n++) {
      const tx = slot.ep.pollTransmit(this.clock, out);
      if (tx === undefined) return;
      const len = tx.length;
      const to = tx.to;
      if (!Number.isInteger(len) || len < 0 || len > out.length || typeof to !== 'string') {
        throw new GamewireError('invalid-state',
          `endpoint '${slot.address}' pollTransmit returned length ${String(len)} (buffer ${out.length}) to ${String(to)}`);
      }
      const view = out.subarray(0, len);
      s.datagramsSent++;
      s.bytesSent += len;
      this.onTransmit?.(slot.address, to, view, this.clock);
      let r = slot.routes.get(to);
      if (r === undefined) {
        if (this.routeList.length >= this.maxRoutes) { s.unroutable++; continue; }
        r = this.createRoute(slot.address, to, {});
      }
      this.enter(r, view);
    }
    s.drainCapHits++;
  }
}
