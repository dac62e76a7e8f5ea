import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import siphash from 'siphash';
import { describe, expect, it } from 'vitest';
import {
  ACCEPT_BYTES, BLOCK_PREFIX_BYTES, CONNECT_BYTES, CONNECTION_PROTOCOL_VERSION, COOKIE_BYTES, COOKIE_FRAME_BYTES, decodeConnect,
  decodeCookie, encodeAccept, encodeBlockPrefix, encodeConnect, encodeCookie, encodeIdReason, FrameKind, makeCookie,
  REFUSE_BYTES,
} from './wire.js';
import { decodeChunkPacket, encodeCancel } from '../chunk/wire.js';
import { sipHashKey } from '../core/siphash.js';
import { resolveConnectionOptions, type LaneConfig } from './options.js';
import { okValue } from '../../test/harness/decoders.js';

interface Vector {
  frame: 'connect' | 'cookie' | 'cookie-value' | 'accept' | 'refuse' | 'disconnect' | 'block' | 'lanes-hash';
  cookie?: string;
  key?: string;
  address?: string;
  issuedAt?: number;
  session?: string;
  chunkId?: number;
  lanes?: LaneConfig[];
  clientId?: string;
  serverId?: string;
  receiverId?: string;
  lanesHash?: string;
  reason?: number;
  hex: string;
}

function docVectors(): Vector[] {
  const doc = readFileSync(new URL('../../docs/connection.md', import.meta.url), 'utf8');
  const m = /<!-- connection-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- connection-vectors:end -->/.exec(doc);
  if (m === null) throw new Error('docs/connection.md has no connection-vectors block');
  return JSON.parse(m[1]!) as Vector[];
}

const u32 = (h: string | undefined): number => Number.parseInt(h!, 16);
const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const unhex = (h: string): Uint8Array => Uint8Array.from(h.match(/../g)!.map((x) => Number.parseInt(x, 16)));

