import { BitReader, BitWriter, zigzag } from '../core/bits.js';
import { readU32LE, writeU32LE } from '../core/bytes.js';
import { isInt, isNum, isObject, isOptionalFn } from '../core/config.js';
import { newCounters } from '../core/counters.js';
import { checkArg, checkConfig } from '../core/errors.js';
import { Playback, type PlaybackOptions, type PlaybackStats, type SampleOutcome, Track } from './interpolation.js';
import { Predictor } from './prediction.js';
import type { Fields, Schema, SchemaTypes, TypeCodec, ValuesOf } from './schema.js';
import { BASELINE_WINDOW, type LinkEvent, type StateLink } from './server.js';
import { CONTROL, Entries, EntryKind, entityId, INPUTS, Kind, RENDER_SCALE, SNAPSHOTS } from './wire.js';

/** An entity as the client draws it. `values` is updated in place by each `sample`. */
export interface ViewEntity<T extends SchemaTypes = SchemaTypes, K extends keyof T & string = keyof T & string> {
  /** The server's entity id. */
  readonly id: number;
  /** Its type's name. */
  readonly type: K;
  /** Its values at the render time of the last `sample` (interpolated), or predicted if it is this client's own. */
  readonly values: ValuesOf<T[K]>;
  /** True for the entity this client controls (predicted, not interpolated). */
  readonly predicted: boolean;
  /** How the last `sample` placed it: between two snapshots, extrapolated past the newest, or held. */
  readonly placed: SampleOutcome | 'predicted';
}

/** Options of a `StateClient`. */
export interface StateClientOptions<T extends SchemaTypes, I extends Fields> {
  /** The schema the server uses (the hashes must match). */
  schema: Schema<T, I>;
  /** Index of the first of the three state lanes in the connection's lane list. Default 0. */
  lane?: number;
  /**
   * Predict this client's own entity: the same deterministic step the server runs for each input
   * (mutate `values`). Without it, the own entity is interpolated like the others.
   */
  predict?: (values: ValuesOf<T[keyof T & string]>, input: ValuesOf<I>, tick: number) => void;
  /** Interpolation settings (the snapshot interval comes from the server). */
  interpolation?: Omit<PlaybackOptions, 'tickMs'>;
  /** A correction's visible offset decays to zero within this (ms). Default 100. */
  smoothMs?: number;
  /** Unacknowledged inputs kept and sent again in each input message. Default 32. */
  maxUnackedInputs?: number;
}

/** A `StateClient`'s figures. */
export interface StateClientStats {
  /** Snapshots received and applied; dropped as stale (older than the window) or malformed. */
  snapshots: number;
  stale: number;
  malformed: number;
  /** Snapshots whose baseline was missing (each asks the server to start over from full state). */
  missingBaseline: number;
  /** Bytes of the last snapshot, and of all snapshots. */
  lastSnapshotBytes: number;
  snapshotBytes: number;
  /** Newest server tick received (−1: none). */
  newestTick: number;
  /** Entities held (alive in the newest state). */
  entities: number;
  /** The playback clock: interpolation delay, stalls, extrapolation (see `PlaybackStats`). */
  playback: PlaybackStats | undefined;
  /** Prediction: corrections above the threshold, the largest, inputs unacknowledged. */
  corrections: number;
  largestCorrection: number;
  inputsUnacked: number;
  /** Snapshot age: local ms since the newest snapshot arrived at the last `sample`. */
  snapshotAgeMs: number;
}

/** Counter names of a `StateClient`. */
export type StateClientCounter = 'malformed' | 'stale' | 'missingBaseline' | 'schemaMismatch' | 'resyncsSent';

/**
 * Snapshots a client keeps as baselines, in ticks behind the newest: twice the server's window, so a
 * snapshot that arrives up to BASELINE_WINDOW ticks late still finds its baselines.
 */
const KEEP_TICKS = 2 * BASELINE_WINDOW;

/** Input ticks one `input` call runs at most; beyond, the input clock skips ahead. */
const MAX_CATCH_UP = 8;

