import { chacha20poly1305, xchacha20poly1305 } from '@noble/ciphers/chacha.js';
import { type CryptoProvider, TAG_BYTES } from './provider.js';

type Aead = typeof chacha20poly1305;

function seal(aead: Aead, key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plaintext: Uint8Array, out: Uint8Array, o: number): number {
  const n = plaintext.length + TAG_BYTES;
  aead(key, nonce, ad).encrypt(plaintext, out.subarray(o, o + n));
  return n;
}

function open(aead: Aead, key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, sealed: Uint8Array, out: Uint8Array, o: number): number {
  if (sealed.length < TAG_BYTES) return -1;
  const n = sealed.length - TAG_BYTES;
  try {
    aead(key, nonce, ad).decrypt(sealed, out.subarray(o, o + n));
  } catch {
    return -1;
  }
  return n;
}

/**
 * The default `CryptoProvider`: `@noble/ciphers` (audited, pure JavaScript), for browsers and for
 * XChaCha20-Poly1305, which neither node:crypto nor WebCrypto has.
 */
export const nobleCrypto: CryptoProvider = {
  name: 'noble',
  seal: (key, nonce, ad, p, out, o) => seal(chacha20poly1305, key, nonce, ad, p, out, o),
  open: (key, nonce, ad, s, out, o) => open(chacha20poly1305, key, nonce, ad, s, out, o),
  xseal: (key, nonce, ad, p, out, o) => seal(xchacha20poly1305, key, nonce, ad, p, out, o),
  xopen: (key, nonce, ad, s, out, o) => open(xchacha20poly1305, key, nonce, ad, s, out, o),
};
