import type { ConnectionStats } from '../connection/session.js';
import { BitReader, BitWriter, unzigzag } from '../core/bits.js';
import { readU32LE, writeU32LE } from '../core/bytes.js';
import { isInt, isNum, isObject, isOptionalFn } from '../core/config.js';
import { newCounters } from '../core/counters.js';
import { checkArg, checkConfig, GamewireError } from '../core/errors.js';
import { clampRewind, StateHistory } from './history.js';
import type { SlotKind } from './lerp.js';
import { type Fields, orderFor, type Schema, type SchemaTypes, type TypeCodec, type ValuesOf } from './schema.js';
import { CONTROL, copyBits, Entries, EntryKind, entityId, INPUTS, Kind, RENDER_SCALE, SNAPSHOTS } from './wire.js';

/**
 * What the state layer needs of a connection: the unsecured `Connection`, a netcode `ServerClient`
 * or netcode `Client` all are one.
 */
export interface StateLink {
  send(lane: number, bytes: Uint8Array, notice?: boolean): number;
  stats(now?: number): ConnectionStats | undefined;
}

/** A connection event as the drivers deliver it (`ConnectionEvent`, netcode `ServerEvent` or `ClientEvent`). */
export interface LinkEvent {
  type: string;
  lane?: number;
  bytes?: Uint8Array;
  id?: number;
  delivered?: boolean;
  connection?: StateLink;
  client?: StateLink;
}

/** Snapshots a client may be told to decode against: a base older than this many ticks is not used. @internal */
export const BASELINE_WINDOW = 64;

/** Snapshots in flight per client (outcome unknown); beyond, the oldest is treated as lost. @internal */
export const MAX_IN_FLIGHT = 64;

/** One replicated entity. Change `values` freely between ticks; `tick` reads and quantizes them. */
export class Entity<T extends SchemaTypes = SchemaTypes, K extends keyof T & string = keyof T & string> {
  /** Unique while the entity lives, and never the id of an entity that lived before in the last 65,536 spawns of its slot. */
  readonly id: number;
  /** Its type's name. */
  readonly type: K;
  /** Its values, as game code sees them. `tick` snaps them in place to what the wire carries. */
  values: ValuesOf<T[K]>;
  /** Added to this entity's priority accumulator each tick it has something to send (default: its type's priority, else 1). */
  priority: number;
  /** @internal */
  readonly slot: number;
  /** @internal */
  readonly gen: number;
  /** @internal */
  readonly codec: TypeCodec;
  /** @internal */
  alive = true;
  /** @internal The first tick that recorded it. */
  bornTick = 0;

  /** @internal */
  constructor(slot: number, gen: number, type: K, codec: TypeCodec, values: ValuesOf<T[K]>, priority: number) {
    this.slot = slot;
    this.gen = gen;
    this.id = entityId(slot, gen);
    this.type = type;
    this.codec = codec;
    this.values = values;
    this.priority = priority;
  }
}

/** Per-snapshot figures of one client, and running totals. */
export interface PlayerStats {
  /** Bytes of the last snapshot message. */
  snapshotBytes: number;
  /** Entities (creates, updates, destroys) in the last snapshot. */
  entitiesSent: number;
  /** Entities that had something to send but did not fit the last snapshot's budget. */
  skippedByBudget: number;
  /** The last snapshot's byte budget. */
  budgetBytes: number;
  /** Ticks between the last snapshot and the newest snapshot the client is known to hold (−1: none yet). */
  baselineAgeTicks: number;
  /** Snapshots sent, acknowledged, lost (totals). */
  snapshotsSent: number;
  snapshotsAcked: number;
  snapshotsLost: number;
  /** Snapshot bytes sent (total). */
  bytesSent: number;
  /** Inputs applied, and inputs dropped (queue full or beyond the catch-up limit). */
  inputsApplied: number;
  inputsDropped: number;
  /** The last input tick applied (−1: none). */
  lastInputTick: number;
}

/** A connection that joined the state layer (its client's schema matched). */
export class Player<T extends SchemaTypes = SchemaTypes, I extends Fields = Fields> {
  /** The connection. */
  readonly link: StateLink;
  /** The entity this client controls and predicts, if any; it is in every snapshot to this client. */
  entity: Entity<T> | undefined;
  /** Free for the game's own data. */
  data: unknown;
  /** The render time (server ticks, fractional) the client reported with its last applied input. */
  renderTick = -1;
  /** @internal */
  readonly h: Held;
  /** @internal */
  readonly inputs: InputQueue<I>;
  /** @internal */
  readonly records = new Map<number, Entries>();
  /** @internal */
  epoch = 0;
  /** @internal The pacing rate's minimum over the last second. */
  readonly rate = new WindowMin();
  /** @internal */
  newestAck = -1;
  /** @internal */
  readonly s: PlayerStats = {
    snapshotBytes: 0,
    entitiesSent: 0,
    skippedByBudget: 0,
    budgetBytes: 0,
    baselineAgeTicks: -1,
    snapshotsSent: 0,
    snapshotsAcked: 0,
    snapshotsLost: 0,
    bytesSent: 0,
    inputsApplied: 0,
    inputsDropped: 0,
    lastInputTick: -1,
  };

