/**
 * Named event counters of one protocol object (datagrams sent, dropped as malformed, duplicates, …).
 * Bad input from the network is counted here instead of thrown. `K` is the union of counter names.
 */
export class Counters<K extends string> {
  private readonly values: Record<K, number>;

  constructor(names: readonly K[]) {
    // A plain object filled in the same order every time: one hidden class per name list and fast
    // properties (Object.create(null) would make a dictionary: larger and slower on every add).
    this.values = {} as Record<K, number>;
    for (const n of names) this.values[n] = 0;
  }

  /** Add `by` (default 1) to counter `name`. */
  add(name: K, by = 1): void {
    this.values[name] += by;
  }

  /** Current value of `name`. */
  get(name: K): number {
    return this.values[name];
  }

  /** A copy of every counter. */
  snapshot(): Readonly<Record<K, number>> {
    return { ...this.values };
  }
}
