import { checkArg, GamewireError } from '../core/errors.js';
import { timeDiff32 } from '../core/wrap.js';

/**
 * An indexed binary min-heap of deadlines keyed by small non-negative integer ids (session slots).
 * `set` inserts or moves an id in O(log n), `popDue` removes the earliest id that is due. Storage is
 * typed arrays that grow with the largest id seen; no allocation per operation.
 */
export class DeadlineHeap {
  private heap: Int32Array;
  private pos: Int32Array;
  private time: Float64Array;
  private n = 0;

  /** @param capacity initial number of ids (grows on demand). */
  constructor(capacity = 16) {
    const cap = Math.max(1, Math.ceil(capacity));
    this.heap = new Int32Array(cap);
    this.pos = new Int32Array(cap).fill(-1);
    this.time = new Float64Array(cap);
  }

  /** Number of ids scheduled. */
  get size(): number {
    return this.n;
  }

  /** True if `id` has a deadline. */
  has(id: number): boolean {
    return id >= 0 && id < this.pos.length && this.pos[id] >= 0;
  }

  /** Deadline of `id` (ms), or `undefined` if it has none. */
  deadline(id: number): number | undefined {
    return this.has(id) ? this.time[id] : undefined;
  }

  /** Give `id` (integer ≥ 0) the deadline `at` (ms), inserting it or moving it either way. */
  set(id: number, at: number): void {
    if (id >= this.pos.length) this.grow(id + 1);
    const p = this.pos[id];
    this.time[id] = at;
    if (p < 0) {
      const i = this.n++;
      if (i >= this.heap.length) this.growHeap();
      this.heap[i] = id;
      this.pos[id] = i;
      this.up(i);
    } else {
      this.up(p);
      this.down(this.pos[id]);
    }
  }

  /** Remove `id`'s deadline, if any. */
  delete(id: number): void {
    if (!this.has(id)) return;
    const p = this.pos[id];
    const last = --this.n;
    this.pos[id] = -1;
    if (p === last) return;
    const moved = this.heap[last];
    this.heap[p] = moved;
    this.pos[moved] = p;
    this.up(p);
    this.down(this.pos[moved]);
  }

  /** Earliest deadline (ms), or `undefined` when empty. */
  peekTime(): number | undefined {
    return this.n === 0 ? undefined : this.time[this.heap[0]];
  }

  /** Id with the earliest deadline, or -1 when empty. */
  peekId(): number {
    return this.n === 0 ? -1 : this.heap[0];
  }

  /** Remove and return the id with the earliest deadline if it is ≤ `now` (ms), else -1. */
  popDue(now: number): number {
    if (this.n === 0) return -1;
    const id = this.heap[0];
    if (this.time[id] > now) return -1;
    this.delete(id);
    return id;
  }

  private less(i: number, j: number): boolean {
    const a = this.heap[i];
    const b = this.heap[j];
    const ta = this.time[a];
    const tb = this.time[b];
    return ta < tb || (ta === tb && a < b);
  }

  private swap(i: number, j: number): void {
    const a = this.heap[i];
    const b = this.heap[j];
    this.heap[i] = b;
    this.heap[j] = a;
    this.pos[b] = i;
    this.pos[a] = j;
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.less(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.n;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) return;
      const r = l + 1;
      const c = r < n && this.less(r, l) ? r : l;
      if (!this.less(c, i)) return;
      this.swap(c, i);
      i = c;
    }
  }

  private grow(need: number): void {
    let cap = this.pos.length;
    while (cap < need) cap *= 2;
    const pos = new Int32Array(cap).fill(-1);
    pos.set(this.pos);
    const time = new Float64Array(cap);
    time.set(this.time);
    this.pos = pos;
    this.time = time;
  }

  private growHeap(): void {
    const heap = new Int32Array(this.heap.length * 2);
    heap.set(this.heap);
    this.heap = heap;
  }
}

/** What `KcpScheduler` drives: the `update`/`check` pair of a `Kcp` plus what tells it is idle. */
export interface KcpSchedulable {
  /** `ikcp_update(now)`, u32 ms. */
  update(now: number): void;
  /** `ikcp_check(now)`: absolute u32 ms at which `update` is next due. */
  check(now: number): number;
  /** Segments queued or unacknowledged. */
  waitSnd(): number;
  /** Peer's advertised window, segments (0 = zero-window probing is running). */
  readonly rmtWnd: number;
}