describe('connection framing', () => {
  it('docs vectors encode to their hex and decode back', () => {
    const vs = docVectors();
    expect(vs.map((v) => v.frame)).toEqual([
      'connect', 'cookie', 'connect', 'cookie-value', 'accept', 'refuse', 'disconnect', 'block', 'lanes-hash', 'lanes-hash',
    ]);
    const out = new Uint8Array(64);
    for (const v of vs) {
      let n: number;
      if (v.frame === 'lanes-hash') {
        expect(resolveConnectionOptions({ lanes: v.lanes! }).lanesHash.toString(16).padStart(8, '0')).toBe(v.hex);
        continue;
      }
      if (v.frame === 'cookie-value') {
        const key = unhex(v.key!);
        n = makeCookie(sipHashKey(key), v.address!, u32(v.clientId), v.issuedAt!, out, 0);
        // The tag is SipHash-2-4 as an independent implementation computes it.
        const m = new Uint8Array([...new TextEncoder().encode(v.address!), 0, 0, 0, 0, 0, 0, 0, 0]);
        new DataView(m.buffer).setUint32(m.length - 8, u32(v.clientId), true);
        new DataView(m.buffer).setUint32(m.length - 4, v.issuedAt!, true);
        const { h, l } = siphash.hash(sipHashKey(key), m);
        const b = unhex(v.hex);
        expect([new DataView(b.buffer).getUint32(0, true), new DataView(b.buffer).getUint32(4, true),
          new DataView(b.buffer).getUint32(8, true)]).toEqual([v.issuedAt, l >>> 0, h >>> 0]);
        expect(hex(out.subarray(0, n))).toBe(v.hex);
        continue;
      }
      if (v.frame === 'block') {
        n = encodeBlockPrefix(out, u32(v.receiverId));
        n += encodeCancel(out.subarray(n), { session: u32(v.session), chunkId: v.chunkId!, pipelined: false });
        const b = unhex(v.hex);
        expect([b[0], new DataView(b.buffer).getUint32(1, true)]).toEqual([FrameKind.Block, u32(v.receiverId)]);
        expect(decodeChunkPacket(b.subarray(BLOCK_PREFIX_BYTES))).toMatchObject({
          ok: true, value: { type: 'cancel', session: u32(v.session), chunkId: v.chunkId, pipelined: false },
        });
      } else if (v.frame === 'connect') {
        const cookie = v.cookie === undefined ? undefined : unhex(v.cookie);
        n = encodeConnect(out, u32(v.clientId), u32(v.lanesHash), cookie);
        expect(okValue(decodeConnect(unhex(v.hex)))).toEqual({
          version: CONNECTION_PROTOCOL_VERSION, clientId: u32(v.clientId), lanesHash: u32(v.lanesHash), cookie,
        });
      } else if (v.frame === 'cookie') {
        n = encodeCookie(out, u32(v.clientId), unhex(v.cookie!));
        expect(okValue(decodeCookie(unhex(v.hex)))).toEqual({ clientId: u32(v.clientId), cookie: unhex(v.cookie!) });
      } else if (v.frame === 'accept') {
        n = encodeAccept(out, u32(v.clientId), u32(v.serverId));
        const b = unhex(v.hex);
        expect([b[0], new DataView(b.buffer).getUint32(1, true), new DataView(b.buffer).getUint32(5, true)])
          .toEqual([FrameKind.Accept, u32(v.clientId), u32(v.serverId)]);
      } else {
        const kind = v.frame === 'refuse' ? FrameKind.Refuse : FrameKind.Disconnect;
        const id = u32(v.frame === 'refuse' ? v.clientId : v.receiverId);
        n = encodeIdReason(out, kind, id, v.reason!);
        const b = unhex(v.hex);
        expect([b[0], new DataView(b.buffer).getUint32(1, true), b[5]]).toEqual([kind, id, v.reason]);
      }
      expect(hex(out.subarray(0, n)), v.frame).toBe(v.hex);
    }
  });

  it('CONNECT round-trips with and without a cookie; every other length, magic or non-zero padding is rejected', () => {
    const someCookie = fc.option(fc.uint8Array({ minLength: COOKIE_BYTES, maxLength: COOKIE_BYTES }).filter((c) => c.some((x) => x !== 0)), { nil: undefined });
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), someCookie, fc.nat(CONNECT_BYTES - 1),
      (id, hash, cookie, at) => {
        const b = new Uint8Array(CONNECT_BYTES).fill(0xee);
        expect(encodeConnect(b, id, hash, cookie)).toBe(CONNECT_BYTES);
        expect(okValue(decodeConnect(b))).toEqual({ version: CONNECTION_PROTOCOL_VERSION, clientId: id, lanesHash: hash, cookie });
        expect(okValue(decodeConnect(b.subarray(0, at)))).toBeUndefined();
        const longer = new Uint8Array(CONNECT_BYTES + 1);
        longer.set(b);
        expect(okValue(decodeConnect(longer))).toBeUndefined();
        if (at < 5 || at >= 14 + COOKIE_BYTES) {
          const bad = b.slice();
          bad[at]! ^= 0x40;
          expect(okValue(decodeConnect(bad))).toBeUndefined();
        }
      }));
  });

  it('a CONNECT of another version decodes whatever follows its client id (so it can be refused)', () => {
    const b = new Uint8Array(CONNECT_BYTES);
    encodeConnect(b, 7, 9);
    b[5] = 1;
    b.fill(0xab, 14);
    expect(okValue(decodeConnect(b))).toMatchObject({ version: 1, clientId: 7 });
  });

  it('COOKIE round-trips; every other length or kind is rejected', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.uint8Array({ minLength: COOKIE_BYTES, maxLength: COOKIE_BYTES }),
      fc.nat(COOKIE_FRAME_BYTES + 1), (id, cookie, len) => {
        const b = new Uint8Array(COOKIE_FRAME_BYTES + 2);
        expect(encodeCookie(b, id, cookie)).toBe(COOKIE_FRAME_BYTES);
        expect(okValue(decodeCookie(b.subarray(0, COOKIE_FRAME_BYTES)))).toEqual({ clientId: id, cookie });
        if (len !== COOKIE_FRAME_BYTES) expect(okValue(decodeCookie(b.subarray(0, len)))).toBeUndefined();
        const other = b.slice(0, COOKIE_FRAME_BYTES);
        other[0] = FrameKind.Connect;
        expect(okValue(decodeCookie(other))).toBeUndefined();
      }));
  });

  it('a cookie binds the address, the client id and the time it was made', () => {
    const key = sipHashKey(Uint8Array.from({ length: 16 }, (_, i) => i * 7));
    const make = (address: string, id: number, at: number): string => {
      const out = new Uint8Array(COOKIE_BYTES);
      makeCookie(key, address, id, at, out, 0);
      return hex(out);
    };
    const base = make('10.0.0.1:5000', 1, 1000);
    expect(new Set([base, make('10.0.0.1:5001', 1, 1000), make('10.0.0.1:5000', 2, 1000), make('10.0.0.1:5000', 1, 1001)]).size).toBe(4);
    expect(make('10.0.0.1:5000', 1, 1000)).toBe(base);
    expect(make('a', 1, 2 ** 32 + 5)).toBe(make('a', 1, 5));
  });

  it('no answer to an unproven address is larger than the CONNECT it answers (no amplification)', () => {
    expect(COOKIE_FRAME_BYTES).toBeLessThan(CONNECT_BYTES);
    expect(REFUSE_BYTES).toBeLessThan(CONNECT_BYTES);
    expect(ACCEPT_BYTES).toBeLessThan(CONNECT_BYTES);
  });
});
