import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { Client, type ClientEvent } from '../../src/netcode/client.js';
import { Server, type ServerEvent } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';
import { gamewire, until, waitForStderr } from './helpers.js';

const SUMMARY = /^rtt_ms avg=(\d+\.\d\d) p50=(\d+\.\d\d) p99=(\d+\.\d\d) max=(\d+\.\d\d) bytes_per_msg=(\d+\.\d) datagrams_per_msg=(\d+\.\d\d)$/m;
const KEY = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';

describe('gamewire token / serve / connect (spawned, real loopback UDP, netcode 1.02)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gamewire-netcode-'));
  const servers: ReturnType<typeof gamewire>[] = [];
  afterAll(async () => {
    for (const s of servers) s.child.kill('SIGINT');
    await Promise.all(servers.map((s) => s.exit));
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = async (...args: string[]): Promise<number> => {
    const s = gamewire('serve', '--port', '0', '--host', '127.0.0.1', '--quiet', ...args);
    servers.push(s);
    return Number((await waitForStderr(s, /listening on 127\.0\.0\.1:(\d+)/))[1]);
  };

  it('a token from `gamewire token` connects to `serve --key`; every echo checked', async () => {
    const port = await serve('--key', KEY, '--protocol-id', 'abcdef');
    const file = join(dir, 'token.bin');
    const t = gamewire('token', '--key', KEY, '--protocol-id', 'abcdef', '--client-id', '42', '--server', `127.0.0.1:${port}`, '--out', file);
    expect(await t.exit, t.stderr()).toBe(0);
    expect(readFileSync(file).length).toBe(2048);
    const c = gamewire('connect', '--token', file, '--count', '50', '--interval', '5');
    expect(await c.exit, c.stderr()).toBe(0);
    expect(c.stdout()).toMatch(SUMMARY);
    expect(c.stderr()).toMatch(/connected to 127\.0\.0\.1:\d+ as client index/);
  }, 30_000);

  it('without --key the pair works out of the box (development key), in raw mode too', async () => {
    const port = await serve('--raw');
    const c = gamewire('connect', '--server', `127.0.0.1:${port}`, '--raw', '--count', '30', '--interval', '5');
    expect(await c.exit, c.stderr()).toBe(0);
    expect(c.stdout()).toMatch(SUMMARY);
  }, 30_000);

  it('a token for another key is never answered: connect fails with a clear reason', async () => {
    const port = await serve('--key', KEY);
    const c = gamewire('connect', '--server', `127.0.0.1:${port}`, '--count', '3');
    expect(await c.exit).toBe(1);
    expect(c.stderr()).toMatch(/FAILED: disconnected \(request-timed-out\)/);
  }, 30_000);

  it('serve outlives a client whose last message and DISCONNECT arrive in one batch, and echoes the next client', async () => {
    const port = await serve('--key', KEY, '--protocol-id', 'abcdef');
    const key = Uint8Array.from(KEY.match(/../g)!.map((h) => Number.parseInt(h, 16)));
    const open = async (clientId: bigint): Promise<{ client: Client; driver: UdpDriver<ClientEvent>; events: ClientEvent[] }> => {
      const client = new Client();
      const driver = await UdpDriver.openEndpoint(client, { host: '127.0.0.1', port: 0 });
      const events: ClientEvent[] = [];
      driver.on('event', (e) => void events.push(e));
      client.connect(driver.now(), generateConnectToken({
        protocolId: 0xabcdefn, privateKey: key, clientId, serverAddresses: [`127.0.0.1:${port}`],
        nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
      }));
      await until(() => client.state === 'connected', `client ${clientId} connected`);
      return { client, driver, events };
    };
    const a = await open(1n);
    a.client.send(0, Uint8Array.of(1));
    a.driver.flush();
    a.client.close();
    a.driver.flush();
    await a.driver.close({ linger: { quietMs: 200, maxMs: 1000 } });
    const b = await open(2n);
    b.client.send(0, Uint8Array.of(2));
    await until(() => b.events.some((e) => e.type === 'message'), 'the echo to the next client');
    b.client.close();
    await b.driver.close({ linger: { quietMs: 100, maxMs: 500 } });
    expect(servers.at(-1)!.child.exitCode).toBe(null);
  }, 30_000);

  it('bad arguments exit 2', async () => {
    expect(await gamewire('token', '--key', 'zz', '--protocol-id', '1', '--client-id', '1', '--server', '127.0.0.1:1', '--out', join(dir, 'x')).exit).toBe(2);
    expect(await gamewire('connect', '--count', '1').exit).toBe(2);
  }, 30_000);
});

