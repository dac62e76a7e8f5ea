// gamewire's addressed packet (type 7, docs/netcode.md "gamewire extension: moving a client to a new
// address"): the documented vectors both ways, round trips, every single-bit change refused, the
// index bound to the tag, the shared replay window, and netcode 1.02's reader dropping type 7.
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nobleCrypto } from '../crypto/noble.js';
import {
  ADDRESSED_TYPE, AddressedKind as K, addressedIndex, MIN_ADDRESSED_BYTES, NetcodePacketType as T, netcodeDropReason, newNetcodePacket,
  readAddressedPacket, ReplayProtection, writeAddressedPacket, writePacket,
} from './wire.js';
import { packetOf } from '../../test/harness/decoders.js';

const unhex = (h: string): Uint8Array => Uint8Array.from(h.match(/../g)?.map((x) => Number.parseInt(x, 16)) ?? []);
const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const PROTOCOL = 0x1234567890abcdefn;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i);
const ALL_KINDS = (1 << K.KeepAlive) | (1 << K.Payload) | (1 << K.Disconnect) | (1 << K.PathChallenge) | (1 << K.PathResponse);
const KINDS: Record<string, number> = {
  'keep-alive': K.KeepAlive, payload: K.Payload, disconnect: K.Disconnect, 'path-challenge': K.PathChallenge, 'path-response': K.PathResponse,
};

/** `readAddressedPacket` into a fresh struct: the packet with its index, or `{ drop: reason }`. */
function addressedOf(b: Uint8Array, key = KEY, allowed = ALL_KINDS, replay?: ReplayProtection, protocolId = PROTOCOL):
  { kind: number; index: number; sequence: bigint; body: string } | { drop: string } {
  const p = newNetcodePacket();
  const n = readAddressedPacket(b, protocolId, key, allowed, replay, nobleCrypto, p);
  if (n < 0) return { drop: netcodeDropReason(n) };
  expect(n).toBe(p.body.length);
  return { kind: p.type, index: addressedIndex(b), sequence: p.sequence, body: hex(p.body) };
}

describe('addressed packets: the vectors of docs/netcode.md', () => {
  const doc = readFileSync(new URL('../../docs/netcode.md', import.meta.url), 'utf8');
  const m = /<!-- addressed-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- addressed-vectors:end -->/.exec(doc);
  const vs = JSON.parse(m![1]!) as { kind: string; index: number; sequence: string; body: string; hex: string }[];

  it('each is written to its hex', () => {
    expect(vs.map((v) => v.kind)).toEqual(Object.keys(KINDS));
    for (const v of vs) {
      const out = new Uint8Array(64);
      const n = writeAddressedPacket(out, v.index, KINDS[v.kind]!, BigInt(v.sequence), unhex(v.body), PROTOCOL, KEY, nobleCrypto);
      expect(hex(out.subarray(0, n))).toBe(v.hex);
    }
  });

  it('each hex is read back to its kind, index, sequence and body', () => {
    for (const v of vs) {
      expect(addressedOf(unhex(v.hex))).toEqual({ kind: KINDS[v.kind], index: v.index, sequence: BigInt(v.sequence), body: v.body });
    }
  });

  it('the kind is the first sealed byte: the keep-alive differs from netcode\'s sequence-0 keep-alive (same key, nonce) only where the plaintext does', () => {
    const plain = new Uint8Array(64);
    const n = writePacket(plain, T.KeepAlive, 0n, new Uint8Array(8), PROTOCOL, KEY, nobleCrypto);
    const ours = unhex(vs[0]!.hex);
    // netcode: prefix, 1 sequence byte, then the keystream XOR 8 zero bytes; ours: prefix, 4 index
    // bytes, 1 sequence byte, then the keystream XOR (kind 4, 8 zero bytes).
    expect(ours[6]! ^ K.KeepAlive).toBe(plain[2]);
    expect(plain[2]).toBe(0x1b ^ 0x03); // the keystream's first byte, from netcode's own keep-alive vector (body 03…)
    expect(hex(ours.subarray(7, 14))).toBe(hex(plain.subarray(3, 10)));
    expect(n).toBe(26);
  });
});

