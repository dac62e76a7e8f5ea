import { readU32LE } from './bytes.js';
import { checkArg, GamewireError } from './errors.js';
import { NonCryptoRng } from './rng.js';

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

/**
 * A seeded, NON-CRYPTOGRAPHIC `RandomSource` for replayable tests and simulations: the same seed gives
 * the same bytes, call for call, on every platform (sfc32 seeded through splitmix32). Pass it as the
 * `random` option of a `ConnectionHost`, `Server`, `KcpServer` or `generateConnectToken` in a test so
 * connection ids, cookie keys and tokens repeat run to run. Never use it in production: anyone who
 * sees a few of its bytes can predict the rest. Each call draws whole 32-bit words: the bytes a call
 * gets depend on the lengths asked for before it.
 *
 * @param seed an integer; only its low 32 bits matter. Throws `invalid-argument` for anything else.
 */
export function seededRandom(seed: number): RandomSource {
  checkArg(Number.isInteger(seed), 'seed must be an integer');
  const rng = new NonCryptoRng(seed);
  return (out) => {
    rng.fill(out);
  };
}

/** A uniformly random u32 (0..2^32−1) drawn from `random`. */
export function randomU32(random: RandomSource): number {
  const b = new Uint8Array(4);
  random(b);
  return readU32LE(b, 0);
}