  /** @internal */
  constructor(link: StateLink, stride: number, maxQueuedInputs: number) {
    this.link = link;
    this.entity = undefined;
    this.h = new Held(stride);
    this.inputs = new InputQueue(maxQueuedInputs);
  }

  /** This client's snapshot figures. */
  stats(): Readonly<PlayerStats> {
    return this.s;
  }
}

/** What one client is known to hold and what was last sent to it, per entity slot. @internal */
class Held {
  cap = 0;
  ackTick = new Int32Array(0);
  ackGen = new Uint16Array(0);
  ackHeld = new Uint8Array(0);
  ackQ = new Int32Array(0);
  sentTick = new Int32Array(0);
  sentHeld = new Uint8Array(0);
  accum = new Float64Array(0);
  /** The last SEND_RING ticks each slot was sent in (newest at `sendHead`), and how many are kept. */
  sends = new Int32Array(0);
  sendHead = new Uint8Array(0);
  sendCount = new Uint8Array(0);

  constructor(readonly stride: number) {}

  /** Remember that `slot` went out in snapshot `tick`. */
  sent(slot: number, tick: number): void {
    const head = (this.sendHead[slot]! + 1) % SEND_RING;
    this.sendHead[slot] = head;
    this.sends[slot * SEND_RING + head] = tick;
    if (this.sendCount[slot]! < SEND_RING) this.sendCount[slot]++;
  }

  /**
   * True if the client's own guess of this slot's baseline (its newest snapshot of tick ≤ `common`
   * holding the slot) is surely `ackTick`: no send of the slot after `ackTick` is at or below `common`
   * (one could have arrived unbeknown to us: a pending outcome, or a loss reported spuriously).
   */
  guessable(slot: number, common: number): boolean {
    const base = this.ackTick[slot]!;
    const n = this.sendCount[slot]!;
    let oldest = Infinity;
    for (let i = 0; i < n; i++) {
      const t = this.sends[slot * SEND_RING + ((this.sendHead[slot]! - i + SEND_RING) % SEND_RING)]!;
      if (t > base && t <= common) return false;
      oldest = t;
    }
    return n < SEND_RING || oldest <= base;
  }

  ensure(n: number): void {
    if (n <= this.cap) return;
    let cap = Math.max(64, this.cap);
    while (cap < n) cap *= 2;
    const grow = <A extends Int32Array | Uint16Array | Uint8Array | Float64Array>(a: A, size: number, fill: number): A => {
      const b = new (a.constructor as new (n: number) => A)(size);
      b.fill(fill);
      b.set(a);
      return b;
    };
    this.ackTick = grow(this.ackTick, cap, -1);
    this.ackGen = grow(this.ackGen, cap, 0);
    this.ackHeld = grow(this.ackHeld, cap, 0);
    this.ackQ = grow(this.ackQ, cap * this.stride, 0);
    this.sentTick = grow(this.sentTick, cap, -1);
    this.sentHeld = grow(this.sentHeld, cap, 0);
    this.accum = grow(this.accum, cap, 0);
    this.sends = grow(this.sends, cap * SEND_RING, -1);
    this.sendHead = grow(this.sendHead, cap, 0);
    this.sendCount = grow(this.sendCount, cap, 0);
    this.cap = cap;
  }

  reset(): void {
    this.ackTick.fill(-1);
    this.ackHeld.fill(0);
    this.sentTick.fill(-1);
    this.sentHeld.fill(0);
    this.sendCount.fill(0);
  }
}

/** What a slot gap is reckoned to cost while the budget is filled, before the gaps are known (bits). */
const GAP_GUESS_BITS = 4;

/** What a datagram of snapshot costs on the wire beside its payload: IP and UDP, framing, ack header (bytes). */
const DATAGRAM_OVERHEAD_BYTES = 60;

/** The rewind depth allowed by default (ms): Overwatch's ~220 ms RTT plus an interpolation delay and a tick. @internal */
export const DEFAULT_MAX_REWIND_MS = 400;

/**
 * The smallest value added in the last second: the pacing rate a budget may trust. The controller
 * probes above the path's rate by design (up to a quarter for a round trip); the minimum over a
 * second leaves those probes out. @internal
 */
export class WindowMin {
  private readonly at: number[] = [];
  private readonly value: number[] = [];
  constructor(private readonly windowMs = 1000) {}

  add(now: number, v: number): number {
    while (this.value.length > 0 && this.value[this.value.length - 1]! >= v) {
      this.value.pop();
      this.at.pop();
    }
    this.value.push(v);
    this.at.push(now);
    while (this.at[0]! < now - this.windowMs) {
      this.at.shift();
      this.value.shift();
    }
    return this.value[0]!;
  }
}

/** Sends remembered per slot, to tell when the client can find an update's baseline itself. */
const SEND_RING = 8;

/** A client's inputs waiting for their tick. @internal */
class InputQueue<I extends Fields> {
  ticks: number[] = [];
  renders: number[] = [];
  values: ValuesOf<I>[] = [];
  /** Newest input tick queued or applied (−1: none). */
  newest = -1;
  constructor(readonly max: number) {}
}

/** Snapshot budget: a share of the connection's measured path rate, between a floor and a cap. */
export interface SnapshotBudget {
  /** Share of the path's pacing rate (its minimum over the last second) that snapshots may use (0..1). Default 0.6: the rate controller runs above the bottleneck while it probes, and other lanes need room too. */
  share?: number;
  /** Bytes per snapshot at least, whatever the rate says. Default 200. */
  minBytes?: number;
  /** Bytes per snapshot at most. Default 4096 (about three datagrams: a join's full state goes out over a few ticks; a snapshot over one datagram is lost if any of its datagrams is). */
  maxBytes?: number;
}

