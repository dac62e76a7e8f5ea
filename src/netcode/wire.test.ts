// netcode 1.02 codecs against the reference C implementation's vectors (test/vectors), both ways,
// plus property tests: round trips, single-bit changes, the replay window, request checks.
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nodeCrypto } from '../adapters/node/node-crypto.js';
import { nobleCrypto } from '../crypto/noble.js';
import { nullCryptoForBenchmarks } from '../crypto/null.js';
import { sodiumCrypto } from '../crypto/sodium.js';
import {
  addressToKey, CONNECT_TOKEN_BYTES, decryptChallengeToken, decryptPrivateToken, encryptChallengeToken, encryptPrivateToken,
  generateConnectToken, NetcodePacketType as T, parseAddress, readConnectToken, readPrivateToken, readRequestPacket,
  ReplayProtection, sequenceBytes, writeConnectToken, writePacket, writePrivateToken, writeRequestPacket,
} from './wire.js';
import { okValue, packetOf, requestOf } from '../../test/harness/decoders.js';

interface Vectors {
  protocolId: string;
  privateKey: string;
  packetKey: string;
  connectToken: {
    bytes: string; clientId: string; timeoutSeconds: number; createTimestamp: number; expireTimestamp: number;
    serverAddresses: string[]; nonce: string; clientToServerKey: string; serverToClientKey: string; userData: string; privatePlaintext: string;
  };
  challengeToken: { clientId: string; sequence: number; key: string; userData: string; plaintext: string; encrypted: string };
  packets: { packet: string; sequence: string; bytes: string }[];
}

const V = JSON.parse(readFileSync(new URL('../../test/vectors/netcode-1.02.json', import.meta.url), 'utf8')) as Vectors;
const unhex = (h: string): Uint8Array => Uint8Array.from(h.match(/../g)?.map((x) => Number.parseInt(x, 16)) ?? []);
const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
const PROTOCOL = BigInt(`0x${V.protocolId}`);
const PACKET_KEY = unhex(V.packetKey);
const CT = V.connectToken;
const sodium = await sodiumCrypto();

