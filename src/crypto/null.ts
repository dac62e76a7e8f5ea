import { GamewireError } from '../core/errors.js';
import { type CryptoProvider, TAG_BYTES } from './provider.js';

/** The sentence `nullCryptoForBenchmarks` wants, so no one enables it by accident. */
export const NULL_CRYPTO_ACKNOWLEDGEMENT = 'I understand this disables encryption';

function copy(p: Uint8Array, out: Uint8Array, o: number): number {
  out.set(p, o);
  out.fill(0, o + p.length, o + p.length + TAG_BYTES);
  return p.length + TAG_BYTES;
}

function uncopy(s: Uint8Array, out: Uint8Array, o: number): number {
  if (s.length < TAG_BYTES) return -1;
  for (let i = s.length - TAG_BYTES; i < s.length; i++) if (s[i] !== 0) return -1;
  out.set(s.subarray(0, s.length - TAG_BYTES), o);
  return s.length - TAG_BYTES;
}

/**
 * A provider that encrypts nothing (copies bytes, writes a zero tag), to measure the protocol's own
 * cost in benchmarks. Not exported from any entry point; throws `invalid-argument` unless given
 * `NULL_CRYPTO_ACKNOWLEDGEMENT`. Its name says `null-INSECURE` wherever it is used.
 */
export function nullCryptoForBenchmarks(acknowledgement: string): CryptoProvider {
  if (acknowledgement !== NULL_CRYPTO_ACKNOWLEDGEMENT) {
    throw new GamewireError('invalid-argument', `the null cipher disables encryption; pass '${NULL_CRYPTO_ACKNOWLEDGEMENT}'`);
  }
  return {
    name: 'null-INSECURE',
    seal: (_k, _n, _a, p, out, o) => copy(p, out, o),
    open: (_k, _n, _a, s, out, o) => uncopy(s, out, o),
    xseal: (_k, _n, _a, p, out, o) => copy(p, out, o),
    xopen: (_k, _n, _a, s, out, o) => uncopy(s, out, o),
  };
}
