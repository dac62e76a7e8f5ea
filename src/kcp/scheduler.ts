import { DeadlineHeap } from '../core/deadline-heap.js';
import { checkArg, GamewireError } from '../core/errors.js';
import { timeDiff32 } from '../core/wrap.js';

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
  /** @internal read with `counters()`. */
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

  /** A copy of the counters: `updates`, objects updated by `handleTimeout` since construction. */
  counters(): { updates: number } {
    return { updates: this.updates };
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
      else heap.reschedule(id, deadlineOf(kcp, now), now);
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