describe('netcode Server on a UdpDriver: event handlers (in process, real loopback UDP)', () => {
  const PROTOCOL = 0x4e4e4e4en;
  const PRIVATE = Uint8Array.from({ length: 32 }, (_, i) => 255 - i);
  const INTERNAL = '127.0.0.1:40009'; // what tokens name to the server; clients dial the real port
  const drivers: UdpDriver<unknown>[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    await Promise.all(drivers.splice(0).map((d) => d.close()));
  });

  async function serve(onEvent: (e: ServerEvent) => void): Promise<{ server: Server; driver: UdpDriver<ServerEvent> }> {
    const server = new Server({ protocolId: PROTOCOL, privateKey: PRIVATE, addresses: [INTERNAL], unixTime: systemUnixTime });
    const driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port: 0 });
    drivers.push(driver as UdpDriver<unknown>);
    driver.on('event', onEvent);
    return { server, driver };
  }

  async function connect(port: number, clientId: bigint): Promise<{ client: Client; driver: UdpDriver<ClientEvent>; events: ClientEvent[] }> {
    const client = new Client();
    const driver = await UdpDriver.openEndpoint(client, { host: '127.0.0.1', port: 0 });
    drivers.push(driver as UdpDriver<unknown>);
    const events: ClientEvent[] = [];
    driver.on('event', (e) => void events.push(e));
    client.connect(driver.now(), generateConnectToken({
      protocolId: PROTOCOL, privateKey: PRIVATE, clientId, serverAddresses: [`127.0.0.1:${port}`], internalAddresses: [INTERNAL],
      nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
    }));
    await until(() => client.state === 'connected', `client ${clientId} connected`);
    return { client, driver, events };
  }

  it('a message and a DISCONNECT read in one batch: the echo handler does not end the process, the echo is a counted drop', async () => {
    const seen: string[] = [];
    const { server, driver } = await serve((e) => {
      seen.push(e.type);
      if (e.type === 'message') e.client.send(e.lane, e.bytes);
    });
    const a = await connect(driver.local.port, 1n);
    a.client.send(0, Uint8Array.of(1, 2, 3));
    a.driver.flush();
    a.client.close();
    a.driver.flush(); // the payload and the DISCONNECTs leave in one task: the server reads them in one turn
    await until(() => seen.includes('disconnected'), 'the server saw the disconnect');
    expect(seen).toEqual(['connected', 'message', 'disconnected']);
    expect(server.counters().sendsAfterClose).toBe(1);
    const b = await connect(driver.local.port, 2n);
    b.client.send(0, Uint8Array.of(4));
    await until(() => b.events.some((e) => e.type === 'message'), 'the next client echoed');
  }, 20_000);

  it('a listener that throws: \'error\' gets it with the event, or console.error when nobody listens; the driver keeps serving', async () => {
    let throws = 2;
    const { driver } = await serve((e) => {
      if (e.type !== 'message') return;
      if (throws-- > 0) throw new Error(`handler bug ${throws}`);
      e.client.send(e.lane, e.bytes);
    });
    const errors: [unknown, unknown][] = [];
    const onError = (err: unknown, ev: unknown): void => void errors.push([err, ev]);
    driver.on('error', onError);
    const a = await connect(driver.local.port, 1n);
    a.client.send(0, Uint8Array.of(1));
    await until(() => errors.length === 1, 'the error event');
    expect((errors[0]![0] as Error).message).toBe('handler bug 1');
    expect(errors[0]![1]).toMatchObject({ type: 'message' });
    driver.off('error', onError);
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    a.client.send(0, Uint8Array.of(2));
    await until(() => printed.mock.calls.length === 1, 'console.error');
    expect(printed.mock.calls[0]!.some((x) => x instanceof Error && x.message === 'handler bug 0')).toBe(true);
    a.client.send(0, Uint8Array.of(3));
    await until(() => a.events.some((e) => e.type === 'message'), 'the echo after two throws');
    expect(driver.counters().handlerErrors).toBe(2);
  }, 20_000);

  it('a client whose socket (its address) changes mid-stream goes on at the new port: same slot, one migrated, every echo once and in order', async () => {
    const moved: ServerEvent[] = [];
    const { server, driver } = await serve((e) => {
      if (e.type === 'message') e.client.send(e.lane, e.bytes);
      if (e.type === 'migrated') moved.push(e);
    });
    const a = await connect(driver.local.port, 7n);
    const echoes = (): number[] => a.events.flatMap((e) => (e.type === 'message' ? [e.bytes[0]!] : []));
    const sc = server.client(7n)!;
    const first = sc.address;
    for (let i = 0; i < 20; i++) a.client.send(0, Uint8Array.of(i));
    await until(() => echoes().length === 20, 'the first echoes');
    // The NAT rebinds: the client's socket goes (nothing in flight to it arrives), another takes over.
    await a.driver.close();
    for (let i = 20; i < 40; i++) a.client.send(0, Uint8Array.of(i));
    const b = await UdpDriver.openEndpoint(a.client, { host: '127.0.0.1', port: 0 });
    drivers.push(b as UdpDriver<unknown>);
    b.on('event', (e) => void a.events.push(e));
    await until(() => echoes().length === 40, 'every echo after the move');
    expect(echoes()).toEqual([...Array(40).keys()]);
    expect(sc.address).toBe(`127.0.0.1:${b.local.port}`);
    expect(sc.address).not.toBe(first);
    expect(moved).toEqual([{ type: 'migrated', client: sc, previous: first }]);
    expect(server.clients()).toEqual([sc]);
    expect(a.client.state).toBe('connected');
    expect(server.counters().migrations).toBe(1);
  }, 20_000);
});
