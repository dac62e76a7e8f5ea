import { checkArg, GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { type LinkConfig, resolveLinkConfig } from './config.js';
import { DeliverySchedule } from './schedule.js';

/** Event counts of one `Link` since construction. Datagram counts unless the name says bytes. */
export interface LinkCounters {
  /** `send()` calls. */
  sent: number;
  /** Payload bytes passed to `send()`. */
  bytesSent: number;
  /** Datagrams returned by `pollDeliver()`/`pollDeliverInto()` (duplicates included). */
  delivered: number;
  /** Payload bytes of those datagrams. */
  bytesDelivered: number;
  /** Dropped by `loss`, `gilbertElliott` or `shuffleBagLoss`. */
  droppedLoss: number;
  /** Dropped at the full bottleneck queue (drop-tail). */
  droppedQueue: number;
  /** Dropped for being longer than `mtu`. */
  droppedMtu: number;
  /** Dropped because sent in, or due to arrive in, an outage window (copies included). */
  droppedOutage: number;
  /** Dropped because the link already held `maxInFlight` datagrams or `maxInFlightBytes` (copies included). */
  droppedInFlight: number;
  /** Extra copies made by `duplicate`, including those then dropped (counted in `droppedInFlight` or `droppedOutage`). */
  duplicated: number;
  /** Most datagrams ever waiting in the bottleneck queue (including the one being serialised). */
  queuedPeakDatagrams: number;
  /** Most wire bytes ever waiting in the bottleneck queue. */
  queuedPeakBytes: number;
  /** Most datagrams ever held by the link (queued + propagating). */
  inFlightPeak: number;
}

// Payload storage is recycled through power-of-two size classes (64 B .. 64 KiB); larger datagrams
// get exact, unpooled buffers. The pool itself is capped so it never holds more than POOL_MAX_BYTES.
const POOL_MIN_CLASS = 6;
const POOL_MAX_LEN = 1 << 16;
const POOL_MAX_BYTES = 16 * 1024 * 1024;

function specOf(partial: Partial<LinkConfig>): Partial<LinkConfig> {
  const spec: Partial<LinkConfig> = {};
  for (const [k, v] of Object.entries(partial)) if (v !== undefined) (spec as Record<string, unknown>)[k] = v;
  return spec;
}

/** Derive the `index`-th 32-bit sub-seed of `seed` (stable across versions: results depend on it). */
export function deriveSeed(seed: number, index: number): number {
  const r = new NonCryptoRng((seed ^ Math.imul(index + 1, 0x9e3779b9)) >>> 0);
  return r.nextU32();
}

/**
 * One direction of a simulated network path: sans-IO, seeded, deterministic.
 *
 * Drive it like any gamewire object: `send(now, bytes)` when a datagram enters; `pollDeliver(now)`
 * until it returns `undefined` to collect datagrams due by `now`; `pollTimeout()` tells when the
 * next one is due. `now` is ms and must never go backwards across calls. Per datagram the link
 * decides, in order: outage → MTU → loss (Bernoulli, Gilbert-Elliott, shuffle bag) → in-flight cap →
 * bottleneck queue (drop-tail, serialisation at `rateBitsPerSec`) → latency + jitter (+ FIFO clamp
 * when `reorder` is false) → outage at arrival → duplicate. Same config and seed, same results.
 * `reconfigure(now, changes)` changes the impairments mid-run without losing datagrams in flight.
 */
export class Link {
  private cfg: Readonly<LinkConfig>;
  // The caller's settings (defaults not filled in), so a reconfiguration merges onto what was asked for.
  private spec: Partial<LinkConfig>;

  private clock = -Infinity;

  // Independent RNG streams, one per knob, so changing one knob never shifts another's draws.
  private readonly lossRng: NonCryptoRng;
  private readonly geRng: NonCryptoRng;
  private readonly bagRng: NonCryptoRng;
  private readonly jitterRng: NonCryptoRng;
  private readonly dupRng: NonCryptoRng;

  private geBad = false;
  private bag: Int32Array | undefined;
  private bagLeft = 0;

  // Bottleneck: FIFO ring of (departure time, wire bytes) for datagrams not yet fully serialised.
  private qDep = new Float64Array(64);
  private qWire = new Float64Array(64);
  // Schedule sequence numbers of each queued datagram's delivery and duplicate (-1: none), for re-timing.
  private qSeq = new Float64Array(64);
  private qDupSeq = new Float64Array(64);
  private qHead = 0;
  private qLen = 0;
  private qBytes = 0;
  private lastDeparture = -Infinity;
  private msPerWireByte = 0;
  private qLimitDatagrams = Infinity;
  private qLimitBytes = Infinity;

  private lastDelivery = -Infinity;

  private readonly pending = new DeliverySchedule();
  private readonly pool: Uint8Array[][] = [];
  private pooledBytes = 0;
  private tag = 0;
  private watcher: (() => void) | undefined;

  private readonly c: LinkCounters = {
    sent: 0, bytesSent: 0, delivered: 0, bytesDelivered: 0, droppedLoss: 0, droppedQueue: 0,
    droppedMtu: 0, droppedOutage: 0, droppedInFlight: 0, duplicated: 0, queuedPeakDatagrams: 0,
    queuedPeakBytes: 0, inFlightPeak: 0,
  };

  /**
   * @param config impairments (validated; throws `GamewireError('invalid-config')` on nonsense).
   * @param seed any integer (low 32 bits used); equal (config, seed) give bit-identical behaviour.
   */
  constructor(config: Partial<LinkConfig>, seed: number) {
    checkArg(typeof seed === 'number' && Number.isInteger(seed), 'seed must be an integer');
    this.cfg = resolveLinkConfig(config);
    this.spec = specOf(config);
    this.lossRng = new NonCryptoRng(deriveSeed(seed, 0));
    this.geRng = new NonCryptoRng(deriveSeed(seed, 1));
    this.bagRng = new NonCryptoRng(deriveSeed(seed, 2));
    this.jitterRng = new NonCryptoRng(deriveSeed(seed, 3));
    this.dupRng = new NonCryptoRng(deriveSeed(seed, 4));
    this.apply();
  }

  /** The configuration in force, validated, defaults filled in. */
  get config(): Readonly<LinkConfig> {
    return this.cfg;
  }

  /**
   * @internal The scheduler's hook (the `World` keeps its links on one deadline heap): `fn` is called
   * whenever `pollTimeout()` may have changed (a delivery scheduled, taken or re-timed), by whoever
   * drives the link. `undefined` removes it.
   */
  watch(fn: (() => void) | undefined): void {
    this.watcher = fn;
  }

  /**
   * Change impairments from `now` (ms) on: `changes` is merged onto the settings given so far (a key
   * set to `undefined` goes back to its default; `rateBitsPerSec: undefined` removes the bottleneck).
   * Nothing in flight is lost or re-decided. A new rate applies at once to the bottleneck's backlog
   * (the datagram on the wire finishes at the new rate, those behind it follow, and their deliveries
   * move with them); datagrams past the bottleneck keep their delivery times. A new delay applies to
   * datagrams sent from `now` on (they overtake older ones only if `reorder` allows it). New
   * queue limits apply to arrivals (a queue already above them drains, nothing is evicted); `outage`
   * windows replace the old list; the random streams continue (no re-seeding). Throws
   * `invalid-config` (link unchanged) on a bad result, `invalid-argument` if `now` goes backwards.
   */
  reconfigure(now: number, changes: Partial<LinkConfig>): void {
    checkArg(typeof changes === 'object' && changes !== null, 'changes must be an object');
    const spec: Partial<LinkConfig> = { ...this.spec };
    for (const [k, v] of Object.entries(changes)) (spec as Record<string, unknown>)[k] = v;
    const cfg = resolveLinkConfig(spec);
    this.advance(now);
    const oldMsPerByte = this.msPerWireByte;
    this.cfg = cfg;
    this.spec = specOf(spec);
    if (cfg.gilbertElliott === undefined) this.geBad = false;
    this.apply();
    if (this.msPerWireByte !== oldMsPerByte) this.retimeQueue(now, oldMsPerByte);
  }

  /**
   * A datagram of `bytes` enters the link at `now` (ms). The link copies the bytes, so the caller
   * may reuse its buffer. `tag` (an int32, default 0) travels with it and is read back from
   * `lastTag` after it is delivered. Never throws for drops (they are counted); throws
   * `invalid-argument` if `now` goes backwards or `bytes` is not a Uint8Array.
   */
  send(now: number, bytes: Uint8Array, tag = 0): void {
    if (!(bytes instanceof Uint8Array)) throw new GamewireError('invalid-argument', 'bytes must be a Uint8Array');
    this.advance(now);
    this.tag = tag | 0;
    const cfg = this.cfg;
    const c = this.c;
    const len = bytes.length;
    c.sent++;
    c.bytesSent += len;

    // Every enabled stream is drawn exactly once per send(), whatever happens to the datagram.
    let lost = false;
    if (cfg.loss > 0) lost = this.lossRng.nextFloat() < cfg.loss;
    if (cfg.gilbertElliott !== undefined && this.stepGilbertElliott()) lost = true;
    if (this.bag !== undefined && this.drawBag()) lost = true;
    const jitter = cfg.jitterMs > 0 ? this.jitter(this.jitterRng.nextFloat()) : 0;
    let dup = false;
    let dupJitter = 0;
    if (cfg.duplicate > 0) {
      dup = this.dupRng.nextFloat() < cfg.duplicate;
      dupJitter = this.jitter(this.dupRng.nextFloat());
    }

    if (cfg.outage !== undefined && this.inOutage(now)) { c.droppedOutage++; return; }
    if (cfg.mtu !== undefined && len > cfg.mtu) { c.droppedMtu++; return; }
    if (lost) { c.droppedLoss++; return; }
    if (this.pending.length >= cfg.maxInFlight || this.pending.bytes + len > cfg.maxInFlightBytes) { c.droppedInFlight++; return; }

    let departure = now;
    let slot = -1;
    if (this.msPerWireByte > 0) {
      const wire = len + cfg.overheadBytes;
      this.drainQueue(now);
      if (this.qLen >= this.qLimitDatagrams || this.qBytes + wire > this.qLimitBytes) { c.droppedQueue++; return; }
      departure = (this.lastDeparture > now ? this.lastDeparture : now) + wire * this.msPerWireByte;
      this.lastDeparture = departure;
      slot = this.enqueue(departure, wire);
    }

    const base = departure + cfg.latencyMs;
    const seq = this.schedule(base + jitter, bytes);
    if (slot >= 0) this.qSeq[slot] = seq;
    if (seq < 0) return;
    if (dup) {
      c.duplicated++;
      if (this.pending.length >= cfg.maxInFlight || this.pending.bytes + len > cfg.maxInFlightBytes) { c.droppedInFlight++; return; }
      const dupSeq = this.schedule(base + dupJitter, bytes);
      if (slot >= 0) this.qDupSeq[slot] = dupSeq;
    }
  }

  /**
   * The next datagram due at or before `now` (ms), in delivery-time order (ties: the order they were
   * scheduled), or `undefined`. Call until `undefined`. Ownership of the returned bytes passes to the caller.
   */
  pollDeliver(now: number): Uint8Array | undefined {
    this.advance(now);
    const due = this.pending.peekTime();
    if (due === undefined || due > now) return undefined;
    const store = this.pending.pop();
    const size = this.pending.popSize;
    const data = new Uint8Array(size);
    data.set(size === store.length ? store : store.subarray(0, size));
    this.release(store);
    this.lastTag = this.pending.popTag;
    this.c.delivered++;
    this.c.bytesDelivered += size;
    this.watcher?.();
    return data;
  }

  /**
   * Like `pollDeliver`, but copies the datagram into `out` and returns its length (bytes), or
   * `undefined` when nothing is due; no allocation per datagram. Throws `buffer-too-small` (and
   * keeps the datagram) if `out` is shorter than `peekLength()`.
   */
  pollDeliverInto(now: number, out: Uint8Array): number | undefined {
    if (!(out instanceof Uint8Array)) throw new GamewireError('invalid-argument', 'out must be a Uint8Array');
    this.advance(now);
    const due = this.pending.peekTime();
    if (due === undefined || due > now) return undefined;
    const need = this.pending.peekSize()!;
    if (need > out.length) {
      throw new GamewireError('buffer-too-small', `next datagram is ${need} bytes, out holds ${out.length}`);
    }
    const store = this.pending.pop();
    const size = this.pending.popSize;
    if (size === store.length) out.set(store);
    else if (size > 0) out.set(store.subarray(0, size));
    this.release(store);
    this.lastTag = this.pending.popTag;
    this.c.delivered++;
    this.c.bytesDelivered += size;
    this.watcher?.();
    return size;
  }

  /** `tag` given to `send` for the datagram most recently returned by `pollDeliver`/`pollDeliverInto`. */
  lastTag = 0;

  /** Length (bytes) of the datagram `pollTimeout()` refers to, or `undefined` when nothing is in flight. */
  peekLength(): number | undefined {
    return this.pending.peekSize();
  }

  /** Earliest pending delivery time (ms), or `undefined` when nothing is in flight. */
  pollTimeout(): number | undefined {
    return this.pending.peekTime();
  }

  /** A snapshot of the counters. */
  counters(): LinkCounters {
    return { ...this.c };
  }

  /** Datagrams waiting in (or being serialised by) the bottleneck at the last `now` seen. */
  get queuedDatagrams(): number {
    this.drainQueue(this.clock);
    return this.qLen;
  }

  /** Wire bytes (payload + overheadBytes) in the bottleneck at the last `now` seen. */
  get queuedBytes(): number {
    this.drainQueue(this.clock);
    return this.qBytes;
  }

  /** Time (ms) the bottleneck still needs, at the last `now` seen, to finish serialising what it holds: the queueing delay a datagram sent now would see. */
  get queueDelayMs(): number {
    return this.lastDeparture > this.clock ? this.lastDeparture - this.clock : 0;
  }

  /** Datagrams held by the link (queued + propagating), i.e. not yet returned by `pollDeliver`. */
  get inFlight(): number {
    return this.pending.length;
  }

  /** Payload bytes held by the link. */
  get inFlightBytes(): number {
    return this.pending.bytes;
  }

  private advance(now: number): void {
    if (!(Number.isFinite(now) && now >= this.clock)) {
      throw new GamewireError('invalid-argument', `now must be a finite number that never goes backwards (got ${now}, last ${this.clock})`);
    }
    this.clock = now;
  }

  private apply(): void {
    const cfg = this.cfg;
    const size = cfg.shuffleBagLoss?.bagSize;
    if (size === undefined) this.bag = undefined;
    else if (this.bag === undefined || this.bag.length !== size) { this.bag = new Int32Array(size); this.bagLeft = 0; }
    this.msPerWireByte = cfg.rateBitsPerSec === undefined ? 0 : 8000 / cfg.rateBitsPerSec;
    this.qLimitDatagrams = cfg.queueDatagrams ?? Infinity;
    this.qLimitBytes = cfg.queueBytes ?? Infinity;
  }

  private jitter(u: number): number {
    const j = this.cfg.jitterMs;
    return this.cfg.jitterIntegerMs ? Math.floor(u * (Math.floor(j) + 1)) : u * j;
  }

  private stepGilbertElliott(): boolean {
    const g = this.cfg.gilbertElliott!;
    const lost = this.geRng.nextFloat() < (this.geBad ? g.lossBad : g.lossGood);
    const u = this.geRng.nextFloat();
    this.geBad = this.geBad ? !(u < g.pBadToGood) : u < g.pGoodToBad;
    return lost;
  }

  private drawBag(): boolean {
    const bag = this.bag!;
    if (this.bagLeft === 0) {
      for (let i = 0; i < bag.length; i++) bag[i] = i;
      this.bagLeft = bag.length;
    }
    const i = this.bagRng.nextInt(this.bagLeft);
    const x = bag[i];
    bag[i] = bag[--this.bagLeft];
    return x < this.cfg.shuffleBagLoss!.lost;
  }

  private inOutage(t: number): boolean {
    for (const w of this.cfg.outage!) if (t >= w.startMs && t < w.endMs) return true;
    return false;
  }

  /** Returns the schedule's sequence number of the delivery, or -1 when it falls in an outage. */
  private schedule(time: number, src: Uint8Array): number {
    let t = time;
    if (!this.cfg.reorder && t < this.lastDelivery) t = this.lastDelivery;
    if (this.cfg.outage !== undefined && this.inOutage(t)) {
      this.c.droppedOutage++;
      return -1;
    }
    this.lastDelivery = t;
    const len = src.length;
    const store = this.alloc(len);
    store.set(src);
    const seq = this.pending.push(t, store, len, this.tag);
    if (this.pending.length > this.c.inFlightPeak) this.c.inFlightPeak = this.pending.length;
    this.watcher?.();
    return seq;
  }

  private alloc(len: number): Uint8Array {
    if (len > POOL_MAX_LEN) return new Uint8Array(len);
    const k = len <= 1 << POOL_MIN_CLASS ? POOL_MIN_CLASS : 32 - Math.clz32(len - 1);
    const list = this.pool[k];
    if (list !== undefined && list.length > 0) {
      const b = list.pop()!;
      this.pooledBytes -= b.length;
      return b;
    }
    return new Uint8Array(1 << k);
  }

  private release(b: Uint8Array): void {
    if (b.length > POOL_MAX_LEN || this.pooledBytes + b.length > POOL_MAX_BYTES) return;
    const k = 31 - Math.clz32(b.length);
    (this.pool[k] ??= []).push(b);
    this.pooledBytes += b.length;
  }

  private drainQueue(now: number): void {
    const cap = this.qDep.length;
    while (this.qLen > 0 && this.qDep[this.qHead] <= now) {
      this.qBytes -= this.qWire[this.qHead];
      this.qHead = (this.qHead + 1) % cap;
      this.qLen--;
    }
  }

  /** Returns the ring index of the new entry (its sequence numbers are set by the caller). */
  private enqueue(departure: number, wire: number): number {
    if (this.qLen === this.qDep.length) {
      const cap = this.qDep.length;
      const dep = new Float64Array(cap * 2);
      const wr = new Float64Array(cap * 2);
      const sq = new Float64Array(cap * 2);
      const dq = new Float64Array(cap * 2);
      for (let i = 0; i < this.qLen; i++) {
        const j = (this.qHead + i) % cap;
        dep[i] = this.qDep[j];
        wr[i] = this.qWire[j];
        sq[i] = this.qSeq[j];
        dq[i] = this.qDupSeq[j];
      }
      this.qDep = dep;
      this.qWire = wr;
      this.qSeq = sq;
      this.qDupSeq = dq;
      this.qHead = 0;
    }
    const tail = (this.qHead + this.qLen) % this.qDep.length;
    this.qDep[tail] = departure;
    this.qWire[tail] = wire;
    this.qSeq[tail] = -1;
    this.qDupSeq[tail] = -1;
    this.qLen++;
    this.qBytes += wire;
    if (this.qLen > this.c.queuedPeakDatagrams) this.c.queuedPeakDatagrams = this.qLen;
    if (this.qBytes > this.c.queuedPeakBytes) this.c.queuedPeakBytes = this.qBytes;
    return tail;
  }

  /**
   * The bottleneck's rate changed from `oldMsPerByte` to the current one at `now`: what is still queued
   * is serialised at the new rate from now on (the datagram on the wire finishes its remaining part at
   * the new rate), so departures and the deliveries scheduled from them move.
   */
  private retimeQueue(now: number, oldMsPerByte: number): void {
    this.drainQueue(now);
    if (this.qLen === 0 || oldMsPerByte === 0) return;
    const cap = this.qDep.length;
    const shift = new Map<number, number>();
    let prev = now;
    for (let i = 0; i < this.qLen; i++) {
      const j = (this.qHead + i) % cap;
      const old = this.qDep[j];
      const dep = i === 0
        ? now + (old - now) * (this.msPerWireByte / oldMsPerByte)
        : prev + this.qWire[j] * this.msPerWireByte;
      if (this.qSeq[j] >= 0) shift.set(this.qSeq[j], dep - old);
      if (this.qDupSeq[j] >= 0) shift.set(this.qDupSeq[j], dep - old);
      this.qDep[j] = dep;
      prev = dep;
    }
    this.lastDeparture = prev;
    this.pending.retime(shift, now, !this.cfg.reorder);
    if (!this.cfg.reorder && this.pending.length > 0) this.lastDelivery = this.pending.maxTime();
    this.watcher?.();
  }
}
