// Netcode client and server on the N-peer world: the handshake, lanes and raw payloads both ways,
// keep-alives, timeouts on both sides, every client failure state reached on purpose, clean
// disconnects both ways, reconnecting with a new token, many clients, and the security rules
// (no amplification, replay, token reuse, wrong protocol id, junk).
import { describe, expect, it } from 'vitest';
import type { LaneConfig } from '../connection/options.js';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { Client, type ClientEvent, type ClientState } from './client.js';
import { Server, type ServerEvent } from './server.js';
import { nobleCrypto } from '../crypto/noble.js';
import {
  generateConnectToken, NetcodePacketType, readConnectToken, writePacket, writeRequestPacket,
} from './wire.js';
import { okValue, packetOf } from '../../test/harness/decoders.js';

/** The sequence of an encrypted packet (types 1..6): its 1..8 little-endian bytes after the prefix. */
function packetSequence(b: Uint8Array): bigint {
  let seq = 0n;
  for (let i = (b[0]! >> 4) - 1; i >= 0; i--) seq = (seq << 8n) | BigInt(b[1 + i]!);
  return seq;
}

const PROTOCOL = 0x1122334455667788n;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);
const SERVER = '10.0.0.1:40000';
const T0 = 1_800_000_000; // unix seconds at world time 0
const unixTime = (now: number): number => T0 + now / 1000;
const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'notify' }, { mode: 'block', maxMessageBytes: 1 << 20 }];

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

interface TokenOptions {
  clientId?: bigint;
  servers?: string[];
  expireSeconds?: number;
  timeoutSeconds?: number;
  protocolId?: bigint;
  now?: number;
  seed?: number;
}

function token(o: TokenOptions = {}): Uint8Array {
  return generateConnectToken({
    protocolId: o.protocolId ?? PROTOCOL,
    privateKey: KEY,
    clientId: o.clientId ?? 1n,
    serverAddresses: o.servers ?? [SERVER],
    nowUnixSeconds: Math.floor(unixTime(o.now ?? 0)),
    expireSeconds: o.expireSeconds ?? 30,
    timeoutSeconds: o.timeoutSeconds ?? 5,
    userData: new Uint8Array(256).fill(0xab),
    random: seeded(o.seed ?? Number(o.clientId ?? 1n)),
  });
}

interface Rig {
  world: World;
  server: Server;
  serverEvents: ServerEvent[];
  pump: () => void;
  client: (addr: string) => { client: Client; events: ClientEvent[] };
}

function rig(seed: number, link = {}, serverOpts: Partial<ConstructorParameters<typeof Server>[0]> = {}, raw = false): Rig {
  const world = new World({ seed, link });
  const server = new Server({
    protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, random: seeded(seed),
    ...(raw ? { raw: true } : { lanes: LANES }), ...serverOpts,
  });
  world.add(SERVER, server);
  const serverEvents: ServerEvent[] = [];
  const clients: { client: Client; events: ClientEvent[] }[] = [];
  const pump = (): void => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) serverEvents.push(e);
    for (const c of clients) for (let e = c.client.pollEvent(); e !== undefined; e = c.client.pollEvent()) c.events.push(e);
  };
  return {
    world, server, serverEvents, pump,
    client: (addr) => {
      const client = new Client(raw ? { raw: true } : { lanes: LANES });
      world.add(addr, client);
      const c = { client, events: [] as ClientEvent[] };
      clients.push(c);
      return c;
    },
  };
}

const states = (events: ClientEvent[]): ClientState[] => events.flatMap((e) => (e.type === 'state' ? [e.state] : []));

