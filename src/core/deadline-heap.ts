/**
 * The length to grow a table of `length` entries to so that it holds `need`: doubled until it does,
 * but not past `max` (the most it will ever need), and never below `need`.
 */
export function grownLength(length: number, need: number, max: number): number {
  let n = Math.max(1, length);
  while (n < need) n *= 2;
  return Math.max(need, Math.min(n, max));
}

/**
 * The stuck-deadline rule, the one every scheduler applies (`Host`, `DriveLoop`, the simulator's
 * `World`): an owner woken at `wokeAt` (ms) that still asks for a deadline at or before that instant
 * has had its turn there, and waking it again at the same instant could only spin; it is next woken
 * `stepMs` later. A later deadline stands. Returns the time (ms) to wake it next.
 */
export function deferStuck(deadline: number, wokeAt: number, stepMs: number): number {
  return deadline > wokeAt ? deadline : wokeAt + stepMs;
}

/**
 * An indexed binary min-heap of deadlines keyed by small non-negative integer ids (peer slots of a host).
 * `set` inserts or moves an id in O(log n), `popDue` removes the earliest id that is due. Ids due at
 * the same time come out lowest id first, or lowest rank first once `setRank` is used. Storage is
 * typed arrays that grow with the largest id seen (doubling, never past `maxIds`); no allocation per
 * operation.
 */
export class DeadlineHeap {
  private heap: Int32Array;
  private pos: Int32Array;
  private time: Float64Array;
  // Tie order, once an owner gives one (`setRank`); an id without a rank of its own ranks as itself.
  private rank: Float64Array | undefined;
  private n = 0;

  /**
   * @param capacity initial number of ids (grows on demand).
   * @param maxIds ids are below this (a host's slot count): storage never grows past it.
   */
  constructor(capacity = 16, private readonly maxIds = 2 ** 31 - 1) {
    const cap = Math.min(Math.max(1, Math.ceil(capacity)), maxIds);
    this.heap = new Int32Array(cap);
    this.pos = new Int32Array(cap).fill(-1);
    this.time = new Float64Array(cap);
  }

  /** Ids the storage holds now (grows by doubling up to `maxIds`). */
  get capacity(): number {
    return this.pos.length;
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

  /**
   * The re-key rule of every host of many peers: give `id` the deadline `at` (ms), but by
   * `deferStuck` with a 1 ms step: never at or before `wokeAt`, the instant it was last woken
   * (`-Infinity`: not woken), then at `wokeAt + 1`.
   */
  reschedule(id: number, at: number, wokeAt: number): void {
    this.set(id, deferStuck(at, wokeAt, 1));
  }

  /**
   * Order `id` (integer ≥ 0) among ids due at the same time by `rank` (lower first; equal ranks by id)
   * instead of by the id itself: for owners whose ids are reused but whose ties must follow another
   * order (the `World`: creation order). Kept until set again; moves `id` if it has a deadline.
   */
  setRank(id: number, rank: number): void {
    if (id >= this.pos.length) this.grow(id + 1);
    if (this.rank === undefined) {
      this.rank = new Float64Array(this.pos.length);
      for (let i = 0; i < this.rank.length; i++) this.rank[i] = i;
    }
    this.rank[id] = rank;
    const p = this.pos[id];
    if (p >= 0) {
      this.up(p);
      this.down(this.pos[id]);
    }
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
    if (ta !== tb) return ta < tb;
    const r = this.rank;
    return r === undefined ? a < b : r[a] < r[b] || (r[a] === r[b] && a < b);
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
    const cap = grownLength(this.pos.length, need, this.maxIds);
    const pos = new Int32Array(cap).fill(-1);
    pos.set(this.pos);
    const time = new Float64Array(cap);
    time.set(this.time);
    this.pos = pos;
    this.time = time;
    if (this.rank !== undefined) {
      const rank = new Float64Array(cap);
      rank.set(this.rank);
      for (let i = this.rank.length; i < cap; i++) rank[i] = i;
      this.rank = rank;
    }
  }

  private growHeap(): void {
    const heap = new Int32Array(grownLength(this.heap.length, this.heap.length + 1, this.maxIds));
    heap.set(this.heap);
    this.heap = heap;
  }
}
