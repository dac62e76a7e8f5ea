import { GamewireError } from '../core/errors.js';
import { KCP_OVERHEAD } from './segment.js';

/** Default `KcpArenaOptions.maxReceiveBytes`: 8 MiB. */
export const KCP_ARENA_MAX_RECEIVE_BYTES_DEFAULT = 8 * 1024 * 1024;

/** Bytes of one payload slab. */
const SLAB_BYTES = 16384;
/** Largest copy placed in a slab, bytes; larger ones get their own buffer. */
const MAX_PIECE = 2048;
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
  /** Bytes of an own buffer charged to the pool; 0 when `data` is in a slab or not charged. */
  own: number;
}

/** One slab of a `SlabPool`: its bytes, the live copies in it and their holders. */
export class Slab {
  /** Live copies in this slab. */
  refs = 0;
  /** Bytes of the live copies, each rounded up to 8. */
  live = 0;
  /** Waiting in the pool's compaction list. */
  sparse = false;
  /**
   * Holders of copies made into this slab, `owners[0, nOwners)`; an entry is stale once its `slab`
   * points elsewhere. Cleared, not truncated, when the slab empties: truncating gives the storage
   * back only to grow it again, and keeping the entries would keep dead holders alive.
   */
  readonly owners: (SlabCopy | undefined)[] = [];
  /** Entries of `owners` in use. */
  nOwners = 0;
  /** The slab's storage. */
  readonly buffer: ArrayBuffer;

  constructor(bytes: number) {
    this.buffer = new ArrayBuffer(bytes);
  }
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
 * - Budget: `allocated` (slabs in use, kept for reuse, and own buffers) never exceeds `maxBytes`; a
 *   copy that needs new memory beyond its `limit` is refused (`copy` returns false, nothing held).
 *   Compaction may use up to `maxBytes`, so copies should be given a `limit` at least one slab lower.
 */
export class SlabPool {
  /** Bytes in use: slabs holding copies or being filled, plus own buffers charged. */
  inUse = 0;
  /** Slabs emptied by compaction so far. */
  compactions = 0;
  /** Bytes moved by compaction so far. */
  compactedBytes = 0;
  private cur: Slab | undefined;
  private pos = 0;
  private readonly free: Slab[] = [];
  private readonly pending: Slab[] = [];
  /** Slabs holding live copies other than the one being filled. */
  private readonly retired = new Set<Slab>();
  /** Live bytes in all slabs (each copy rounded up to 8). */
  private live = 0;
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
    // A live copy of at least 1/16 slab keeps its slab from being sparse, so compaction never moves
    // it; only squeezing (a budgeted pool under pressure) does. Recording fewer holders saves a store
    // of a young object into a long-lived array per copy (about 7 % of bench:kcp b, 1 KiB messages).
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
   * Copy `src[from, to)` into `owner` (its `data`, `slab`, `own`), or return false and change nothing
   * when that needs new memory and `inUse` would exceed `limit` (≤ `maxBytes`). With `squeeze`, first
   * pack the live copies of the emptiest slabs together until the copy fits (see `squeeze`).
   */
  copy(owner: SlabCopy, src: Uint8Array, from: number, to: number, limit = this.maxBytes, squeeze = false): boolean {
    const len = to - from;
    if (len > this.maxPiece) {
      if (this.inUse + len > limit && !(squeeze && this.squeeze(limit - len))) return false;
      while (this.allocated + len > this.maxBytes && this.free.length > 0) this.free.pop();
      owner.data = src.slice(from, to);
      owner.slab = undefined;
      owner.own = len;
      this.inUse += len;
      return true;
    }
    return this.place(owner, src, from, len, limit, squeeze);
  }

  /** Make `buffer` `owner`'s data, charged as an own buffer (drop whatever it held first with `release`). */
  adopt(owner: SlabCopy, buffer: Uint8Array): void {
    owner.data = buffer;
    owner.slab = undefined;
    owner.own = buffer.length;
    this.inUse += buffer.length;
  }

