// A connected client moving to a new address (Server.claimAddress, as the browser gateway does for a
// WebSocket that resumes a client): only a fresh packet sealed with the client's key moves it; a
// replayed or forged one does not; a move onto a WebSocket gives both ends that transport's settings.
// Sans-IO on a virtual clock: the two endpoints pumped by hand.
import { describe, expect, it } from 'vitest';
import { netcodePair, PAIR_SERVER as SERVER, pairUnixTime as unixTime, pumpPair } from '../../test/harness/netcode.js';
import { type ClientEvent } from './client.js';
import { type NetcodeTransport, WEBSOCKET_TRANSPORT } from './options.js';
import { Server, type ServerEvent } from './server.js';

const PROTOCOL = 0x4d494752n;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 3 + 5);

/**
 * A client and a server pumped by hand every 5 ms of virtual time, `oneWayMs` apart. The client
 * sends from `at`; `toServer`/`toClient` false holds that direction's packets (in order) until `release`.
 */
function pair(options: { channels?: { redundancy?: number } } = {}, transports: [string, NetcodeTransport][] = [], oneWayMs = 0) {
  const { server, client } = netcodePair({ protocolId: PROTOCOL, key: KEY, clientId: 7n, timeoutSeconds: 5, server: options, client: options });
  for (const [prefix, t] of transports) server.registerTransport(prefix, t);
  const out = new Uint8Array(1500);
  type InFlight = { due: number; from: string; bytes: Uint8Array };
  const toServer: InFlight[] = [];
  const toClient: InFlight[] = [];
  const deliver = (now: number, q: InFlight[], open: boolean, to: (f: InFlight) => void): void => {
    while (open && q.length > 0 && q[0]!.due <= now) to(q.shift()!);
  };
  const r = {
    server, client, now: 0, at: '10.0.0.2:5000', toServer: true, toClient: true,
    sentByClient: [] as Uint8Array[], sentTo: [] as string[], serverEvents: [] as ServerEvent[], clientEvents: [] as ClientEvent[],
    step(ms: number): void {
      r.now = pumpPair(server, client, r.now, ms, (now) => {
        for (let t = client.pollTransmit(now, out); t !== undefined; t = client.pollTransmit(now, out)) {
          const b = out.slice(0, t.length);
          r.sentByClient.push(b);
          toServer.push({ due: now + oneWayMs, from: r.at, bytes: b });
        }
        deliver(now, toServer, r.toServer, (f) => server.handleDatagram(now, f.from, f.bytes));
        for (let t = server.pollTransmit(now, out); t !== undefined; t = server.pollTransmit(now, out)) {
          r.sentTo.push(t.to);
          toClient.push({ due: now + oneWayMs, from: SERVER, bytes: out.slice(0, t.length) });
        }
        deliver(now, toClient, r.toClient, (f) => client.handleDatagram(now, f.from, f.bytes));
      }, r.serverEvents, r.clientEvents);
    },
    /** Stop holding: what was held arrives in order, at the next step (when due). */
    release(): void {
      r.toServer = r.toClient = true;
    },
  };
  return r;
}

