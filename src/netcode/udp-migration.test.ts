// A native client whose address changes (a NAT rebinding on the simulator's World) goes on at the
// new address: addressed packets after a silence, the server's PATH_CHALLENGE to the new address, the
// client's PATH_RESPONSE, then the move. And what a stranger, a replay or a client that does not
// receive at the address it claims can and cannot make the server do. Seeded, virtual clock.
import { describe, expect, it } from 'vitest';
import type { LaneConfig } from '../connection/options.js';
import { NonCryptoRng } from '../core/rng.js';
import { nobleCrypto } from '../crypto/noble.js';
import { World } from '../sim/world.js';
import { Client, type ClientEvent, type ClientOptions } from './client.js';
import { type NetcodeTransport, WEBRTC_TRANSPORT, WEBSOCKET_TRANSPORT } from './options.js';
import { Server, type ServerEvent } from './server.js';
import {
  ADDRESSED_TYPE, AddressedKind as K, generateConnectToken, newNetcodePacket, readAddressedPacket, readConnectToken, writeAddressedPacket,
} from './wire.js';
import { okValue } from '../../test/harness/decoders.js';

const PROTOCOL = 0x4e41545245424e44n;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 11 + 3);
const SERVER = '10.0.0.1:40000';
const HOME = '192.0.2.10:5000';
const AWAY = '198.51.100.20:6000';
const VICTIM = '203.0.113.66:7000';
const unixTime = (now: number): number => 1_800_000_000 + now / 1000;
const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }];
const isAddressed = (b: Uint8Array): boolean => (b[0]! & 0x0f) === ADDRESSED_TYPE;

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

interface Sent { from: string; to: string; bytes: Uint8Array; at: number }

function rig(seed: number, link = {}, clientOptions: ClientOptions = {}, maxClients = 16, migration = true) {
  const world = new World({ seed, link });
  const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, random: seeded(seed), lanes: LANES, maxClients, migration });
  world.add(SERVER, server);
  const sent: Sent[] = [];
  world.onTransmit = (from, to, bytes, at) => void sent.push({ from, to, bytes: bytes.slice(), at });
  const serverEvents: ServerEvent[] = [];
  const clients: { client: Client; events: ClientEvent[]; token: Uint8Array }[] = [];
  const pump = (): void => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) serverEvents.push(e);
    for (const c of clients) for (let e = c.client.pollEvent(); e !== undefined; e = c.client.pollEvent()) c.events.push(e);
  };
  const add = (address: string, clientId: bigint, transport?: NetcodeTransport) => {
    const client = new Client({ lanes: LANES, ...clientOptions }, transport);
    world.add(address, client);
    const token = generateConnectToken({
      protocolId: PROTOCOL, privateKey: KEY, clientId, serverAddresses: [SERVER], nowUnixSeconds: Math.floor(unixTime(world.now)),
      expireSeconds: 60, timeoutSeconds: 5, random: seeded(seed * 100 + Number(clientId)),
    });
    client.connect(world.now, token);
    const c = { client, events: [] as ClientEvent[], token };
    clients.push(c);
    world.runUntil(() => (pump(), client.state === 'connected' && server.client(clientId) !== undefined), { maxTimeMs: 3000 });
    expect(client.state).toBe('connected');
    return { ...c, sc: server.client(clientId)!, keys: okValue(readConnectToken(token))! };
  };
  const bytesBetween = (from: string, to: string): number => sent.filter((s) => s.from === from && s.to === to).reduce((n, s) => n + s.bytes.length, 0);
  return { world, server, sent, serverEvents, pump, add, bytesBetween };
}

/** Messages 0..n−1 as 2-byte big-endian numbers, and the numbers of those received. */
const numbered = (i: number): Uint8Array => Uint8Array.of(i >> 8, i & 0xff);
const numbers = (bytes: Uint8Array[]): number[] => bytes.map((b) => (b[0]! << 8) | b[1]!);