/** Snapshot ticks remembered per slot, to find an update's baseline without a scan. */
const RECV_RING = 8;

class Visible {
  readonly id: number;
  readonly slot: number;
  readonly gen: number;
  readonly codec: TypeCodec;
  readonly type: string;
  readonly track: Track;
  readonly raw: Float64Array;
  /** The newest applied wire values, and their tick. */
  readonly q: Int32Array;
  qTick = -1;
  values: Record<string, unknown>;
  predicted = false;
  placed: SampleOutcome | 'predicted' = 'empty';
  bornTick: number;
  diedTick = Infinity;
  constructor(slot: number, gen: number, codec: TypeCodec, bornTick: number, values: Float64Array) {
    this.slot = slot;
    this.gen = gen;
    this.id = entityId(slot, gen);
    this.codec = codec;
    this.type = codec.name;
    this.track = new Track(codec.slots);
    this.raw = new Float64Array(codec.slots);
    this.q = new Int32Array(codec.slots);
    this.raw.set(values.subarray(0, codec.slots));
    this.values = codec.toObject(this.raw) as Record<string, unknown>;
    this.bornTick = bornTick;
  }
}

/**
 * The client side of the game-state layer: pass it every connection event (`handle`), call
 * `input(now, values)` and `sample(now)` each frame. It decodes snapshots against the states it
 * holds, interpolates the other entities on an adaptive playback clock, and predicts its own entity
 * (with `predict`), replaying unacknowledged inputs on each snapshot. Sans-IO: `now` (ms) is given.
 */
export class StateClient<T extends SchemaTypes = SchemaTypes, I extends Fields = Fields> {
  readonly schema: Schema<T, I>;
  private readonly link: StateLink;
  private readonly lane: number;
  private readonly stride: number;
  private readonly options: StateClientOptions<T, I>;
  private readonly records = new Map<number, Entries>();
  private readonly pool: Entries[] = [];
  private readonly bySlot: (Visible | undefined)[] = [];
  private readonly visible = new Map<number, Visible>();
  private appliedTick = new Int32Array(64).fill(-1);
  private readonly r = new BitReader();
  private readonly w = new BitWriter();
  private readonly counts = newCounters<StateClientCounter>(['malformed', 'stale', 'missingBaseline', 'schemaMismatch', 'resyncsSent']);
  private tickMs = 0;
  private playback: Playback | undefined;
  private newest = -1;
  private newestAt = 0;
  private snapshots = 0;
  private lastBytes = 0;
  private totalBytes = 0;
  private lastResyncTick = -Infinity;
  private helloSent = false;
  private welcomed = false;
  private ownId = -1;
  private predictor: Predictor<ValuesOf<I>> | undefined;
  private inputStart = Number.NaN;
  private inputTick = 0;
  private renderTick = -1;
  private readonly scratchQ: Int32Array;
  private readonly scratchV: Float64Array;
  private readonly out: ViewEntity<T>[] = [];
  private serverHash: number | undefined;
  private readonly ksBuf: Uint8Array[];
  /** Per slot, the newest RECV_RING snapshot ticks that held it, newest first (−1: none). */
  private recvTicks = new Int32Array(0);
  private recvCap = 0;
  private awaitEpoch = 0;
  private completeTick = -1;
  private epoch = 0;
  private readonly ksOf: (Uint8Array | undefined)[];

  constructor(link: StateLink, options: StateClientOptions<T, I>) {
    checkConfig(isObject(options) && options.schema !== undefined && Array.isArray(options.schema.types), 'StateClient: options.schema must come from defineSchema');
    checkArg(isObject(link) && typeof link.send === 'function', 'StateClient: link must be a connection (send, stats)');
    this.link = link;
    this.schema = options.schema;
    this.options = options;
    this.lane = options.lane ?? 0;
    checkConfig(isInt(this.lane, 0, 252), 'StateClient: lane must be an integer 0..252');
    checkConfig(isOptionalFn(options.predict), 'StateClient: predict must be a function');
    checkConfig(options.smoothMs === undefined || isNum(options.smoothMs, 0, 10_000), 'StateClient: smoothMs must be 0..10000');
    checkConfig(options.maxUnackedInputs === undefined || isInt(options.maxUnackedInputs, 1, 256), 'StateClient: maxUnackedInputs must be 1..256');
    this.stride = Math.max(...this.schema.types.map((t) => t.slots));
    this.scratchQ = new Int32Array(Math.max(this.stride, this.schema.inputs.slots));
    this.scratchV = new Float64Array(this.stride);
    this.ksBuf = this.schema.types.map((t) => new Uint8Array(t.deltaSlots));
    this.ksOf = new Array<Uint8Array | undefined>(this.schema.types.length).fill(undefined);
  }