describe('Server: a client migrates only with a fresh packet sealed with its key', () => {
  it('a replayed packet and a forged one from the claimed address are refused; the next real one moves the client, and the server then sends there', () => {
    const r = pair();
    const { server, client, sentByClient, serverEvents, clientEvents } = r;
    const step = (ms: number): void => r.step(ms);
    const toClient = r.sentTo;
    step(200);
    expect(client.state).toBe('connected');
    const sc = server.clients()[0]!;
    expect(sc.address).toBe(r.at);
    const old = sentByClient.at(-1)!; // delivered already: a replay from now on

    const NEW = 'ws:9';
    expect(server.claimAddress(NEW, sc.clientIndex)).toBe(true);
    server.handleDatagram(r.now, NEW, old);
    const forged = old.slice();
    forged[forged.length - 1]! ^= 1;
    server.handleDatagram(r.now, NEW, forged);
    expect(server.counters().migrationsRefused).toBe(2);
    expect(sc.address).toBe('10.0.0.2:5000');

    // The client's next packets come from the new address (its old path is gone).
    r.at = NEW;
    client.send(0, Uint8Array.of(1, 2, 3));
    toClient.length = 0;
    step(200);
    expect(sc.address).toBe(NEW);
    expect(serverEvents.filter((e) => e.type === 'migrated')).toEqual([{ type: 'migrated', client: sc, previous: '10.0.0.2:5000' }]);
    expect(serverEvents.some((e) => e.type === 'message' && e.client === sc && e.bytes.join() === '1,2,3')).toBe(true);
    expect(server.counters().migrations).toBe(1);
    expect(toClient.length).toBeGreaterThan(0);
    expect(toClient.every((a) => a === NEW)).toBe(true);
    // The claim is spent: the old address is unknown now, and the same client cannot be claimed back by a replay.
    server.handleDatagram(r.now, '10.0.0.2:5000', sentByClient.at(-1)!);
    expect(sc.address).toBe(NEW);
    expect(clientEvents.some((e) => e.type === 'disconnected')).toBe(false);
  });

  it('claims are bounded by maxClients and released', () => {
    const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, maxClients: 2 });
    expect(server.claimAddress('ws:1', 0)).toBe(true);
    expect(server.claimAddress('ws:2', 1)).toBe(true);
    expect(server.claimAddress('ws:3', 0)).toBe(false);
    server.releaseClaim('ws:1');
    expect(server.claimAddress('ws:3', 0)).toBe(true);
    // A claim for a slot with no client refuses whatever comes.
    server.handleDatagram(0, 'ws:3', new Uint8Array(40).fill(0x14));
    expect(server.counters().migrationsRefused).toBe(1);
  });

});

describe('a connection moved onto a WebSocket', () => {
  it('a client that moves onto a WebSocket takes its settings at both ends: no redundancy, nothing resent while TCP holds packets back', () => {
    const r = pair({ channels: { redundancy: 2 } }, [['ws:', WEBSOCKET_TRANSPORT]], 50);
    const { server, client } = r;
    r.step(400);
    const sc = server.clients()[0]!;
    const lane0 = (s: { lanes: unknown[] } | undefined) => s!.lanes[0] as { redundant: number; resent: number; received: number };
    const both = () => ({ server: { ...lane0(sc.stats(r.now)) }, client: { ...lane0(client.stats(r.now)) } });
    const exchange = (from: number, n: number): void => {
      for (let i = from; i < from + n; i++) {
        client.send(0, Uint8Array.of(i));
        sc.send(0, Uint8Array.of(i));
        r.step(20);
      }
    };
    exchange(0, 20);
    const udp = both();
    expect(udp.server.redundant).toBeGreaterThan(0);
    expect(udp.client.redundant).toBeGreaterThan(0);

    expect(server.claimAddress('ws:1', sc.clientIndex)).toBe(true);
    r.at = 'ws:1';
    client.changeTransport(WEBSOCKET_TRANSPORT);
    r.step(100);
    expect(sc.address).toBe('ws:1');
    const moved = both();
    // TCP holds every packet behind a lost segment for a while: nothing may be resent for it.
    r.toServer = r.toClient = false;
    exchange(20, 10);
    r.step(600);
    r.release();
    exchange(30, 20);
    r.step(500);
    const after = both();
    expect(after.server.redundant).toBe(moved.server.redundant);
    expect(after.client.redundant).toBe(moved.client.redundant);
    expect(after.server.resent).toBe(moved.server.resent);
    expect(after.client.resent).toBe(moved.client.resent);
    expect(after.server.received).toBe(50);
    expect(after.client.received).toBe(50);
    const got = (events: { type: string; bytes?: Uint8Array }[]) => events.flatMap((e) => (e.type === 'message' ? [e.bytes![0]!] : []));
    expect(got(r.serverEvents)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    expect(got(r.clientEvents)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    // Over TCP an ack waits up to 25 ms for data to ride on: a message every 20 ms is acked every other one.
    const before = r.sentByClient.length;
    for (let i = 0; i < 20; i++) {
      sc.send(0, Uint8Array.of(i));
      r.step(20);
    }
    r.step(100);
    expect(r.sentByClient.length - before).toBeLessThanOrEqual(12);
  });
});