describe('netcode: connect, carry lanes, disconnect', () => {
  it('connects through every state, carries messages, a notify outcome and a block both ways, then closes cleanly', () => {
    const r = rig(1, { latencyMs: 20, loss: 0.05, jitterMs: 5 });
    const { client, events } = r.client('10.0.0.2:5000');
    client.connect(0, token());
    r.world.runUntil(() => (r.pump(), client.state === 'connected' && r.server.size === 1), { maxTimeMs: 3000 });
    expect(states(events)).toEqual(['sending-request', 'sending-response', 'connected']);
    const sc = r.server.clients()[0]!;
    expect(sc.clientId).toBe(1n);
    expect(sc.userData).toEqual(new Uint8Array(256).fill(0xab));
    expect(client.slot).toEqual({ clientIndex: sc.clientIndex, maxClients: 256 });
    const block = new NonCryptoRng(9).fill(new Uint8Array(300_000));
    for (let i = 0; i < 50; i++) client.send(0, Uint8Array.of(i));
    const notifyId = client.send(1, Uint8Array.of(7));
    client.send(2, block);
    sc.send(0, new TextEncoder().encode('welcome'));
    r.world.runUntil(() => {
      r.pump();
      const got = r.serverEvents.filter((e) => e.type === 'message');
      return got.length === 52 && events.some((e) => e.type === 'message') && events.some((e) => e.type === 'delivery');
    }, { maxTimeMs: 20_000 });
    const got = r.serverEvents.flatMap((e) => (e.type === 'message' ? [e] : []));
    expect(got.filter((e) => e.lane === 0).map((e) => e.bytes[0])).toEqual([...Array(50).keys()]);
    expect(got.find((e) => e.lane === 2)!.bytes).toEqual(block);
    expect(events.find((e) => e.type === 'delivery')).toMatchObject({ lane: 1, id: notifyId });
    expect(events.find((e) => e.type === 'message')).toMatchObject({ lane: 0, bytes: new TextEncoder().encode('welcome') });
    client.close();
    r.world.runFor(500);
    r.pump();
    expect(r.serverEvents.at(-1)).toMatchObject({ type: 'disconnected', reason: 'peer' });
    expect(events.at(-1)).toEqual({ type: 'disconnected', reason: 'local' });
    expect(r.server.size).toBe(0);
  });

  it('keep-alives hold an idle connection for a minute; the server closing is seen by the client', () => {
    const r = rig(2, { latencyMs: 10 });
    const { client, events } = r.client('10.0.0.2:5000');
    client.connect(0, token({ timeoutSeconds: 2 }));
    r.world.runFor(60_000);
    r.pump();
    expect(client.state).toBe('connected');
    r.server.clients()[0]!.close();
    r.world.runFor(200);
    r.pump();
    expect(events.at(-1)).toEqual({ type: 'disconnected', reason: 'peer' });
    expect(r.serverEvents.at(-1)).toMatchObject({ type: 'disconnected', reason: 'local' });
  });

  it('both sides time out when the link dies', () => {
    const r = rig(3, { latencyMs: 10 });
    const { client, events } = r.client('10.0.0.2:5000');
    client.connect(0, token({ timeoutSeconds: 3 }));
    r.world.runFor(500);
    r.world.link('10.0.0.2:5000', SERVER).reconfigure(r.world.now, { loss: 1 });
    r.world.link(SERVER, '10.0.0.2:5000').reconfigure(r.world.now, { loss: 1 });
    r.world.runFor(4000);
    r.pump();
    expect(states(events).at(-1)).toBe('connection-timed-out');
    expect(events.at(-1)).toEqual({ type: 'disconnected', reason: 'connection-timed-out' });
    expect(r.serverEvents.at(-1)).toMatchObject({ type: 'disconnected', reason: 'timeout' });
  });

  it('a token makes one connection: after a disconnect the same token is refused, a new one connects', () => {
    const r = rig(18, { latencyMs: 10 });
    const { client } = r.client('10.0.0.2:5000');
    const t = token({ timeoutSeconds: 1 });
    client.connect(0, t);
    r.world.runFor(300);
    expect(client.state).toBe('connected');
    client.close();
    r.world.runFor(300);
    client.connect(r.world.now, t);
    r.world.runFor(2000);
    expect(client.state).toBe('request-timed-out');
    expect(r.server.counters().requestsTokenReused).toBeGreaterThan(0);
  });

  it('reconnects with a new token after a disconnect', () => {
    const r = rig(4, { latencyMs: 10 });
    const { client, events } = r.client('10.0.0.2:5000');
    client.connect(0, token());
    r.world.runFor(300);
    client.close();
    r.world.runFor(300);
    client.connect(r.world.now, token({ now: r.world.now, seed: 99 }));
    r.world.runFor(300);
    r.pump();
    expect(client.state).toBe('connected');
    expect(events.filter((e) => e.type === 'connected')).toHaveLength(2);
    expect(r.server.size).toBe(1);
  });

  it('64 clients on one server, each echoed', () => {
    const r = rig(5, { latencyMs: 15, loss: 0.02 });
    const cs = Array.from({ length: 64 }, (_, i) => r.client(`10.0.1.${i + 1}:6000`));
    cs.forEach((c, i) => c.client.connect(0, token({ clientId: BigInt(i + 1) })));
    r.world.runUntil(() => (r.pump(), cs.every((c) => c.client.state === 'connected')), { maxTimeMs: 5000 });
    expect(r.server.size).toBe(64);
    cs.forEach((c, i) => c.client.send(0, Uint8Array.of(i)));
    r.world.runUntil(() => {
      r.pump();
      for (const e of r.serverEvents.splice(0)) if (e.type === 'message') e.client.send(0, e.bytes);
      return cs.every((c) => c.events.some((e) => e.type === 'message'));
    }, { maxTimeMs: 5000 });
    cs.forEach((c, i) => expect(c.events.find((e) => e.type === 'message')).toMatchObject({ bytes: Uint8Array.of(i) }));
    expect(new Set(r.server.clients().map((c) => c.clientIndex)).size).toBe(64);
  });
});

