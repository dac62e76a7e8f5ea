import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32Of } from '../core/crc32.js';
import { NonCryptoRng } from '../core/rng.js';
import { decodeErrorOf } from '../core/result.js';
import {
  ACK_BASE_BYTES, type AckPacket, CANCEL_BYTES, type ChunkPacket, DEFAULT_SLICE_BYTES, decodeChunkPacket,
  encodeChunkPacket, MAX_ACK_BYTES, MIN_SLICE_BYTES, REFUSE_BYTES, SLICE_HEADER_BYTES, readSlice, type SliceHeader, sliceCountOf,
  sliceLengthOf, type SlicePacket,
} from './wire.js';

const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h: string): Uint8Array => new Uint8Array((h.match(/../g) ?? []).map((x) => parseInt(x, 16)));

function encode(p: ChunkPacket): Uint8Array {
  const out = new Uint8Array(70_000);
  return out.slice(0, encodeChunkPacket(out, p));
}

/** Decoded packets with byte fields rendered as hex, to compare with the doc's JSON. */
function plain(p: ChunkPacket): unknown {
  if (p.type === 'slice') return { ...p, payload: hex(p.payload) };
  if (p.type === 'ack') return { ...p, windows: p.windows.map((w) => ({ base: w.base, bits: hex(w.bits) })) };
  return { ...p };
}

function fromPlain(f: Record<string, unknown>): ChunkPacket {
  if (f.type === 'slice') return { ...f, payload: unhex(f.payload as string) } as SlicePacket;
  if (f.type === 'ack') {
    const windows = (f.windows as { base: number; bits: string }[]).map((w) => ({ base: w.base, bits: unhex(w.bits) }));
    return { ...f, windows } as AckPacket;
  }
  return f as unknown as ChunkPacket;
}

interface Vector {
  name: string;
  hex: string;
  fields: Record<string, unknown>;
}

function docVectors(): Vector[] {
  const doc = readFileSync(new URL('../../docs/chunk.md', import.meta.url), 'utf8');
  const m = /<!-- chunk-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- chunk-vectors:end -->/.exec(doc);
  if (m === null) throw new Error('docs/chunk.md has no chunk-vectors block');
  return JSON.parse(m[1]) as Vector[];
}

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u16 = fc.integer({ min: 0, max: 0xffff });

const sliceArb: fc.Arbitrary<SlicePacket> = fc
  .record({
    session: u32, chunkId: u16, pipelined: fc.boolean(), sendTimeUs: u32,
    sliceBytes: fc.integer({ min: MIN_SLICE_BYTES, max: 2000 }),
    blockBytes: fc.oneof(fc.integer({ min: 0, max: 50_000 }), u32),
    pick: fc.nat(), seed: fc.nat(),
  })
  .map(({ pick, seed, ...r }) => {
    const n = sliceCountOf(r.blockBytes, r.sliceBytes);
    const sliceId = pick % n;
    const payload = new NonCryptoRng(seed).fill(new Uint8Array(sliceLengthOf(r.blockBytes, r.sliceBytes, sliceId)));
    return { type: 'slice' as const, ...r, sliceId, payload };
  });

const ackArb: fc.Arbitrary<AckPacket> = fc.oneof(
  fc.record({
    session: u32, chunkId: u16, hasEcho: fc.boolean(), echoTimeUs: u32, ackDelayUs: u32, cumAck: u32,
    windows: fc.array(fc.record({
      base: fc.integer({ min: 0, max: 0x1fffffff - 256 }).map((x) => x * 8),
      bits: fc.uint8Array({ minLength: 1, maxLength: 255 }),
    }), { maxLength: 2 }),
  }).map((r) => ({
    type: 'ack' as const, status: 'partial' as const, ...r,
    echoTimeUs: r.hasEcho ? r.echoTimeUs : 0, ackDelayUs: r.hasEcho ? r.ackDelayUs : 0,
  })),
  fc.record({ session: u32, chunkId: u16, hasEcho: fc.boolean(), echoTimeUs: u32, ackDelayUs: u32, cumAck: u32, cancelled: fc.boolean() })
    .map(({ cancelled, ...r }) => ({
      type: 'ack' as const, ...r, status: cancelled ? 'cancelled' as const : 'complete' as const,
      cumAck: cancelled ? 0 : r.cumAck, windows: [],
      echoTimeUs: r.hasEcho ? r.echoTimeUs : 0, ackDelayUs: r.hasEcho ? r.ackDelayUs : 0,
    })),
);

