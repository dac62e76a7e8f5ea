/**
 * The one shape of a protocol object's counters (datagrams sent, dropped as malformed, duplicates,
 * …): a plain object of numbers, one field per counter, bumped in place (`c.dropped++`,
 * `c.bytes += n`, `c[reason]++`). Bad input from the network is counted here instead of thrown.
 * An object's `counters()` returns a plain copy (`{ ...c }`), never the live object. `K` is the
 * union of counter names.
 */
export type CounterSet<K extends string> = Record<K, number>;

/** A fresh counter set with every name in `names` at 0. */
export function newCounters<K extends string>(names: readonly K[]): CounterSet<K> {
  // A plain object filled in the same order every time: one hidden class per name list and fast
  // properties (Object.create(null) would make a dictionary: larger and slower on every bump).
  const c = {} as CounterSet<K>;
  for (const n of names) c[n] = 0;
  return c;
}
