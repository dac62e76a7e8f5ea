// The fleet on loopback: three game server processes and the matchmaker; six players ask for tokens
// over HTTP, are spread two per server, connect with netcode and get their echo.
import { createSocket } from 'node:dgram';
import { afterAll, describe, expect, it } from 'vitest';
import { Client, type ClientEvent } from 'gamewire';
import { nodeCrypto, UdpDriver } from 'gamewire/node';
import { startFleet, type Fleet } from './fleet.ts';

async function freePort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

describe('examples/fleet', () => {
  let fleet: Fleet | undefined;
  afterAll(async () => fleet?.stop());

  it('spreads six players over three servers and each gets its echo', async () => {
    process.env.GAMEWIRE_KEY ??= '5a'.repeat(32);
    fleet = await startFleet([await freePort(), await freePort(), await freePort()], 0);
    const players: { client: Client; driver: UdpDriver<ClientEvent>; server: string; echoed: Promise<void> }[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`http://127.0.0.1:${fleet.httpPort}/join`, { method: 'POST' });
      expect(res.status).toBe(200);
      const j = (await res.json()) as { server: string; token: string };
      const client = new Client({ crypto: nodeCrypto });
      const driver = await UdpDriver.openEndpoint(client, { host: '127.0.0.1', port: 0 });
      const echoed = new Promise<void>((resolve, reject) => {
        driver.on('event', (e: ClientEvent) => {
          if (e.type === 'connected') client.send(0, Uint8Array.of(i));
          if (e.type === 'message' && e.bytes[0] === i) resolve();
          if (e.type === 'disconnected') reject(new Error(`player ${i}: ${e.reason}`));
        });
      });
      client.connect(driver.now(), Uint8Array.from(Buffer.from(j.token, 'base64')));
      players.push({ client, driver, server: j.server, echoed });
    }
    await Promise.all(players.map((p) => p.echoed));
    const perServer = new Map<string, number>();
    for (const p of players) perServer.set(p.server, (perServer.get(p.server) ?? 0) + 1);
    expect([...perServer.values()]).toEqual([2, 2, 2]);
    // One player per server sends its last message and its DISCONNECT in one go: they reach the
    // server together and its echo handler answers a client that has just closed. Every server must
    // still serve its other player.
    const leaving = [...new Map(players.map((p) => [p.server, p])).values()];
    for (const p of leaving) {
      p.client.send(0, Uint8Array.of(200));
      p.driver.flush();
      p.client.close();
      p.driver.flush();
    }
    await Promise.all(players.filter((p) => !leaving.includes(p)).map((p, k) => new Promise<void>((resolve, reject) => {
      p.driver.on('event', (e: ClientEvent) => {
        if (e.type === 'message' && e.bytes[0] === 100 + k) resolve();
        if (e.type === 'disconnected') reject(new Error(`a player of ${p.server}: ${e.reason}`));
      });
      p.client.send(0, Uint8Array.of(100 + k));
    })));
    for (const p of players) {
      p.client.close();
      await p.driver.close({ linger: true });
    }
  }, 60_000);
});