  /** The server's schema hash when it refused ours (`schemaMismatch`), else undefined. */
  get mismatch(): number | undefined {
    return this.serverHash;
  }

  /** True once the server accepted the schema. */
  get joined(): boolean {
    return this.welcomed;
  }

  /** Counters of dropped input. */
  counters(): Readonly<Record<StateClientCounter, number>> {
    return this.counts;
  }

  /**
   * Give the client a connection event. A `connected` event sends the schema check (on a
   * connection that was connected before this client was made, call `hello()`). Returns true if
   * the event was the layer's.
   */
  handle(now: number, event: LinkEvent): boolean {
    if (event.type === 'connected') {
      this.hello();
      return false;
    }
    const lane = event.lane;
    if (lane === undefined || lane < this.lane || lane > this.lane + INPUTS) return false;
    if (event.type !== 'message' || event.bytes === undefined) return event.type === 'delivery';
    const b = event.bytes;
    if (lane === this.lane + SNAPSHOTS) this.snapshot(now, b);
    else if (lane === this.lane + CONTROL) this.control(b);
    else this.counts.malformed++;
    return true;
  }

  /** Send the schema check now (the `connected` event does this). */
  hello(): void {
    if (this.helloSent) return;
    this.helloSent = true;
    const m = new Uint8Array(5);
    m[0] = Kind.Hello;
    writeU32LE(m, 1, this.schema.hash);
    this.link.send(this.lane + CONTROL, m);
  }

  private control(b: Uint8Array): void {
    if (b.length === 11 && b[0] === Kind.Welcome && readU32LE(b, 1) === this.schema.hash) {
      const hz = b[5]! | (b[6]! << 8);
      if (hz < 1 || hz > 240) {
        this.counts.malformed++;
        return;
      }
      this.welcomed = true;
      this.tickMs = 1000 / hz;
      this.playback = new Playback({ ...this.options.interpolation, tickMs: this.tickMs });
      return;
    }
    if (b.length === 5 && b[0] === Kind.Mismatch) {
      this.counts.schemaMismatch++;
      this.serverHash = readU32LE(b, 1);
      return;
    }
    this.counts.malformed++;
  }

