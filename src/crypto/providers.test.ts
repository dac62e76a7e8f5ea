// Every CryptoProvider against the others: what one seals, each opens; any change to key, nonce,
// associated data, ciphertext or tag makes open return -1 (never throw); offsets and sizes past the
// sodium provider's first scratch buffer.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nodeCrypto } from '../adapters/node/node-crypto.js';
import { nobleCrypto } from './noble.js';
import type { CryptoProvider } from './provider.js';
import { sodiumCrypto } from './sodium.js';

const sodium = await sodiumCrypto();
const ALL: CryptoProvider[] = [nobleCrypto, nodeCrypto, sodium];
const bytes = (n: number, max = n): fc.Arbitrary<Uint8Array> => fc.uint8Array({ minLength: n, maxLength: max });

for (const x of [false, true]) {
  const nonceBytes = x ? 24 : 12;
  const seal = (p: CryptoProvider): CryptoProvider['seal'] => (x ? p.xseal : p.seal);
  const open = (p: CryptoProvider): CryptoProvider['open'] => (x ? p.xopen : p.open);
  describe(`${x ? 'XChaCha20' : 'ChaCha20'}-Poly1305: providers agree`, () => {
    it('every provider seals the same bytes and opens every other provider\'s', () => {
      fc.assert(fc.property(bytes(32), bytes(nonceBytes), bytes(0, 40), bytes(0, 3000), fc.nat(9), (key, nonce, ad, plain, off) => {
        const sealed = ALL.map((p) => {
          const out = new Uint8Array(off + plain.length + 16);
          expect(seal(p)(key, nonce, ad, plain, out, off)).toBe(plain.length + 16);
          return out.subarray(off);
        });
        for (const s of sealed) expect(s).toEqual(sealed[0]);
        for (const p of ALL) {
          const back = new Uint8Array(off + plain.length);
          expect(open(p)(key, nonce, ad, sealed[0]!, back, off)).toBe(plain.length);
          expect(back.subarray(off)).toEqual(plain);
        }
      }), { numRuns: 60 });
    });

    it('a changed bit anywhere makes open return -1', () => {
      fc.assert(fc.property(bytes(32), bytes(nonceBytes), bytes(1, 30), bytes(1, 300), fc.nat(), fc.nat(7), fc.nat(3),
        (key, nonce, ad, plain, at, bit, what) => {
          const sealed = new Uint8Array(plain.length + 16);
          seal(nobleCrypto)(key, nonce, ad, plain, sealed, 0);
          const parts = [key, nonce, ad, sealed].map((b) => b.slice());
          const t = parts[what]!;
          t[at % t.length]! ^= 1 << bit;
          for (const p of ALL) expect(open(p)(parts[0]!, parts[1]!, parts[2]!, parts[3]!, new Uint8Array(plain.length), 0)).toBe(-1);
        }), { numRuns: 60 });
    });
  });
}

describe('open on bad input', () => {
  it('returns -1 for input shorter than a tag or output too small, for every provider', () => {
    const key = new Uint8Array(32);
    for (const p of ALL) {
      expect(p.open(key, new Uint8Array(12), new Uint8Array(0), new Uint8Array(15), new Uint8Array(16), 0)).toBe(-1);
      expect(p.xopen(key, new Uint8Array(24), new Uint8Array(0), new Uint8Array(0), new Uint8Array(16), 0)).toBe(-1);
    }
    const sealed = new Uint8Array(116);
    sodium.seal(key, new Uint8Array(12), new Uint8Array(0), new Uint8Array(100), sealed, 0);
    expect(sodium.open(key, new Uint8Array(12), new Uint8Array(0), sealed, new Uint8Array(99), 0)).toBe(-1);
  });

  it('sodiumCrypto loads once per process', async () => {
    expect(await sodiumCrypto()).toBe(sodium);
    expect(sodium.name).toBe('sodium');
  });
});
