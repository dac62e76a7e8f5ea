import { readU32LE } from './bytes.js';
import { GamewireError } from './errors.js';

/**
 * A source of cryptographically strong random bytes: fills `out` completely. The core reads no global
 * randomness by itself; objects that need random ids take one of these (default `cryptoRandom`), so
 * tests can pass a seeded one and stay deterministic.
 */
export type RandomSource = (out: Uint8Array) => void;

/**
 * `globalThis.crypto.getRandomValues` (Node ≥ 20 and every browser). Throws `invalid-config` where it
 * does not exist: pass a `RandomSource` there.
 */
export const cryptoRandom: RandomSource = (out) => {
  const c = (globalThis as { crypto?: { getRandomValues?: (a: Uint8Array) => Uint8Array } }).crypto;
  if (c?.getRandomValues === undefined) {
    throw new GamewireError('invalid-config', 'no crypto.getRandomValues here: pass a random source');
  }
  c.getRandomValues(out);
};

/** A uniformly random u32 (0..2^32−1) drawn from `random`. */
export function randomU32(random: RandomSource): number {
  const b = new Uint8Array(4);
  random(b);
  return readU32LE(b, 0);
}