describe('netcode: a native client survives a change of its address', () => {
  it('reliable messages in flight both ways arrive once and in order across a NAT rebinding; same slot, one migrated, then the server sends only to the new address', () => {
    const r = rig(11, { latencyMs: 15, jitterMs: 3, loss: 0.02 });
    const { client, events, sc } = r.add(HOME, 1n);
    const index = sc.clientIndex;
    const N = 300;
    const t0 = r.world.now;
    for (let i = 0; i < N; i++) {
      r.world.at(t0 + i * 10, () => {
        client.send(0, numbered(i));
        sc.send(0, numbered(i));
      });
    }
    r.world.at(t0 + 1500, () => r.world.rebind(HOME, AWAY));
    const fromClient = (): Uint8Array[] => r.serverEvents.flatMap((e) => (e.type === 'message' ? [e.bytes] : []));
    const fromServer = (): Uint8Array[] => events.flatMap((e) => (e.type === 'message' ? [e.bytes] : []));
    r.world.runUntil(() => (r.pump(), fromClient().length >= N && fromServer().length >= N), { maxTimeMs: 20_000 });
    r.world.runFor(500);
    r.pump();
    const all = [...Array(N).keys()];
    expect(numbers(fromClient())).toEqual(all);
    expect(numbers(fromServer())).toEqual(all);
    expect(r.serverEvents.filter((e) => e.type === 'migrated')).toEqual([{ type: 'migrated', client: sc, previous: HOME }]);
    expect(r.server.clients()).toEqual([sc]);
    expect(sc.address).toBe(AWAY);
    expect(sc.clientIndex).toBe(index);
    expect(client.slot.clientIndex).toBe(index);
    expect(client.state).toBe('connected');
    expect(events.some((e) => e.type === 'disconnected')).toBe(false);
    expect(r.server.counters().migrations).toBe(1);
    expect(r.server.counters().pathChallenges).toBeGreaterThanOrEqual(1);
    expect(r.server.tableSizes().candidates).toBe(0);
    // From the server's first datagram to the new address on, none goes to the old one.
    const toClient = r.sent.filter((s) => s.from === SERVER).map((s) => s.to);
    const first = toClient.indexOf(AWAY);
    expect(first).toBeGreaterThan(0);
    expect(toClient.slice(first).every((a) => a === AWAY)).toBe(true);
    // The client went back to netcode's own packets once it heard the server again.
    const last = r.sent.filter((s) => s.from === AWAY).slice(-20);
    expect(last.some((s) => isAddressed(s.bytes))).toBe(false);
    expect(client.counters().pathChallenges).toBeGreaterThanOrEqual(1);
  });

  it('a new port on the same IP keeps what the server learnt of the path; a new IP starts its RTT and rate over', () => {
    const r = rig(13, { latencyMs: 40 });
    const { client, sc } = r.add(HOME, 1n);
    const path = (): { rtt: { samples: number; srttMs: number }; controller: object } => (sc as unknown as { session: { path: never } }).session.path;
    const echo = (): void => {
      for (let t = 0; t < 1000; t += 20) r.world.at(r.world.now + t, () => void sc.send(0, numbered(t)));
      r.world.runFor(1500);
      r.pump();
    };
    echo();
    const learnt = path().controller;
    const samples = path().rtt.samples;
    expect(samples).toBeGreaterThan(20);
    const moveTo = (to: string): void => {
      const from = sc.address;
      r.world.rebind(from, to);
      for (let t = 0; t < 3000; t += 50) r.world.at(r.world.now + t, () => void client.send(0, numbered(t)));
      r.world.runUntil(() => (r.pump(), sc.address === to), { maxTimeMs: 5000 });
      expect(sc.address).toBe(to);
    };
    moveTo('192.0.2.10:5001');
    expect(path().controller).toBe(learnt);
    expect(path().rtt.samples).toBeGreaterThanOrEqual(samples);
    moveTo(AWAY);
    expect(path().controller).not.toBe(learnt);
    expect(path().rtt.samples).toBeLessThan(5);
    echo();
    expect(path().rtt.samples).toBeGreaterThan(20);
    expect(path().rtt.srttMs).toBeGreaterThan(70);
    expect(r.server.counters().migrations).toBe(2);
  });

  it('packets alternate addressed / netcode after a silence of migrateAfterMs, so a netcode 1.02 server still gets half; addressed packets from the current address are taken as ordinary ones', () => {
    const r = rig(12, { latencyMs: 10 }, { migrateAfterMs: 400 });
    const { client, sc } = r.add(HOME, 1n);
    // The server's packets stop reaching the client (its address stays): the client falls silent-side.
    const silentFrom = r.world.now;
    r.world.onDeliver = (from, _to, _b, now) => (from === SERVER && now < silentFrom + 1500 ? null : undefined);
    let n = 0;
    for (let t = 0; t < 1500; t += 50) r.world.at(silentFrom + t, () => void client.send(0, numbered(n++)));
    r.world.runFor(2500);
    r.pump();
    const out = r.sent.filter((s) => s.from === HOME && s.at > silentFrom);
    const before = out.filter((s) => s.at < silentFrom + 400);
    expect(before.length).toBeGreaterThan(3);
    expect(before.some((s) => isAddressed(s.bytes))).toBe(false);
    const during = out.filter((s) => s.at >= silentFrom + 420 && s.at < silentFrom + 1500).map((s) => isAddressed(s.bytes));
    expect(during.length).toBeGreaterThan(6);
    for (let i = 1; i < during.length; i++) expect(during[i]).toBe(!during[i - 1]);
    const after = out.filter((s) => s.at > silentFrom + 1700);
    expect(after.length).toBeGreaterThan(3);
    expect(after.some((s) => isAddressed(s.bytes))).toBe(false);
    // From its own address an addressed packet is an ordinary one: no candidate, no challenge, no move.
    expect(r.server.counters().pathChallenges).toBe(0);
    expect(r.server.counters().migrations).toBe(0);
    expect(r.server.counters().packetsDropped).toBe(0);
    expect(sc.address).toBe(HOME);
    expect(numbers(r.serverEvents.flatMap((e) => (e.type === 'message' ? [e.bytes] : [])))).toEqual([...Array(n).keys()]);
  });

  it('migration: false never sends an addressed packet, and drops the server\'s (as a netcode 1.02 client does); the client is then lost at its new address', () => {
    const r = rig(13, { latencyMs: 10 }, { migration: false });
    const { client, sc, keys } = r.add(HOME, 1n);
    r.world.rebind(HOME, AWAY);
    for (let i = 0; i < 20; i++) r.world.at(r.world.now + i * 100, () => void client.send(0, numbered(i)));
    r.world.runFor(3000);
    expect(r.sent.filter((s) => s.from !== SERVER).length).toBeGreaterThan(20);
    expect(r.sent.some((s) => s.from !== SERVER && isAddressed(s.bytes))).toBe(false);
    expect(r.server.counters().unknownAddress).toBeGreaterThan(20);
    expect(sc.address).toBe(HOME);
    // A path challenge sealed by the server is dropped, not answered.
    const out = new Uint8Array(64);
    const n = writeAddressedPacket(out, sc.clientIndex, K.PathChallenge, 1n << 40n, new Uint8Array(8), PROTOCOL, keys.serverToClientKey, nobleCrypto);
    const dropped = client.counters().dropped;
    r.world.inject(SERVER, AWAY, out.slice(0, n));
    expect(client.counters().dropped).toBe(dropped + 1);
    expect(client.counters().pathChallenges).toBe(0);
    r.world.runFor(3000);
    r.pump();
    expect(client.state).toBe('connection-timed-out');
  });

  it('a server with migration: false moves nobody: the addressed packets from the new address are refused and counted, nothing is sent there, claims are refused', () => {
    const r = rig(14, { latencyMs: 10 }, {}, 16, false);
    const { client, sc } = r.add(HOME, 1n);
    r.world.rebind(HOME, AWAY);
    for (let i = 0; i < 20; i++) r.world.at(r.world.now + i * 100, () => void client.send(0, numbered(i)));
    r.world.runFor(3000);
    expect(r.sent.some((s) => s.from === AWAY && isAddressed(s.bytes))).toBe(true);
    expect(r.server.counters().migrationsRefused).toBeGreaterThan(5);
    expect(r.server.counters().pathChallenges).toBe(0);
    expect(r.bytesBetween(SERVER, AWAY)).toBe(0);
    expect(sc.address).toBe(HOME);
    expect(r.server.claimAddress('ws:1', sc.clientIndex)).toBe(false);
    r.world.runFor(3000);
    r.pump();
    expect(client.state).toBe('connection-timed-out');
    expect(() => new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, migration: 'no' as unknown as boolean })).toThrow(/migration must be a boolean/);
  });

  it('a client over a browser transport does not migrate by default (its transport resumes it); migrateAfterMs is checked', () => {
    for (const [seed, transport] of [[14, WEBRTC_TRANSPORT], [15, WEBSOCKET_TRANSPORT]] as const) {
      const r = rig(seed, { latencyMs: 10 });
      const { client } = r.add(HOME, 1n, transport);
      const silentFrom = r.world.now;
      r.world.onDeliver = (from) => (from === SERVER ? null : undefined);
      for (let i = 0; i < 30; i++) r.world.at(silentFrom + i * 100, () => void client.send(0, numbered(i)));
      r.world.runFor(3000);
      const out = r.sent.filter((s) => s.from === HOME && s.at > silentFrom + 1200);
      expect(out.length).toBeGreaterThan(10);
      expect(out.some((s) => isAddressed(s.bytes))).toBe(false);
    }
    expect(() => new Client({ migrateAfterMs: 0 })).toThrow(/migrateAfterMs/);
    expect(() => new Client({ migrateAfterMs: Number.NaN })).toThrow(/migrateAfterMs/);
    expect(() => new Client({ migration: 'yes' as unknown as boolean })).toThrow(/migration/);
    expect(() => new Client({ migrateAfterMs: 250, migration: true })).not.toThrow();
  });
});