/** Options of a `StateServer`. */
export interface StateServerOptions<T extends SchemaTypes, I extends Fields> {
  /** The schema both ends declared with `defineSchema`. */
  schema: Schema<T, I>;
  /** Snapshots per second (1..240). Default 20. Call `tick` this often. */
  tickHz?: number;
  /** Index of the first of the three state lanes (`STATE_LANES`) in the connection's lane list. Default 0. */
  lane?: number;
  /** Entities alive at once (1..65,536). Default 4096; `spawn` beyond throws `queue-full`. */
  maxEntities?: number;
  /** Priority per entity type (added each tick to an entity's accumulator while it has something to send). Default 1 each. */
  priorities?: Partial<Record<keyof T & string, number>>;
  /** The snapshot byte budget. */
  budget?: SnapshotBudget;
  /** Inputs applied per client per tick at most (a client that sends faster catches up at this pace). Default 3. */
  maxInputsPerTick?: number;
  /** Inputs queued per client at most; beyond, the newest are dropped and counted. Default 32. */
  maxQueuedInputs?: number;
  /**
   * Lag compensation: how much of every entity's past is kept for `rewind` (ms, default 1000; 0 keeps none
   * and `rewind` throws), and how far back a rewind may go (ms, default 400: a client on a round
   * trip up to ~220 ms, where Overwatch stops, plus its interpolation delay and a tick; a client
   * further behind is not rewound further and must lead its target). The history takes maxEntities × (historyMs ×
   * tickHz / 1000 + 2) × the largest type's slots × 8 bytes, allocated at the first tick.
   */
  lagCompensation?: { historyMs?: number; maxRewindMs?: number };
}

/** Entities as a client saw them at its render time: what `rewind` hands to the hit test. */
export interface Past<T extends SchemaTypes = SchemaTypes> {
  /** The server tick (fractional) rewound to. */
  readonly tick: number;
  /** The entity's values at that time, or undefined if it did not exist then (or the history does not reach). */
  get<K extends keyof T & string>(entity: Entity<T, K>): ValuesOf<T[K]> | undefined;
}

/** Counter names of a `StateServer`: malformed input from clients, and refusals. */
export type StateServerCounter = 'malformed' | 'schemaMismatch' | 'resyncs' | 'unknownLink' | 'recordsEvicted';

type Handler<A extends unknown[]> = (...args: A) => void;

/**
 * The server side of the game-state layer. Spawn, change and despawn entities; call `tick(now)` at
 * `tickHz`; pass every connection event to `handle`. Each tick each joined client gets one snapshot:
 * the entities it does not hold yet (created), those that changed since the newest state it is known
 * to hold (as small deltas against it), and those it must drop (destroyed), highest accumulated
 * priority first, within a byte budget taken from the connection's measured rate. Sans-IO: `now`
 * (ms) is given, nothing here reads a clock.
 */
export class StateServer<T extends SchemaTypes = SchemaTypes, I extends Fields = Fields> {
  readonly schema: Schema<T, I>;
  readonly tickHz: number;
  /** The current tick (0 before the first `tick`). */
  tickNo = 0;
  private readonly lane: number;
  private readonly maxEntities: number;
  private readonly stride: number;
  private readonly budget: Required<SnapshotBudget>;
  private readonly maxInputsPerTick: number;
  private readonly maxQueuedInputs: number;
  private readonly priorities: Record<string, number>;
  private readonly bySlot: (Entity<T> | undefined)[] = [];
  private readonly gens: Uint16Array;
  private readonly free: number[] = [];
  private high = 0;
  private q: Int32Array;
  private changed: Int32Array;
  private readonly byLink = new Map<StateLink, Player<T, I>>();
  private interestFn: ((player: Player<T, I>, entity: Entity<T>) => boolean) | undefined;
  private readonly handlers = { join: [] as Handler<[Player<T, I>]>[], leave: [] as Handler<[Player<T, I>]>[], input: [] as Handler<[Player<T, I>, number, ValuesOf<I>]>[] };
  private readonly counts = newCounters<StateServerCounter>(['malformed', 'schemaMismatch', 'resyncs', 'unknownLink', 'recordsEvicted']);
  private readonly recordPool: Entries[] = [];
  private readonly w = new BitWriter();
  private readonly scratch = new BitWriter();
  private scratchBuf = new Uint8Array(4096);
  private readonly r = new BitReader();
  private cand = new Int32Array(64);
  private candKind = new Uint8Array(64);
  private candStart = new Int32Array(64);
  private candLen = new Int32Array(64);
  private sel = new Int32Array(64);
  private chosen = new Uint8Array(64);
  private prioOf = new Float64Array(64);
  private byPriority: ((a: number, b: number) => number) | undefined;
  private out = new Uint8Array(2048);
  /** Per type: the Exp-Golomb order of each delta slot this snapshot, the running mean step, and this snapshot's sums and counts. */
  private readonly stepKs: Uint8Array[];
  private readonly stepMeans: Float64Array[];
  private readonly stepSums: Float64Array[];
  private readonly tablesUsed: Uint8Array;
  private readonly headerBits: number;
  private readonly historyMs: number;
  private readonly maxRewindMs: number;
  private history: StateHistory | undefined;
  private readonly paddedKinds: SlotKind[][];
  private tmpVArr: Float64Array | undefined;