  private snapshot(now: number, b: Uint8Array): void {
    const r = this.r;
    r.reset(b);
    if (r.bits(8) !== Kind.Snapshot) {
      this.counts.malformed++;
      return;
    }
    const tick = r.bits(32);
    const inputAck = r.bool() ? r.bits(32) : -1;
    let ownSlot = -1;
    let ownGen = 0;
    if (r.bool()) {
      ownSlot = r.bits(16);
      ownGen = r.bits(16);
    }
    const commonOff = r.expGolomb(0);
    const common = commonOff === 0 ? -1 : tick - commonOff;
    const epoch = r.expGolomb(0);
    const complete = r.bool();
    const k = r.bits(3);
    const tables = r.expGolomb(0);
    const ksOf = this.ksOf;
    ksOf.fill(undefined);
    for (let t = 0; t < tables && !r.overflow; t++) {
      const type = r.bits(this.schema.typeBits);
      const codec = this.schema.types[type];
      if (codec === undefined || ksOf[type] !== undefined) {
        this.counts.malformed++;
        return;
      }
      const ks = this.ksBuf[type]!;
      for (let j = 0; j < ks.length; j++) ks[j] = r.bits(4);
      ksOf[type] = ks;
    }
    if (r.overflow || tables > this.schema.types.length) {
      this.counts.malformed++;
      return;
    }
    if (this.records.has(tick) || (this.newest >= 0 && tick <= this.newest - BASELINE_WINDOW) || epoch < this.awaitEpoch) {
      this.counts.stale++;
      return;
    }
    if (epoch > this.epoch) this.startOver(tick, epoch);
    const rec = this.pool.pop() ?? new Entries(this.stride);
    rec.tick = tick;
    rec.n = 0;
    const stride = this.stride;
    const types = this.schema.types;
    let slot = -1;
    let ok = true;
    let missing = false;
    for (;;) {
      const gap = r.expGolomb(k);
      if (r.overflow) {
        ok = false;
        break;
      }
      if (gap === 0) break;
      slot += gap;
      if (slot > 0xffff) {
        ok = false;
        break;
      }
      let kind: number;
      let gen: number;
      let type: number;
      const at = rec.n;
      rec.ensure(at + 1);
      if (r.bits(1) === 1) {
        kind = EntryKind.Update;
        let baseRec: Entries | undefined;
        let bi = -1;
        if (r.bool()) {
          baseRec = this.guessBase(slot, common);
          if (baseRec !== undefined) bi = baseRec.find(slot);
        } else {
          baseRec = this.records.get(tick - 1 - r.expGolomb(0));
          if (baseRec !== undefined) bi = baseRec.find(slot);
        }
        if (bi < 0 || baseRec!.kinds[bi] === EntryKind.Destroy) {
          missing = true;
          break;
        }
        gen = baseRec!.gens[bi]!;
        type = baseRec!.types[bi]!;
        const ks = ksOf[type];
        if (ks === undefined || !types[type]!.readDelta(r, baseRec!.q, bi * stride, rec.q, at * stride, ks)) ok = false;
      } else if (r.bits(1) === 1) {
        kind = EntryKind.Create;
        type = r.bits(this.schema.typeBits);
        gen = r.bits(16);
        if (type >= types.length || !types[type]!.readFull(r, rec.q, at * stride)) ok = false;
      } else {
        kind = EntryKind.Destroy;
        type = 0;
        gen = 0;
      }
      if (!ok) break;
      rec.slots[at] = slot;
      rec.kinds[at] = kind;
      rec.gens[at] = gen;
      rec.types[at] = type;
      rec.n++;
    }
    if (missing || !ok || r.overflow) {
      if (missing) this.counts.missingBaseline++;
      else this.counts.malformed++;
      this.pool.push(rec);
      // The server may count this snapshot as held and guess from it: ask for full state, and take
      // nothing more until it comes.
      this.awaitEpoch = epoch + 1;
      this.resync(tick);
      return;
    }
    this.records.set(tick, rec);
    for (let i = 0; i < rec.n; i++) this.noteEntries(rec.slots[i]!, tick);
    const before = tick > this.newest ? this.records.get(this.newest) : undefined;
    if (tick > this.newest) {
      this.newest = tick;
      this.newestAt = now;
      for (const [t, old] of this.records) {
        if (t > tick - KEEP_TICKS) continue;
        this.records.delete(t);
        this.pool.push(old);
      }
      if ((tick & 15) === 0) for (const e of this.visible.values()) if (e.diedTick <= Math.max(this.renderTick, tick - KEEP_TICKS)) this.visible.delete(e.id);
    }
    if (complete && tick > this.completeTick) this.completeTick = tick;
    this.snapshots++;
    this.lastBytes = b.length;
    this.totalBytes += b.length;
    this.playback?.received(now, tick);
    this.ownId = ownSlot < 0 ? -1 : entityId(ownSlot, ownGen);
    this.apply(now, rec, inputAck, before);
  }

