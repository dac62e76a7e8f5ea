/**
 * All wrap-around arithmetic of gamewire lives here. Never compare raw sequence numbers or u32
 * timestamps with `<`: use these helpers, which are tested at 0, 32767/32768, 65535 and the u32 edge.
 */

/** Largest 16-bit sequence number. */
export const SEQ16_MAX = 0xffff;

/** Reduce any integer to a 16-bit sequence number (0..65535). */
export function seq16(n: number): number {
  return n & 0xffff;
}

/** `a + n` modulo 2^16. */
export function seqAdd16(a: number, n: number): number {
  return (a + n) & 0xffff;
}

/**
 * Signed distance `a - b` between two 16-bit sequence numbers, in -32768..32767.
 * Positive when `a` is newer than `b` (RFC 1982 serial arithmetic, as in Gaffer's `sequence_greater_than`).
 */
export function seqDiff16(a: number, b: number): number {
  return (((a - b) & 0xffff) << 16) >> 16;
}

/** True when 16-bit sequence `a` is newer than `b`. Exactly-opposite values (diff 32768) count as older. */
export function seqGreaterThan16(a: number, b: number): boolean {
  return seqDiff16(a, b) > 0;
}

/** True when 16-bit sequence `a` is older than `b`. */
export function seqLessThan16(a: number, b: number): boolean {
  return seqDiff16(a, b) < 0;
}

/** Reduce any integer to an unsigned 32-bit value (0..2^32-1). */
export function u32(n: number): number {
  return n >>> 0;
}

/** `a + n` modulo 2^32, unsigned. */
export function u32Add(a: number, n: number): number {
  return (a + n) >>> 0;
}

/**
 * Signed difference `a - b` of two u32 values (timestamps in ms or 32-bit sequence numbers),
 * in -2^31..2^31-1: KCP's `_itimediff`. Positive when `a` is later than `b`.
 */
export function timeDiff32(a: number, b: number): number {
  return (a - b) | 0;
}

/** `a * b` modulo 2^32, unsigned (C's `IUINT32` multiplication, exact for any u32 operands). */
export function u32Mul(a: number, b: number): number {
  return Math.imul(a, b) >>> 0;
}
