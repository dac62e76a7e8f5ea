import { newCounters } from '../core/counters.js';
import { GamewireError } from '../core/errors.js';
import { KCP_OVERHEAD } from './segment.js';

/** Default `KcpArenaOptions.maxReceiveBytes`: 8 MiB. */
export const KCP_ARENA_MAX_RECEIVE_BYTES_DEFAULT = 8 * 1024 * 1024;

/**
 * Bytes a budget charges for each segment a `Kcp` holds, beside its payload: what its record and the
 * view of its payload take on the JS heap, rounded up. Without it, empty or one-byte segments would
 * cost a budget almost nothing while each takes a record.
 */
export const KCP_SEGMENT_BYTES = 256;

/** Bytes of one payload slab. */
const SLAB_BYTES = 16384;
/** Largest copy placed in a slab, bytes; larger ones get their own buffer. */
const MAX_PIECE = 2048;
/** Copies of up to this many bytes are made by hand, without a view of the source. */
const HAND_COPY = 32;
/**
 * A longer copy that ends its source and starts at most this many bytes into it is made with the
 * bytes before it (a datagram's KCP header, and an ACK's): one copy of the source as it is, where
 * copying the range alone would first make a view of it, a typed array per segment.
 */
const MAX_HEAD = 2 * KCP_OVERHEAD;
/** Emptied slabs kept for reuse per direction. */
const MAX_FREE = 16;
/** Entries (u32) of a pending-ACK list as first taken: 8 (sn, ts) pairs. */
export const ACK_LIST_ENTRIES = 16;
/** Emptied pending-ACK lists of that size kept for reuse per arena. */
const MAX_SPARE_ACK_LISTS = 64;
/** Smallest scratch buffer: C's `(mtu + 24) * 3` at the default MTU. */
const SCRATCH_MIN = (1400 + KCP_OVERHEAD) * 3;

/** A holder of one copy made by a `SlabPool`. The pool may move `data` to another slab while `slab` is set. */
export interface SlabCopy {
  /** The copied bytes. */
  data: Uint8Array;
  /** The slab `data` lies in, or undefined (own buffer, or nothing held). */
  slab: Slab | undefined;
  /**
   * Bytes the copy takes from the pool: an own buffer's length, or its space in the slab (rounded up
   * to 8, with any bytes copied before it); 0 when nothing is held.
   */
  held: number;
}

/** One slab of a `SlabPool`: its bytes, the live copies in it and their holders. */
export class Slab {
  /** Live copies in this slab. */
  refs = 0;
  /** Bytes the live copies take (their `held`). */
  live = 0;
  /** Waiting in the pool's compaction list. */
  sparse = false;
  /** Index in the pool's list of retired slabs, or -1. */
  retiredAt = -1;
  /** Bytes up to which copies were placed when the slab was retired (its space less the tail it could not use). */
  filled = 0;
  /**
   * Holders of (some) copies made into this slab; an entry is stale once its `slab` points
   * elsewhere. A new array each time the slab empties: it drops the dead holders at once, and a
   * young array takes young holders without the write barrier's slow path, which a long-lived one
   * takes on every copy.
   */
  owners: SlabCopy[] = [];
  /** The slab's storage. */
  readonly buffer: ArrayBuffer;
  /** All of `buffer`. */
  readonly bytes: Uint8Array;

  constructor(bytes: number) {
    this.buffer = new ArrayBuffer(bytes);
    this.bytes = new Uint8Array(this.buffer);
  }
}

function budget(name: string, max: number): number {
  if (typeof max !== 'number' || Number.isNaN(max) || max < 0 || (max !== Infinity && !Number.isInteger(max))) {
    throw new GamewireError('invalid-argument', `${name} must be an integer ≥ 0 or Infinity, got ${String(max)}`);
  }
  return max;
}

function aligned(n: number): number {
  return (n + 7) & ~7;
}