  constructor(options: StateServerOptions<T, I>) {
    checkConfig(isObject(options) && options.schema !== undefined && Array.isArray(options.schema.types), 'StateServer: options.schema must come from defineSchema');
    this.schema = options.schema;
    this.tickHz = options.tickHz ?? 20;
    checkConfig(isNum(this.tickHz, 1, 240), 'StateServer: tickHz must be 1..240');
    this.lane = options.lane ?? 0;
    checkConfig(isInt(this.lane, 0, 252), 'StateServer: lane must be an integer 0..252');
    this.maxEntities = options.maxEntities ?? 4096;
    checkConfig(isInt(this.maxEntities, 1, 65536), 'StateServer: maxEntities must be 1..65536');
    const b = options.budget ?? {};
    this.budget = { share: b.share ?? 0.6, minBytes: b.minBytes ?? 200, maxBytes: b.maxBytes ?? 4096 };
    checkConfig(isNum(this.budget.share, 0.01, 1), 'StateServer: budget.share must be 0.01..1');
    checkConfig(isInt(this.budget.minBytes, 32, 1 << 20) && isInt(this.budget.maxBytes, this.budget.minBytes, 1 << 20), 'StateServer: budget needs 32 ≤ minBytes ≤ maxBytes ≤ 1 MiB');
    this.maxInputsPerTick = options.maxInputsPerTick ?? 3;
    checkConfig(isInt(this.maxInputsPerTick, 1, 64), 'StateServer: maxInputsPerTick must be 1..64');
    this.maxQueuedInputs = options.maxQueuedInputs ?? 32;
    checkConfig(isInt(this.maxQueuedInputs, 1, 1024), 'StateServer: maxQueuedInputs must be 1..1024');
    this.priorities = {};
    for (const t of this.schema.types) {
      const p = (options.priorities as Record<string, number> | undefined)?.[t.name] ?? 1;
      checkConfig(isNum(p, 0, 1e9), `StateServer: priority of ${t.name} must be 0..1e9`);
      this.priorities[t.name] = p;
    }
    this.stride = Math.max(...this.schema.types.map((t) => t.slots));
    const lag = options.lagCompensation ?? {};
    this.historyMs = lag.historyMs ?? 1000;
    this.maxRewindMs = lag.maxRewindMs ?? Math.min(DEFAULT_MAX_REWIND_MS, this.historyMs);
    checkConfig(isNum(this.historyMs, 0, 60_000), 'StateServer: lagCompensation.historyMs must be 0..60000');
    checkConfig(isNum(this.maxRewindMs, 0, this.historyMs), 'StateServer: lagCompensation.maxRewindMs must be 0..historyMs');
    this.stepKs = this.schema.types.map((t) => new Uint8Array(t.deltaSlots));
    this.stepMeans = this.schema.types.map((t) => new Float64Array(t.deltaSlots).fill(15));
    this.stepSums = this.schema.types.map((t) => new Float64Array(2 * t.deltaSlots));
    this.tablesUsed = new Uint8Array(this.schema.types.length);
    this.headerBits = 8 + 32 + 33 + 33 + 16 + 1 + 3 + 17 + 8 + this.schema.types.reduce((a, t) => a + this.schema.typeBits + 4 * t.deltaSlots, 0);
    this.paddedKinds = this.schema.types.map((t) => [...t.kinds, ...new Array<SlotKind>(this.stride - t.slots).fill('step')]);
    this.gens = new Uint16Array(this.maxEntities);
    this.q = new Int32Array(64 * this.stride);
    this.changed = new Int32Array(64);
  }

  /** Register a handler: `join` (a client's schema matched), `leave` (its connection ended), `input` (one input, at its tick, once). */
  on(event: 'join' | 'leave', handler: (player: Player<T, I>) => void): this;
  on(event: 'input', handler: (player: Player<T, I>, tick: number, input: ValuesOf<I>) => void): this;
  on(event: 'join' | 'leave' | 'input', handler: Handler<never[]>): this {
    checkArg(typeof handler === 'function', 'StateServer.on: handler must be a function');
    const list = this.handlers[event] as Handler<never[]>[] | undefined;
    checkArg(list !== undefined, `StateServer.on: unknown event ${String(event)}`);
    list!.push(handler);
    return this;
  }

  /** Which entities each client sees (default: all). Called per client per entity per tick; an entity leaving a client's interest is destroyed there, and created again on return. */
  interest(fn: ((player: Player<T, I>, entity: Entity<T>) => boolean) | undefined): void {
    checkArg(isOptionalFn(fn), 'StateServer.interest: fn must be a function');
    this.interestFn = fn;
  }