describe('netcode vectors (reference C implementation), both ways', () => {
  for (const crypto of [nobleCrypto, nodeCrypto, sodium]) {
    it(`connect token: ours reads, decrypts and writes the same bytes (${crypto.name})`, () => {
      const bytes = unhex(CT.bytes);
      expect(bytes.length).toBe(CONNECT_TOKEN_BYTES);
      const pub = okValue(readConnectToken(bytes))!;
      expect(pub).toBeDefined();
      expect(pub.protocolId).toBe(PROTOCOL);
      expect(pub.createTimestamp).toBe(BigInt(CT.createTimestamp));
      expect(pub.expireTimestamp).toBe(BigInt(CT.expireTimestamp));
      expect(pub.timeoutSeconds).toBe(CT.timeoutSeconds);
      expect(pub.serverAddresses.map(addressToKey)).toEqual(CT.serverAddresses);
      expect(hex(pub.nonce)).toBe(CT.nonce);
      expect(hex(pub.clientToServerKey)).toBe(CT.clientToServerKey);
      expect(hex(pub.serverToClientKey)).toBe(CT.serverToClientKey);
      const priv = okValue(decryptPrivateToken(pub.privateData, PROTOCOL, pub.expireTimestamp, pub.nonce, unhex(V.privateKey), crypto))!;
      expect(priv).toBeDefined();
      expect(priv.clientId).toBe(BigInt(`0x${CT.clientId}`));
      expect(priv.timeoutSeconds).toBe(CT.timeoutSeconds);
      expect(priv.serverAddresses.map(addressToKey)).toEqual(CT.serverAddresses);
      expect(hex(priv.userData)).toBe(CT.userData);
      expect(hex(writePrivateToken(priv))).toBe(CT.privatePlaintext.slice(0, 2 * 1008));
      expect(okValue(readPrivateToken(unhex(CT.privatePlaintext).subarray(0, 1008)))).toEqual(priv);
      const again = encryptPrivateToken(priv, PROTOCOL, pub.expireTimestamp, pub.nonce, unhex(V.privateKey), crypto);
      expect(hex(again)).toBe(hex(pub.privateData));
      expect(hex(writeConnectToken(pub))).toBe(CT.bytes);
    });

    it(`challenge token both ways (${crypto.name})`, () => {
      const c = V.challengeToken;
      const enc = encryptChallengeToken(BigInt(`0x${c.clientId}`), unhex(c.userData), BigInt(c.sequence), unhex(c.key), crypto);
      expect(hex(enc)).toBe(c.encrypted);
      const dec = okValue(decryptChallengeToken(unhex(c.encrypted), BigInt(c.sequence), unhex(c.key), crypto))!;
      expect(dec.clientId).toBe(BigInt(`0x${c.clientId}`));
      expect(hex(dec.userData)).toBe(c.userData);
    });

    it(`every packet vector both ways (${crypto.name})`, () => {
      for (const p of V.packets) {
        const bytes = unhex(p.bytes);
        const seq = BigInt(p.sequence);
        if (p.packet.startsWith('request')) {
          const out = new Uint8Array(1078);
          expect(writeRequestPacket(out, okValue(readConnectToken(unhex(CT.bytes)))!)).toBe(1078);
          expect(hex(out)).toBe(p.bytes);
          const r = requestOf(readRequestPacket(bytes, PROTOCOL, CT.createTimestamp, unhex(V.privateKey), crypto));
          expect('drop' in r).toBe(false);
          continue;
        }
        const r = packetOf(bytes, PROTOCOL, PACKET_KEY, 0x7e, new ReplayProtection(), crypto);
        if ('drop' in r) throw new Error(`${p.packet} seq ${p.sequence}: ${r.drop}`);
        expect(r.sequence, p.packet).toBe(seq);
        expect(sequenceBytes(seq)).toBe(bytes[0]! >> 4);
        const out = new Uint8Array(1300);
        const n = writePacket(out, r.type, seq, r.body, PROTOCOL, PACKET_KEY, crypto);
        expect(hex(out.subarray(0, n)), `${p.packet} seq ${p.sequence}`).toBe(p.bytes);
        if (p.packet.startsWith('payload')) {
          const len = r.body.length;
          expect(Array.from(r.body)).toEqual(Array.from({ length: len }, (_, i) => (i * 31 + len) % 256));
        }
        if (p.packet.startsWith('keep-alive')) expect(hex(r.body)).toBe('0300000020000000');
        if (p.packet.startsWith('challenge') || p.packet.startsWith('response')) {
          expect(hex(r.body)).toBe(`4d00000000000000${V.challengeToken.encrypted}`);
        }
      }
    });
  }
});

describe('docs/netcode.md vectors', () => {
  it('each encodes to its hex and decodes back', () => {
    const doc = readFileSync(new URL('../../docs/netcode.md', import.meta.url), 'utf8');
    const m = /<!-- netcode-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- netcode-vectors:end -->/.exec(doc);
    const vs = JSON.parse(m![1]!) as { packet: string; sequence: string; body: string; hex: string }[];
    expect(vs.length).toBe(4);
    const types: Record<string, number> = { 'keep-alive': T.KeepAlive, payload: T.Payload, disconnect: T.Disconnect };
    for (const v of vs) {
      const out = new Uint8Array(64);
      const n = writePacket(out, types[v.packet]!, BigInt(v.sequence), unhex(v.body), PROTOCOL, PACKET_KEY, nobleCrypto);
      expect(hex(out.subarray(0, n))).toBe(v.hex);
      const r = packetOf(unhex(v.hex), PROTOCOL, PACKET_KEY, 0x7e, undefined, nobleCrypto);
      expect('drop' in r ? r.drop : hex(r.body)).toBe(v.body);
    }
  });
});