/**
 * Copies byte ranges into slabs (one allocation per slab instead of one per copy, which is what makes
 * small typed arrays expensive) under a byte budget.
 * - Each copy holds its slab until `release`; a slab without live copies is rewound (the one being
 *   filled) or kept for reuse (up to `maxFree`), so steady traffic, bursts included, allocates
 *   nothing.
 * - Compaction: before a slab is taken, the live copies of every slab that is no longer filled and
 *   holds less than 1/16 live bytes move to the current slab (their holders' `data` change), so
 *   long-lived small copies cannot pin mostly-empty slabs. Whenever `inUse` grows, the slabs in use
 *   are the one being filled, the one just left, and others holding at least 1/16 live bytes (one
 *   lost segment of 1 KiB among 16 does not make its slab sparse: it is acknowledged soon anyway).
 * - Budget: `allocated` (slabs in use, kept for reuse, and own buffers) never exceeds `maxBytes`.
 *   Compaction may use up to `maxBytes`; copies only up to `urgentBytes` (one slab less) and, unless
 *   urgent, up to `laterBytes` (3/4 of `maxBytes` at most), so that a copy that must not wait (for
 *   KCP: the segment that fills the gap at rcvNxt) finds room beside those that can. A copy beyond
 *   its limit is refused (`copy` returns false, nothing held).
 */
export class SlabPool {
  /** Bytes in use: slabs holding copies or being filled, plus own buffers charged. */
  inUse = 0;
  /** Urgent copies may bring `inUse` up to this: `maxBytes` less one slab. */
  readonly urgentBytes: number;
  /**
   * Other copies are refused while `inUse` is above this, or when they would take it above: 3/4 of
   * `maxBytes`, at most `urgentBytes`.
   */
  readonly laterBytes: number;
  /** Bytes charged with `charge` (part of `inUse`): costs that are not copies, such as records. */
  charged = 0;
  /** Slabs emptied by compaction so far. */
  compactions = 0;
  /** Bytes moved by compaction so far. */
  compactedBytes = 0;
  private cur: Slab | undefined;
  private pos = 0;
  private readonly free: Slab[] = [];
  private readonly pending: Slab[] = [];
  /** Slabs holding live copies other than the one being filled. */
  private readonly retired: Slab[] = [];
  private compacting = false;
  private readonly sparseBelow: number;
  // Copies recorded in their slab's `owners`: the ones compaction or squeezing may have to move.
  private readonly recordBelow: number;

  /**
   * @param maxBytes budget, bytes (Infinity = none).
   * @param slabBytes size of each slab, bytes.
   * @param maxPiece largest copy placed in a slab, bytes (≤ slabBytes); larger ones get their own buffer.
   * @param maxFree most emptied slabs kept for reuse.
   */
  constructor(
    readonly maxBytes = Infinity,
    readonly slabBytes = SLAB_BYTES,
    readonly maxPiece = MAX_PIECE,
    readonly maxFree = MAX_FREE,
  ) {
    if (!(maxPiece > 0 && maxPiece <= slabBytes && slabBytes % 8 === 0)) {
      throw new GamewireError('invalid-argument', 'SlabPool needs 0 < maxPiece <= slabBytes, slabBytes a multiple of 8');
    }
    this.sparseBelow = slabBytes >>> 4;
    this.urgentBytes = Math.max(0, maxBytes - slabBytes);
    this.laterBytes = Math.min(this.urgentBytes, Math.floor((maxBytes * 3) / 4));
    // A live copy of at least 1/16 slab keeps its slab from being sparse, so compaction never moves
    // it; only squeezing (a budgeted pool under pressure) does. Recording fewer holders saves a push
    // per copy (bench:kcp-instr shows it).
    this.recordBelow = maxBytes === Infinity ? this.sparseBelow : Infinity;
  }

  /** Bytes held: `inUse` plus slabs kept for reuse. Never above `maxBytes`. */
  get allocated(): number {
    return this.inUse + this.free.length * this.slabBytes;
  }

  /** Emptied slabs kept for reuse. */
  get freeSlabs(): number {
    return this.free.length;
  }

  /**
   * Copy `src[from, to)` into `owner` (its `data`, `slab`, `held`), or return false and change nothing
   * when the budget refuses it: an `urgent` copy when it needs new memory that would take `inUse`
   * above `urgentBytes` even after packing the live copies of the emptiest slabs together (see
   * `squeeze`); another while `inUse` is above `laterBytes` or when it would take it above. `extra`
   * bytes (what the copy's record costs) are charged with it, as `charge` would; give them back with
   * `release(owner, extra)`.
   */
  copy(owner: SlabCopy, src: Uint8Array, from: number, to: number, urgent = false, extra = 0): boolean {
    const len = to - from;
    const slab = this.cur;
    // Kept small: TurboFan inlines callees into Kcp.send and Kcp.input until a budget of bytecodes is
    // spent, and what it leaves out costs a call each. A new slab, a large copy and the budget are
    // in `copySlow` (below `laterBytes` no copy is refused).
    if (slab === undefined || this.pos + len > this.slabBytes || len > this.maxPiece || this.inUse + extra > this.laterBytes) {
      return this.copySlow(owner, src, from, len, urgent, extra);
    }
    this.put(owner, slab, src, from, len);
    this.inUse += extra;
    this.charged += extra;
    return true;
  }