describe('netcode: every client failure state', () => {
  it('invalid-token: garbage (the waker is called, so a driver delivers the events without a kick)', () => {
    const c = new Client();
    let woken = 0;
    c.setWaker(() => woken++);
    c.connect(0, new Uint8Array(2048));
    expect(woken).toBe(1);
    expect(c.state).toBe('invalid-token');
    expect(c.pollEvent()).toEqual({ type: 'state', state: 'invalid-token' });
    expect(c.pollEvent()).toEqual({ type: 'disconnected', reason: 'invalid-token' });
  });

  it('request-timed-out: nobody at the address; and the next address in the token is tried first', () => {
    const r = rig(6, { latencyMs: 10 });
    const { client, events } = r.client('10.0.0.2:5000');
    client.connect(0, token({ servers: ['10.9.9.9:1', '10.9.9.8:1'], timeoutSeconds: 1 }));
    r.world.runFor(5000);
    r.pump();
    expect(states(events)).toEqual(['sending-request', 'request-timed-out']);
    expect(client.serverAddress).toBe('10.9.9.8:1');
  });

  it('a dead first address, then the live second one', () => {
    const r = rig(7, { latencyMs: 10 });
    const { client } = r.client('10.0.0.2:5000');
    client.connect(0, token({ servers: ['10.9.9.9:1', SERVER], timeoutSeconds: 1 }));
    r.world.runFor(2000);
    expect(client.state).toBe('connected');
  });

  it('response-timed-out: responses never reach the server', () => {
    const r = rig(8, { latencyMs: 10 });
    const { client, events } = r.client('10.0.0.2:5000');
    r.world.onDeliver = (_from, to, bytes) => (to === SERVER && (bytes[0]! & 0x0f) === NetcodePacketType.Response ? null : undefined);
    client.connect(0, token({ timeoutSeconds: 1 }));
    r.world.runFor(3000);
    r.pump();
    expect(states(events)).toEqual(['sending-request', 'sending-response', 'response-timed-out']);
  });

  it('denied: the server is full', () => {
    const r = rig(9, { latencyMs: 10 }, { maxClients: 1 });
    const a = r.client('10.0.0.2:5000');
    const b = r.client('10.0.0.3:5000');
    a.client.connect(0, token({ clientId: 1n }));
    r.world.runFor(500);
    b.client.connect(r.world.now, token({ clientId: 2n, now: r.world.now }));
    r.world.runFor(500);
    r.pump();
    expect(a.client.state).toBe('connected');
    expect(b.events.at(-1)).toEqual({ type: 'disconnected', reason: 'denied' });
    expect(r.server.counters().deniedSent).toBeGreaterThan(0);
  });

  it('token-expired: the token runs out before the server answers', () => {
    const r = rig(10, { latencyMs: 10 });
    const { client, events } = r.client('10.0.0.2:5000');
    r.world.onDeliver = (_from, to) => (to === SERVER ? null : undefined);
    client.connect(0, token({ expireSeconds: 2, timeoutSeconds: 10 }));
    r.world.runFor(3000);
    r.pump();
    expect(events.at(-1)).toEqual({ type: 'disconnected', reason: 'token-expired' });
  });

  it('a request with another version info is dropped, as one of the wrong size', () => {
    const r = rig(17, { latencyMs: 10 });
    const req = new Uint8Array(1078);
    writeRequestPacket(req, okValue(readConnectToken(token()))!);
    const v101 = req.slice();
    v101[12] = 0x31; // "NETCODE 1.01"
    r.world.inject('10.0.0.9:1', SERVER, v101);
    r.world.inject('10.0.0.9:1', SERVER, req.subarray(0, 1077));
    expect(r.server.counters().requestsDropped).toBe(2);
    r.world.inject('10.0.0.9:1', SERVER, req);
    expect(r.server.counters().challengesSent).toBe(1);
  });

  it('connection-timed-out is reached (see "both sides time out"); a wrong protocol id is never answered', () => {
    const r = rig(11, { latencyMs: 10 });
    const { client } = r.client('10.0.0.2:5000');
    client.connect(0, token({ protocolId: 0x99n, timeoutSeconds: 1 }));
    r.world.runFor(2000);
    expect(client.state).toBe('request-timed-out');
    expect(r.server.counters().requestsDropped).toBeGreaterThan(0);
    expect(r.world.peerStats(SERVER).datagramsSent).toBe(0);
  });
});

