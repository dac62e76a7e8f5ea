import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GamewireError } from '../core/errors.js';
import { DecodeFail } from '../core/result.js';
import {
  decodeKcpHeader, encodeKcpHeader, isKcpCommand, KCP_OVERHEAD, KcpCommand, readKcpConv, type KcpSegmentHeader,
} from './segment.js';

const header = fc.record({
  conv: fc.nat({ max: 0xffffffff }),
  cmd: fc.constantFrom(81, 82, 83, 84),
  frg: fc.nat({ max: 255 }),
  wnd: fc.nat({ max: 0xffff }),
  ts: fc.nat({ max: 0xffffffff }),
  sn: fc.nat({ max: 0xffffffff }),
  una: fc.nat({ max: 0xffffffff }),
  len: fc.nat({ max: 0xffffffff }),
});

describe('KCP segment header codec', () => {
  it('round-trips every field at any offset, writing exactly 24 bytes', () => {
    fc.assert(
      fc.property(header, fc.nat({ max: 16 }), (h, offset) => {
        const out = new Uint8Array(offset + KCP_OVERHEAD + 3).fill(0xee);
        expect(encodeKcpHeader(out, offset, h)).toBe(KCP_OVERHEAD);
        expect(out.subarray(0, offset).every((b) => b === 0xee)).toBe(true);
        expect(out.subarray(offset + KCP_OVERHEAD).every((b) => b === 0xee)).toBe(true);
        const r = decodeKcpHeader(out, offset);
        expect(r).toEqual({ ok: true, value: h, bytesRead: KCP_OVERHEAD });
      }),
    );
  });

  it('is little-endian in every field', () => {
    const h: KcpSegmentHeader = { conv: 0x01020304, cmd: 84, frg: 5, wnd: 0x0607, ts: 0x08090a0b, sn: 0x0c0d0e0f, una: 0x10111213, len: 0x14151617 };
    const out = new Uint8Array(24);
    encodeKcpHeader(out, 0, h);
    expect([...out]).toEqual([4, 3, 2, 1, 84, 5, 7, 6, 0x0b, 0x0a, 9, 8, 0x0f, 0x0e, 0x0d, 0x0c, 0x13, 0x12, 0x11, 0x10, 0x17, 0x16, 0x15, 0x14]);
  });

  it('rejects every truncation and unknown commands', () => {
    const full = new Uint8Array(KCP_OVERHEAD);
    encodeKcpHeader(full, 0, { conv: 1, cmd: 81, frg: 0, wnd: 1, ts: 1, sn: 1, una: 1, len: 0 });
    for (let n = 0; n < KCP_OVERHEAD; n++) expect(decodeKcpHeader(full.subarray(0, n))).toEqual({ ok: false, code: 'truncated' });
    expect(decodeKcpHeader(full, 1)).toEqual({ ok: false, code: 'truncated' });
    for (const cmd of [0, 80, 85, 255]) {
      const bad = full.slice();
      bad[4] = cmd;
      expect(isKcpCommand(cmd)).toBe(false);
      expect(decodeKcpHeader(bad)).toEqual({ ok: false, code: 'bad-type' });
    }
    for (const cmd of Object.values(KcpCommand)) expect(isKcpCommand(cmd)).toBe(true);
  });

  it('throws buffer-too-small when the header does not fit', () => {
    const h = { conv: 0, cmd: 82, frg: 0, wnd: 0, ts: 0, sn: 0, una: 0, len: 0 };
    expect(() => encodeKcpHeader(new Uint8Array(23), 0, h)).toThrow(GamewireError);
    expect(() => encodeKcpHeader(new Uint8Array(30), 7, h)).toThrow(/buffer-too-small/);
  });

  it('reads conv like ikcp_getconv, refusing datagrams shorter than a header', () => {
    const d = new Uint8Array(24);
    d.set([0x44, 0x33, 0x22, 0x11]);
    expect(readKcpConv(d)).toBe(0x11223344);
    expect(readKcpConv(d.subarray(0, 23))).toBe(DecodeFail.truncated);
  });
});