  private copySlow(owner: SlabCopy, src: Uint8Array, from: number, len: number, urgent: boolean, extra: number): boolean {
    const limit = (urgent ? this.urgentBytes : this.laterBytes) - extra;
    if (this.inUse > limit) {
      if (!urgent) return false;
      // An urgent copy may fill the slab in use, which takes no more memory; its record does.
      if (extra > 0 && !this.squeeze(limit)) return false;
    }
    if (len > this.maxPiece) {
      if (this.inUse + len > limit && !(urgent && this.squeeze(limit - len))) return false;
      while (this.allocated + len + extra > this.maxBytes && this.free.length > 0) this.free.pop();
      owner.data = src.slice(from, from + len);
      owner.slab = undefined;
      owner.held = len;
      this.inUse += len;
    } else if (!this.place(owner, src, from, len, limit, urgent)) return false;
    if (extra > 0) {
      while (this.allocated + extra > this.maxBytes && this.free.length > 0) this.free.pop();
      this.inUse += extra;
      this.charged += extra;
    }
    return true;
  }

  /**
   * Charge `bytes` that are not a copy (what a record costs beside its copy) to `inUse`, within the
   * limit a copy with the same `urgent` has; returns false, charging nothing, when they do not fit.
   * Give them back with `uncharge`.
   */
  charge(bytes: number, urgent = false): boolean {
    if (this.inUse + bytes > (urgent ? this.urgentBytes : this.laterBytes)) return false;
    while (this.allocated + bytes > this.maxBytes && this.free.length > 0) this.free.pop();
    this.inUse += bytes;
    this.charged += bytes;
    return true;
  }

  /** Give back `bytes` taken with `charge`. */
  uncharge(bytes: number): void {
    this.inUse -= bytes;
    this.charged -= bytes;
  }

  /** Make `buffer` `owner`'s data, charged as an own buffer (drop whatever it held first with `release`). */
  adopt(owner: SlabCopy, buffer: Uint8Array): void {
    owner.data = buffer;
    owner.slab = undefined;
    owner.held = buffer.length;
    this.inUse += buffer.length;
  }

  /**
   * Drop `owner`'s copy (once; a second call does nothing), and give back `extra` bytes charged with
   * it (pass them once). Its `data` stays readable until reused.
   */
  release(owner: SlabCopy, extra = 0): void {
    const slab = owner.slab;
    const held = owner.held;
    owner.held = 0;
    this.inUse -= extra;
    this.charged -= extra;
    if (slab === undefined) {
      this.inUse -= held;
      return;
    }
    owner.slab = undefined;
    // `unref` by hand (TurboFan did not inline that call here), kept small as `copy` is.
    const live = (slab.live -= held);
    if (--slab.refs === 0 || live < this.sparseBelow) this.settle(slab);
  }

  private place(owner: SlabCopy, src: Uint8Array, from: number, len: number, limit: number, squeeze: boolean): boolean {
    let slab = this.cur;
    if (slab === undefined || this.pos + len > this.slabBytes) {
      slab = this.makeRoom(len, limit, squeeze);
      if (slab === undefined) return false;
    }
    this.put(owner, slab, src, from, len);
    return true;
  }

  // Copies into `slab` (the one being filled) at `pos`, which the caller has checked has room for
  // `len` bytes; the head before them (see MAX_HEAD) goes too where that room allows.
  private put(owner: SlabCopy, slab: Slab, src: Uint8Array, from: number, len: number): void {
    const at = this.pos;
    let size: number;
    if (len > HAND_COPY && from <= MAX_HEAD && from + len === src.length && at + src.length <= this.slabBytes) {
      slab.bytes.set(src, at);
      owner.data = new Uint8Array(slab.buffer, at + from, len);
      size = aligned(src.length);
    } else {
      const view = new Uint8Array(slab.buffer, at, len);
      if (len <= HAND_COPY) for (let i = 0; i < len; i++) view[i] = src[from + i]!;
      else view.set(new Uint8Array(src.buffer, src.byteOffset + from, len));
      owner.data = view;
      size = aligned(len);
    }
    this.pos = at + size;
    slab.refs++;
    slab.live += size;
    if (size < this.recordBelow) slab.owners.push(owner);
    owner.slab = slab;
    owner.held = size;
  }

