import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  ByteReader, ByteWriter, readU16LE, readU32LE, readU64LE, varintLength, writeU16LE, writeU32LE, writeU64LE,
} from './bytes.js';
import { GamewireError } from './errors.js';

describe('ByteWriter / ByteReader', () => {
  it('writes little-endian', () => {
    const out = new Uint8Array(7);
    new ByteWriter(out).u8(0xab).u16(0x1234).u32(0xdeadbeef);
    expect([...out]).toEqual([0xab, 0x34, 0x12, 0xef, 0xbe, 0xad, 0xde]);
    const r = new ByteReader(out);
    expect([r.u8(), r.u16(), r.u32(), r.ok, r.remaining]).toEqual([0xab, 0x1234, 0xdeadbeef, true, 0]);
  });

  it('throws a typed error when the caller buffer is too small', () => {
    const w = new ByteWriter(new Uint8Array(3));
    w.u16(1);
    const tooSmall = expect.objectContaining({ name: 'GamewireError', code: 'buffer-too-small' });
    expect(() => w.u16(2)).toThrowError(GamewireError);
    expect(() => w.u16(2)).toThrow(tooSmall);
    expect(() => w.u32(1)).toThrow(tooSmall);
    expect(() => w.bytesFrom(new Uint8Array(2))).toThrow(tooSmall);
    expect(w.offset).toBe(2);
  });

  it('never throws on reads past the end: ok turns false and reads return 0', () => {
    const r = new ByteReader(new Uint8Array([1, 2, 3]));
    expect(r.u16()).toBe(0x0201);
    expect(r.u16()).toBe(0);
    expect(r.ok).toBe(false);
    expect(r.u8()).toBe(0);
    expect(r.bytesView(1).length).toBe(0);
  });

  it('reads views without copying', () => {
    const src = new Uint8Array([9, 8, 7, 6]);
    const v = new ByteReader(src, 1).bytesView(2);
    src[1] = 42;
    expect([...v]).toEqual([42, 7]);
  });

  it('round-trips varints with the announced length', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: Number.MAX_SAFE_INTEGER }), (v) => {
        const out = new Uint8Array(10);
        const w = new ByteWriter(out).varint(v);
        const r = new ByteReader(out.subarray(0, w.offset));
        return w.offset === varintLength(v) && r.varint() === v && r.ok && r.remaining === 0;
      }),
    );
  });

  it('rejects truncated, overlong and non-minimal varints', () => {
    expect(new ByteReader(new Uint8Array([0x80])).varint()).toBe(0);
    const trunc = new ByteReader(new Uint8Array([0x80]));
    trunc.varint();
    expect(trunc.ok).toBe(false);
    const long = new ByteReader(new Uint8Array(9).fill(0xff));
    long.varint();
    expect(long.ok).toBe(false);
    const nonMinimal = new ByteReader(new Uint8Array([0x81, 0x00]));
    nonMinimal.varint();
    expect(nonMinimal.ok).toBe(false);
  });
});

describe('little-endian helpers', () => {
  it('store the low bits little-endian and read them back unsigned, agreeing with DataView', () => {
    fc.assert(fc.property(fc.integer({ min: -(2 ** 40), max: 2 ** 40 }), fc.nat(3), (v, at) => {
      const b = new Uint8Array(9);
      writeU32LE(b, at, v);
      const dv = new DataView(b.buffer);
      expect(readU32LE(b, at)).toBe(dv.getUint32(at, true));
      expect(readU32LE(b, at)).toBe(Number(BigInt.asUintN(32, BigInt(v))));
      writeU16LE(b, at + 4, v);
      expect(readU16LE(b, at + 4)).toBe(dv.getUint16(at + 4, true));
      expect(readU16LE(b, at + 4)).toBe(Number(BigInt.asUintN(16, BigInt(v))));
    }));
    const b = new Uint8Array(6);
    writeU32LE(b, 1, 0xdeadbeef);
    expect([...b]).toEqual([0, 0xef, 0xbe, 0xad, 0xde, 0]);
  });
});

describe('u64 little-endian', () => {
  it('writes the low 64 bits little-endian and reads them back', () => {
    const b = new Uint8Array(10);
    writeU64LE(b, 1, 0x0102030405060708n);
    expect([...b]).toEqual([0, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(readU64LE(b, 1)).toBe(0x0102030405060708n);
    writeU64LE(b, 0, (1n << 90n) | (0xabn << 32n) | 0xffn);
    expect(readU64LE(b, 0)).toBe((0xabn << 32n) | 0xffn);
  });

  it('round-trips every u64', () => {
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), (v) => {
      const b = new Uint8Array(8);
      writeU64LE(b, 0, v);
      return readU64LE(b, 0) === v;
    }));
  });
});
