/**
 * FIFO of items on a growable power-of-two ring (KCP's `snd_queue` and `rcv_queue`). Items are
 * read in place with `at(i)`; the owner bounds the length (KCP's windows and queue limits).
 */
export class Deque<T> {
  private items: (T | undefined)[];
  private mask: number;
  private head = 0;
  /** Number of items held. */
  length = 0;

  constructor(initialCapacity = 16) {
    let cap = 1;
    while (cap < initialCapacity) cap <<= 1;
    this.items = new Array<T | undefined>(cap).fill(undefined);
    this.mask = cap - 1;
  }

  /** Item `i` from the front (0 = oldest); caller keeps `i < length`. */
  at(i: number): T {
    return this.items[(this.head + i) & this.mask] as T;
  }

  /** Oldest item, or undefined when empty. */
  front(): T | undefined {
    return this.length === 0 ? undefined : this.items[this.head];
  }

  /** Newest item, or undefined when empty. */
  back(): T | undefined {
    return this.length === 0 ? undefined : this.items[(this.head + this.length - 1) & this.mask];
  }

  /** Append at the back. */
  push(item: T): void {
    if (this.length === this.items.length) this.grow();
    this.items[(this.head + this.length) & this.mask] = item;
    this.length++;
  }

  /** Remove and return the newest item (undefined when empty). */
  pop(): T | undefined {
    if (this.length === 0) return undefined;
    const i = (this.head + this.length - 1) & this.mask;
    const item = this.items[i];
    this.items[i] = undefined;
    this.length--;
    return item;
  }

  /** Remove and return the oldest item (undefined when empty). */
  shift(): T | undefined {
    if (this.length === 0) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.length--;
    return item;
  }

  private grow(): void {
    const old = this.items;
    const cap = old.length * 2;
    const next = new Array<T | undefined>(cap).fill(undefined);
    for (let i = 0; i < this.length; i++) next[i] = old[(this.head + i) & this.mask];
    this.items = next;
    this.mask = cap - 1;
    this.head = 0;
  }
}

/** Anything stored in an `SnRing`: it knows its own 32-bit sequence number. */
export interface HasSn {
  sn: number;
}

/**
 * Slots keyed by u32 sequence number, for a set of items whose sequence numbers all lie within
 * `capacity` of each other (KCP's `snd_buf` and `rcv_buf`). The owner keeps that invariant by
 * calling `reserve(span)` before the span of live items can exceed the capacity.
 */
export class SnRing<T extends HasSn> {
  private slots: (T | undefined)[];
  private mask: number;

  constructor(initialCapacity = 32) {
    let cap = 1;
    while (cap < initialCapacity) cap <<= 1;
    this.slots = new Array<T | undefined>(cap).fill(undefined);
    this.mask = cap - 1;
  }

  /** Current capacity (a power of two). */
  get capacity(): number {
    return this.slots.length;
  }

  /** The item with sequence number `sn`, or undefined. */
  get(sn: number): T | undefined {
    const item = this.slots[sn & this.mask];
    return item !== undefined && item.sn === sn ? item : undefined;
  }

  /** The item in `sn`'s slot, whatever its sequence number (fast path when the caller knows). */
  slot(sn: number): T | undefined {
    return this.slots[sn & this.mask];
  }

  /** Store `item` in its slot. */
  set(item: T): void {
    this.slots[item.sn & this.mask] = item;
  }

  /** Empty `sn`'s slot. */
  clear(sn: number): void {
    this.slots[sn & this.mask] = undefined;
  }

  /** Call `visit` on every item, emptying the ring. */
  drain(visit: (item: T) => void): void {
    const slots = this.slots;
    for (let i = 0; i < slots.length; i++) {
      const item = slots[i];
      if (item === undefined) continue;
      slots[i] = undefined;
      visit(item);
    }
  }

  /** Grow (never shrink) so that items spanning `span` consecutive sequence numbers fit. */
  reserve(span: number): void {
    if (span <= this.slots.length) return;
    let cap = this.slots.length;
    while (cap < span) cap *= 2;
    const next = new Array<T | undefined>(cap).fill(undefined);
    const mask = cap - 1;
    for (const item of this.slots) if (item !== undefined) next[item.sn & mask] = item;
    this.slots = next;
    this.mask = mask;
  }
}
