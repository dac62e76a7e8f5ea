// The wire counts of a netcode connection (ConnectionStats datagramsSent/bytesSent/datagramsReceived/
// bytesReceived, on the Client and on its ServerClient) against what the simulator's drivers saw.
import { describe, expect, it } from 'vitest';
import type { LaneConfig } from '../connection/options.js';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { Client, type ClientEvent } from './client.js';
import { Server, type ServerClient, type ServerEvent } from './server.js';
import { generateConnectToken, NetcodePacketType as T } from './wire.js';

const PROTOCOL = 0x1122334455667788n;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 5 + 3);
const SERVER = '10.0.0.1:40000';
const CLIENT = '10.0.0.2:5000';
const T0 = 1_800_000_000;
const unixTime = (now: number): number => T0 + now / 1000;
const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'notify' }, { mode: 'block', maxMessageBytes: 1 << 20 }];

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

function token(clientId: bigint, now: number): Uint8Array {
  return generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId, serverAddresses: [SERVER], nowUnixSeconds: Math.floor(unixTime(now)),
    expireSeconds: 30, timeoutSeconds: 5, userData: new Uint8Array(256), random: seeded(Number(clientId)),
  });
}

interface Seen {
  datagrams: number;
  bytes: number;
  /** Per datagram: its netcode packet type and length. */
  packets: { type: number; length: number }[];
}

function rig(seed: number) {
  const world = new World({ seed, link: { latencyMs: 20 } });
  const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, random: seeded(seed), lanes: LANES });
  const client = new Client({ lanes: LANES });
  world.add(SERVER, server);
  world.add(CLIENT, client);
  const delivered: Record<string, Seen> = {};
  const reset = (): void => {
    delivered[SERVER] = { datagrams: 0, bytes: 0, packets: [] };
    delivered[CLIENT] = { datagrams: 0, bytes: 0, packets: [] };
  };
  reset();
  world.onDeliver = (_from, to, bytes) => {
    const s = delivered[to]!;
    s.datagrams++;
    s.bytes += bytes.length;
    s.packets.push({ type: bytes[0]! & 0x0f, length: bytes.length });
  };
  const serverEvents: ServerEvent[] = [];
  const clientEvents: ClientEvent[] = [];
  const pump = (): void => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      serverEvents.push(e);
      if (e.type === 'message' && e.lane === 0) e.client.send(0, e.bytes);
    }
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) clientEvents.push(e);
  };
  const quiet = (): boolean => {
    const a = world.link(CLIENT, SERVER).counters();
    const b = world.link(SERVER, CLIENT).counters();
    return a.sent === a.delivered && b.sent === b.delivered;
  };
  return { world, server, client, delivered, reset, serverEvents, clientEvents, pump, quiet };
}

/** Sum of the lengths of `s`'s packets whose type is in `types`, and their count. */
function handshake(s: Seen, types: number[]): { datagrams: number; bytes: number } {
  const hs = s.packets.filter((p) => types.includes(p.type));
  return { datagrams: hs.length, bytes: hs.reduce((a, p) => a + p.length, 0) };
}