  /**
   * The slab to place `len` bytes in when the current one has no room: after compaction (if slabs
   * wait for it) or, with `squeeze`, packing, the current one if it now has room, else a free or
   * new one (the current one is retired). Undefined when that needs memory beyond `limit`.
   */
  private makeRoom(len: number, limit: number, squeeze: boolean): Slab | undefined {
    // Compact only when memory is about to be taken: sparse slabs whose last copies are released
    // before then (in-order traffic) are never copied.
    if (this.pending.length > 0 && !this.compacting) this.compact();
    let slab = this.cur;
    if ((slab === undefined || this.pos + len > this.slabBytes) && this.inUse + this.slabBytes > limit && squeeze) {
      this.squeeze(limit - this.slabBytes);
      slab = this.cur;
    }
    if (slab !== undefined && this.pos + len <= this.slabBytes) return slab;
    // A fresh slab is allocated only when none is free, and then `allocated` equals `inUse`.
    if (this.inUse + this.slabBytes > limit) return undefined;
    if (slab !== undefined) {
      slab.filled = this.pos;
      slab.retiredAt = this.retired.length;
      this.retired.push(slab);
      if (!slab.sparse && slab.live < this.sparseBelow) this.markSparse(slab);
    }
    slab = this.free.pop() ?? new Slab(this.slabBytes);
    this.inUse += this.slabBytes;
    this.cur = slab;
    this.pos = 0;
    return slab;
  }

  private unref(slab: Slab, size: number): void {
    const live = (slab.live -= size);
    if (--slab.refs === 0 || live < this.sparseBelow) this.settle(slab);
  }

  // A copy in `slab` was released and the slab is now empty or holds less than 1/16 live bytes.
  private settle(slab: Slab): void {
    if (slab.refs === 0) this.emptied(slab);
    else if (slab !== this.cur && !slab.sparse) this.markSparse(slab);
  }

  // The rare end of `release` and `unref`, kept out of them so that they stay small.
  private emptied(slab: Slab): void {
    if (slab.owners.length > 0) slab.owners = [];
    if (slab.sparse) {
      // Off the compaction list at once: left there, an emptied slab stays reachable until the next
      // slab is taken, which on an idle host is never.
      slab.sparse = false;
      const pending = this.pending;
      const i = pending.lastIndexOf(slab);
      if (i >= 0) {
        const last = pending.pop()!;
        if (i < pending.length) pending[i] = last;
      }
    }
    if (slab === this.cur) {
      this.pos = 0;
      return;
    }
    this.unretire(slab);
    this.inUse -= this.slabBytes;
    // Not fewer while fewer are in use: a window's worth of slabs is often released at once by one
    // ACK, and trimming as they empty would make every such burst allocate them again.
    if (this.free.length < this.maxFree) this.free.push(slab);
  }

  private unretire(slab: Slab): void {
    const list = this.retired;
    const i = slab.retiredAt;
    if (i < 0) return;
    const last = list.pop()!;
    if (last !== slab) {
      list[i] = last;
      last.retiredAt = i;
    }
    slab.retiredAt = -1;
  }

  private markSparse(slab: Slab): void {
    slab.sparse = true;
    this.pending.push(slab);
  }

  // Moves the live copies of every sparse slab into the current one (and fresh ones as it fills).
  // Stops, leaving the rest listed, when the budget has no room for another slab.
  private compact(): void {
    if (this.compacting) return;
    this.compacting = true;
    try {
      const pending = this.pending;
      while (pending.length > 0) {
        const slab = pending.pop()!;
        if (!slab.sparse) continue; // stale: emptied since it was listed
        if (slab.refs > 0 && slab !== this.cur && !this.moveOut(slab)) {
          pending.push(slab);
          break;
        }
        slab.sparse = false;
      }
    } finally {
      this.compacting = false;
    }
  }