const packetArb: fc.Arbitrary<ChunkPacket> = fc.oneof(
  sliceArb,
  ackArb,
  fc.record({ session: u32, chunkId: u16, pipelined: fc.boolean() }).map((r) => ({ type: 'cancel' as const, ...r })),
  fc.record({ session: u32, chunkId: u16, limitBytes: u32 })
    .map((r) => ({ type: 'refuse' as const, reason: 'too-large' as const, ...r })),
);

function expectedLength(p: ChunkPacket): number {
  switch (p.type) {
    case 'slice': return SLICE_HEADER_BYTES + p.payload.length;
    case 'ack': return ACK_BASE_BYTES + p.windows.reduce((n, w) => n + 5 + w.bits.length, 0);
    case 'cancel': return CANCEL_BYTES;
    case 'refuse': return REFUSE_BYTES;
  }
}

/** Bytes covered by the CRC (a single flipped bit there must be rejected). */
function coveredLength(p: ChunkPacket, len: number): number {
  return p.type === 'slice' ? SLICE_HEADER_BYTES : len;
}

describe('chunk wire: hex vectors of docs/chunk.md', () => {
  const vectors = docVectors();

  it('has a vector of every packet type', () => {
    const types = new Set(vectors.map((v) => v.fields.type));
    expect([...types].sort()).toEqual(['ack', 'cancel', 'refuse', 'slice']);
  });

  for (const v of vectors) {
    it(`${v.name}: encode gives exactly the doc's bytes`, () => {
      expect(hex(encode(fromPlain(v.fields)))).toBe(v.hex);
    });
    it(`${v.name}: decode gives exactly the doc's fields`, () => {
      const r = decodeChunkPacket(unhex(v.hex));
      expect(r.ok).toBe(true);
      if (!r.ok) return;
      expect(plain(r.value)).toEqual(v.fields);
      expect(r.bytesRead).toBe(v.hex.length / 2);
    });
  }
});

describe('chunk wire: codec properties', () => {
  it('round-trips every packet with the exact expected length', () => {
    fc.assert(fc.property(packetArb, (p) => {
      const bytes = encode(p);
      expect(bytes.length).toBe(expectedLength(p));
      const r = decodeChunkPacket(bytes);
      expect(r.ok).toBe(true);
      if (r.ok) {
        expect(plain(r.value)).toEqual(plain(p));
        expect(r.bytesRead).toBe(bytes.length);
      }
    }), { numRuns: 400 });
  });

  it('rejects every truncation of a valid packet (and never throws)', () => {
    fc.assert(fc.property(packetArb, (p) => {
      const bytes = encode(p);
      for (let n = 0; n < bytes.length; n++) expect(decodeChunkPacket(bytes.subarray(0, n)).ok).toBe(false);
      const longer = new Uint8Array(bytes.length + 1);
      longer.set(bytes);
      expect(decodeChunkPacket(longer).ok).toBe(false);
    }), { numRuns: 150 });
  });

  it('every single-bit flip is rejected in CRC-covered bytes; a slice payload flip decodes to the same header', () => {
    fc.assert(fc.property(packetArb.filter((p) => p.type !== 'slice' || p.payload.length <= 300), (p) => {
      const bytes = encode(p);
      const covered = coveredLength(p, bytes.length);
      for (let bit = 0; bit < bytes.length * 8; bit++) {
        const m = bytes.slice();
        m[bit >>> 3] ^= 1 << (bit & 7);
        const r = decodeChunkPacket(m);
        if ((bit >>> 3) < covered) {
          expect(r.ok).toBe(false);
        } else {
          expect(r.ok).toBe(true);
          if (r.ok && r.value.type === 'slice' && p.type === 'slice') {
            expect({ ...r.value, payload: 0 }).toEqual({ ...p, payload: 0 });
          }
        }
      }
    }), { numRuns: 60 });
  });

  it('random datagrams never throw and are almost never accepted', () => {
    const rng = new NonCryptoRng(5);
    let accepted = 0;
    for (let i = 0; i < 20_000; i++) {
      const b = rng.fill(new Uint8Array(rng.nextInt(80)));
      if (rng.chance(0.5) && b.length > 0) b[0] = 0xc1;
      if (rng.chance(0.5) && b.length > 1) b[1] = 1 + rng.nextInt(4);
      if (decodeChunkPacket(b).ok) accepted++;
    }
    expect(accepted).toBe(0);
  });
});

