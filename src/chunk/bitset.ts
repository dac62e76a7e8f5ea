/** Bytes of a bitset holding `n` bits. */
export function bitsetBytes(n: number): number {
  return Math.ceil(n / 8);
}

/** True if bit `i` (least significant bit first within each byte) is set. */
export function testBit(bits: Uint8Array, i: number): boolean {
  return (bits[i >>> 3] & (1 << (i & 7))) !== 0;
}

/** Set bit `i`. */
export function setBit(bits: Uint8Array, i: number): void {
  bits[i >>> 3] |= 1 << (i & 7);
}
