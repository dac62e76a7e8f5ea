import crc32 from 'crc/calculators/crc32';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32Of } from './crc32.js';

describe('crc32Of', () => {
  it('gives the CRC-32 check value of "123456789"', () => {
    expect(crc32Of(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32Of(new Uint8Array(0))).toBe(0);
  });

  it('matches the crc package (zlib CRC-32) on any range', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), fc.nat(), fc.nat(), (b, x, y) => {
      const start = x % (b.length + 1);
      const end = start + (y % (b.length - start + 1));
      expect(crc32Of(b, start, end)).toBe(crc32(b.subarray(start, end)) >>> 0);
    }), { numRuns: 500 });
  });
});