describe('chunk wire: hot-path slice decoder and CRC', () => {
  const newHeader = (): SliceHeader => ({ session: 0, chunkId: 0, pipelined: false, sendTimeUs: 0, blockBytes: 0, sliceBytes: 0, sliceId: 0 });
  /** readSlice's verdict in decodeChunkPacket's terms (payload as the datagram's tail). */
  function viaDecoder(h: SliceHeader, b: Uint8Array): unknown {
    const n = readSlice(b, h);
    if (n < 0) return decodeErrorOf(n);
    expect(n).toBe(b.length);
    return { type: 'slice', ...h, payload: hex(b.subarray(SLICE_HEADER_BYTES)) };
  }
  function viaGeneral(b: Uint8Array): unknown {
    // Another packet type is never a slice, whatever else is wrong with it.
    if (b.length >= 2 && b[0] === 0xc1 && b[1] !== 1) return 'bad-type';
    const r = decodeChunkPacket(b);
    if (!r.ok) return r.code;
    return r.value.type === 'slice' ? plain(r.value) : 'bad-type';
  }

  it('accepts and rejects exactly what decodeChunkPacket does for slices (valid, mutated, truncated, other types)', () => {
    const d = newHeader();
    fc.assert(fc.property(packetArb, fc.nat(), fc.nat(), (p, at, v) => {
      const bytes = encode(p);
      expect(viaDecoder(d, bytes)).toEqual(viaGeneral(bytes));
      const m = bytes.slice();
      m[at % m.length] = v & 0xff;
      expect(viaDecoder(d, m)).toEqual(viaGeneral(m));
      const cut = bytes.subarray(0, at % (bytes.length + 1));
      expect(viaDecoder(d, cut)).toEqual(viaGeneral(cut));
    }), { numRuns: 400 });
  });

  it('reuses its result: no allocation per accepted slice (the caller owns the header; a number back), one code per rejection', () => {
    const d = newHeader();
    const a = encode({ type: 'slice', session: 1, chunkId: 2, pipelined: true, sendTimeUs: 3, blockBytes: 100, sliceBytes: 64, sliceId: 1, payload: new Uint8Array(36) });
    const r1 = readSlice(a, d);
    const r2 = readSlice(a, d);
    expect(r1).toBe(r2);
    expect(r1).toBe(a.length);
    expect(d).toEqual({ session: 1, chunkId: 2, pipelined: true, sendTimeUs: 3, blockBytes: 100, sliceBytes: 64, sliceId: 1 });
    expect(readSlice(new Uint8Array([1]), d)).toBe(readSlice(new Uint8Array([2]), d));
  });
});