  /** Create an entity of type `type` with its first values (quantized at the next tick). Throws `queue-full` at `maxEntities`. */
  spawn<K extends keyof T & string>(type: K, values: ValuesOf<T[K]>): Entity<T, K> {
    const codec = this.schema.type(type) as unknown as TypeCodec;
    // Bad values throw here, before a slot is taken.
    codec.quantizeObject(values as never, new Int32Array(this.stride), 0);
    let slot = this.free.pop();
    if (slot === undefined) {
      if (this.high >= this.maxEntities) throw new GamewireError('queue-full', `StateServer.spawn: ${this.maxEntities} entities alive (maxEntities)`);
      slot = this.high++;
      this.ensure(this.high);
    }
    this.history?.forget(slot);
    const gen = (this.gens[slot]! + 1) & 0xffff;
    this.gens[slot] = gen;
    const e = new Entity<T, K>(slot, gen, type, codec, values, this.priorities[type]!);
    this.bySlot[slot] = e as unknown as Entity<T>;
    codec.quantizeObject(values as never, this.q, slot * this.stride);
    this.changed[slot] = this.tickNo + 1;
    e.bornTick = this.tickNo + 1;
    return e;
  }

  /** Remove an entity; every client that holds it drops it. Its slot may be reused, under a new id. */
  despawn(entity: Entity<T>): void {
    if (!entity.alive || this.bySlot[entity.slot] !== entity) return;
    entity.alive = false;
    this.bySlot[entity.slot] = undefined;
    this.free.push(entity.slot);
    for (const p of this.byLink.values()) if (p.entity === entity) p.entity = undefined;
  }

  /** Entities alive. */
  get entityCount(): number {
    return this.high - this.free.length;
  }

  /** The entities alive, in slot order. */
  *entities(): IterableIterator<Entity<T>> {
    for (let slot = 0; slot < this.high; slot++) {
      const e = this.bySlot[slot];
      if (e !== undefined) yield e;
    }
  }

  /** The clients that joined. */
  players(): IterableIterator<Player<T, I>> {
    return this.byLink.values();
  }

  /** The player of a connection, if it joined. */
  player(link: StateLink): Player<T, I> | undefined {
    return this.byLink.get(link);
  }

  /**
   * Lag compensation: run `fn` (a hit test) against the entities as `player` saw them when it sent
   * the input being applied (its reported render time), clamped to `maxRewindMs` before the newest
   * tick. Call it from an `input` handler. Throws `invalid-state` when `historyMs` is 0.
   */
  rewind<R>(player: Player<T, I>, fn: (past: Past<T>) => R): R {
    const h = this.history;
    if (h === undefined) throw new GamewireError('invalid-state', 'StateServer.rewind: no history (lagCompensation.historyMs is 0, or no tick yet)');
    const newest = h.newestTick;
    const at = clampRewind(player.renderTick < 0 ? newest : player.renderTick, newest, 1000 / this.tickHz, this.maxRewindMs);
    const out = new Float64Array(this.stride);
    const kinds = this.paddedKinds;
    return fn({
      tick: at,
      get: (entity) => {
        if (this.gens[entity.slot] !== entity.gen || entity.bornTick > Math.floor(at)) return undefined;
        if (!h.sample(entity.slot, at, kinds[entity.codec.id]!, out)) return undefined;
        return entity.codec.toObject(out) as never;
      },
    });
  }

  /** Counters of dropped or refused input. */
  counters(): Readonly<Record<StateServerCounter, number>> {
    return this.counts;
  }

  /**
   * Give the layer a connection event. Returns true if it was the layer's (a message or delivery on
   * its lanes, or the end of a joined connection); pass the others to your own code.
   */
  handle(event: LinkEvent): boolean {
    const link = event.connection ?? event.client;
    if (link === undefined) return false;
    if (event.type === 'disconnected') {
      const p = this.byLink.get(link);
      if (p === undefined) return false;
      this.byLink.delete(link);
      for (const h of this.handlers.leave) h(p);
      return true;
    }
    const lane = event.lane;
    if (lane === undefined || lane < this.lane || lane > this.lane + INPUTS) return false;
    if (event.type === 'delivery') {
      if (lane === this.lane + SNAPSHOTS) this.delivery(link, event.id!, event.delivered === true);
      return true;
    }
    if (event.type !== 'message' || event.bytes === undefined) return false;
    const b = event.bytes;
    if (lane === this.lane + CONTROL) this.control(link, b);
    else if (lane === this.lane + INPUTS) this.inputMessage(link, b);
    else this.counts.malformed++;
    return true;
  }

  private control(link: StateLink, b: Uint8Array): void {
    if (b.length === 5 && b[0] === Kind.Hello) {
      const hash = readU32LE(b, 1);
      if (hash !== this.schema.hash) {
        this.counts.schemaMismatch++;
        const m = new Uint8Array(5);
        m[0] = Kind.Mismatch;
        writeU32LE(m, 1, this.schema.hash);
        link.send(this.lane + CONTROL, m);
        return;
      }
      if (this.byLink.has(link)) return;
      const p = new Player<T, I>(link, this.stride, this.maxQueuedInputs);
      p.h.ensure(this.high);
      this.byLink.set(link, p);
      const w = new Uint8Array(11);
      w[0] = Kind.Welcome;
      writeU32LE(w, 1, this.schema.hash);
      w[5] = this.tickHz & 0xff;
      w[6] = this.tickHz >>> 8;
      writeU32LE(w, 7, this.tickNo);
      link.send(this.lane + CONTROL, w);
      for (const h of this.handlers.join) h(p);
      return;
    }
    const p = this.byLink.get(link);
    if (b.length === 1 && b[0] === Kind.Resync && p !== undefined) {
      this.counts.resyncs++;
      p.epoch++;
      p.newestAck = -1;
      p.h.reset();
      return;
    }
    this.counts.malformed++;
  }

