import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  decodeFrame, encodeFrame, type Frame, frameBytes, lengthVarintBytes, MAX_FRAME_PAYLOAD, newFrameView,
  payloadThatFits, readFrame, readLength, reliableHeaderBytes, unreliableHeaderBytes, writeLength,
} from './wire.js';

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h: string): Uint8Array => new Uint8Array((h.replace(/\s+/g, '').match(/../g) ?? []).map((x) => parseInt(x, 16)));

interface Vector {
  name: string;
  hex?: string;
  fields?: Record<string, unknown>;
  invalid?: string[];
}

function docVectors(): Vector[] {
  const doc = readFileSync(new URL('../../docs/channels.md', import.meta.url), 'utf8');
  const m = /<!-- channels-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- channels-vectors:end -->/.exec(doc);
  if (m === null) throw new Error('docs/channels.md has no channels-vectors block');
  return JSON.parse(m[1]!) as Vector[];
}

const plain = (f: Frame): Record<string, unknown> => ({ ...f, bytes: hex(f.bytes) });
const fromPlain = (f: Record<string, unknown>): Frame => ({ ...f, bytes: unhex(f.bytes as string) }) as Frame;

function encode(f: Frame): Uint8Array {
  const out = new Uint8Array(frameBytes(f));
  expect(encodeFrame(f, out, 0)).toBe(out.length);
  return out;
}

const u16 = fc.integer({ min: 0, max: 0xffff });
const lane = fc.integer({ min: 0, max: 255 });
const payload = fc.oneof(
  { weight: 4, arbitrary: fc.uint8Array({ maxLength: 200 }) },
  { weight: 1, arbitrary: fc.integer({ min: 0, max: 20_000 }).map((n) => new Uint8Array(n).fill(n & 0xff)) },
);
const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({ lane, id: u16, first: fc.boolean(), last: fc.boolean(), bytes: payload })
    .map((r) => ({ type: 'reliable' as const, ...r })),
  fc.record({ lane, seq: u16, bytes: payload }).map((r) => ({ type: 'unreliable' as const, ...r, index: 0, count: 1 })),
  fc.record({ lane, seq: u16, count: fc.integer({ min: 2, max: 256 }), pick: fc.nat(), bytes: payload })
    .map(({ pick, ...r }) => ({ type: 'unreliable' as const, ...r, index: pick % r.count })),
);

function expectedLength(f: Frame): number {
  const n = f.bytes.length;
  return n + (f.type === 'reliable' ? 4 : f.count === 1 ? 4 : 6) + (n < 128 ? 1 : n < 16384 ? 2 : 3);
}

describe('channels wire: hex vectors of docs/channels.md', () => {
  const vectors = docVectors();
  const valid = vectors.filter((v) => v.hex !== undefined);

  it('has vectors of every frame kind, split or not, and invalid ones', () => {
    const kinds = new Set(valid.map((v) => unhex(v.hex!)[0]));
    expect([...kinds].sort()).toEqual([0x10, 0x11, 0x12, 0x13, 0x20, 0x21]);
    expect(vectors.find((v) => v.invalid !== undefined)?.invalid?.length).toBeGreaterThan(5);
  });

  for (const v of valid) {
    it(`${v.name}: encode gives exactly the doc's bytes`, () => {
      expect(hex(encode(fromPlain(v.fields!)))).toBe(v.hex);
    });
    it(`${v.name}: decode gives exactly the doc's fields`, () => {
      const r = decodeFrame(unhex(v.hex!));
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(plain(r.value)).toEqual(v.fields);
      expect(r.bytesRead).toBe(v.hex!.length / 2);
    });
  }

  it('rejects every invalid vector', () => {
    for (const h of vectors.flatMap((v) => v.invalid ?? [])) expect(decodeFrame(unhex(h)).ok, h).toBe(false);
  });
});

