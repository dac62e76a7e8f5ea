/// <reference path="./libsodium.d.ts" />
import { type CryptoProvider, TAG_BYTES } from './provider.js';

/** The parts of libsodium's Emscripten module this file calls (C ABI; 64-bit lengths as two 32-bit halves). */
interface SodiumModule {
  HEAPU8: Uint8Array;
  _malloc(n: number): number;
  _free(p: number): void;
  _sodium_init(): number;
  _crypto_aead_chacha20poly1305_ietf_encrypt_detached(c: number, mac: number, maclenP: number, m: number, mlen: number, mlenHi: number,
    ad: number, adlen: number, adlenHi: number, nsec: number, npub: number, k: number): number;
  _crypto_aead_chacha20poly1305_ietf_decrypt_detached(m: number, nsec: number, c: number, clen: number, clenHi: number, mac: number,
    ad: number, adlen: number, adlenHi: number, npub: number, k: number): number;
  _crypto_aead_xchacha20poly1305_ietf_encrypt_detached: SodiumModule['_crypto_aead_chacha20poly1305_ietf_encrypt_detached'];
  _crypto_aead_xchacha20poly1305_ietf_decrypt_detached: SodiumModule['_crypto_aead_chacha20poly1305_ietf_decrypt_detached'];
}

const KEY = 0;
const NONCE = 32;
const TAG = 56;
const AD = 72;
const AD_MAX = 128;
const DATA = AD + AD_MAX;

/**
 * One scratch region in the WASM heap, reused by every call: key, nonce, tag and associated data at
 * fixed offsets, the message after them (grown when a message is larger than any before).
 */
function provider(m: SodiumModule): CryptoProvider {
  let base = 0;
  let dataCap = 0;
  const room = (dataBytes: number, adBytes: number): void => {
    if (adBytes > AD_MAX) throw new RangeError(`associated data of ${adBytes} bytes is over ${AD_MAX}`);
    if (dataBytes <= dataCap) return;
    if (base !== 0) m._free(base);
    dataCap = Math.max(2048, dataBytes);
    base = m._malloc(DATA + dataCap);
    if (base === 0) throw new RangeError('libsodium could not allocate its scratch buffer');
  };
  room(2048, 0);
  const load = (key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, data: Uint8Array): Uint8Array => {
    room(data.length, ad.length);
    const h = m.HEAPU8;
    h.set(key, base + KEY);
    h.set(nonce, base + NONCE);
    h.set(ad, base + AD);
    h.set(data, base + DATA);
    return h;
  };
  const seal = (x: boolean, key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, p: Uint8Array, out: Uint8Array, o: number): number => {
    if (o + p.length + TAG_BYTES > out.length) throw new RangeError('out is too small for ciphertext and tag');
    load(key, nonce, ad, p);
    const f = x ? m._crypto_aead_xchacha20poly1305_ietf_encrypt_detached : m._crypto_aead_chacha20poly1305_ietf_encrypt_detached;
    f(base + DATA, base + TAG, 0, base + DATA, p.length, 0, base + AD, ad.length, 0, 0, base + NONCE, base + KEY);
    const h = m.HEAPU8;
    out.set(h.subarray(base + DATA, base + DATA + p.length), o);
    out.set(h.subarray(base + TAG, base + TAG + TAG_BYTES), o + p.length);
    return p.length + TAG_BYTES;
  };
  const open = (x: boolean, key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, s: Uint8Array, out: Uint8Array, o: number): number => {
    if (s.length < TAG_BYTES || ad.length > AD_MAX) return -1;
    const n = s.length - TAG_BYTES;
    if (o + n > out.length) return -1;
    const h = load(key, nonce, ad, s.subarray(0, n));
    h.set(s.subarray(n), base + TAG);
    const f = x ? m._crypto_aead_xchacha20poly1305_ietf_decrypt_detached : m._crypto_aead_chacha20poly1305_ietf_decrypt_detached;
    if (f(base + DATA, 0, base + DATA, n, 0, base + TAG, base + AD, ad.length, 0, base + NONCE, base + KEY) !== 0) return -1;
    out.set(m.HEAPU8.subarray(base + DATA, base + DATA + n), o);
    return n;
  };
  return {
    name: 'sodium',
    seal: (key, nonce, ad, p, out, o) => seal(false, key, nonce, ad, p, out, o),
    open: (key, nonce, ad, s, out, o) => open(false, key, nonce, ad, s, out, o),
    xseal: (key, nonce, ad, p, out, o) => seal(true, key, nonce, ad, p, out, o),
    xopen: (key, nonce, ad, s, out, o) => open(true, key, nonce, ad, s, out, o),
  };
}

let loading: Promise<CryptoProvider> | undefined;

/**
 * The fastest `CryptoProvider` gamewire ships: libsodium compiled to WebAssembly (npm `libsodium`,
 * no native code; Node and browsers). All four AEADs run in WASM with one reused scratch buffer, no
 * allocation per packet: ~5× node:crypto and ~10× `nobleCrypto` on 100-byte packets (figures in
 * bench/README.md, "## netcode"). Loading takes a few milliseconds and happens once per process
 * (the module is fetched on first call, so bundles that never call this stay small). Rejects when
 * WebAssembly or `crypto.getRandomValues` is missing.
 */
export function sodiumCrypto(): Promise<CryptoProvider> {
  loading ??= (async () => {
    const m = (await (await import('libsodium')).default({
      getRandomValue(): number {
        const a = new Uint32Array(1);
        globalThis.crypto.getRandomValues(a);
        return a[0]! >>> 0;
      },
    })) as SodiumModule;
    if (m._sodium_init() < 0) throw new Error('libsodium failed to initialise');
    return provider(m);
  })();
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}
