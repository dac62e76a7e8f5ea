import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { seq16, seqAdd16, seqDiff16, seqGreaterThan16, seqLessThan16, timeDiff32, u32, u32Add } from './wrap.js';

describe('16-bit sequence maths', () => {
  it('handles the edges 0, 32767/32768 and 65535', () => {
    expect(seqGreaterThan16(0, 65535)).toBe(true);
    expect(seqGreaterThan16(65535, 0)).toBe(false);
    expect(seqDiff16(0, 65535)).toBe(1);
    expect(seqDiff16(65535, 0)).toBe(-1);
    expect(seqGreaterThan16(32767, 0)).toBe(true);
    expect(seqDiff16(32767, 0)).toBe(32767);
    expect(seqDiff16(32768, 0)).toBe(-32768);
    expect(seqGreaterThan16(32768, 0)).toBe(false);
    expect(seqGreaterThan16(0, 32768)).toBe(false);
    expect(seqLessThan16(32768, 0)).toBe(true);
    expect(seqAdd16(65535, 1)).toBe(0);
    expect(seqAdd16(0, -1)).toBe(65535);
    expect(seq16(65536 + 7)).toBe(7);
    expect(seqGreaterThan16(5, 5)).toBe(false);
  });

  it('a + d is newer than a for every 0 < d < 32768', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 1, max: 32767 }), (a, d) => {
        const b = seqAdd16(a, d);
        return seqGreaterThan16(b, a) && seqLessThan16(a, b) && seqDiff16(b, a) === d && seqDiff16(a, b) === -d;
      }),
    );
  });

  it('orders every pair exactly one way, except pairs exactly 32768 apart', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 65535 }), fc.integer({ min: 0, max: 65535 }), (a, b) => {
        const ab = seqGreaterThan16(a, b);
        const ba = seqGreaterThan16(b, a);
        if (a === b || ((a - b) & 0xffff) === 32768) return !ab && !ba;
        return ab !== ba;
      }),
    );
  });
});

describe('u32 time maths', () => {
  it('wraps at 2^32', () => {
    expect(u32(2 ** 32)).toBe(0);
    expect(u32(-1)).toBe(0xffffffff);
    expect(u32Add(0xffffffff, 1)).toBe(0);
    expect(u32Add(0xfffffff0, 0x20)).toBe(0x10);
    expect(timeDiff32(0x10, 0xfffffff0)).toBe(0x20);
    expect(timeDiff32(0xfffffff0, 0x10)).toBe(-0x20);
    expect(timeDiff32(0x7fffffff, 0)).toBe(0x7fffffff);
    expect(timeDiff32(0x80000000, 0)).toBe(-0x80000000);
    expect(timeDiff32(0, 0)).toBe(0);
  });

  it('timeDiff32(a + d, a) === d for |d| < 2^31', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: -0x7fffffff, max: 0x7fffffff }), (a, d) => {
        return timeDiff32(u32Add(a, d), a) === d;
      }),
    );
  });
});
