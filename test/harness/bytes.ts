import { NonCryptoRng } from '../../src/core/rng.js';

/** Byte-exact comparison (vitest's deep equality is far too slow for megabytes). */
export function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  if (a === undefined || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Seeded pseudo-random blocks of the given sizes (bytes), for transfer tests. */
export function randomBlocks(seed: number, sizes: readonly number[]): Uint8Array[] {
  const rng = new NonCryptoRng(seed);
  return sizes.map((n) => rng.fill(new Uint8Array(n)));
}