  /**
   * The server started over from full state (after our RESYNC): what we hold may include entities it
   * no longer tells us about. Everything held ends at `tick`; the new epoch's creates bring back what
   * exists, and no snapshot of an older epoch is taken any more.
   */
  private startOver(tick: number, epoch: number): void {
    this.epoch = epoch;
    this.awaitEpoch = epoch;
    for (const [t, rec] of this.records) {
      this.records.delete(t);
      this.pool.push(rec);
    }
    this.recvTicks.fill(-1);
    this.appliedTick.fill(-1);
    this.completeTick = -1;
    for (let slot = 0; slot < this.bySlot.length; slot++) {
      const e = this.bySlot[slot];
      if (e !== undefined) e.diedTick = Math.min(e.diedTick, tick);
      this.bySlot[slot] = undefined;
    }
  }

  /** The newest snapshot of tick ≤ `common` that holds `slot`: what the server knows this client holds of it. */
  private guessBase(slot: number, common: number): Entries | undefined {
    if (common < 0) return undefined;
    if (slot < this.recvCap) {
      // The slot's newest RECV_RING snapshot ticks, newest first: the first at or below `common` is the one.
      const at = slot * RECV_RING;
      for (let i = 0; i < RECV_RING; i++) {
        const t = this.recvTicks[at + i]!;
        if (t < 0) break;
        if (t <= common) {
          const rec = this.records.get(t);
          if (rec !== undefined) return rec;
          break;
        }
      }
    }
    for (let t = common; t > common - BASELINE_WINDOW; t--) {
      const rec = this.records.get(t);
      if (rec !== undefined && rec.find(slot) >= 0) return rec;
    }
    return undefined;
  }

  /** Keep `tick` among the slot's newest RECV_RING snapshot ticks (sorted, newest first). */
  private noteEntries(slot: number, tick: number): void {
    if (slot >= this.recvCap) {
      let cap = Math.max(64, this.recvCap);
      while (cap <= slot) cap *= 2;
      const t = new Int32Array(cap * RECV_RING).fill(-1);
      t.set(this.recvTicks);
      this.recvTicks = t;
      this.recvCap = cap;
    }
    const a = this.recvTicks;
    const at = slot * RECV_RING;
    let i = RECV_RING - 1;
    if (a[at + i]! >= tick) return;
    while (i > 0 && a[at + i - 1]! < tick) {
      a[at + i] = a[at + i - 1]!;
      i--;
    }
    a[at + i] = tick;
  }

  private resync(tick: number): void {
    if (tick - this.lastResyncTick < 20) return;
    this.lastResyncTick = tick;
    this.counts.resyncsSent++;
    this.link.send(this.lane + CONTROL, Uint8Array.of(Kind.Resync));
  }

  /**
   * Apply a decoded snapshot to what is drawn. `before`: the snapshot received just before it, if
   * it is the tick before this one's in arrival: an entity it left out had not changed then (the
   * server sends each entity until the client holds its newest state), so its track rests until then.
   */
  private apply(now: number, rec: Entries, inputAck: number, before: Entries | undefined): void {
    const tick = rec.tick;
    const stride = this.stride;
    const v = this.scratchV;
    if (this.appliedTick.length <= 0xffff) this.ensureSlots(rec);
    for (let i = 0; i < rec.n; i++) {
      const slot = rec.slots[i]!;
      if (tick <= this.appliedTick[slot]!) continue;
      this.appliedTick[slot] = tick;
      const gen = rec.gens[i]!;
      const id = entityId(slot, gen);
      const cur = this.bySlot[slot];
      if (rec.kinds[i] === EntryKind.Destroy) {
        // Whatever the slot holds ends: anything created in it later has a later applied tick.
        if (cur !== undefined) {
          cur.diedTick = tick;
          this.bySlot[slot] = undefined;
        }
        continue;
      }
      const codec = this.schema.types[rec.types[i]!]!;
      codec.dequantize(rec.q, i * stride, v, 0);
      let e = cur;
      if (e === undefined || e.id !== id) {
        if (e !== undefined) e.diedTick = tick;
        e = new Visible(slot, gen, codec, tick, v);
        this.bySlot[slot] = e;
        this.visible.set(id, e);
      }
      e.track.push(tick, v.subarray(0, codec.slots), before !== undefined && before.find(slot) < 0 ? before.tick : undefined);
      e.q.set(rec.q.subarray(i * stride, i * stride + codec.slots));
      e.qTick = tick;
      if (id === this.ownId && this.options.predict !== undefined) this.reconcile(now, e, inputAck, v, tick);
    }
  }

