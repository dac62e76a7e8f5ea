/**
 * The AEADs netcode 1.02 needs, behind one small synchronous interface so the core runs on any
 * platform: `nobleCrypto` everywhere (browsers included), `nodeCrypto` (from `gamewire/node`) where
 * node:crypto is faster. Keys are 32 bytes; a 16-byte Poly1305 tag follows every ciphertext.
 */
export interface CryptoProvider {
  /** A short name for figures and logs (`'noble'`, `'node'`, `'null-INSECURE'`). */
  readonly name: string;
  /**
   * ChaCha20-Poly1305-IETF (12-byte nonce): encrypt `plaintext` with associated data `ad` and write
   * ciphertext ‖ tag at `out[outOffset..]`; returns the bytes written (`plaintext.length + 16`).
   * `plaintext` must not overlap `out`.
   */
  seal(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plaintext: Uint8Array, out: Uint8Array, outOffset: number): number;
  /**
   * Decrypt `sealed` (ciphertext ‖ tag, at least 16 bytes) and write the plaintext at
   * `out[outOffset..]`; returns its length, or −1 when the tag does not verify. Never throws on bad input.
   */
  open(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, sealed: Uint8Array, out: Uint8Array, outOffset: number): number;
  /** XChaCha20-Poly1305-IETF (24-byte nonce), as `seal`. */
  xseal(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, plaintext: Uint8Array, out: Uint8Array, outOffset: number): number;
  /** XChaCha20-Poly1305-IETF (24-byte nonce), as `open`. */
  xopen(key: Uint8Array, nonce: Uint8Array, ad: Uint8Array, sealed: Uint8Array, out: Uint8Array, outOffset: number): number;
}

/** Bytes of a Poly1305 tag. */
export const TAG_BYTES = 16;