  private delivery(link: StateLink, id: number, delivered: boolean): void {
    const p = this.byLink.get(link);
    if (p === undefined) return;
    const rec = p.records.get(id);
    if (rec === undefined) return;
    p.records.delete(id);
    this.recordPool.push(rec);
    if (!delivered) {
      p.s.snapshotsLost++;
      return;
    }
    p.s.snapshotsAcked++;
    if (rec.epoch !== p.epoch) return;
    const h = p.h;
    const stride = this.stride;
    for (let i = 0; i < rec.n; i++) {
      const slot = rec.slots[i]!;
      if (rec.tick <= h.ackTick[slot]!) continue;
      h.ackTick[slot] = rec.tick;
      if (rec.kinds[i] === EntryKind.Destroy) {
        h.ackHeld[slot] = 0;
      } else {
        h.ackHeld[slot] = 1;
        h.ackGen[slot] = rec.gens[i]!;
        const from = i * stride;
        const to = slot * stride;
        for (let j = 0; j < stride; j++) h.ackQ[to + j] = rec.q[from + j]!;
      }
    }
    if (rec.tick > p.newestAck) p.newestAck = rec.tick;
  }

  private inputMessage(link: StateLink, b: Uint8Array): void {
    const p = this.byLink.get(link);
    if (p === undefined) {
      this.counts.unknownLink++;
      return;
    }
    const codec = this.schema.inputs;
    if (b.length < 1 || b[0] !== Kind.Input) {
      this.counts.malformed++;
      return;
    }
    const r = this.r;
    r.reset(b, 1);
    const newest = r.bits(32);
    const render = r.bits(32);
    const count = r.expGolomb(0) + 1;
    if (r.overflow || count > 256) {
      this.counts.malformed++;
      return;
    }
    const q = new Int32Array(codec.slots);
    const vals = new Float64Array(codec.slots);
    const got: { tick: number; render: number; values: ValuesOf<I> }[] = [];
    let renderAt = render;
    for (let i = 0; i < count; i++) {
      if (i > 0) renderAt -= unzigzag(r.expGolomb(4));
      if (i === 0 || !r.bool()) {
        if (!codec.readFull(r, q, 0)) {
          this.counts.malformed++;
          return;
        }
      }
      codec.dequantize(q, 0, vals, 0);
      got.push({ tick: newest - i, render: renderAt / RENDER_SCALE, values: codec.toObject(vals) as ValuesOf<I> });
    }
    if (r.overflow) {
      this.counts.malformed++;
      return;
    }
    const iq = p.inputs;
    for (let i = got.length - 1; i >= 0; i--) {
      const g = got[i]!;
      if (g.tick <= iq.newest || g.tick < 0) continue;
      if (iq.ticks.length >= iq.max) {
        p.s.inputsDropped++;
        continue;
      }
      iq.ticks.push(g.tick);
      iq.renders.push(g.render);
      iq.values.push(g.values);
      iq.newest = g.tick;
    }
  }

  /**
   * Advance one tick at local time `now` (ms): apply each client's queued inputs (the `input`
   * handlers run), read and quantize every entity's values, and send each joined client its
   * snapshot.
   */
  tick(now: number): void {
    this.tickNo++;
    if (this.history === undefined && this.historyMs > 0) this.history = new StateHistory({ slots: this.stride, tickMs: 1000 / this.tickHz, historyMs: this.historyMs, maxEntities: this.maxEntities });
    for (const p of this.byLink.values()) {
      const iq = p.inputs;
      let n = 0;
      while (iq.ticks.length > 0 && n < this.maxInputsPerTick) {
        const tick = iq.ticks.shift()!;
        p.renderTick = iq.renders.shift()!;
        const v = iq.values.shift()!;
        p.s.lastInputTick = tick;
        p.s.inputsApplied++;
        n++;
        for (const h of this.handlers.input) h(p, tick, v);
        const e = p.entity;
        if (e !== undefined && e.alive) e.codec.snap(e.values as never);
      }
    }
    const stride = this.stride;
    const h = this.history;
    const vals = h === undefined ? undefined : this.tmpV();
    for (let slot = 0; slot < this.high; slot++) {
      const e = this.bySlot[slot];
      if (e === undefined) continue;
      const off = slot * stride;
      if (e.codec.absorb(e.values as never, this.q, off)) this.changed[slot] = this.tickNo;
      if (h !== undefined) {
        e.codec.dequantize(this.q, off, vals!, 0);
        h.record(this.tickNo, slot, vals!, 0);
      }
    }
    for (const p of this.byLink.values()) this.snapshot(now, p);
  }

  private tmpV(): Float64Array {
    return (this.tmpVArr ??= new Float64Array(this.stride));
  }

  private ensure(n: number): void {
    if (n * this.stride > this.q.length) {
      let cap = this.changed.length;
      while (cap < n) cap *= 2;
      const q = new Int32Array(cap * this.stride);
      q.set(this.q);
      this.q = q;
      const c = new Int32Array(cap);
      c.set(this.changed);
      this.changed = c;
    }
    for (const p of this.byLink.values()) p.h.ensure(n);
  }