describe('channels wire: codec properties', () => {
  it('round-trips every frame with the exact expected length', () => {
    fc.assert(fc.property(frameArb, (f) => {
      const b = encode(f);
      expect(b.length).toBe(expectedLength(f));
      expect(frameBytes(f)).toBe(b.length);
      const r = decodeFrame(b);
      expect(r.ok).toBe(true);
      if (r.ok) {
        expect(r.bytesRead).toBe(b.length);
        expect(plain(r.value)).toEqual(plain(f));
      }
    }), { numRuns: 400 });
  });

  it('decodes frames back to back, and a frame at an offset inside a larger buffer', () => {
    fc.assert(fc.property(fc.array(frameArb, { minLength: 1, maxLength: 6 }), fc.nat(10), (frames, pad) => {
      const total = frames.reduce((a, f) => a + frameBytes(f), 0);
      const out = new Uint8Array(pad + total + 3).fill(0xee);
      let o = pad;
      for (const f of frames) o += encodeFrame(f, out, o);
      const v = newFrameView();
      o = pad;
      for (const f of frames) {
        const n = readFrame(out, o, pad + total, v);
        expect(n).toBe(frameBytes(f));
        expect(hex(out.subarray(v.payloadStart, v.payloadEnd))).toBe(hex(f.bytes));
        o += n;
      }
      expect(o).toBe(pad + total);
    }), { numRuns: 200 });
  });

  it('rejects every truncation of a valid frame (and never throws)', () => {
    fc.assert(fc.property(frameArb.filter((f) => f.bytes.length < 300), (f) => {
      const b = encode(f);
      const v = newFrameView();
      for (let cut = 0; cut < b.length; cut++) {
        expect(readFrame(b, 0, cut, v)).toBe(-1);
        expect(readFrame(b.subarray(0, cut), 0, cut, v)).toBe(-1);
      }
    }), { numRuns: 300 });
  });

  it('random bytes never throw, and whatever decodes re-encodes to the same bytes (canonical)', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(64), (b, end) => {
      const e = Math.min(end, b.length);
      const r = decodeFrame(b, 0, e);
      if (r.ok) expect(hex(encode(r.value))).toBe(hex(b.subarray(0, r.bytesRead)));
      readFrame(b, 0, b.length + 5, newFrameView()); // an end past the buffer is refused, not read
    }), { numRuns: 3000 });
  });

  it('the length varint at its edges: minimal, at most 3 bytes', () => {
    const out = new Uint8Array(4);
    for (const n of [0, 1, 127, 128, 16383, 16384, MAX_FRAME_PAYLOAD]) {
      const w = writeLength(out, 0, n);
      expect(w).toBe(lengthVarintBytes(n));
      const r = readLength(out, 0, w);
      expect([(r - (r & 3)) / 4, r & 3]).toEqual([n, w]);
      expect(readLength(out, 0, w - 1)).toBe(-1);
    }
    expect(readLength(Uint8Array.of(0x80, 0x00), 0, 2)).toBe(-1);
    expect(readLength(Uint8Array.of(0xff, 0x80, 0x00), 0, 3)).toBe(-1);
    expect(readLength(Uint8Array.of(0xff, 0xff, 0xff, 0x01), 0, 4)).toBe(-1);
  });

  it('payloadThatFits gives the largest payload whose frame fits the room', () => {
    for (let room = 0; room < 20_000; room += room < 300 ? 1 : 97) {
      const p = payloadThatFits(room, 4);
      if (p < 0) {
        expect(room).toBeLessThan(5);
        continue;
      }
      expect(reliableHeaderBytes(p) + p).toBeLessThanOrEqual(room);
      expect(reliableHeaderBytes(p + 1) + p + 1).toBeGreaterThan(room);
      const q = payloadThatFits(room, 6);
      if (q >= 0) expect(unreliableHeaderBytes(q, true) + q).toBeLessThanOrEqual(room);
    }
  });
});