  private ensureSlots(rec: Entries): void {
    let max = 0;
    for (let i = 0; i < rec.n; i++) if (rec.slots[i]! > max) max = rec.slots[i]!;
    if (max < this.appliedTick.length) return;
    let cap = this.appliedTick.length;
    while (cap <= max) cap *= 2;
    const a = new Int32Array(cap).fill(-1);
    a.set(this.appliedTick);
    this.appliedTick = a;
  }

  private reconcile(now: number, e: Visible, inputAck: number, v: Float64Array, tick: number): void {
    const codec = e.codec;
    const server = v.subarray(0, codec.slots);
    if (this.predictor === undefined) {
      const predict = this.options.predict!;
      const obj = codec.toObject(server) as Record<string, unknown>;
      this.predictor = new Predictor<ValuesOf<I>>(server, {
        slots: codec.slots,
        kinds: codec.kinds,
        smoothMs: this.options.smoothMs ?? 100,
        maxUnacked: this.options.maxUnackedInputs ?? 32,
        quantize: (s) => codec.snapValues(s),
        step: (s, input, tick) => {
          codec.assignObject(obj as never, s);
          predict(obj as never, input, tick);
          codec.fromObject(obj as never, s);
        },
      });
      e.predicted = true;
      // No input was sent yet: an ack names none of ours, and adopting it would refuse every input after.
      return;
    }
    e.predicted = true;
    if (inputAck >= 0) this.predictor.reconcile(now, inputAck, server, tick);
  }

  /**
   * This frame's input at local time `now` (ms). The client runs input ticks at the server's tick
   * rate: for each tick that began since the last call, the latest input is applied to the
   * prediction and sent, with every input not yet acknowledged (bounded), and the render time.
   */
  input(now: number, values: ValuesOf<I>): void {
    // With prediction, inputs start with the first state of the own entity, so that every input sent
    // is one the prediction applied too.
    if (!this.welcomed || (this.options.predict !== undefined && this.predictor === undefined)) return;
    if (Number.isNaN(this.inputStart)) this.inputStart = now - this.tickMs;
    let due = Math.floor((now - this.inputStart) / this.tickMs);
    if (due - this.inputTick > MAX_CATCH_UP) {
      // After a long pause (a hidden tab) the input clock moves on: the missed ticks had no input.
      this.inputStart += (due - this.inputTick - MAX_CATCH_UP) * this.tickMs;
      due = this.inputTick + MAX_CATCH_UP;
    }
    let sent = false;
    while (this.inputTick < due) {
      this.inputTick++;
      this.tickInput(this.inputTick, values);
      sent = true;
    }
    if (sent) this.sendInputs();
  }

  private unacked: { tick: number; input: ValuesOf<I>; render: number }[] = [];

  private tickInput(tick: number, values: ValuesOf<I>): void {
    const codec = this.schema.inputs;
    codec.quantizeObject(values, this.scratchQ, 0);
    const snapped = new Float64Array(codec.slots);
    codec.dequantize(this.scratchQ, 0, snapped, 0);
    const input = codec.toObject(snapped) as ValuesOf<I>;
    this.predictor?.apply(tick, input);
    const max = this.options.maxUnackedInputs ?? 32;
    const ack = this.predictor?.stats().lastAckTick ?? -1;
    while (this.unacked.length > 0 && (this.unacked[0]!.tick <= ack || this.unacked.length >= max)) this.unacked.shift();
    this.unacked.push({ tick, input, render: Math.max(0, Math.round(this.renderTick * RENDER_SCALE)) });
  }