describe('netcode: security rules', () => {
  it('every answer to an unauthenticated packet is smaller than the packet that caused it', () => {
    const r = rig(12, { latencyMs: 10 }, { maxClients: 1 });
    const sizes: { from: string; type: number; size: number }[] = [];
    r.world.onTransmit = (from, _to, bytes) => void sizes.push({ from, type: bytes[0]! & 0x0f, size: bytes.length });
    r.client('10.0.0.2:5000').client.connect(0, token({ clientId: 1n }));
    r.world.runFor(500);
    r.client('10.0.0.3:5000').client.connect(r.world.now, token({ clientId: 2n, now: r.world.now }));
    r.world.runFor(500);
    const request = sizes.find((s) => s.from !== SERVER && s.type === NetcodePacketType.Request)!.size;
    const challenge = sizes.find((s) => s.from === SERVER && s.type === NetcodePacketType.Challenge)!.size;
    const denied = sizes.find((s) => s.from === SERVER && s.type === NetcodePacketType.Denied)!.size;
    expect(request).toBe(1078);
    expect(challenge / request).toBeLessThan(0.35);
    expect(denied / request).toBeLessThan(0.03);
  });

  it('a replayed payload is dropped; a token used from a second address is refused', () => {
    const r = rig(13, { latencyMs: 10 });
    const a = r.client('10.0.0.2:5000');
    let request: Uint8Array | undefined;
    let payload: Uint8Array | undefined;
    r.world.onTransmit = (from, _to, bytes) => {
      if (from !== '10.0.0.2:5000') return;
      if ((bytes[0]! & 0x0f) === NetcodePacketType.Request) request ??= bytes.slice();
      if ((bytes[0]! & 0x0f) === NetcodePacketType.Payload && payload === undefined && a.client.state === 'connected') payload = bytes.slice();
    };
    a.client.connect(0, token());
    r.world.runFor(300);
    a.client.send(0, Uint8Array.of(42));
    r.world.runFor(300);
    r.pump();
    const before = r.serverEvents.filter((e) => e.type === 'message').length;
    expect(before).toBe(1);
    r.world.inject('10.0.0.2:5000', SERVER, payload!);
    r.world.runFor(100);
    r.pump();
    expect(r.serverEvents.filter((e) => e.type === 'message').length).toBe(before);
    r.world.inject('10.6.6.6:1', SERVER, request!);
    expect(r.server.counters().requestsAlreadyConnected).toBe(1);
    // A token not yet connected, first seen from one address, is refused from any other.
    const req = new Uint8Array(1078);
    writeRequestPacket(req, okValue(readConnectToken(token({ clientId: 77n, seed: 77 })))!);
    r.world.inject('10.6.6.7:1', SERVER, req);
    const challenges = r.server.counters().challengesSent;
    r.world.inject('10.6.6.8:1', SERVER, req);
    r.world.inject('10.6.6.7:1', SERVER, req);
    expect(r.server.counters().requestsTokenReused).toBe(1);
    expect(r.server.counters().challengesSent).toBe(challenges + 1);
  });

  it('every single-bit change of a valid payload is dropped', () => {
    const r = rig(14, { latencyMs: 10 });
    const a = r.client('10.0.0.2:5000');
    let payload: Uint8Array | undefined;
    r.world.onTransmit = (from, _to, bytes) => {
      if (from === '10.0.0.2:5000' && (bytes[0]! & 0x0f) === NetcodePacketType.Payload && a.client.state === 'connected') payload ??= bytes.slice();
    };
    a.client.connect(0, token());
    r.world.runFor(300);
    a.client.send(0, Uint8Array.of(1));
    r.world.onDeliver = (_f, to, bytes) => (to === SERVER && (bytes[0]! & 0x0f) === NetcodePacketType.Payload ? null : undefined);
    r.world.runFor(50);
    r.world.onDeliver = undefined;
    for (let bit = 0; bit < payload!.length * 8; bit++) {
      const m = payload!.slice();
      m[bit >> 3]! ^= 1 << (bit & 7);
      r.world.inject('10.0.0.2:5000', SERVER, m);
    }
    r.pump();
    expect(r.serverEvents.filter((e) => e.type === 'message')).toHaveLength(0);
    expect(r.server.clients()[0]!.isClosed).toBe(false);
  });

  it('10^5 junk datagrams and 10^4 forged requests leave the tables bounded and the connected client unaffected', () => {
    const r = rig(15, { latencyMs: 10 }, { maxClients: 4 });
    const a = r.client('10.0.0.2:5000');
    a.client.connect(0, token());
    r.world.runFor(300);
    const rng = new NonCryptoRng(15);
    for (let i = 0; i < 100_000; i++) {
      const b = rng.fill(new Uint8Array(1 + rng.nextInt(1300)));
      r.world.inject(`10.7.${i & 255}.${(i >> 8) & 255}:${1 + (i % 60000)}`, SERVER, b);
    }
    for (let i = 0; i < 10_000; i++) {
      const req = new Uint8Array(1078);
      writeRequestPacket(req, okValue(readConnectToken(token({ clientId: BigInt(1000 + i), seed: i })))!);
      r.world.inject(`10.8.${i & 255}.${(i >> 8) & 255}:7000`, SERVER, req);
    }
    const sizes = r.server.tableSizes();
    expect(sizes.mappings).toBeLessThanOrEqual(4 * 4);
    expect(sizes.history).toBeLessThanOrEqual(4 * 8);
    a.client.send(0, Uint8Array.of(5));
    r.world.runFor(500);
    r.pump();
    expect(a.client.state).toBe('connected');
    expect(r.serverEvents.filter((e) => e.type === 'message')).toHaveLength(1);
  });
});