describe('addressed packets: checks', () => {
  it('round-trip at any index, sequence, kind and body; every single-bit change is refused', () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 0xffffffff }), fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.constantFrom(...Object.values(KINDS)),
      fc.uint8Array({ minLength: 1, maxLength: 1200 }), fc.nat(),
      (index, seq, kind, payload, pick) => {
        const body = kind === K.Payload ? payload : kind === K.Disconnect ? new Uint8Array(0) : payload.subarray(0, 8);
        if (body.length !== (kind === K.Payload ? body.length : kind === K.Disconnect ? 0 : 8)) return;
        const out = new Uint8Array(1300);
        const n = writeAddressedPacket(out, index, kind, seq, body, PROTOCOL, KEY, nobleCrypto);
        const pkt = out.slice(0, n);
        expect(n).toBeLessThanOrEqual(body.length + 31);
        expect(addressedOf(pkt)).toEqual({ kind, index, sequence: seq, body: hex(body) });
        const bit = pick % (n * 8);
        const bad = pkt.slice();
        bad[bit >> 3]! ^= 1 << (bit & 7);
        expect('drop' in addressedOf(bad)).toBe(true);
      }));
  });

  it('another index, key or protocol id fails to decrypt; a kind not allowed, a short or truncated packet is dropped', () => {
    const out = new Uint8Array(64);
    const n = writeAddressedPacket(out, 5, K.PathResponse, 9n, new Uint8Array(8).fill(7), PROTOCOL, KEY, nobleCrypto);
    const pkt = out.slice(0, n);
    const other = pkt.slice();
    other[1] = 6; // index 6: the index is in the associated data
    expect(addressedOf(other)).toEqual({ drop: 'decrypt' });
    expect(addressedOf(pkt, new Uint8Array(32))).toEqual({ drop: 'decrypt' });
    expect(addressedOf(pkt, KEY, ALL_KINDS, undefined, PROTOCOL + 1n)).toEqual({ drop: 'decrypt' });
    expect(addressedOf(pkt, KEY, 1 << K.PathChallenge)).toEqual({ drop: 'type' });
    expect(addressedOf(pkt.subarray(0, MIN_ADDRESSED_BYTES - 1))).toEqual({ drop: 'size' });
    const longSeq = pkt.slice();
    longSeq[0] = (9 << 4) | ADDRESSED_TYPE;
    expect(addressedOf(longSeq)).toEqual({ drop: 'sequence-bytes' });
    expect(addressedIndex(pkt)).toBe(5);
    expect(addressedIndex(pkt.subarray(0, MIN_ADDRESSED_BYTES - 1))).toBe(-1);
    // A kind byte that names no kind, and a wrong body size, sealed properly.
    const m = writeAddressedPacket(out, 5, 7, 10n, new Uint8Array(8), PROTOCOL, KEY, nobleCrypto);
    expect(addressedOf(out.slice(0, m), KEY, 0xffff)).toEqual({ drop: 'type' });
    const w = writeAddressedPacket(out, 5, K.PathChallenge, 11n, new Uint8Array(9), PROTOCOL, KEY, nobleCrypto);
    expect(addressedOf(out.slice(0, w))).toEqual({ drop: 'body-size' });
  });

  it('shares the replay window with the connection\'s other packets: one sequence is taken once, whatever the type', () => {
    const replay = new ReplayProtection();
    const out = new Uint8Array(64);
    const plain = out.slice(0, writePacket(out, T.KeepAlive, 40n, new Uint8Array(8), PROTOCOL, KEY, nobleCrypto));
    expect('drop' in packetOf(plain, PROTOCOL, KEY, 1 << T.KeepAlive, replay, nobleCrypto)).toBe(false);
    const a = out.slice(0, writeAddressedPacket(out, 1, K.KeepAlive, 40n, new Uint8Array(8), PROTOCOL, KEY, nobleCrypto));
    expect(addressedOf(a, KEY, ALL_KINDS, replay)).toEqual({ drop: 'replay' });
    const b = out.slice(0, writeAddressedPacket(out, 1, K.KeepAlive, 41n, new Uint8Array(8), PROTOCOL, KEY, nobleCrypto));
    expect('drop' in addressedOf(b, KEY, ALL_KINDS, replay)).toBe(false);
    expect(addressedOf(b, KEY, ALL_KINDS, replay)).toEqual({ drop: 'replay' });
    const c = out.slice(0, writePacket(out, T.KeepAlive, 41n, new Uint8Array(8), PROTOCOL, KEY, nobleCrypto));
    expect(packetOf(c, PROTOCOL, KEY, 1 << T.KeepAlive, replay, nobleCrypto)).toEqual({ drop: 'replay' });
  });

  it('netcode 1.02\'s reader (readPacket) drops type 7 as an unknown type, whatever it is allowed', () => {
    const out = new Uint8Array(64);
    for (const kind of Object.values(KINDS)) {
      const n = writeAddressedPacket(out, 3, kind, 5n, kind === K.Payload ? Uint8Array.of(1) : new Uint8Array(kind === K.Disconnect ? 0 : 8), PROTOCOL, KEY, nobleCrypto);
      expect(packetOf(out.slice(0, n), PROTOCOL, KEY, 0xffff, new ReplayProtection(), nobleCrypto)).toEqual({ drop: 'type' });
    }
  });
});
