// A real browser on every transport: Debian's headless Chromium connects with connect() to one
// BrowserGateway (WebRTC and WebSocket on one port). A Chromium whose policy allows no UDP gathers no
// ICE candidate and must fall back to the WebSocket at once and still play; a normal one uses WebRTC;
// and a page served over HTTPS reaches the gateway over HTTPS and WSS with a self-signed certificate.
import { build } from 'esbuild';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createServer as createHttpsServer } from 'node:https';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { type Browser, chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { BrowserGateway } from '../../src/adapters/node/gateway.js';
import type { LaneConfig } from '../../src/connection/options.js';
import { sodiumCrypto } from '../../src/crypto/sodium.js';
import { Server, type ServerEvent } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';

const ROOT = resolve(import.meta.dirname, '../..');
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 120 + i);
const PROTOCOL = 0x6278n;
const UDP = '127.0.0.1:40004';
const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'block' }];
const BLOCK_BYTES = 1 << 20;
const CERT = readFileSync(join(ROOT, 'test/fixtures/tls/cert.pem'));
const TLS_KEY = readFileSync(join(ROOT, 'test/fixtures/tls/key.pem'));
/** base64 SHA-256 of the certificate's public key: Chromium trusts that one certificate and no other. */
const SPKI = createHash('sha256').update(
  new (await import('node:crypto')).X509Certificate(CERT).publicKey.export({ type: 'spki', format: 'der' }),
).digest('base64');
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--allow-loopback-in-peer-connection', '--disable-features=WebRtcHideLocalIpsWithMdns',
  `--ignore-certificate-errors-spki-list=${SPKI}`,
];

interface Played {
  transport?: string;
  connectMs: number;
  echoed: number[];
  block: { bytes: number; intact: boolean } | undefined;
  /** Whether the block lane had a WebSocket of its own at the end. */
  bulk?: boolean;
  error?: string;
}

/** The page's part: connect, 30 messages on the reliable-ordered lane back in order, the server's block. */
async function play({ url, token, lanes, transports, openTimeoutMs }: {
  url: string; token: string; lanes: LaneConfig[]; transports?: string[]; openTimeoutMs?: number;
}): Promise<Played> {
  type Ev = { type: string; lane?: number; bytes?: Uint8Array };
  type Conn = { transport: string; bulk: boolean; client: { send(l: number, b: Uint8Array): number }; close(): Promise<void> };
  const gw = (window as unknown as { gamewire: { connect(o: object): Promise<Conn> } }).gamewire;
  const echoed: number[] = [];
  let block: Played['block'];
  let connected = false;
  const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
  const until = async (cond: () => boolean, ms: number): Promise<boolean> => {
    for (const end = performance.now() + ms; !cond(); await sleep(10)) if (performance.now() > end) return false;
    return true;
  };
  const started = performance.now();
  try {
    const conn = await gw.connect({
      url, token: Uint8Array.from(atob(token), (c) => c.charCodeAt(0)), lanes, fallbackAfterMs: 8000,
      ...(transports === undefined ? {} : { transports }),
      ...(openTimeoutMs === undefined ? {} : { openTimeoutMs }),
      onEvent: (e: Ev) => {
        if (e.type === 'connected') connected = true;
        if (e.type === 'message' && e.lane === 1) {
          const b = e.bytes!;
          let intact = true;
          for (let i = 0; i < b.length; i++) if (b[i] !== ((i * 7) & 255)) intact = false;
          block = { bytes: b.length, intact };
        } else if (e.type === 'message') echoed.push(e.bytes![0]!);
      },
    });
    const connectMs = performance.now() - started;
    if (!(await until(() => connected, 10_000))) return { transport: conn.transport, connectMs, echoed, block, error: 'no connected event' };
    for (let i = 0; i < 30; i++) {
      conn.client.send(0, Uint8Array.of(i));
      await sleep(5);
    }
    await until(() => echoed.length === 30 && block !== undefined, 20_000);
    const bulk = conn.bulk;
    await conn.close();
    return { transport: conn.transport, connectMs, echoed, block, bulk };
  } catch (err) {
    return { connectMs: performance.now() - started, echoed, block, error: String(err) };
  }
}