/** Options of a `KcpScheduler`. */
export interface KcpSchedulerOptions {
  /**
   * Stop updating an object after an update that left nothing to do (no queued or unacknowledged
   * segment, peer window open): no flush could send anything until the next `touch`. Default true.
   * With false the scheduler follows `check()` alone, i.e. every object is updated at least once per interval.
   */
  parkIdle?: boolean;
}

/**
 * Drives many KCP objects with one timer: a heap keyed by each object's `check()` deadline.
 * `handleTimeout(now)` updates only the objects that are due; `pollTimeout()` is the next deadline.
 *
 * `check()` ignores pending ACKs and newly queued data, so call `touch(kcp, now)` after every
 * `input`, `send` and `recv` on a scheduled object (as ikcp.h advises): it brings the object's next
 * update forward to its next flush time. `now` is monotonic ms (u32 wrap is handled).
 */
export class KcpScheduler<T extends KcpSchedulable = KcpSchedulable> {
  /** Objects updated by `handleTimeout` since construction. */
  updates = 0;

  private readonly heap = new DeadlineHeap(64);
  private readonly ids = new Map<T, number>();
  private readonly items: (T | undefined)[] = [];
  private readonly freeIds: number[] = [];
  private readonly parkIdle: boolean;

  constructor(options: KcpSchedulerOptions = {}) {
    this.parkIdle = options.parkIdle ?? true;
  }

  /** Number of objects added. */
  get size(): number {
    return this.ids.size;
  }

  /** Objects with no pending deadline (parked idle until `touch`). */
  get parked(): number {
    return this.ids.size - this.heap.size;
  }

  /** Add `kcp`, due at once (its first `update` starts its clock). Throws `invalid-state` if already added. */
  add(kcp: T, now: number): void {
    checkArg(Number.isFinite(now), 'now must be a finite number of ms');
    if (this.ids.has(kcp)) throw new GamewireError('invalid-state', 'object is already scheduled');
    const id = this.freeIds.pop() ?? this.items.length;
    this.items[id] = kcp;
    this.ids.set(kcp, id);
    this.heap.set(id, now);
  }

  /** Forget `kcp` (no-op if unknown). */
  remove(kcp: T): void {
    const id = this.ids.get(kcp);
    if (id === undefined) return;
    this.ids.delete(kcp);
    this.heap.delete(id);
    this.items[id] = undefined;
    this.freeIds.push(id);
  }

  /** Call after `input`, `send` or `recv` on `kcp`: its next update moves to its next flush time. */
  touch(kcp: T, now: number): void {
    const id = this.ids.get(kcp);
    if (id === undefined) throw new GamewireError('invalid-state', 'touch() on an object that is not scheduled');
    const at = deadlineOf(kcp, now);
    const cur = this.heap.deadline(id);
    if (cur === undefined || at < cur) this.heap.set(id, at);
  }

  /** Absolute time (ms) of the earliest update due, or `undefined` when every object is parked. */
  pollTimeout(): number | undefined {
    return this.heap.peekTime();
  }

  /** Update every object due at `now` (ms) and reschedule it; returns how many were updated. */
  handleTimeout(now: number): number {
    const heap = this.heap;
    const items = this.items;
    let count = 0;
    // The due object stays at the top and is re-keyed in place (one sift-down instead of pop + push).
    for (let id = heap.peekId(); id >= 0 && heap.peekTime()! <= now; id = heap.peekId()) {
      const kcp = items[id]!;
      kcp.update(now);
      count++;
      if (this.parkIdle && kcp.waitSnd() === 0 && kcp.rmtWnd !== 0) heap.delete(id);
      // Never due again at this same instant: a second update at one clock value cannot flush.
      else heap.set(id, Math.max(deadlineOf(kcp, now), now + 1));
    }
    this.updates += count;
    return count;
  }
}

/** Monotonic deadline (ms) from `check()`'s u32 answer; never earlier than `now`. */
export function deadlineOf(kcp: KcpSchedulable, now: number): number {
  const d = timeDiff32(kcp.check(now), now >>> 0);
  return d > 0 ? now + d : now;
}