describe('netcode codecs: properties', () => {
  const key = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);

  it('packets round-trip at any sequence and payload, and every single-bit change is rejected', () => {
    fc.assert(fc.property(
      fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.uint8Array({ minLength: 1, maxLength: 1200 }), fc.nat(),
      (seq, body, pick) => {
        const out = new Uint8Array(1300);
        const n = writePacket(out, T.Payload, seq, body, PROTOCOL, key, nobleCrypto);
        const pkt = out.slice(0, n);
        const r = packetOf(pkt, PROTOCOL, key, 1 << T.Payload, undefined, nobleCrypto);
        expect('drop' in r ? r.drop : [r.sequence, Array.from(r.body)]).toEqual([seq, Array.from(body)]);
        const bit = pick % (n * 8);
        const bad = pkt.slice();
        bad[bit >> 3]! ^= 1 << (bit & 7);
        expect('drop' in packetOf(bad, PROTOCOL, key, 0x7e, undefined, nobleCrypto)).toBe(true);
      }));
  });

  it('a packet for another protocol id, key or type set is dropped', () => {
    const out = new Uint8Array(64);
    const n = writePacket(out, T.KeepAlive, 9n, new Uint8Array(8), PROTOCOL, key, nobleCrypto);
    const pkt = out.slice(0, n);
    expect(packetOf(pkt, PROTOCOL + 1n, key, 0x7e, undefined, nobleCrypto)).toEqual({ drop: 'decrypt' });
    expect(packetOf(pkt, PROTOCOL, new Uint8Array(32), 0x7e, undefined, nobleCrypto)).toEqual({ drop: 'decrypt' });
    expect(packetOf(pkt, PROTOCOL, key, 1 << T.Payload, undefined, nobleCrypto)).toEqual({ drop: 'type' });
    expect(packetOf(pkt.subarray(0, 17), PROTOCOL, key, 0x7e, undefined, nobleCrypto)).toEqual({ drop: 'size' });
    const wrongLen = new Uint8Array(64);
    const m = writePacket(wrongLen, T.KeepAlive, 9n, new Uint8Array(9), PROTOCOL, key, nobleCrypto);
    expect(packetOf(wrongLen.subarray(0, m), PROTOCOL, key, 0x7e, undefined, nobleCrypto)).toEqual({ drop: 'body-size' });
  });

  it('replay window: duplicates and sequences 256 behind the newest are refused; new ones pass', () => {
    const r = new ReplayProtection();
    expect(r.alreadyReceived(0n)).toBe(false);
    r.advance(0n);
    expect(r.alreadyReceived(0n)).toBe(true);
    r.advance(1000n);
    expect(r.alreadyReceived(744n)).toBe(true); // 744 + 256 <= 1000
    expect(r.alreadyReceived(745n)).toBe(false);
    r.advance(745n);
    expect(r.alreadyReceived(745n)).toBe(true);
    expect(r.alreadyReceived(999n)).toBe(false);
    expect(r.alreadyReceived(1000n)).toBe(true);
    expect(r.alreadyReceived(1001n)).toBe(false);
    r.reset();
    expect(r.alreadyReceived(0n)).toBe(false);
  });

  it('replay window decides exactly as the reference C code (256 slots holding the last sequence each)', () => {
    const EMPTY = (1n << 64n) - 1n;
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 1n << 40n }), fc.array(fc.oneof(
      { arbitrary: fc.integer({ min: -8, max: 12 }), weight: 30 }, { arbitrary: fc.integer({ min: -300, max: 600 }), weight: 1 }), { minLength: 200, maxLength: 800 }), (start, steps) => {
      const slots = new Array<bigint>(256).fill(EMPTY);
      let mostRecent = 0n;
      const ours = new ReplayProtection();
      let seq = start;
      for (const d of steps) {
        seq = seq + BigInt(d) < 0n ? 0n : seq + BigInt(d);
        const cRefuses = seq + 256n <= mostRecent || (slots[Number(seq % 256n)] !== EMPTY && slots[Number(seq % 256n)]! >= seq);
        expect(ours.alreadyReceived(seq)).toBe(cRefuses);
        if (!cRefuses) {
          if (seq > mostRecent) mostRecent = seq;
          slots[Number(seq % 256n)] = seq;
          ours.advance(seq);
        }
      }
    }), { numRuns: 100 });
  });

  it('connect tokens round-trip; the client refuses bad ones', () => {
    fc.assert(fc.property(
      fc.bigInt({ min: 0n, max: (1n << 64n) - 1n }), fc.integer({ min: -1, max: 3600 }), fc.integer({ min: 1, max: 32 }),
      (clientId, timeout, count) => {
        const servers = Array.from({ length: count }, (_, i) => (i % 2 === 0 ? `10.0.0.${i}:${1000 + i}` : `[2001:db8::${i.toString(16)}]:${i}`));
        const t = generateConnectToken({
          protocolId: PROTOCOL, privateKey: key, clientId, serverAddresses: servers, nowUnixSeconds: 1000, expireSeconds: 30, timeoutSeconds: timeout,
        });
        const pub = okValue(readConnectToken(t))!;
        expect(pub.serverAddresses.map(addressToKey)).toEqual(servers);
        expect(pub.timeoutSeconds).toBe(timeout);
        const req = new Uint8Array(1078);
        writeRequestPacket(req, pub);
        const r = requestOf(readRequestPacket(req, PROTOCOL, 1000, key, nobleCrypto));
        if ('drop' in r) throw new Error(r.drop);
        expect(r.token.clientId).toBe(clientId);
        expect(r.token.clientToServerKey).toEqual(pub.clientToServerKey);
        expect(requestOf(readRequestPacket(req, PROTOCOL, 1030, key, nobleCrypto))).toEqual({ drop: 'expired' });
        expect(requestOf(readRequestPacket(req, PROTOCOL + 1n, 1000, key, nobleCrypto))).toEqual({ drop: 'protocol' });
        expect(requestOf(readRequestPacket(req, PROTOCOL, 1000, new Uint8Array(32), nobleCrypto))).toEqual({ drop: 'token' });
        expect(requestOf(readRequestPacket(req.subarray(0, 1077), PROTOCOL, 1000, key, nobleCrypto))).toEqual({ drop: 'size' });
      }), { numRuns: 50 });
    expect(okValue(readConnectToken(new Uint8Array(2048)))).toBeUndefined();
    expect(okValue(readConnectToken(new Uint8Array(2047)))).toBeUndefined();
    const t = generateConnectToken({ protocolId: PROTOCOL, privateKey: key, clientId: 1n, serverAddresses: ['1.2.3.4:5'], nowUnixSeconds: 10, expireSeconds: 5 });
    const noServers = t.slice();
    noServers[61 + 1024 + 4] = 0;
    expect(okValue(readConnectToken(noServers))).toBeUndefined();
    const badType = t.slice();
    badType[61 + 1024 + 8] = 3;
    expect(okValue(readConnectToken(badType))).toBeUndefined();
  });

  it('addresses parse to the driver\'s keys; junk does not parse', () => {
    expect(addressToKey(okValue(parseAddress('127.0.0.1:40000'))!)).toBe('127.0.0.1:40000');
    expect(addressToKey(okValue(parseAddress('[::1]:40001'))!)).toBe('[::1]:40001');
    expect(addressToKey(okValue(parseAddress('[2001:DB8:0:0:0:0:0:5]:9'))!)).toBe('[2001:db8::5]:9');
    for (const bad of ['localhost:1', '1.2.3:4', '1.2.3.256:4', '[::1::2]:3', '1.2.3.4:70000', '1.2.3.4']) expect(okValue(parseAddress(bad)), bad).toBeUndefined();
  });

  it('the null cipher needs its acknowledgement, and node and noble agree byte for byte', () => {
    expect(() => nullCryptoForBenchmarks('yes')).toThrow();
    const nul = nullCryptoForBenchmarks('I understand this disables encryption');
    expect(nul.name).toBe('null-INSECURE');
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), fc.uint8Array({ minLength: 12, maxLength: 12 }), fc.uint8Array({ maxLength: 40 }), (p, nonce, ad) => {
      const a = new Uint8Array(p.length + 16);
      const b = new Uint8Array(p.length + 16);
      nobleCrypto.seal(key, nonce, ad, p, a, 0);
      nodeCrypto.seal(key, nonce, ad, p, b, 0);
      expect(hex(a)).toBe(hex(b));
      const back = new Uint8Array(p.length);
      expect(nodeCrypto.open(key, nonce, ad, a, back, 0)).toBe(p.length);
      expect(back).toEqual(p);
      a[0]! ^= 1;
      expect(nodeCrypto.open(key, nonce, ad, a, back, 0)).toBe(-1);
      expect(nobleCrypto.open(key, nonce, ad, a, back, 0)).toBe(-1);
    }));
  });
});