  private sendInputs(): void {
    const list = this.unacked;
    if (list.length === 0) return;
    const codec = this.schema.inputs;
    const buf = new Uint8Array(16 + list.length * (Math.ceil(codec.fullBits / 8) + 6));
    const w = this.w;
    w.reset(buf);
    w.bits(Kind.Input, 8);
    const newest = list[list.length - 1]!;
    w.bits(newest.tick >>> 0, 32);
    w.bits(newest.render >>> 0, 32);
    w.expGolomb(list.length - 1, 0);
    const q = this.scratchQ;
    const prevQ = new Int32Array(codec.slots);
    for (let i = list.length - 1; i >= 0; i--) {
      const it = list[i]!;
      codec.quantizeObject(it.input, q, 0);
      if (i < list.length - 1) {
        w.expGolomb(zigzag(list[i + 1]!.render - it.render), 4);
        const same = !codec.differs(q, 0, prevQ, 0);
        w.bool(same);
        if (!same) codec.writeFull(w, q, 0);
      } else {
        codec.writeFull(w, q, 0);
      }
      prevQ.set(q.subarray(0, codec.slots));
    }
    const end = w.finish();
    this.link.send(this.lane + INPUTS, buf.slice(0, end));
  }

  /**
   * The entities to draw at local time `now` (ms): the others interpolated on the playback clock,
   * this client's own predicted (with a decaying correction). The array and its objects are reused
   * by the next call. For the first second after the first snapshot the clock measures the path
   * before playing: entities are drawn where they were first seen (`placed: 'early'`).
   */
  sample(now: number): readonly ViewEntity<T>[] {
    const out = this.out;
    out.length = 0;
    const pb = this.playback;
    if (pb === undefined) return out;
    const render = pb.advance(now);
    this.renderTick = render;
    // An entity the newest complete snapshot left out had not changed by then; one a budget-bound
    // snapshot left out is known only up to its own last sample.
    const complete = this.completeTick;
    const maxEx = (this.options.interpolation?.maxExtrapolationMs ?? 100) / this.tickMs;
    for (const e of this.visible.values()) {
      if (e.diedTick <= render) {
        this.visible.delete(e.id);
        continue;
      }
      if (e.id === this.ownId && e.predicted && this.predictor !== undefined) {
        this.predictor.render(now, e.raw);
        e.placed = 'predicted';
      } else {
        if (e.bornTick > render && render !== -Infinity) continue;
        e.placed = e.track.sample(render, Math.max(complete, e.track.lastTick), e.codec.kinds, maxEx, e.raw);
      }
      e.codec.assignObject(e.values as never, e.raw);
      out.push(e as unknown as ViewEntity<T>);
    }
    return out;
  }

  /** The newest decoded state of entity `id` (no interpolation) and the server tick it is from, or undefined if it is not held. */
  latest(id: number): { tick: number; values: ValuesOf<T[keyof T & string]> } | undefined {
    const e = this.visible.get(id);
    if (e === undefined || e.diedTick !== Infinity) return undefined;
    e.codec.dequantize(e.q, 0, this.scratchV, 0);
    return { tick: e.qTick, values: e.codec.toObject(this.scratchV) as ValuesOf<T[keyof T & string]> };
  }

  private heldCount(): number {
    let n = 0;
    for (const e of this.visible.values()) if (e.diedTick === Infinity) n++;
    return n;
  }

  /** Ids of the entities held in the newest state (alive, whatever the render time). */
  ids(): number[] {
    const ids: number[] = [];
    for (const e of this.visible.values()) if (e.diedTick === Infinity) ids.push(e.id);
    return ids;
  }

  /** The client's figures. */
  stats(now: number): StateClientStats {
    const ps = this.predictor?.stats();
    return {
      snapshots: this.snapshots,
      stale: this.counts.stale,
      malformed: this.counts.malformed,
      missingBaseline: this.counts.missingBaseline,
      lastSnapshotBytes: this.lastBytes,
      snapshotBytes: this.totalBytes,
      newestTick: this.newest,
      entities: this.heldCount(),
      playback: this.playback?.stats(),
      corrections: ps?.corrections ?? 0,
      largestCorrection: ps?.largestCorrection ?? 0,
      inputsUnacked: this.unacked.length,
      snapshotAgeMs: this.newest < 0 ? -1 : now - this.newestAt,
    };
  }
}