  private snapshot(now: number, p: Player<T, I>): void {
    const stats = p.link.stats(now);
    if (stats === undefined) return;
    const h = p.h;
    h.ensure(this.high);
    const tick = this.tickNo;
    const stride = this.stride;
    const rate = p.rate.add(now, stats.pacingRateBytesPerSec);
    const share = (this.budget.share * rate) / this.tickHz;
    const budget = Math.floor(Math.min(this.budget.maxBytes, Math.max(this.budget.minBytes, share - DATAGRAM_OVERHEAD_BYTES * Math.ceil(share / 1200))));
    const own = p.entity;
    let nc = 0;
    if (this.cand.length < this.high) this.growCand(this.high);
    const bySlot = this.bySlot;
    const changed = this.changed;
    const q = this.q;
    const interest = this.interestFn;
    const { ackHeld, ackGen, ackTick, ackQ, sentHeld, sentTick, accum } = h;
    const cand = this.cand;
    const candKind = this.candKind;
    const high = this.high;
    for (let slot = 0; slot < high; slot++) {
      const e = bySlot[slot];
      let kind = -1;
      if (e !== undefined && (e === own || interest === undefined || interest(p, e))) {
        if (ackHeld[slot] !== 1 || ackGen[slot] !== e.gen) kind = EntryKind.Create;
        else if (e === own || (changed[slot]! > ackTick[slot]! && e.codec.differs(q, slot * stride, ackQ, slot * stride))) {
          kind = tick - ackTick[slot]! < BASELINE_WINDOW ? EntryKind.Update : EntryKind.Create;
        }
      } else if (ackHeld[slot] === 1 || (sentHeld[slot] === 1 && sentTick[slot]! > ackTick[slot]!)) {
        kind = EntryKind.Destroy;
      }
      if (kind < 0) {
        accum[slot] = 0;
        continue;
      }
      accum[slot] += e === own ? 1e12 : e !== undefined ? e.priority : 1;
      cand[nc] = slot;
      candKind[nc++] = kind;
    }
    const acc = accum;
    const kinds = candKind;
    const common = p.newestAck >= 0 && tick - p.newestAck < BASELINE_WINDOW ? p.newestAck : -1;
    const types = this.schema.types;
    for (let t = 0; t < types.length; t++) {
      const mean = this.stepMeans[t]!;
      const ks = this.stepKs[t]!;
      for (let j = 0; j < ks.length; j++) ks[j] = orderFor(mean[j]!);
    }
    const chosen = this.chosen;
    // Everything that differs, if it fits (the usual case); else the highest priorities that fit.
    chosen.fill(1, 0, nc);
    this.clearSums();
    let taken = nc;
    let bytes = this.writeSnapshot(p, tick, common, nc, taken, budget, true);
    if (bytes === undefined) {
      this.clearSums();
      const idx = this.sel;
      for (let i = 0; i < nc; i++) {
        idx[i] = i;
        this.prioOf[i] = acc[cand[i]!]!;
      }
      if (nc > 1) idx.subarray(0, nc).sort((this.byPriority ??= (x, y) => this.prioOf[y]! - this.prioOf[x]! || x - y));
      const sw = this.scratch;
      if (this.scratchBuf.length < budget * 2 + 1024) this.scratchBuf = new Uint8Array(budget * 2 + 1024);
      sw.reset(this.scratchBuf);
      chosen.fill(0, 0, nc);
      let used = this.headerBits;
      const limit = budget * 8;
      for (taken = 0; taken < nc; taken++) {
        const j = idx[taken]!;
        const start = sw.bitLength;
        this.writeBody(sw, p, cand[j]!, kinds[j]!, tick, common);
        const len = sw.bitLength - start;
        if (used + len + GAP_GUESS_BITS > limit && taken > 0) break;
        used += len + GAP_GUESS_BITS;
        this.candStart[j] = start;
        this.candLen[j] = len;
        chosen[j] = 1;
      }
      sw.finish();
      bytes = this.writeSnapshot(p, tick, common, nc, taken, budget, false);
      while (bytes === undefined && taken > 0) {
        chosen[idx[--taken]!] = 0;
        bytes = this.writeSnapshot(p, tick, common, nc, taken, budget, false);
      }
      if (bytes === undefined) return;
    }
    for (let t = 0; t < types.length; t++) {
      const sums = this.stepSums[t]!;
      const mean = this.stepMeans[t]!;
      const n = mean.length;
      for (let j = 0; j < n; j++) if (sums[n + j]! > 0) mean[j] += (sums[j]! / sums[n + j]! - mean[j]!) * 0.25;
    }
    // Under a binding budget a sent entity keeps what it had above the cut-off, so update rates follow
    // the priorities instead of every interval rounding up to whole ticks.
    const cutoff = taken < nc && taken > 0 ? this.prioOf[this.sel[taken - 1]!]! : 0;
    const rec = this.recordPool.pop() ?? new Entries(stride);
    rec.tick = tick;
    rec.epoch = p.epoch;
    rec.n = 0;
    for (let j = 0; j < nc; j++) {
      if (chosen[j] === 0) continue;
      const slot = cand[j]!;
      const kind = kinds[j]!;
      const e = this.bySlot[slot];
      const gen = kind === EntryKind.Destroy ? 0 : e!.gen;
      rec.push(slot, kind, gen, kind === EntryKind.Destroy ? 0 : e!.codec.id, this.q, slot * stride);
      h.sentTick[slot] = tick;
      h.sent(slot, tick);
      h.sentHeld[slot] = kind === EntryKind.Destroy ? 0 : 1;
      acc[slot] = cutoff === 0 ? 0 : Math.max(0, acc[slot]! - cutoff);
    }
    const id = p.link.send(this.lane + SNAPSHOTS, bytes);
    if (id >= 0) {
      p.records.set(id, rec);
      if (p.records.size > MAX_IN_FLIGHT) {
        const [oldId, old] = p.records.entries().next().value as [number, Entries];
        p.records.delete(oldId);
        this.recordPool.push(old);
        this.counts.recordsEvicted++;
      }
    } else {
      this.recordPool.push(rec);
    }
    const st = p.s;
    st.snapshotBytes = bytes.length;
    st.entitiesSent = taken;
    st.skippedByBudget = nc - taken;
    st.budgetBytes = budget;
    st.baselineAgeTicks = p.newestAck < 0 ? -1 : tick - p.newestAck;
    st.snapshotsSent++;
    st.bytesSent += bytes.length;
  }