  /** Drop `owner`'s copy (once; a second call does nothing). Its `data` stays readable until reused. */
  release(owner: SlabCopy): void {
    const slab = owner.slab;
    if (slab === undefined) {
      this.inUse -= owner.own;
      owner.own = 0;
      return;
    }
    owner.slab = undefined;
    this.unref(slab, aligned(owner.data.length));
  }

  // Kept small so that TurboFan inlines it into `copy` (and that into Kcp's send and input paths),
  // as it did the old single-slab copy; taking a new slab is the rare case, in `makeRoom`.
  private place(owner: SlabCopy, src: Uint8Array, from: number, len: number, limit: number, squeeze = false): boolean {
    let slab = this.cur;
    if (slab === undefined || this.pos + len > this.slabBytes) {
      slab = this.makeRoom(len, limit, squeeze);
      if (slab === undefined) return false;
    }
    const at = this.pos;
    const view = new Uint8Array(slab.buffer, at, len);
    // Short copies by hand: a temporary source view costs more than the loop.
    if (len <= 32) for (let i = 0; i < len; i++) view[i] = src[from + i]!;
    else view.set(from === 0 && len === src.length ? src : new Uint8Array(src.buffer, src.byteOffset + from, len));
    const size = aligned(len);
    this.pos = at + size;
    slab.refs++;
    slab.live += size;
    this.live += size;
    if (size < this.recordBelow) slab.owners[slab.nOwners++] = owner;
    owner.data = view;
    owner.slab = slab;
    owner.own = 0;
    return true;
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
      this.retired.add(slab);
      if (!slab.sparse && slab.live < this.sparseBelow) this.markSparse(slab);
    }
    slab = this.free.pop() ?? new Slab(this.slabBytes);
    this.inUse += this.slabBytes;
    this.cur = slab;
    this.pos = 0;
    return slab;
  }

  private unref(slab: Slab, size: number): void {
    slab.live -= size;
    this.live -= size;
    if (--slab.refs > 0) {
      if (slab !== this.cur && !slab.sparse && slab.live < this.sparseBelow) this.markSparse(slab);
      return;
    }
    slab.owners.fill(undefined, 0, slab.nOwners);
    slab.nOwners = 0;
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
    this.retired.delete(slab);
    this.inUse -= this.slabBytes;
    // Not fewer while fewer are in use: a window's worth of slabs is often released at once by one
    // ACK, and trimming as they empty made every such burst allocate them again (bench:kcp b -12 %).
    if (this.free.length < this.maxFree) this.free.push(slab);
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
    const slabBytes = (this.retired.size + (this.cur === undefined ? 0 : 1)) * this.slabBytes;
    if (slabBytes - this.live < 2 * this.slabBytes) return this.inUse <= target;
    const order = [...this.retired].sort((a, b) => a.live - b.live);
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
    for (let i = 0; i < slab.nOwners; i++) {
      const o = owners[i]!;
      if (o.slab !== slab) continue;
      const d = o.data;
      if (!this.place(o, d, 0, d.length, this.maxBytes)) {
        o.data = d;
        o.slab = slab;
        return false;
      }
      this.compactedBytes += d.length;
      // Emptying the slab resets `nOwners`, which ends the loop.
      this.unref(slab, aligned(d.length));
    }
    this.compactions++;
    return true;
  }
}

/** `KcpArena` construction options. */
export interface KcpArenaOptions {
  /**
   * Budget for received payload held by every `Kcp` on this arena (slabs, own buffers and slabs kept
   * for reuse), bytes (default 8 MiB). Incoming data segments that would need memory beyond it are
   * dropped without ACK and counted. Out-of-order segments may use only 3/4 of it, so the segment
   * that fills a gap finds room; one 16 KiB slab is kept for compaction. Honest traffic needs about
   * 2 × rcvWnd × mss per `Kcp` (receive queue and buffer) at most.
   */
  maxReceiveBytes?: number;
}

