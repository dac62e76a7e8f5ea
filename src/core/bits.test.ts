import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BitReader, BitWriter, bitsFor, unzigzag, zigzag } from './bits.js';

describe('BitWriter / BitReader', () => {
  it('round-trips any sequence of values and widths', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 32 }), fc.nat()), { maxLength: 200 }), (items) => {
        const buf = new Uint8Array(items.length * 4 + 1);
        const w = new BitWriter(buf);
        const vals = items.map(([n, v]) => (n === 0 ? 0 : n === 32 ? v >>> 0 : v % 2 ** n));
        items.forEach(([n], i) => w.bits(vals[i]!, n));
        const end = w.finish();
        expect(w.overflow).toBe(false);
        expect(end).toBe(Math.ceil(items.reduce((a, [n]) => a + n, 0) / 8));
        const r = new BitReader(buf, 0, end);
        items.forEach(([n], i) => expect(r.bits(n)).toBe(vals[i]));
        expect(r.overflow).toBe(false);
      }),
    );
  });

  it('round-trips Exp-Golomb codes of every order', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 0, max: 0xffffffff })), { maxLength: 50 }), (items) => {
        const buf = new Uint8Array(items.length * 9 + 1);
        const w = new BitWriter(buf);
        for (const [k, v] of items) w.expGolomb(v, k);
        const end = w.finish();
        const r = new BitReader(buf, 0, end);
        for (const [k, v] of items) expect(r.expGolomb(k)).toBe(v);
        expect(r.overflow).toBe(false);
      }),
    );
  });

  it('writes least significant bit first (a fixed vector)', () => {
    const buf = new Uint8Array(4);
    const w = new BitWriter(buf);
    w.bits(1, 1);
    w.bits(0b101, 3);
    w.bits(0xabc, 12);
    w.expGolomb(3, 0); // 00100
    expect([...buf.subarray(0, w.finish())].map((b) => b.toString(16).padStart(2, '0')).join('')).toBe('cbab04');
  });

  it('sets overflow instead of writing past the end, and reads zeros past the end', () => {
    const buf = new Uint8Array(2);
    const w = new BitWriter(buf);
    w.bits(0xffff, 16);
    expect(w.overflow).toBe(false);
    w.bits(1, 8);
    expect(w.overflow).toBe(true);
    const r = new BitReader(buf, 0, 1);
    expect(r.bits(8)).toBe(0xff);
    expect(r.bits(8)).toBe(0);
    expect(r.overflow).toBe(true);
  });

  it('a reader never loops or throws on an all-zero Exp-Golomb prefix', () => {
    const r = new BitReader(new Uint8Array(100));
    expect(r.expGolomb(0)).toBe(0);
    expect(r.overflow).toBe(true);
  });

  it('seekBit reads from any bit', () => {
    const buf = new Uint8Array(8);
    const w = new BitWriter(buf);
    w.bits(5, 3);
    w.bits(0x1234, 16);
    w.finish();
    const r = new BitReader(buf);
    r.seekBit(0, 3);
    expect(r.bits(16)).toBe(0x1234);
  });

  it('bitsFor and zigzag', () => {
    expect([0, 1, 2, 3, 255, 256, 65535].map(bitsFor)).toEqual([0, 1, 2, 2, 8, 9, 16]);
    expect([0, -1, 1, -2, 2].map(zigzag)).toEqual([0, 1, 2, 3, 4]);
    for (let v = -1000; v <= 1000; v++) expect(unzigzag(zigzag(v))).toBe(v);
  });
});