describe('netcode: raw mode', () => {
  it('payloads of i mod 256 both ways, untouched by any lane layer', () => {
    const r = rig(16, { latencyMs: 10 }, {}, true);
    const { client, events } = r.client('10.0.0.2:5000');
    client.connect(0, token());
    r.world.runFor(300);
    const p = Uint8Array.from({ length: 1200 }, (_, i) => i % 256);
    for (let i = 0; i < 10; i++) client.sendRaw(p);
    r.world.runFor(200);
    r.pump();
    const got = r.serverEvents.flatMap((e) => (e.type === 'payload' ? [e] : []));
    expect(got).toHaveLength(10);
    for (const e of got) expect(e.bytes).toEqual(p);
    got[0]!.client.sendRaw(Uint8Array.of(1, 2, 3));
    r.world.runFor(200);
    r.pump();
    expect(events.find((e) => e.type === 'payload')).toEqual({ type: 'payload', bytes: Uint8Array.of(1, 2, 3) });
    expect(() => client.send(0, p)).toThrow();
  });
});

describe('netcode: sending to a client that has just closed (issue 19, item 1)', () => {
  it('a message and a DISCONNECT in one batch: the message comes first, and an echo from its handler is a counted drop', () => {
    const r = rig(20, { latencyMs: 10 });
    const { client } = r.client('10.0.0.2:5000');
    client.connect(0, token());
    r.world.runFor(300);
    r.pump();
    expect(client.state).toBe('connected');
    client.send(0, Uint8Array.of(1, 2, 3));
    r.world.drain(); // the payload leaves before the DISCONNECTs; both arrive at the server at the same instant
    client.close();
    r.world.runFor(100);
    const seen: string[] = [];
    const echoed: number[] = [];
    for (let e = r.server.pollEvent(); e !== undefined; e = r.server.pollEvent()) {
      seen.push(e.type);
      if (e.type === 'message') echoed.push(e.client.send(e.lane, e.bytes));
    }
    expect(seen.slice(-2)).toEqual(['message', 'disconnected']);
    expect(echoed).toEqual([-1]);
    expect(r.server.counters().sendsAfterClose).toBe(1);
  });

  it('raw mode: an echo of the payload that came with a DISCONNECT returns false and is counted', () => {
    const r = rig(21, { latencyMs: 10 }, {}, true);
    const { client } = r.client('10.0.0.2:5000');
    client.connect(0, token());
    r.world.runFor(300);
    client.sendRaw(Uint8Array.of(9));
    r.world.drain();
    client.close();
    r.world.runFor(100);
    const seen: string[] = [];
    const echoed: boolean[] = [];
    for (let e = r.server.pollEvent(); e !== undefined; e = r.server.pollEvent()) {
      seen.push(e.type);
      if (e.type === 'payload') echoed.push(e.client.sendRaw(e.bytes));
    }
    expect(seen.slice(-2)).toEqual(['payload', 'disconnected']);
    expect(echoed).toEqual([false]);
    expect(r.server.counters().sendsAfterClose).toBe(1);
  });

  it('client side: the server\'s last message before its DISCONNECT can be answered without a throw; misuse before connecting still throws', () => {
    const r = rig(22, { latencyMs: 10 });
    const { client } = r.client('10.0.0.2:5000');
    expect(() => client.send(0, Uint8Array.of(1))).toThrow(/invalid-state/);
    client.connect(0, token());
    expect(() => client.send(0, Uint8Array.of(1))).toThrow(/invalid-state/);
    r.world.runFor(300);
    r.pump();
    const sc = r.server.clients()[0]!;
    sc.send(0, Uint8Array.of(7));
    r.world.drain();
    sc.close();
    r.world.runFor(100);
    const seen: string[] = [];
    const echoed: number[] = [];
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) {
      seen.push(e.type);
      if (e.type === 'message') echoed.push(client.send(e.lane, e.bytes));
    }
    expect(seen.slice(-3)).toEqual(['message', 'state', 'disconnected']);
    expect(echoed).toEqual([-1]);
    expect(client.counters().sendsAfterClose).toBe(1);
    expect(sc.send(0, Uint8Array.of(1))).toBe(-1);
    expect(sc.cancel(2, 1)).toBe(false);
    expect(client.cancel(2, 1)).toBe(false);
    expect(r.server.counters().sendsAfterClose).toBe(1);
  });

  it('raw client: sendRaw after the connection ended returns false and is counted', () => {
    const r = rig(23, { latencyMs: 10 }, {}, true);
    const { client } = r.client('10.0.0.2:5000');
    expect(() => client.sendRaw(Uint8Array.of(1))).toThrow(/invalid-state/);
    client.connect(0, token());
    r.world.runFor(300);
    client.close();
    expect(client.sendRaw(Uint8Array.of(1))).toBe(false);
    expect(client.counters().sendsAfterClose).toBe(1);
  });
});

