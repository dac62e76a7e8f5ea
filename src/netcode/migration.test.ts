// A connected client moving to a new address (Server.claimAddress, as the browser gateway does for a
// WebSocket that resumes a client): only a fresh packet sealed with the client's key moves it; a
// replayed or forged one does not. Sans-IO on a virtual clock: the two endpoints pumped by hand.
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../core/rng.js';
import { Client, type ClientEvent } from './client.js';
import { Server, type ServerEvent } from './server.js';
import { generateConnectToken } from './wire.js';

const PROTOCOL = 0x4d494752n;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 3 + 5);
const SERVER = '10.0.0.1:40000';
const unixTime = (now: number): number => 1_800_000_000 + now / 1000;
const seeded = (seed: number) => {
  const r = new NonCryptoRng(seed);
  return (out: Uint8Array): void => void r.fill(out);
};

describe('Server: a client migrates only with a fresh packet sealed with its key', () => {
  it('a replayed packet and a forged one from the claimed address are refused; the next real one moves the client, and the server then sends there', () => {
    const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, random: seeded(1) });
    const client = new Client();
    client.connect(0, generateConnectToken({
      protocolId: PROTOCOL, privateKey: KEY, clientId: 7n, serverAddresses: [SERVER], nowUnixSeconds: Math.floor(unixTime(0)),
      expireSeconds: 30, timeoutSeconds: 5, random: seeded(3),
    }));
    let now = 0;
    let clientAt = '10.0.0.2:5000';
    const toClient: string[] = [];
    const sentByClient: Uint8Array[] = [];
    const serverEvents: ServerEvent[] = [];
    const clientEvents: ClientEvent[] = [];
    const out = new Uint8Array(1500);
    const step = (ms: number, deliverClient = true): void => {
      for (const end = now + ms; now < end; now += 5) {
        client.handleTimeout(now);
        server.handleTimeout(now);
        for (let t = client.pollTransmit(now, out); t !== undefined; t = client.pollTransmit(now, out)) {
          const b = out.slice(0, t.length);
          sentByClient.push(b);
          if (deliverClient) server.handleDatagram(now, clientAt, b);
        }
        for (let t = server.pollTransmit(now, out); t !== undefined; t = server.pollTransmit(now, out)) {
          toClient.push(t.to);
          client.handleDatagram(now, SERVER, out.slice(0, t.length));
        }
        for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) serverEvents.push(e);
        for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) clientEvents.push(e);
      }
    };
    step(200);
    expect(client.state).toBe('connected');
    const sc = server.clients()[0]!;
    expect(sc.address).toBe(clientAt);
    const old = sentByClient.at(-1)!; // delivered already: a replay from now on

    const NEW = 'ws:9';
    expect(server.claimAddress(NEW, sc.clientIndex)).toBe(true);
    server.handleDatagram(now, NEW, old);
    const forged = old.slice();
    forged[forged.length - 1]! ^= 1;
    server.handleDatagram(now, NEW, forged);
    expect(server.counters().migrationsRefused).toBe(2);
    expect(sc.address).toBe(clientAt);

    // The client's next packets come from the new address (its old path is gone).
    clientAt = NEW;
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
    server.handleDatagram(now, '10.0.0.2:5000', sentByClient.at(-1)!);
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
