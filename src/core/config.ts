import { checkConfig } from './errors.js';

// The checking primitives every config resolver uses (chunk, channels, connection, netcode, KCP
// sessions, sim links, congestion, the Node driver). A resolver keeps its own messages; these only
// answer whether a value is acceptable, and `checkConfig` throws `invalid-config` when it is not.

export { checkConfig };

/** Whether `v` is an integer (a number, not a bigint) in `lo..hi`, both inclusive. */
export function isInt(v: unknown, lo = -Infinity, hi = Infinity): v is number {
  return Number.isInteger(v) && (v as number) >= lo && (v as number) <= hi;
}

/** Whether `v` is a finite number in `lo..hi`, both inclusive. */
export function isNum(v: unknown, lo = -Infinity, hi = Infinity): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= lo && v <= hi;
}

/** Whether `v` is a probability: a finite number in 0..1. */
export function isProb(v: unknown): v is number {
  return isNum(v, 0, 1);
}

/** Whether `v` is a non-null object (arrays included). */
export function isObject(v: unknown): v is object {
  return typeof v === 'object' && v !== null;
}

/** Whether `v` is `undefined` or a function (an optional callback). */
export function isOptionalFn(v: unknown): boolean {
  return v === undefined || typeof v === 'function';
}

/** Whether `v` is one of `values` (an enum given as its members). */
export function isOneOf<T>(v: unknown, values: readonly T[]): v is T {
  return values.includes(v as T);
}

/**
 * Throw `invalid-config` with `unknown(key)` for the first own key of `o` not in `known` (a set of
 * names, or an object whose keys are the names: a defaults table).
 */
export function checkKnownKeys(o: object, known: ReadonlySet<string> | object, unknown: (key: string) => string): void {
  const has = known instanceof Set ? (k: string) => known.has(k) : (k: string) => k in known;
  for (const k of Object.keys(o)) checkConfig(has(k), unknown(k));
}