describe('netcode: the replay window, in raw mode where no lane hides a duplicate', () => {
  it('a replayed raw payload is delivered once, either way, and counted as replayed', () => {
    const r = rig(24, { latencyMs: 10 }, {}, true);
    const { client, events } = r.client('10.0.0.2:5000');
    const captured = new Map<string, Uint8Array>();
    r.world.onTransmit = (from, _to, bytes) => {
      if ((bytes[0]! & 0x0f) === NetcodePacketType.Payload && !captured.has(from)) captured.set(from, bytes.slice());
    };
    client.connect(0, token());
    r.world.runFor(300);
    client.sendRaw(Uint8Array.of(1, 2, 3));
    r.world.runFor(100);
    r.pump();
    r.serverEvents.find((e) => e.type === 'payload')!.client.sendRaw(Uint8Array.of(4, 5));
    r.world.runFor(100);
    r.pump();
    const payloads = (): number => r.serverEvents.filter((e) => e.type === 'payload').length;
    expect(payloads()).toBe(1);
    expect(events.filter((e) => e.type === 'payload')).toHaveLength(1);
    for (let i = 0; i < 3; i++) r.world.inject('10.0.0.2:5000', SERVER, captured.get('10.0.0.2:5000')!);
    for (let i = 0; i < 3; i++) r.world.inject(SERVER, '10.0.0.2:5000', captured.get(SERVER)!);
    r.pump();
    expect(payloads()).toBe(1);
    expect(events.filter((e) => e.type === 'payload')).toHaveLength(1);
    expect(r.server.counters().replayed).toBe(3);
    expect(client.counters().replayed).toBe(3);
  });
});

