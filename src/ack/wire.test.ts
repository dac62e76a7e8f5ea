import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import {
  ACK_HEADER_HEALTHY_BYTES, ACK_HEADER_MIN_BYTES, type AckHeader, ackHeaderLength, decodeAckHeader, encodeAckHeader,
  MAX_ACK_EXT_BYTES, MAX_ACK_HEADER_BYTES, newAckHeader,
} from './wire.js';

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h: string): Uint8Array => new Uint8Array((h.match(/../g) ?? []).map((x) => parseInt(x, 16)));

/** The doc's plain form of a header: `ext` as hex of its `extBytes` bytes. */
interface PlainHeader {
  seq: number;
  hasAck: boolean;
  ack: number;
  ackDelay: number;
  ackBits: number;
  ext: string;
}

function toPlain(h: AckHeader): PlainHeader {
  return { seq: h.seq, hasAck: h.hasAck, ack: h.ack, ackDelay: h.ackDelay, ackBits: h.ackBits, ext: hex(h.ext.subarray(0, h.extBytes)) };
}

function fromPlain(p: PlainHeader): AckHeader {
  const h = newAckHeader();
  const ext = unhex(p.ext);
  Object.assign(h, { seq: p.seq, hasAck: p.hasAck, ack: p.ack, ackDelay: p.ackDelay, ackBits: p.ackBits, extBytes: ext.length });
  h.ext.set(ext);
  return h;
}

function encode(h: AckHeader): Uint8Array {
  const out = new Uint8Array(MAX_ACK_HEADER_BYTES);
  return out.slice(0, encodeAckHeader(h, out, 0));
}

function docBlock<V>(tag: string): V[] {
  const doc = readFileSync(new URL('../../docs/ack.md', import.meta.url), 'utf8');
  const m = new RegExp(`<!-- ${tag}:begin -->\\s*\`\`\`json\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${tag}:end -->`).exec(doc);
  if (m === null) throw new Error(`docs/ack.md has no ${tag} block`);
  return JSON.parse(m[1]!) as V[];
}

const u16 = fc.integer({ min: 0, max: 0xffff });
/** Ack-bit bytes drawn mostly from 0xFF (absent) so every presence pattern shows up. */
const bitsByte = fc.oneof(fc.constant(0xff), fc.integer({ min: 0, max: 0xff }));

const headerArb: fc.Arbitrary<PlainHeader> = fc.oneof(
  u16.map((seq) => ({ seq, hasAck: false, ack: 0, ackDelay: 0, ackBits: 0, ext: '' })),
  fc.record({
    seq: u16,
    ack: u16,
    ackDelay: fc.oneof(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 256, max: 0xffff }), fc.constantFrom(0, 255, 256, 0xffff)),
    b: fc.tuple(bitsByte, bitsByte, bitsByte, bitsByte),
    ext: fc.uint8Array({ minLength: 0, maxLength: MAX_ACK_EXT_BYTES }),
  }).map((r) => ({
    seq: r.seq, hasAck: true, ack: r.ack, ackDelay: r.ackDelay,
    ackBits: (r.b[0] | (r.b[1] << 8) | (r.b[2] << 16) | (r.b[3] << 24)) >>> 0, ext: hex(r.ext),
  })),
);

describe('ack wire: hex vectors of docs/ack.md', () => {
  const vectors = docBlock<{ name: string; hex: string; fields: PlainHeader }>('ack-vectors');
  for (const v of vectors) {
    it(`${v.name}: encode gives exactly the doc's bytes`, () => {
      expect(hex(encode(fromPlain(v.fields)))).toBe(v.hex);
    });
    it(`${v.name}: decode gives exactly the doc's fields`, () => {
      const h = newAckHeader();
      expect(decodeAckHeader(unhex(v.hex), 0, h)).toBe(v.hex.length / 2);
      expect(toPlain(h)).toEqual(v.fields);
    });
  }

  const invalid = docBlock<{ name: string; hex: string }>('ack-invalid');
  for (const v of invalid) {
    it(`rejects ${v.name}`, () => {
      expect(decodeAckHeader(unhex(v.hex), 0, newAckHeader())).toBe(-1);
    });
  }

  it('covers the sizes the doc states: 3 without ack, 6 healthy, 40 largest', () => {
    const sizes = vectors.map((v) => v.hex.length / 2);
    expect(sizes).toContain(ACK_HEADER_MIN_BYTES);
    expect(sizes).toContain(ACK_HEADER_HEALTHY_BYTES);
    expect(sizes).toContain(MAX_ACK_HEADER_BYTES);
  });
});

describe('ack wire: codec properties', () => {
  it('round-trips every header with the exact expected length, at any offset', () => {
    fc.assert(fc.property(headerArb, fc.integer({ min: 0, max: 7 }), (p, off) => {
      const h = fromPlain(p);
      const out = new Uint8Array(off + MAX_ACK_HEADER_BYTES + 3).fill(0xaa);
      const n = encodeAckHeader(h, out, off);
      expect(n).toBe(ackHeaderLength(h));
      expect(n).toBeGreaterThanOrEqual(ACK_HEADER_MIN_BYTES);
      expect(n).toBeLessThanOrEqual(MAX_ACK_HEADER_BYTES);
      expect(out[off + n]).toBe(0xaa);
      const back = newAckHeader();
      expect(decodeAckHeader(out, off, back)).toBe(n);
      expect(toPlain(back)).toEqual(p);
    }), { numRuns: 500 });
  });

  it('rejects every truncation of a valid header', () => {
    fc.assert(fc.property(headerArb, (p) => {
      const bytes = encode(fromPlain(p));
      for (let n = 0; n < bytes.length; n++) expect(decodeAckHeader(bytes.subarray(0, n), 0, newAckHeader())).toBe(-1);
    }), { numRuns: 300 });
  });

  it('never throws on mutated or random bytes, and whatever it accepts re-encodes to the same bytes', () => {
    fc.assert(fc.property(headerArb, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 }),
      fc.uint8Array({ maxLength: 48 }), (p, flips, random) => {
        const bytes = encode(fromPlain(p));
        for (const [at, v] of flips) bytes[at % bytes.length] = v;
        for (const input of [bytes, random]) {
          const h = newAckHeader();
          const n = decodeAckHeader(input, 0, h);
          if (n >= 0) expect(hex(encode(h))).toBe(hex(input.subarray(0, n)));
        }
      }), { numRuns: 1000 });
  });

  it('rejects a bad offset without throwing', () => {
    const h = newAckHeader();
    expect(decodeAckHeader(unhex('003412'), -1, h)).toBe(-1);
    expect(decodeAckHeader(unhex('003412'), 1, h)).toBe(-1);
    expect(decodeAckHeader(unhex('003412'), Number.NaN, h)).toBe(-1);
  });

  it('throws on caller misuse: field out of range, buffer too small', () => {
    const h = newAckHeader();
    h.seq = 0x10000;
    expect(() => encodeAckHeader(h, new Uint8Array(40), 0)).toThrow(GamewireError);
    h.seq = 1;
    h.hasAck = true;
    h.extBytes = 29;
    expect(() => encodeAckHeader(h, new Uint8Array(80), 0)).toThrow(GamewireError);
    h.extBytes = 0;
    expect(() => encodeAckHeader(h, new Uint8Array(5), 0)).toThrow(/buffer-too-small/);
  });
});