describe('wire counts: netcode Client and ServerClient', () => {
  it('equal, exactly, the sealed packets the other side\'s driver saw (payloads, blocks, keep-alives, handshake, DISCONNECT)', () => {
    const r = rig(21);
    r.client.connect(0, token(1n, 0));
    r.world.runUntil(() => (r.pump(), r.client.state === 'connected' && r.server.size === 1), { maxTimeMs: 3000 });
    const sc: ServerClient = r.server.clients()[0]!;
    for (let i = 0; i < 30; i++) r.client.send(0, new Uint8Array(50 + 40 * i).fill(i));
    const block = r.client.send(2, new Uint8Array(30_000).fill(9), true);
    r.world.runUntil(() => {
      r.pump();
      return r.clientEvents.some((e) => e.type === 'delivery' && e.id === block)
        && r.clientEvents.filter((e) => e.type === 'message').length === 30 && r.quiet();
    }, { maxTimeMs: 10_000 });
    r.world.runFor(350); // keep-alives both ways
    r.world.runUntil(() => r.quiet(), { maxTimeMs: 100 });
    expect(r.quiet()).toBe(true);

    const c = r.client.stats()!;
    const s = sc.stats()!;
    const atServer = r.delivered[SERVER]!;
    const atClient = r.delivered[CLIENT]!;
    expect(atServer.packets.filter((p) => p.type === T.KeepAlive).length).toBeGreaterThan(0);
    expect(atServer.packets.filter((p) => p.type === T.Payload).length).toBeGreaterThan(30);
    // The client made every packet the server's driver received, requests and response included, and
    // accepted every one the server's driver sent, the challenge included.
    expect([c.datagramsSent, c.bytesSent]).toEqual([atServer.datagrams, atServer.bytes]);
    expect([c.datagramsReceived, c.bytesReceived]).toEqual([atClient.datagrams, atClient.bytes]);
    // The ServerClient was made by the response: the request(s), the response and the challenge were the server's.
    const before = handshake(atServer, [T.Request, T.Response]);
    const challenge = handshake(atClient, [T.Challenge]);
    expect(before.datagrams).toBeGreaterThanOrEqual(2);
    expect(challenge.datagrams).toBeGreaterThanOrEqual(1);
    expect([s.datagramsReceived, s.bytesReceived]).toEqual([atServer.datagrams - before.datagrams, atServer.bytes - before.bytes]);
    expect([s.datagramsSent, s.bytesSent]).toEqual([atClient.datagrams - challenge.datagrams, atClient.bytes - challenge.bytes]);

    // Close: ten DISCONNECTs from the client; the ServerClient accepts the first and ends.
    r.client.close();
    r.world.runUntil(() => (r.pump(), r.quiet() && sc.isClosed), { maxTimeMs: 1000 });
    r.world.runFor(200);
    const c2 = r.client.stats()!;
    const s2 = sc.stats()!;
    const disconnects = r.delivered[SERVER]!.packets.filter((p) => p.type === T.Disconnect);
    expect(disconnects.length).toBe(10);
    expect(c2.datagramsSent - c.datagramsSent).toBe(10);
    expect(c2.bytesSent - c.bytesSent).toBe(disconnects.reduce((a, p) => a + p.length, 0));
    expect(s2.datagramsReceived - s.datagramsReceived).toBe(1);
    expect(s2.bytesReceived - s.bytesReceived).toBe(disconnects[0]!.length);
  });

  it('count only packets that authenticate and pass the replay window; a new connect starts from zero', () => {
    const r = rig(22);
    const captured: Uint8Array[] = [];
    r.world.onTransmit = (from, _to, bytes) => {
      if (from === CLIENT && (bytes[0]! & 0x0f) === T.Payload) captured.push(bytes.slice());
    };
    r.client.connect(0, token(1n, 0));
    r.world.runUntil(() => (r.pump(), r.client.state === 'connected' && r.server.size === 1), { maxTimeMs: 3000 });
    const sc = r.server.clients()[0]!;
    r.client.send(0, new Uint8Array(100));
    r.world.runUntil(() => (r.pump(), r.serverEvents.some((e) => e.type === 'message') && r.quiet()), { maxTimeMs: 2000 });
    const before = sc.stats()!;
    const atServer = r.world.peerStats(SERVER).bytesReceived;
    const hs = handshake(r.delivered[SERVER]!, [T.Request, T.Response]);
    expect(before.bytesReceived).toBe(atServer - hs.bytes);
    const replayed = captured[0]!;
    // A sequence never used passes the replay window; the tag then fails (the nonce is the sequence).
    const forged = replayed.slice();
    forged[1] = 0xff;
    r.world.inject(CLIENT, SERVER, replayed);
    r.world.inject(CLIENT, SERVER, forged);
    r.world.runFor(1);
    const after = sc.stats()!;
    expect(r.world.peerStats(SERVER).bytesReceived - atServer).toBe(2 * replayed.length);
    expect([after.datagramsReceived, after.bytesReceived]).toEqual([before.datagramsReceived, before.bytesReceived]);
    expect(r.server.counters()).toMatchObject({ replayed: 1, packetsDropped: 1 });

    r.client.close();
    r.world.runUntil(() => (r.pump(), r.quiet() && sc.isClosed), { maxTimeMs: 1000 });
    r.world.runFor(200);
    r.reset();
    r.client.connect(r.world.now, token(2n, r.world.now));
    r.world.runUntil(() => (r.pump(), r.client.state === 'connected' && r.quiet()), { maxTimeMs: 3000 });
    const c = r.client.stats()!;
    expect([c.datagramsSent, c.bytesSent]).toEqual([r.delivered[SERVER]!.datagrams, r.delivered[SERVER]!.bytes]);
    expect([c.datagramsReceived, c.bytesReceived]).toEqual([r.delivered[CLIENT]!.datagrams, r.delivered[CLIENT]!.bytes]);
  });
});