describe('netcode: one key, one nonce (issue 19, item 2)', () => {
  const SECOND = '10.0.0.3:40000';

  it('failing over to the second server of a token keeps the client\'s sequence: no sequence is sealed twice under the token\'s key', () => {
    const world = new World({ seed: 25, link: { latencyMs: 10 } });
    for (const [address, seed] of [[SERVER, 1], [SECOND, 2]] as const) {
      world.add(address, new Server({
        protocolId: PROTOCOL, privateKey: KEY, addresses: [address], unixTime, random: seeded(seed), lanes: LANES,
      }));
    }
    const client = new Client({ lanes: LANES });
    world.add('10.0.0.2:5000', client);
    const sealed: bigint[] = [];
    world.onTransmit = (from, _to, bytes) => {
      if (from === '10.0.0.2:5000' && (bytes[0]! & 0x0f) !== NetcodePacketType.Request) sealed.push(packetSequence(bytes));
    };
    // The first server challenges, but never hears the responses: the client moves on to the second.
    world.onDeliver = (_from, to, bytes) => (to === SERVER && (bytes[0]! & 0x0f) === NetcodePacketType.Response ? null : undefined);
    client.connect(0, token({ servers: [SERVER, SECOND], timeoutSeconds: 1 }));
    world.runUntil(() => client.state === 'connected', { maxTimeMs: 5000 });
    expect(client.serverAddress).toBe(SECOND);
    for (let i = 0; i < 5; i++) client.send(0, Uint8Array.of(i));
    world.runFor(1000);
    expect(sealed.length).toBeGreaterThan(20);
    expect(new Set(sealed).size).toBe(sealed.length);
  });

  it('two servers of one token challenge under its server-to-client key without repeating a sequence', () => {
    const world = new World({ seed: 27, link: { latencyMs: 10 } });
    for (const [address, seed] of [[SERVER, 1], [SECOND, 2]] as const) {
      world.add(address, new Server({
        protocolId: PROTOCOL, privateKey: KEY, addresses: [address], unixTime, random: seeded(seed), lanes: LANES,
      }));
    }
    const client = new Client({ lanes: LANES });
    world.add('10.0.0.2:5000', client);
    const sealed: bigint[] = [];
    const challenges: string[] = [];
    world.onTransmit = (from, to, bytes) => {
      if (to !== '10.0.0.2:5000') return;
      sealed.push(packetSequence(bytes));
      if ((bytes[0]! & 0x0f) === NetcodePacketType.Challenge) challenges.push(from);
    };
    world.onDeliver = (_from, to, bytes) => (to === SERVER && (bytes[0]! & 0x0f) === NetcodePacketType.Response ? null : undefined);
    client.connect(0, token({ servers: [SERVER, SECOND], timeoutSeconds: 1 }));
    world.runUntil(() => client.state === 'connected', { maxTimeMs: 5000 });
    world.runFor(500);
    expect(challenges).toEqual([SERVER, SECOND]);
    expect(new Set(sealed).size).toBe(sealed.length);
  });

  it('connecting again with the same token continues the sequence; a new token starts at 0', () => {
    const r = rig(26, { latencyMs: 10 });
    const { client } = r.client('10.0.0.2:5000');
    const sealed: bigint[] = [];
    r.world.onTransmit = (from, _to, bytes) => {
      if (from === '10.0.0.2:5000' && (bytes[0]! & 0x0f) !== NetcodePacketType.Request) sealed.push(packetSequence(bytes));
    };
    r.world.onDeliver = (_from, to, bytes) => (to === SERVER && (bytes[0]! & 0x0f) === NetcodePacketType.Response ? null : undefined);
    const t = token({ timeoutSeconds: 1 });
    client.connect(0, t);
    r.world.runFor(2000);
    expect(client.state).toBe('response-timed-out');
    r.world.onDeliver = undefined;
    client.connect(r.world.now, t);
    r.world.runFor(500);
    expect(client.state).toBe('connected');
    expect(sealed.length).toBeGreaterThan(10);
    expect(new Set(sealed).size).toBe(sealed.length);
    client.close();
    r.world.runFor(100);
    sealed.length = 0;
    client.connect(r.world.now, token({ now: r.world.now, seed: 5 }));
    r.world.runFor(500);
    expect(client.state).toBe('connected');
    expect(sealed[0]).toBe(0n);
  });
});

describe('netcode: a challenge token is bound to the connect token that earned it (issue 19, item 8)', () => {
  it('a challenge kept from token A, answered under token B\'s mapping, does not connect as A', () => {
    const r = rig(28, { latencyMs: 10 });
    const X = '10.0.0.66:7000';
    const a = okValue(readConnectToken(token({ clientId: 1n, seed: 101 })))!;
    const userDataB = new Uint8Array(256).fill(0xbb);
    const b = okValue(readConnectToken(generateConnectToken({
      protocolId: PROTOCOL, privateKey: KEY, clientId: 2n, serverAddresses: [SERVER], nowUnixSeconds: Math.floor(unixTime(0)),
      expireSeconds: 30, timeoutSeconds: 5, userData: userDataB, random: seeded(102),
    })))!;
    const challenges: Uint8Array[] = [];
    r.world.onTransmit = (_from, to, bytes) => {
      if (to === X && (bytes[0]! & 0x0f) === NetcodePacketType.Challenge) challenges.push(bytes.slice());
    };
    const request = (t: typeof a): void => {
      const req = new Uint8Array(1078);
      writeRequestPacket(req, t);
      r.world.inject(X, SERVER, req);
    };
    const challengeBody = (packet: Uint8Array, t: typeof a): Uint8Array => {
      const p = packetOf(packet, PROTOCOL, t.serverToClientKey, 1 << NetcodePacketType.Challenge, undefined, nobleCrypto);
      if ('drop' in p) throw new Error(`challenge did not open: ${p.drop}`);
      return p.body.slice();
    };
    const respond = (body: Uint8Array, t: typeof a, seq: bigint): void => {
      const out = new Uint8Array(400);
      const n = writePacket(out, NetcodePacketType.Response, seq, body, PROTOCOL, t.clientToServerKey, nobleCrypto);
      r.world.inject(X, SERVER, out.subarray(0, n));
    };
    request(a);
    const keptFromA = challengeBody(challenges[0]!, a);
    request(b); // same address: the mapping now holds B's keys
    const fromB = challengeBody(challenges[1]!, b);
    const dropped = r.server.counters().responsesDropped;
    respond(keptFromA, b, 0n);
    expect(r.server.client(1n)).toBeUndefined();
    expect(r.server.size).toBe(0);
    expect(r.server.counters().responsesDropped).toBe(dropped + 1);
    respond(fromB, b, 1n); // the challenge B earned still connects B
    expect(r.server.client(2n)?.userData).toEqual(userDataB);
  });
});