  /**
   * Under pressure (a copy that must not wait, e.g. the segment filling a gap, finds no room): move
   * the live copies of the emptiest slabs into the slab being filled, one slab at a time, until `inUse`
   * is at most `target`. Slabs fragmented by released copies (at least 1/16 live, so not compacted)
   * would otherwise hold the budget with room nobody can use. Does nothing unless the slabs hold at
   * least two slabs' worth of free space. Returns whether `inUse` ≤ `target`.
   */
  private squeeze(target: number): boolean {
    if (this.compacting) return false;
    if (this.inUse <= target) return true;
    // Only the holes released copies left can be won back: packing copies again leaves the same
    // tails. When they cannot reach the target, moving copies would be repeated by the next refused
    // copy for nothing (a flood that fills the budget with live copies made each one cost a full pass).
    let room = this.cur === undefined ? 0 : this.pos - this.cur.live;
    for (const slab of this.retired) room += slab.filled - slab.live;
    if (room < 2 * this.slabBytes || this.inUse - target > room - this.slabBytes) return false;
    const order = this.retired.slice().sort((a, b) => a.live - b.live);
    this.compacting = true;
    try {
      for (const slab of order) {
        if (this.inUse <= target) break;
        if (slab.refs === 0 || slab === this.cur) continue;
        if (!this.moveOut(slab)) break;
      }
    } finally {
      this.compacting = false;
    }
    return this.inUse <= target;
  }

  private moveOut(slab: Slab): boolean {
    const owners = slab.owners;
    for (let i = 0; i < owners.length && slab.refs > 0; i++) {
      const o = owners[i]!;
      if (o.slab !== slab) continue;
      const d = o.data;
      const held = o.held;
      if (!this.place(o, d, 0, d.length, this.maxBytes, false)) return false; // `o` unchanged
      this.compactedBytes += d.length;
      this.unref(slab, held);
    }
    this.compactions++;
    return true;
  }
}

/** `KcpArena` construction options. */
export interface KcpArenaOptions {
  /**
   * Budget for received segments held by every `Kcp` on this arena (slabs, own buffers and slabs kept
   * for reuse, and `KCP_SEGMENT_BYTES` per segment), bytes (default 8 MiB). Incoming data segments
   * that would need memory beyond it are dropped without ACK and counted. Out-of-order segments may
   * use only 3/4 of it, so the segment that fills a gap finds room; one 16 KiB slab is kept for
   * compaction. Honest traffic needs about 2 × rcvWnd × (mss + 48 + 256) per `Kcp` (receive queue and
   * buffer) at most.
   */
  maxReceiveBytes?: number;
  /**
   * Budget for what every `Kcp` on this arena holds to send (queued and unacknowledged payload,
   * slabs kept for reuse, and `KCP_SEGMENT_BYTES` per segment), bytes (default Infinity: none, as in
   * C, where the send queue is bounded only by `maxSendQueueSegments`). A `send` that would need more
   * returns -4 and queues nothing. Up to one 16 KiB slab of it is kept for compaction.
   */
  maxSendBytes?: number;
}

/** Counter names of a `KcpArena` (see `KcpArena.counters()`). */
export type KcpArenaCounter =
  | 'receiveDropped'
  | 'receiveDroppedBytes'
  | 'sendRefused'
  | 'sendRefusedBytes'
  | 'compactions'
  | 'compactedBytes';

/**
 * The buffers of one or more `Kcp`s: payload slabs for sent and received segments, the scratch
 * buffers datagrams are built in, and the lists of ACKs waiting for a flush (a `Kcp` holds one only
 * between a data segment and its next flush, so an idle `Kcp` holds none). A host (e.g. a server
 * with many sessions) gives every `Kcp` it owns one arena (`KcpOptions.arena`), so memory is shared
 * and bounded in one place; a `Kcp` created without one owns its own. Each direction has a byte
 * budget, payload plus `KCP_SEGMENT_BYTES` per segment: `maxReceiveBytes` (no peer can make the arena
 * hold more received data; data segments beyond it are dropped and counted) and `maxSendBytes` (a
 * `send` beyond it returns -4 and is counted; none by default, as in C). Not thread-safe (nothing in
 * gamewire is); all `Kcp`s on an arena must run on one thread.
 */
