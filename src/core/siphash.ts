import { readU32LE, writeU32LE } from './bytes.js';
import { checkArg } from './errors.js';

/**
 * SipHash-2-4 (Aumasson and Bernstein, 2012): a keyed pseudo-random function over short inputs,
 * used to derive unforgeable cookies from a server secret. 64-bit words are kept as (high, low)
 * pairs of u32 in plain numbers, so it runs in any JavaScript engine without BigInt.
 */

/** A 128-bit SipHash key as four u32 words: bytes 0..15 of the key read as little-endian u32s. */
export type SipHashKey = Uint32Array;

/** Build a key from exactly 16 bytes (e.g. from a CSPRNG). Throws `invalid-argument` otherwise. */
export function sipHashKey(bytes: Uint8Array): SipHashKey {
  checkArg(bytes instanceof Uint8Array && bytes.length === 16, 'a SipHash key is 16 bytes');
  return new Uint32Array([readU32LE(bytes, 0), readU32LE(bytes, 4), readU32LE(bytes, 8), readU32LE(bytes, 12)]);
}

// State v0..v3 as [v0hi, v0lo, v1hi, v1lo, v2hi, v2lo, v3hi, v3lo]. Scratch only: never escapes a call.
const v = new Uint32Array(8);

function add(a: number, b: number): void {
  const lo = (v[a + 1]! + v[b + 1]!) >>> 0;
  v[a] = v[a]! + v[b]! + (lo < v[a + 1]! ? 1 : 0);
  v[a + 1] = lo;
}

function rotl(a: number, n: number): void {
  const hi = v[a]!;
  const lo = v[a + 1]!;
  if (n === 32) {
    v[a] = lo;
    v[a + 1] = hi;
    return;
  }
  v[a] = (hi << n) | (lo >>> (32 - n));
  v[a + 1] = (lo << n) | (hi >>> (32 - n));
}

function xor(a: number, b: number): void {
  v[a] ^= v[b]!;
  v[a + 1] ^= v[b + 1]!;
}

function round(): void {
  add(0, 2); rotl(2, 13); xor(2, 0); rotl(0, 32);
  add(4, 6); rotl(6, 16); xor(6, 4);
  add(0, 6); rotl(6, 21); xor(6, 0);
  add(4, 2); rotl(2, 17); xor(2, 4); rotl(4, 32);
}

/** Mix one 64-bit message word (hi, lo) in with the two compression rounds. */
function compress(hi: number, lo: number): void {
  v[6] ^= hi;
  v[7] ^= lo;
  round();
  round();
  v[0] ^= hi;
  v[1] ^= lo;
}

/** Run SipHash-2-4 over `message`; the result is left in v[0] (high) and v[1] (low). */
function run(key: SipHashKey, message: Uint8Array): void {
  const k0lo = key[0]!, k0hi = key[1]!, k1lo = key[2]!, k1hi = key[3]!;
  v[0] = k0hi ^ 0x736f6d65; v[1] = k0lo ^ 0x70736575;
  v[2] = k1hi ^ 0x646f7261; v[3] = k1lo ^ 0x6e646f6d;
  v[4] = k0hi ^ 0x6c796765; v[5] = k0lo ^ 0x6e657261;
  v[6] = k1hi ^ 0x74656462; v[7] = k1lo ^ 0x79746573;
  const n = message.length;
  const whole = n - (n % 8);
  for (let i = 0; i < whole; i += 8) compress(readU32LE(message, i + 4), readU32LE(message, i));
  // Last word: the remaining 0..7 bytes, then the length mod 256 in the top byte.
  let lo = 0;
  let hi = (n & 0xff) << 24;
  for (let i = whole; i < n; i++) {
    const shift = (i - whole) * 8;
    if (shift < 32) lo |= message[i]! << shift;
    else hi |= message[i]! << (shift - 32);
  }
  compress(hi >>> 0, lo >>> 0);
  v[5] ^= 0xff;
  round(); round(); round(); round();
  xor(0, 2);
  xor(0, 4);
  xor(0, 6);
}

/**
 * SipHash-2-4 of `message` under `key`: writes the 8 output bytes at `out[offset..offset+8)` in the
 * reference byte order (the 64-bit result little-endian, as the paper's test vectors list it).
 * Throws `invalid-argument` for a key that is not four words or an `out` without 8 bytes at `offset`.
 */
export function sipHash24(key: SipHashKey, message: Uint8Array, out: Uint8Array, offset = 0): void {
  checkArg(key.length === 4 && offset >= 0 && offset + 8 <= out.length, 'sipHash24 needs a 4-word key and 8 bytes of room');
  run(key, message);
  writeU32LE(out, offset, v[1]!);
  writeU32LE(out, offset + 4, v[0]!);
}

/** The low 32 bits of SipHash-2-4(key, message) (its first 4 output bytes as a little-endian u32). */
export function sipHash24Low32(key: SipHashKey, message: Uint8Array): number {
  checkArg(key.length === 4, 'a SipHash key is four u32 words');
  run(key, message);
  return v[1]!;
}