describe('netcode: the token history replaces its oldest entry when full (issue 19, item 9)', () => {
  it('maxClients 1: eight requested-but-unused tokens do not lock a new player out until they expire', () => {
    const r = rig(29, { latencyMs: 10 }, { maxClients: 1 });
    for (let i = 0; i < 8; i++) {
      const req = new Uint8Array(1078);
      writeRequestPacket(req, okValue(readConnectToken(token({ clientId: BigInt(100 + i), seed: 100 + i, timeoutSeconds: 1, expireSeconds: 60 })))!);
      r.world.inject(`10.0.9.${i + 1}:7000`, SERVER, req);
    }
    expect(r.server.tableSizes().history).toBe(8);
    r.world.runFor(2000); // their mappings have expired (1 s); the tokens have not (60 s)
    const { client } = r.client('10.0.0.2:5000');
    client.connect(r.world.now, token({ clientId: 1n, now: r.world.now }));
    r.world.runFor(1000);
    expect(client.state).toBe('connected');
    expect(r.server.tableSizes().history).toBe(8);
  });

  it('the history stays bounded by 8 x maxClients under a stream of fresh tokens, and a replaced token counts as new', () => {
    const r = rig(30, { latencyMs: 10 }, { maxClients: 2 });
    const reqs: Uint8Array[] = [];
    for (let i = 0; i < 40; i++) {
      const req = new Uint8Array(1078);
      writeRequestPacket(req, okValue(readConnectToken(token({ clientId: BigInt(200 + i), seed: 200 + i, expireSeconds: 60 })))!);
      reqs.push(req);
      r.world.inject('10.0.8.1:7000', SERVER, req);
      expect(r.server.tableSizes().history).toBeLessThanOrEqual(16);
    }
    const reused = r.server.counters().requestsTokenReused;
    r.world.inject('10.0.8.2:7000', SERVER, reqs[39]!); // still remembered: refused from another address
    expect(r.server.counters().requestsTokenReused).toBe(reused + 1);
    r.world.inject('10.0.8.2:7000', SERVER, reqs[0]!); // replaced long ago: seen as new
    expect(r.server.counters().requestsTokenReused).toBe(reused + 1);
  });
});

describe('netcode: the server\'s clients live in its host (issue 20, item 2)', () => {
  it('found by id, listed in connect order; a client that ends frees its id and index at once, its slot once its DISCONNECTs are out', () => {
    const r = rig(21, { latencyMs: 10 });
    const cs = [1n, 2n, 3n].map((id, i) => {
      const c = r.client(`10.0.2.${i + 1}:7000`);
      c.client.connect(r.world.now, token({ clientId: id, now: r.world.now }));
      r.world.runUntil(() => c.client.state === 'connected', { maxTimeMs: 2000 });
      return c;
    });
    r.pump();
    expect(r.server.clients().map((c) => c.clientId)).toEqual([1n, 2n, 3n]);
    const two = r.server.client(2n)!;
    expect([two.clientId, two.address, r.server.size]).toEqual([2n, '10.0.2.2:7000', 3]);
    const heard = r.world.peerStats('10.0.2.2:7000').datagramsReceived;
    two.close();
    expect([r.server.client(2n), r.server.size, r.server.clients().map((c) => c.clientId)]).toEqual([undefined, 2, [1n, 3n]]);
    expect(r.server.counters().host.peersFreed).toBe(0);
    r.world.runFor(50);
    r.pump();
    expect(r.world.peerStats('10.0.2.2:7000').datagramsReceived - heard).toBe(10);
    expect(cs[1]!.client.state).toBe('disconnected');
    expect(r.server.counters().host.peersFreed).toBe(1);
    // The same client id, with a new token, takes the index the first one freed.
    cs[1]!.client.connect(r.world.now, token({ clientId: 2n, now: r.world.now, seed: 77 }));
    r.world.runUntil(() => cs[1]!.client.state === 'connected', { maxTimeMs: 2000 });
    expect(r.server.client(2n)!.clientIndex).toBe(two.clientIndex);
    expect(r.server.clients().map((c) => c.clientId)).toEqual([1n, 3n, 2n]);
  });
});