  private writeBody(w: BitWriter, p: Player<T, I>, slot: number, kind: number, tick: number, common: number): void {
    const h = p.h;
    const stride = this.stride;
    const off = slot * stride;
    if (kind === EntryKind.Update) {
      const e = this.bySlot[slot]!;
      w.bits(1, 1);
      const base = h.ackTick[slot]!;
      if (common >= 0 && h.guessable(slot, common)) w.bits(1, 1);
      else {
        w.bits(0, 1);
        w.expGolomb(tick - base - 1, 0);
      }
      e.codec.writeDelta(w, this.q, off, h.ackQ, off, this.stepKs[e.codec.id]!, this.stepSums[e.codec.id]);
    } else if (kind === EntryKind.Create) {
      const e = this.bySlot[slot]!;
      w.bits(2, 2);
      w.bits(e.codec.id, this.schema.typeBits);
      w.bits(e.gen, 16);
      e.codec.writeFull(w, this.q, off);
    } else {
      w.bits(0, 2);
    }
  }

  private clearSums(): void {
    for (const sums of this.stepSums) sums.fill(0);
  }

  /**
   * The snapshot message of the chosen candidates, in slot order: their bodies written here
   * (`direct`) or copied from the scratch encoding. Undefined if it does not fit `budget`.
   */
  private writeSnapshot(p: Player<T, I>, tick: number, common: number, nc: number, taken: number, budget: number, direct: boolean): Uint8Array | undefined {
    const cand = this.cand;
    const chosen = this.chosen;
    if (this.out.length < budget) this.out = new Uint8Array(budget);
    const w = this.w;
    w.reset(this.out, 0, budget);
    w.bits(Kind.Snapshot, 8);
    w.bits(tick >>> 0, 32);
    const lastInput = p.s.lastInputTick;
    w.bool(lastInput >= 0);
    if (lastInput >= 0) w.bits(lastInput >>> 0, 32);
    const own = p.entity;
    w.bool(own !== undefined);
    if (own !== undefined) {
      w.bits(own.slot, 16);
      w.bits(own.gen, 16);
    }
    w.expGolomb(common < 0 ? 0 : tick - common, 0);
    w.expGolomb(p.epoch, 0);
    w.bool(taken === nc);
    const k = taken === 0 ? 0 : Math.min(7, Math.max(0, Math.floor(Math.log2(Math.max(1, this.high / taken))) - 1));
    w.bits(k, 3);
    const tables = this.tablesUsed;
    tables.fill(0);
    for (let j = 0; j < nc; j++) if (chosen[j] === 1 && this.candKind[j] === EntryKind.Update) tables[this.bySlot[cand[j]!]!.codec.id] = 1;
    let nt = 0;
    for (let t = 0; t < tables.length; t++) nt += tables[t]!;
    w.expGolomb(nt, 0);
    for (let t = 0; t < tables.length; t++) {
      if (tables[t] === 0) continue;
      w.bits(t, this.schema.typeBits);
      const ks = this.stepKs[t]!;
      for (let j = 0; j < ks.length; j++) w.bits(ks[j]!, 4);
    }
    const r = this.r;
    r.reset(this.scratchBuf, 0);
    let prev = -1;
    for (let j = 0; j < nc; j++) {
      if (chosen[j] === 0) continue;
      const slot = cand[j]!;
      w.expGolomb(slot - prev, k);
      prev = slot;
      if (direct) {
        this.writeBody(w, p, slot, this.candKind[j]!, tick, common);
        if (w.overflow) return undefined;
      } else {
        r.seekBit(0, this.candStart[j]!);
        copyBits(r, w, this.candLen[j]!);
      }
    }
    w.expGolomb(0, k);
    const end = w.finish();
    if (w.overflow) return undefined;
    return this.out.slice(0, end);
  }

  private growCand(n: number): void {
    let cap = this.cand.length;
    while (cap < n) cap *= 2;
    this.cand = new Int32Array(cap);
    this.candKind = new Uint8Array(cap);
    this.candStart = new Int32Array(cap);
    this.candLen = new Int32Array(cap);
    this.sel = new Int32Array(cap);
    this.chosen = new Uint8Array(cap);
    this.prioOf = new Float64Array(cap);
  }
}