describe('Chromium ↔ Node on every transport (real browser, loopback)', () => {
  let gateway: BrowserGateway;
  let driver: UdpDriver<ServerEvent>;
  let server: Server;
  let pages: HttpServer;
  let pageUrl: string;
  const browsers: Browser[] = [];
  const serverEvents: ServerEvent[] = [];
  let nextId = 1n;

  const token64 = (): string => Buffer.from(generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId: nextId++, serverAddresses: [UDP],
    nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
  })).toString('base64');

  const newPage = async (extraArgs: string[] = []): Promise<import('playwright-core').Page> => {
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: [...ARGS, ...extraArgs] });
    browsers.push(browser);
    const page = await browser.newPage();
    await page.goto(pageUrl);
    await page.waitForFunction(() => (window as unknown as { gamewire?: unknown }).gamewire !== undefined);
    return page;
  };

  const gameServer = async (): Promise<[Server, UdpDriver<ServerEvent>]> => {
    const block = Uint8Array.from({ length: BLOCK_BYTES }, (_, i) => (i * 7) & 255);
    const s = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [UDP], unixTime: systemUnixTime, lanes: LANES, crypto: await sodiumCrypto() });
    const d = await UdpDriver.openEndpoint(s, { host: '127.0.0.1', port: 0 });
    d.on('event', (e) => {
      serverEvents.push(e);
      if (e.type === 'connected') e.client.send(1, block);
      if (e.type === 'message') e.client.send(e.lane, e.bytes);
    });
    return [s, d];
  };

  beforeAll(async () => {
    [server, driver] = await gameServer();
    gateway = await BrowserGateway.open(driver, server, { host: '127.0.0.1', tls: { cert: CERT, key: TLS_KEY } });
    const bundle = await build({
      entryPoints: [join(ROOT, 'src/browser.ts')], bundle: true, format: 'esm', platform: 'browser', target: 'chrome120',
      write: false, external: ['libsodium'],
    });
    const js = bundle.outputFiles[0]!.text;
    const html = '<!doctype html><script type="module">import * as gw from "/gamewire.js"; window.gamewire = gw;</script>';
    // The page itself over HTTPS, as every real game page: it may then only reach https: and wss:.
    pages = createHttpsServer({ cert: CERT, key: TLS_KEY }, (req, res) => {
      if (req.url === '/gamewire.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
      else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    }) as unknown as HttpServer;
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    pageUrl = `https://127.0.0.1:${(pages.address() as AddressInfo).port}/`;
  });

  afterAll(async () => {
    for (const b of browsers) await b.close();
    await new Promise<void>((r) => (pages ? pages.close(() => r()) : r()));
    server.close();
    await driver.close({ linger: { quietMs: 100, maxMs: 500 } });
    await gateway.close();
  });

  const expectPlayed = (r: Played, transport: string): void => {
    expect(r.error).toBeUndefined();
    expect(r.transport).toBe(transport);
    expect(r.echoed).toEqual(Array.from({ length: 30 }, (_, i) => i));
    expect(r.block).toEqual({ bytes: BLOCK_BYTES, intact: true });
  };

  it('with UDP disabled by policy (no ICE candidate) the page falls back to the WebSocket at once and plays', async () => {
    const page = await newPage(['--force-webrtc-ip-handling-policy', '--webrtc-ip-handling-policy=disable_non_proxied_udp']);
    const r = await page.evaluate(play, { url: gateway.url, token: token64(), lanes: LANES });
    expectPlayed(r, 'websocket');
    // Not after fallbackAfterMs (8 s): the missing candidates ended the WebRTC attempt.
    expect(r.connectMs).toBeLessThan(4000);
    await expect.poll(() => serverEvents.some((e) => e.type === 'disconnected' && e.client.address.startsWith('ws:') && e.reason === 'peer'), { timeout: 5000 }).toBe(true);
    // WebRTC alone fails there, saying why, once openTimeoutMs is over (no candidate is a hint, not proof).
    const alone = await page.evaluate(play, { url: gateway.url, token: token64(), lanes: LANES, transports: ['webrtc'], openTimeoutMs: 2000 });
    expect(alone.error).toMatch(/^ConnectError: no-candidates: /);
  }, 60_000);

  it('a page served over HTTPS connects over WebRTC with HTTPS signalling, and over WSS when told to', async () => {
    const page = await newPage();
    const bound = serverEvents.filter((e) => e.type === 'bulk').length;
    const r = await page.evaluate(play, { url: gateway.url, token: token64(), lanes: LANES });
    expectPlayed(r, 'webrtc');
    // Its block lane went on a WSS WebSocket of its own, the server's block moving there mid-way.
    expect(r.bulk).toBe(true);
    const bulk = serverEvents.filter((e) => e.type === 'bulk').slice(bound);
    expect(bulk).toHaveLength(1);
    expect(bulk[0]!.type === 'bulk' && [bulk[0]!.client.address.slice(0, 7), bulk[0]!.address.slice(0, 3)]).toEqual(['webrtc:', 'ws:']);
    expectPlayed(await page.evaluate(play, { url: gateway.url, token: token64(), lanes: LANES, transports: ['websocket'] }), 'websocket');
  }, 60_000);

  it('mid-stream, the WebRTC path dies and the connection moves to the WebSocket: every reliable message back once, in order', async () => {
    const page = await newPage();
    const r = await page.evaluate(async ({ url, token, lanes }) => {
      type Conn = { transport: string; client: { send(l: number, b: Uint8Array): number }; close(): Promise<void> };
      const gw = (window as unknown as { gamewire: { connect(o: object): Promise<Conn> } }).gamewire;
      const made: RTCPeerConnection[] = [];
      class Recording extends RTCPeerConnection {
        constructor(c?: RTCConfiguration) {
          super(c);
          made.push(this);
        }
      }
      const echoed: number[] = [];
      let connected = false;
      const sleep = (ms: number): Promise<void> => new Promise((res) => setTimeout(res, ms));
      try {
        const conn = await gw.connect({
          url, token: Uint8Array.from(atob(token), (c) => c.charCodeAt(0)), lanes, RTCPeerConnection: Recording, fallbackAfterMs: 8000,
          onEvent: (e: { type: string; lane?: number; bytes?: Uint8Array }) => {
            if (e.type === 'connected') connected = true;
            if (e.type === 'message' && e.lane === 0) echoed.push(e.bytes![0]! | (e.bytes![1]! << 8));
          },
        });
        const first = conn.transport;
        for (let i = 0; i < 200 && !connected; i++) await sleep(10);
        for (let i = 0; i < 120; i++) {
          conn.client.send(0, Uint8Array.of(i & 255, i >> 8));
          if (i === 40) made[0]!.close();
          await sleep(10);
        }
        for (let i = 0; i < 1000 && echoed.length < 120; i++) await sleep(10);
        const last = conn.transport;
        await conn.close();
        return { first, last, echoed };
      } catch (err) {
        return { first: '', last: '', echoed, error: String(err) };
      }
    }, { url: gateway.url, token: token64(), lanes: LANES });
    expect(r).toEqual({ first: 'webrtc', last: 'websocket', echoed: Array.from({ length: 120 }, (_, i) => i) });
    expect(serverEvents.some((e) => e.type === 'migrated' && e.previous.startsWith('webrtc:') && e.client.address.startsWith('ws:'))).toBe(true);
  }, 60_000);
});

