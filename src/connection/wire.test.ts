import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  ACCEPT_BYTES, BLOCK_PREFIX_BYTES, CONNECT_BYTES, CONNECTION_PROTOCOL_VERSION, decodeConnect, encodeAccept, encodeBlockPrefix,
  encodeConnect, encodeIdReason, FrameKind,
} from './wire.js';
import { decodeChunkPacket, encodeCancel } from '../chunk/wire.js';
import { resolveConnectionOptions, type ConnectionLaneConfig } from './options.js';

interface Vector {
  frame: 'connect' | 'accept' | 'refuse' | 'disconnect' | 'block' | 'lanes-hash';
  session?: string;
  chunkId?: number;
  lanes?: ConnectionLaneConfig[];
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
    expect(vs.map((v) => v.frame)).toEqual(['connect', 'accept', 'refuse', 'disconnect', 'block', 'lanes-hash', 'lanes-hash']);
    const out = new Uint8Array(64);
    for (const v of vs) {
      let n: number;
      if (v.frame === 'lanes-hash') {
        expect(resolveConnectionOptions({ lanes: v.lanes! }).lanesHash.toString(16).padStart(8, '0')).toBe(v.hex);
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
        n = encodeConnect(out, u32(v.clientId), u32(v.lanesHash));
        expect(decodeConnect(unhex(v.hex))).toEqual({ version: CONNECTION_PROTOCOL_VERSION, clientId: u32(v.clientId), lanesHash: u32(v.lanesHash) });
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

  it('CONNECT round-trips and every other length, magic or non-zero padding is rejected', () => {
    fc.assert(fc.property(fc.integer({ min: 0, max: 0xffffffff }), fc.integer({ min: 0, max: 0xffffffff }), fc.nat(CONNECT_BYTES - 1), (id, hash, at) => {
      const b = new Uint8Array(CONNECT_BYTES);
      expect(encodeConnect(b, id, hash)).toBe(CONNECT_BYTES);
      expect(decodeConnect(b)).toEqual({ version: CONNECTION_PROTOCOL_VERSION, clientId: id, lanesHash: hash });
      expect(decodeConnect(b.subarray(0, at))).toBeUndefined();
      const longer = new Uint8Array(CONNECT_BYTES + 1);
      longer.set(b);
      expect(decodeConnect(longer)).toBeUndefined();
      if (at < 5 || at >= 14) {
        const bad = b.slice();
        bad[at]! ^= 0x40;
        expect(decodeConnect(bad)).toBeUndefined();
      }
    }));
  });

  it('ACCEPT is smaller than CONNECT (no amplification)', () => {
    expect(ACCEPT_BYTES).toBeLessThan(CONNECT_BYTES);
  });
});