describe('chunk wire: layout and validation', () => {
  it('a default full slice datagram is exactly 1200 bytes; the largest ack fits 1200', () => {
    expect(DEFAULT_SLICE_BYTES).toBe(1173);
    const p: SlicePacket = {
      type: 'slice', session: 1, chunkId: 2, pipelined: false, sendTimeUs: 3, blockBytes: 64 * 1024 * 1024,
      sliceBytes: DEFAULT_SLICE_BYTES, sliceId: 0, payload: new Uint8Array(DEFAULT_SLICE_BYTES),
    };
    expect(encode(p).length).toBe(1200);
    expect(MAX_ACK_BYTES).toBe(546);
    expect(sliceCountOf(64 * 1024 * 1024, DEFAULT_SLICE_BYTES)).toBe(57_212);
  });

  it('computes slice counts and lengths, including the empty block', () => {
    expect(sliceCountOf(0, 64)).toBe(1);
    expect(sliceLengthOf(0, 64, 0)).toBe(0);
    expect(sliceCountOf(128, 64)).toBe(2);
    expect(sliceLengthOf(128, 64, 1)).toBe(64);
    expect(sliceCountOf(129, 64)).toBe(3);
    expect(sliceLengthOf(129, 64, 2)).toBe(1);
  });

  /** Re-seal the CRC after patching a field, to test the field checks behind it. */
  function patch(p: ChunkPacket, at: number, value: number): Uint8Array {
    const b = encode(p);
    b[at] = value;
    const crcAt = p.type === 'slice' ? SLICE_HEADER_BYTES - 4 : b.length - 4;
    new DataView(b.buffer).setUint32(crcAt, crc32Of(b, 0, crcAt), true);
    return b;
  }

  const slice: SlicePacket = {
    type: 'slice', session: 9, chunkId: 1, pipelined: false, sendTimeUs: 0, blockBytes: 100, sliceBytes: 64,
    sliceId: 0, payload: new Uint8Array(64),
  };
  const ack: AckPacket = {
    type: 'ack', session: 9, chunkId: 1, status: 'partial', hasEcho: false, echoTimeUs: 0, ackDelayUs: 0, cumAck: 3,
    windows: [{ base: 8, bits: new Uint8Array([1]) }],
  };

  it('names the reason for rejections', () => {
    const code = (b: Uint8Array): string => {
      const r = decodeChunkPacket(b);
      return r.ok ? 'ok' : r.code;
    };
    expect(code(patch(slice, 0, 0xc2))).toBe('bad-version');
    expect(code(patch(slice, 1, 9))).toBe('bad-type');
    expect(code(patch(slice, 8, 2))).toBe('bad-field');
    expect(code(patch(slice, 17, 63))).toBe('out-of-range');
    expect(code(patch(slice, 19, 2))).toBe('out-of-range');
    expect(code(patch(slice, 13, 40))).toBe('trailing-bytes');
    expect(code(patch(slice, 17, 100))).toBe('truncated');
    const flipped = encode(slice);
    flipped[3] ^= 0x10;
    expect(code(flipped)).toBe('bad-checksum');
    expect(code(patch(ack, 8, 3))).toBe('bad-field');
    expect(code(patch(ack, 8, 0x08))).toBe('bad-field');
    expect(code(patch(ack, 9, 1))).toBe('bad-field');
    expect(code(patch(ack, 21, 3))).toBe('out-of-range');
    expect(code(patch(ack, 22, 9))).toBe('bad-field');
    expect(code(patch(ack, 26, 0))).toBe('bad-field');
    expect(code(patch(ack, 8, 1))).toBe('bad-field');
    expect(code(patch({ type: 'cancel', session: 1, chunkId: 1, pipelined: false }, 8, 2))).toBe('bad-field');
    expect(code(patch({ type: 'refuse', session: 1, chunkId: 1, reason: 'too-large', limitBytes: 5 }, 8, 2))).toBe('bad-field');
    expect(code(new Uint8Array([0xc1]))).toBe('truncated');
  });
});
