import { createSocket } from 'node:dgram';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addressKey, systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { DEV_KEY, DEV_PROTOCOL_ID } from '../../src/cli/netcode.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { Client, type ClientEvent } from '../../src/netcode/client.js';
import { generateConnectToken } from '../../src/netcode/wire.js';
import { gamewire, until, waitForStderr, type Run } from './helpers.js';

// Three `gamewire serve`s, spawned once: one that clients use, one that only ever sees junk (its
// summary must then count exactly the junk), one with --no-migration.
let serve: Run;
let port = 0;
let junkServe: Run;
let junkPort = 0;
let fixedServe: Run;
let fixedPort = 0;

beforeAll(async () => {
  serve = gamewire('serve', '--port', '0');
  junkServe = gamewire('serve', '--port', '0');
  fixedServe = gamewire('serve', '--port', '0', '--no-migration');
  port = Number((await waitForStderr(serve, /serve listening on 127\.0\.0\.1:(\d+)/))[1]);
  junkPort = Number((await waitForStderr(junkServe, /serve listening on 127\.0\.0\.1:(\d+)/))[1]);
  fixedPort = Number((await waitForStderr(fixedServe, /serve listening on 127\.0\.0\.1:(\d+)/))[1]);
});

afterAll(() => {
  for (const r of [serve, junkServe, fixedServe]) if (r.child.exitCode === null) r.child.kill('SIGKILL');
});

/** A netcode client in this process, connected to the spawned serve (at `to`) with the development key. */
async function connectClient(to = port): Promise<{ client: Client; driver: UdpDriver<ClientEvent>; events: ClientEvent[] }> {
  const client = new Client();
  const driver = await UdpDriver.openEndpoint(client, { port: 0, host: '127.0.0.1' });
  const events: ClientEvent[] = [];
  driver.on('event', (e: ClientEvent) => events.push(e));
  const token = generateConnectToken({
    protocolId: DEV_PROTOCOL_ID, privateKey: DEV_KEY, clientId: BigInt(Math.floor(Math.random() * 2 ** 48)),
    serverAddresses: [addressKey('127.0.0.1', to)], nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
  });
  client.connect(driver.now(), token);
  driver.kick();
  await until(() => client.state === 'connected', 'the client to connect');
  return { client, driver, events };
}

describe('gamewire serve and connect (spawned, real loopback)', () => {
  it('serve keeps serving after a message and a DISCONNECT that arrive in one batch', async () => {
    const a = await connectClient();
    // Back to back in one turn: the server reads both in one batch, and the message's echo is
    // then addressed to a client that has already closed.
    a.client.send(0, new Uint8Array([1, 2, 3, 4]));
    a.driver.flush();
    a.client.close();
    a.driver.flush();
    await a.driver.close();
    await until(() => /disconnected \(peer\)/.test(serve.stderr()) || serve.child.exitCode !== null, 'serve to log the disconnect');
    expect(serve.child.exitCode, serve.stderr()).toBeNull();
    const b = await connectClient();
    b.client.send(0, new Uint8Array([5, 6, 7, 8]));
    b.driver.kick();
    await until(() => b.events.some((e) => e.type === 'message'), 'the echo');
    b.client.close();
    await b.driver.close();
    expect(serve.child.exitCode, serve.stderr()).toBeNull();
  });

  it('serve logs a client that moved to a new address (its socket replaced), and keeps echoing it', async () => {
    const a = await connectClient();
    const from = `127.0.0.1:${a.driver.local.port}`;
    await a.driver.close();
    const b = await UdpDriver.openEndpoint(a.client, { host: '127.0.0.1', port: 0 });
    b.on('event', (e: ClientEvent) => void a.events.push(e));
    a.client.send(0, Uint8Array.of(9));
    b.kick();
    await until(() => a.events.some((e) => e.type === 'message'), 'the echo from the new address', 8000);
    expect(serve.stderr()).toContain(`moved from ${from} to 127.0.0.1:${b.local.port}`);
    a.client.close();
    b.flush();
    await b.close();
  }, 15_000);

  it('serve --no-migration keeps a client at the address it connected from: its packets from a new socket are refused, nothing comes back', async () => {
    const a = await connectClient(fixedPort);
    await a.driver.close();
    const b = await UdpDriver.openEndpoint(a.client, { host: '127.0.0.1', port: 0 });
    b.on('event', (e: ClientEvent) => void a.events.push(e));
    a.client.send(0, Uint8Array.of(9));
    b.kick();
    await until(() => a.client.counters().addressedSent >= 2, 'the client to name itself from its new address', 8000);
    await new Promise((r) => setTimeout(r, 500));
    expect(a.events.some((e) => e.type === 'message')).toBe(false);
    expect(fixedServe.stderr()).not.toContain('moved from');
    a.client.close();
    b.flush();
    await b.close();
  }, 15_000);

  it('Ctrl-C on connect exits 130 and the server is told (a disconnect, not a timeout)', async () => {
    const before = (serve.stderr().match(/disconnected \(peer\)/g) ?? []).length;
    const run = gamewire('connect', '--server', `127.0.0.1:${port}`, '--count', '100000', '--interval', '20ms');
    await waitForStderr(run, /connect: connected to/);
    run.child.kill('SIGINT');
    expect(await run.exit, run.stderr()).toBe(130);
    expect(run.stderr()).toMatch(/^connect: interrupted \(\d+\/100000 echoed\)$/m);
    // The server's timeout is 5 s; the disconnect is logged well before that.
    await until(() => (serve.stderr().match(/disconnected \(peer\)/g) ?? []).length > before, 'serve to log the disconnect', 4000);
    expect(serve.stderr()).not.toMatch(/disconnected \(timeout\)/);
  });

  it("serve's summary counts every junk datagram as dropped, and Ctrl-C ends serve with 130", async () => {
    const rng = new NonCryptoRng(19);
    const s = createSocket('udp4');
    await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
    let sent = 0;
    for (let batch = 0; batch < 10; batch++) {
      const all: Promise<void>[] = [];
      for (let i = 0; i < 100; i++) {
        const junk = rng.fill(new Uint8Array(rng.nextInt(1201)));
        all.push(new Promise((r) => s.send(junk, junkPort, '127.0.0.1', () => r())));
      }
      await Promise.all(all);
      sent += 100;
      await new Promise((r) => setTimeout(r, 5));
    }
    s.close();
    await new Promise((r) => setTimeout(r, 200));
    junkServe.child.kill('SIGINT');
    serve.child.kill('SIGINT');
    expect(await junkServe.exit, junkServe.stderr()).toBe(130);
    expect(junkServe.stderr()).toMatch(new RegExp(`^serve: 0 clients, 0 echoed, 0 not echoed, ${sent} datagrams dropped \\(`, 'm'));
    expect(await serve.exit, serve.stderr()).toBe(130);
    expect(serve.stderr()).toMatch(/^serve: [1-9]\d* clients, [1-9]\d* echoed, \d+ not echoed, \d+ datagrams dropped/m);
  });
});