export class KcpArena {
  /** Budget for held received payload, bytes (see `KcpArenaOptions.maxReceiveBytes`). */
  readonly maxReceiveBytes: number;
  /** Slabs for received segments (budgeted: the segment at rcvNxt is an urgent copy). @internal */
  readonly receive: SlabPool;
  /** Budget for held sent segments, bytes (see `KcpArenaOptions.maxSendBytes`). */
  readonly maxSendBytes: number;
  /** Slabs for queued and unacknowledged sent segments (every copy urgent: none waits for another). @internal */
  readonly send: SlabPool;
  /** Nesting depth of flushes in progress on this arena. @internal */
  depth = 0;
  private readonly scratch: Uint8Array[] = [];
  private readonly ackLists: Uint32Array[] = [];
  // The counters kept here (compactions are the slab pools' own).
  private readonly ctr = newCounters(['receiveDropped', 'receiveDroppedBytes', 'sendRefused', 'sendRefusedBytes'] as const);

  /** @param options budgets; throws `GamewireError('invalid-argument')` for a negative or non-numeric one. */
  constructor(options: KcpArenaOptions = {}) {
    this.maxReceiveBytes = budget('maxReceiveBytes', options.maxReceiveBytes ?? KCP_ARENA_MAX_RECEIVE_BYTES_DEFAULT);
    this.maxSendBytes = budget('maxSendBytes', options.maxSendBytes ?? Infinity);
    this.receive = new SlabPool(this.maxReceiveBytes);
    this.send = new SlabPool(this.maxSendBytes);
  }

  /**
   * Received segments held now, bytes: payload in use, slabs kept for reuse and `KCP_SEGMENT_BYTES` per
   * segment (≤ `maxReceiveBytes`).
   */
  get receiveBytes(): number {
    return this.receive.allocated;
  }

  /**
   * Sent segments held now (queued or unacknowledged), bytes: payload in use, slabs kept for reuse
   * and, by `Kcp`s under a send budget, `KCP_SEGMENT_BYTES` per segment (≤ `maxSendBytes`).
   */
  get sendBytes(): number {
    return this.send.allocated;
  }

  /** Scratch buffers for building datagrams, bytes (one per nesting level of flushes). */
  get scratchBytes(): number {
    let n = 0;
    for (const b of this.scratch) n += b.length;
    return n;
  }

  /**
   * A copy of the counters: `receiveDropped`/`receiveDroppedBytes` data segments (and their payload
   * bytes) dropped at the receive budget; `sendRefused`/`sendRefusedBytes` sends (and their bytes)
   * refused at the send budget or at a `Kcp`'s own `maxSendBytes`; `compactions`/`compactedBytes`
   * slabs emptied and bytes moved to stop small long-lived segments from pinning mostly-empty slabs.
   */
  counters(): Record<KcpArenaCounter, number> {
    return {
      ...this.ctr,
      compactions: this.receive.compactions + this.send.compactions,
      compactedBytes: this.receive.compactedBytes + this.send.compactedBytes,
    };
  }

  /** Count one received segment of `bytes` payload dropped at the budget. @internal */
  countDrop(bytes: number): void {
    this.ctr.receiveDropped++;
    this.ctr.receiveDroppedBytes += bytes;
  }

  /** Count one `send` of `bytes` refused for memory. @internal */
  countSendRefused(bytes: number): void {
    this.ctr.sendRefused++;
    this.ctr.sendRefusedBytes += bytes;
  }

  /** Emptied pending-ACK lists kept for reuse (at most 64). */
  get spareAckLists(): number {
    return this.ackLists.length;
  }

  /** An empty pending-ACK list of `ACK_LIST_ENTRIES` entries (a spare if one is kept). @internal */
  takeAckList(): Uint32Array {
    return this.ackLists.pop() ?? new Uint32Array(ACK_LIST_ENTRIES);
  }

  /**
   * A `Kcp` is done with `list`. Lists of the first size are kept for the next taker (at most 64, so a
   * flushing host allocates none in steady traffic); larger ones are left to the collector. @internal
   */
  giveAckList(list: Uint32Array): void {
    if (list.length === ACK_LIST_ENTRIES && this.ackLists.length < MAX_SPARE_ACK_LISTS) this.ackLists.push(list);
  }

  /**
   * The scratch buffer of flush nesting level `depth`, at least `min` bytes. An output callback may
   * flush another `Kcp` on this arena while its own datagram view is live; that flush takes the next
   * level, so a live view is never written to. @internal
   */
  scratchAt(depth: number, min: number): Uint8Array {
    const b = this.scratch[depth];
    if (b !== undefined && b.length >= min) return b;
    const grown = new Uint8Array(Math.max(min, SCRATCH_MIN));
    this.scratch[depth] = grown;
    return grown;
  }
}