/** Counter names of a `KcpArena` (see `KcpArena.counters()`). */
export type KcpArenaCounter = 'receiveDropped' | 'receiveDroppedBytes' | 'compactions' | 'compactedBytes';

/**
 * The buffers of one or more `Kcp`s: payload slabs for sent and received segments, the scratch
 * buffers datagrams are built in, and the lists of ACKs waiting for a flush (a `Kcp` holds one only
 * between a data segment and its next flush, so an idle `Kcp` holds none). A host (e.g. a server with many sessions) gives every `Kcp` it owns
 * one arena (`KcpOptions.arena`), so memory is shared and bounded in one place; a `Kcp` created
 * without one owns its own. The receive side has a byte budget (`maxReceiveBytes`): no peer can make
 * the arena hold more received payload than that; data segments beyond it are dropped and counted.
 * Sent data is the application's own and is bounded by each `Kcp`'s send queue and window instead.
 * Not thread-safe (nothing in gamewire is); all `Kcp`s on an arena must run on one thread.
 */
export class KcpArena {
  /** Budget for held received payload, bytes (see `KcpArenaOptions.maxReceiveBytes`). */
  readonly maxReceiveBytes: number;
  /** The segment at rcvNxt may bring `receive.inUse` up to this (the budget less one slab, kept for compaction). @internal */
  readonly inOrderBytes: number;
  /** Out-of-order received data may bring `receive.inUse` up to this (3/4 of the budget at most). @internal */
  readonly outOfOrderBytes: number;
  /** Slabs for received segments (budgeted). @internal */
  readonly receive: SlabPool;
  /** Slabs for queued and unacknowledged sent segments (not budgeted). @internal */
  readonly send = new SlabPool();
  /** Nesting depth of flushes in progress on this arena. @internal */
  depth = 0;
  private readonly scratch: Uint8Array[] = [];
  private readonly ackLists: Uint32Array[] = [];
  private dropped = 0;
  private droppedBytes = 0;

  /** @param options budget; throws `GamewireError('invalid-argument')` for a negative or non-numeric one. */
  constructor(options: KcpArenaOptions = {}) {
    const max = options.maxReceiveBytes ?? KCP_ARENA_MAX_RECEIVE_BYTES_DEFAULT;
    if (typeof max !== 'number' || Number.isNaN(max) || max < 0 || (max !== Infinity && !Number.isInteger(max))) {
      throw new GamewireError('invalid-argument', `maxReceiveBytes must be an integer ≥ 0 or Infinity, got ${String(max)}`);
    }
    this.maxReceiveBytes = max;
    this.inOrderBytes = Math.max(0, max - SLAB_BYTES);
    this.outOfOrderBytes = Math.min(this.inOrderBytes, Math.floor((max * 3) / 4));
    this.receive = new SlabPool(max);
  }

  /** Received payload held now, bytes: in use plus slabs kept for reuse (≤ `maxReceiveBytes`). */
  get receiveBytes(): number {
    return this.receive.allocated;
  }

  /** Sent payload held now (queued or unacknowledged, and slabs kept for reuse), bytes. */
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
   * bytes) dropped at the budget; `compactions`/`compactedBytes` slabs emptied and bytes moved to stop
   * small long-lived segments from pinning mostly-empty slabs.
   */
  counters(): Record<KcpArenaCounter, number> {
    return {
      receiveDropped: this.dropped,
      receiveDroppedBytes: this.droppedBytes,
      compactions: this.receive.compactions + this.send.compactions,
      compactedBytes: this.receive.compactedBytes + this.send.compactedBytes,
    };
  }

  /** Count one received segment of `bytes` payload dropped at the budget. @internal */
  countDrop(bytes: number): void {
    this.dropped++;
    this.droppedBytes += bytes;
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