describe('netcode: what moves a client, and what does not', () => {
  /** An addressed packet sealed with the client's key (what only the client, or a test holding its token, can make). */
  const sealAs = (keys: { clientToServerKey: Uint8Array }, index: number, kind: number, seq: bigint, body: Uint8Array, key = keys.clientToServerKey): Uint8Array => {
    const out = new Uint8Array(1300);
    return out.slice(0, writeAddressedPacket(out, index, kind, seq, body, PROTOCOL, key, nobleCrypto));
  };

  it('a forged packet (wrong key), a replayed one and a packet naming no client are refused and counted; nothing is sent to their address', () => {
    const r = rig(21, { latencyMs: 10 });
    const { client, sc, keys } = r.add(HOME, 1n);
    // A real addressed packet the client sends after a silence, already delivered from its address.
    r.world.onDeliver = (from) => (from === SERVER ? null : undefined);
    r.world.runUntil(() => r.sent.some((s) => s.from === HOME && isAddressed(s.bytes)), { maxTimeMs: 3000 });
    r.world.runFor(50);
    const real = r.sent.find((s) => s.from === HOME && isAddressed(s.bytes))!.bytes;
    expect(client.counters().addressedSent).toBeGreaterThan(0);
    const refused = r.server.counters().migrationsRefused;
    r.world.inject(VICTIM, SERVER, real); // replayed from another address
    r.world.inject(VICTIM, SERVER, sealAs(keys, sc.clientIndex, K.KeepAlive, 1n << 30n, new Uint8Array(8), new Uint8Array(32).fill(9)));
    r.world.inject(VICTIM, SERVER, sealAs(keys, sc.clientIndex + 1, K.KeepAlive, 1n << 30n, new Uint8Array(8)));
    const truncated = real.slice(0, 22);
    r.world.inject(VICTIM, SERVER, truncated);
    expect(r.server.counters().migrationsRefused).toBe(refused + 4);
    expect(r.server.tableSizes().candidates).toBe(0);
    expect(r.server.counters().pathChallenges).toBe(0);
    expect(r.bytesBetween(SERVER, VICTIM)).toBe(0);
    expect(sc.address).toBe(HOME);
  });

  it('a genuine packet raced from a spoofed address whose owner never answers: a challenge no larger than what came from there, no move; the client then moves to where it really is', () => {
    const r = rig(22, { latencyMs: 20 });
    const { sc } = r.add(HOME, 1n);
    r.world.rebind(HOME, AWAY);
    let stolen: Uint8Array | undefined;
    let spoofedBytes = 0;
    // An on-path attacker copies the client's first addressed packet and gets it to the server first, from the victim's address.
    r.world.onTransmit = (from, to, bytes, at) => {
      r.sent.push({ from, to, bytes: bytes.slice(), at });
      if (from === AWAY && stolen === undefined && isAddressed(bytes)) {
        stolen = bytes.slice();
        r.world.at(at, () => {
          spoofedBytes += stolen!.length;
          r.world.inject(VICTIM, SERVER, stolen!);
        });
      }
    };
    r.world.runUntil(() => (r.pump(), stolen !== undefined && r.server.counters().pathChallenges > 0), { maxTimeMs: 3000 });
    expect(r.server.tableSizes().candidates).toBe(1);
    expect(sc.candidateAddress).toBe(VICTIM);
    expect(r.bytesBetween(SERVER, VICTIM)).toBeGreaterThan(0);
    r.world.runUntil(() => (r.pump(), sc.address === AWAY), { maxTimeMs: 5000 });
    r.world.runFor(1000);
    r.pump();
    expect(sc.address).toBe(AWAY);
    expect(r.serverEvents.filter((e) => e.type === 'migrated')).toEqual([{ type: 'migrated', client: sc, previous: HOME }]);
    expect(r.bytesBetween(SERVER, VICTIM)).toBeLessThanOrEqual(spoofedBytes);
    expect(r.server.counters().migrationsRefused).toBeGreaterThanOrEqual(1); // the genuine copy, arriving second, is a replay
  });

  it('a client that holds its keys but does not receive at the address it claims cannot move there; challenges are rate-limited and never outweigh what the address sent', () => {
    const r = rig(23, { latencyMs: 10 });
    const { sc, keys } = r.add(HOME, 1n);
    let seq = 1n << 32n; // far beyond the real client's own sequence
    const challenges = (): Sent[] => r.sent.filter((s) => s.from === SERVER && s.to === VICTIM);
    let fromVictim = 0;
    // A disconnect from there (27 bytes) pays for no challenge (31 or more), and is not taken (the client stays); a second one does.
    for (let i = 0; i < 2; i++) {
      const d = sealAs(keys, sc.clientIndex, K.Disconnect, seq++, new Uint8Array(0));
      expect(d.length).toBe(27);
      fromVictim += d.length;
      r.world.inject(VICTIM, SERVER, d);
      expect(challenges()).toHaveLength(i);
    }
    expect(sc.isClosed).toBe(false);
    expect(sc.candidateAddress).toBe(VICTIM);
    // Five keep-alives claiming the victim's address at the same instant: no further challenge.
    for (let i = 0; i < 5; i++) {
      const b = sealAs(keys, sc.clientIndex, K.KeepAlive, seq++, new Uint8Array(8));
      fromVictim += b.length;
      r.world.inject(VICTIM, SERVER, b);
    }
    expect(challenges()).toHaveLength(1);
    expect(r.server.counters().pathChallenges).toBe(1);
    // A response with bytes the sender could only guess: no move.
    for (let i = 0; i < 3; i++) {
      const b = sealAs(keys, sc.clientIndex, K.PathResponse, seq++, Uint8Array.of(i, 1, 2, 3, 4, 5, 6, 7));
      fromVictim += b.length;
      r.world.inject(VICTIM, SERVER, b);
    }
    expect(sc.address).toBe(HOME);
    expect(r.server.counters().migrations).toBe(0);
    // Later, one more packet from there gets one more challenge (250 ms on), within what came from there.
    r.world.runFor(300);
    const b = sealAs(keys, sc.clientIndex, K.KeepAlive, seq++, new Uint8Array(8));
    fromVictim += b.length;
    r.world.inject(VICTIM, SERVER, b);
    expect(challenges()).toHaveLength(2);
    expect(r.bytesBetween(SERVER, VICTIM)).toBeLessThanOrEqual(fromVictim);
    // Whoever does receive the challenge (here: the test, reading it with the server's key) proves the address, and the client moves.
    const p = newNetcodePacket();
    expect(readAddressedPacket(challenges()[1]!.bytes, PROTOCOL, keys.serverToClientKey, 1 << K.PathChallenge, undefined, nobleCrypto, p)).toBe(8);
    r.world.inject(VICTIM, SERVER, sealAs(keys, sc.clientIndex, K.PathResponse, seq++, p.body.slice()));
    expect(sc.address).toBe(VICTIM);
    expect(r.server.counters().migrations).toBe(1);
  });

  it('candidates stay bounded: one per client, a newer address replacing the older, each with its own challenge', () => {
    const r = rig(24, { latencyMs: 10 }, {}, 2);
    const a = r.add(HOME, 1n);
    const b = r.add('192.0.2.11:5000', 2n);
    let seq = 1n << 32n;
    const challengeBodies = new Set<string>();
    for (let i = 0; i < 200; i++) {
      for (const c of [a, b]) {
        const from = `203.0.113.${i % 250}:${7000 + i}`;
        r.world.inject(from, SERVER, sealAs(c.keys, c.sc.clientIndex, K.KeepAlive, seq++, new Uint8Array(8)));
        expect(c.sc.candidateAddress).toBe(from);
      }
      expect(r.server.tableSizes().candidates).toBe(2);
    }
    for (const s of r.sent.filter((x) => x.from === SERVER && x.to.startsWith('203.'))) {
      const p = newNetcodePacket();
      const key = r.server.clients().find((c) => c.clientIndex === new DataView(s.bytes.buffer).getUint32(1, true))!;
      const keys = key === a.sc ? a.keys : b.keys;
      expect(readAddressedPacket(s.bytes, PROTOCOL, keys.serverToClientKey, 1 << K.PathChallenge, undefined, nobleCrypto, p)).toBe(8);
      challengeBodies.add(Array.from(p.body).join());
    }
    // Each new address got its own challenge bytes (where a challenge went at all: the first packet from an address may not pay for one).
    expect(challengeBodies.size).toBe(r.server.counters().pathChallenges);
    expect(r.server.counters().migrations).toBe(0);
    // A client that ends takes its candidate with it.
    a.sc.close();
    r.world.runFor(100);
    expect(r.server.tableSizes().candidates).toBe(1);
  });
});

