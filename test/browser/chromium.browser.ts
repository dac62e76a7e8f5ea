// A real browser: Debian's headless Chromium (driven by playwright-core) loads the gamewire/browser
// bundle and connects to a Node server over WebRTC on loopback. `npm run test:browser` (needs
// /usr/bin/chromium: `apt-get install chromium`; .ci/run installs it).
import { build } from 'esbuild';
import { createServer, type Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { BrowserGateway } from '../../src/adapters/node/gateway.js';
import type { LaneConfig } from '../../src/connection/options.js';
import { sodiumCrypto } from '../../src/crypto/sodium.js';
import { Server, type ServerEvent } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';

const ROOT = resolve(import.meta.dirname, '../..');
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 100 + i);
const PROTOCOL = 0x6277n;
const UDP = '127.0.0.1:40003';
const LANES: LaneConfig[] = [
  { mode: 'reliable-ordered' }, { mode: 'reliable-unordered' }, { mode: 'unreliable' }, { mode: 'unreliable-sequenced' },
  { mode: 'notify' }, { mode: 'block' },
];
const BLOCK_BYTES = 4 << 20;
/** Chromium's flags for WebRTC on loopback (see ../shared/research/browser.md §2). */
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--allow-loopback-in-peer-connection', '--disable-features=WebRtcHideLocalIpsWithMdns',
];

interface PageResult {
  connected: boolean;
  echoed: Record<string, number[]>;
  deliveries: { id: number; delivered: boolean }[];
  block: { bytes: number; intact: boolean } | undefined;
  rttMs: number;
  error?: string;
}

describe('Chromium ↔ Node over WebRTC (real browser, loopback)', () => {
  let server: Server;
  let driver: UdpDriver<ServerEvent>;
  let signalling: BrowserGateway;
  let pages: HttpServer;
  let pageUrl: string;
  let browser: Browser;
  const serverEvents: ServerEvent[] = [];
  let nextId = 1n;

  const token64 = (ageSeconds = 0): string => Buffer.from(generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId: nextId++, serverAddresses: [UDP],
    nowUnixSeconds: Math.floor(systemUnixTime()) - ageSeconds, expireSeconds: 30, timeoutSeconds: 5,
  })).toString('base64');

  const openPage = async (): Promise<Page> => {
    const page = await browser.newPage();
    await page.goto(pageUrl);
    await page.waitForFunction(() => (window as unknown as { gamewire?: unknown }).gamewire !== undefined);
    return page;
  };

  beforeAll(async () => {
    const block = Uint8Array.from({ length: BLOCK_BYTES }, (_, i) => (i * 7) & 255);
    server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [UDP], unixTime: systemUnixTime, lanes: LANES, crypto: await sodiumCrypto() });
    driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port: 0 });
    driver.on('event', (e) => {
      serverEvents.push(e);
      if (e.type === 'connected') e.client.send(5, block);
      if (e.type === 'message') e.client.send(e.lane, e.bytes);
    });
    signalling = await BrowserGateway.open(driver, server, { host: '127.0.0.1' });
    const bundle = await build({
      entryPoints: [join(ROOT, 'src/browser.ts')], bundle: true, format: 'esm', platform: 'browser', target: 'chrome120',
      write: false, external: ['libsodium'],
    });
    const js = bundle.outputFiles[0]!.text;
    const html = '<!doctype html><script type="module">import * as gw from "/gamewire.js"; window.gamewire = gw;</script>';
    pages = createServer((req, res) => {
      if (req.url === '/gamewire.js') res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
      else res.writeHead(200, { 'content-type': 'text/html' }).end(html);
    });
    await new Promise<void>((r) => pages.listen(0, '127.0.0.1', r));
    pageUrl = `http://127.0.0.1:${(pages.address() as AddressInfo).port}/`;
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((r) => (pages ? pages.close(() => r()) : r()));
    server.close();
    await driver.close({ linger: { quietMs: 100, maxMs: 500 } });
    await signalling.close();
  });

  it('runs every delivery mode, a 4 MiB block, notify outcomes and a clean disconnect', async () => {
    const page = await openPage();
    const result = await page.evaluate(async ({ url, token, lanes }): Promise<PageResult> => {
      type Ev = { type: string; lane?: number; bytes?: Uint8Array; id?: number; delivered?: boolean };
      const gw = (window as unknown as { gamewire: { connectWebRtc(o: object): Promise<{ client: { send(l: number, b: Uint8Array): number; stats(): { srttMs: number } | undefined }; close(): Promise<void> }> } }).gamewire;
      const echoed: Record<string, number[]> = {};
      const deliveries: { id: number; delivered: boolean }[] = [];
      let block: PageResult['block'];
      let connected = false;
      const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
      const until = async (cond: () => boolean, ms: number): Promise<boolean> => {
        for (const end = performance.now() + ms; !cond(); await sleep(10)) if (performance.now() > end) return false;
        return true;
      };
      try {
        const conn = await gw.connectWebRtc({
          url, token: Uint8Array.from(atob(token), (c) => c.charCodeAt(0)), lanes,
          onEvent: (e: Ev) => {
            if (e.type === 'connected') connected = true;
            if (e.type === 'delivery') deliveries.push({ id: e.id!, delivered: e.delivered! });
            if (e.type === 'message' && e.lane === 5) {
              const b = e.bytes!;
              let intact = true;
              for (let i = 0; i < b.length; i++) if (b[i] !== ((i * 7) & 255)) intact = false;
              block = { bytes: b.length, intact };
            } else if (e.type === 'message') (echoed[e.lane!] ??= []).push(e.bytes![0]!);
          },
        });
        if (!(await until(() => connected, 10_000))) return { connected, echoed, deliveries, block, rttMs: 0, error: 'no connected event' };
        for (let i = 0; i < 40; i++) {
          for (let lane = 0; lane < 5; lane++) conn.client.send(lane, Uint8Array.of(i, lane));
          await sleep(5);
        }
        await until(() => (echoed[0]?.length ?? 0) === 40 && (echoed[1]?.length ?? 0) === 40 && deliveries.length === 40 && block !== undefined, 20_000);
        const rttMs = conn.client.stats()?.srttMs ?? 0;
        await conn.close();
        return { connected, echoed, deliveries, block, rttMs };
      } catch (err) {
        return { connected, echoed, deliveries, block, rttMs: 0, error: String(err) };
      }
    }, { url: signalling.url, token: token64(), lanes: LANES });
    await page.close();
    expect(result.error).toBeUndefined();
    expect(result.connected).toBe(true);
    const seq = Array.from({ length: 40 }, (_, i) => i);
    expect(result.echoed[0]).toEqual(seq); // reliable-ordered: all, in order
    expect([...result.echoed[1]!].sort((a, b) => a - b)).toEqual(seq); // reliable-unordered: all, once
    expect(result.echoed[2]!.length).toBeGreaterThan(30); // unreliable: at loopback, nearly all
    const sequenced = result.echoed[3]!;
    expect(sequenced.length).toBeGreaterThan(0);
    expect(sequenced.every((v, i) => i === 0 || v > sequenced[i - 1]!)).toBe(true); // never older than one delivered
    expect(result.deliveries.map((d) => d.id).sort((a, b) => a - b)).toEqual(seq); // notify: one outcome each
    expect(result.block).toEqual({ bytes: BLOCK_BYTES, intact: true });
    expect(result.rttMs).toBeGreaterThan(0);
    await expect.poll(() => serverEvents.some((e) => e.type === 'disconnected' && e.reason === 'peer'), { timeout: 5000 }).toBe(true);
  }, 60_000);

  it('two pages connected at once: both server-side peers on the one shared UDP port (answer and selected pair)', async () => {
    const pages = await Promise.all([openPage(), openPage()]);
    const results = await Promise.all(pages.map((page) => page.evaluate(async ({ url, token, lanes }) => {
      const gw = (window as unknown as { gamewire: { connectWebRtc(o: object): Promise<{ close(): Promise<void> }> } }).gamewire;
      const made: RTCPeerConnection[] = [];
      class Recording extends RTCPeerConnection {
        constructor(c?: RTCConfiguration) {
          super(c);
          made.push(this);
        }
      }
      let connected = false;
      try {
        const conn = await gw.connectWebRtc({
          url, token: Uint8Array.from(atob(token), (c) => c.charCodeAt(0)), lanes, RTCPeerConnection: Recording,
          onEvent: (e: { type: string }) => {
            if (e.type === 'connected') connected = true;
          },
        });
        for (const end = performance.now() + 10_000; !connected && performance.now() < end;) await new Promise((r) => setTimeout(r, 10));
        const pc = made[0]!;
        const answerPorts = (pc.remoteDescription?.sdp ?? '').split(/\r?\n/).filter((l) => l.startsWith('a=candidate:')).map((l) => Number(l.split(' ')[5]));
        type Stat = { type: string; id: string; selectedCandidatePairId?: string; remoteCandidateId?: string; port?: number };
        // The transport names its selected pair; the stats may lag the channel's opening by a moment.
        let selectedPort: number | undefined;
        for (const end = performance.now() + 3000; selectedPort === undefined && performance.now() < end;) {
          const stats = [...(await pc.getStats()).values()] as Stat[];
          const pairId = stats.find((x) => x.type === 'transport')?.selectedCandidatePairId;
          const pair = stats.find((x) => x.type === 'candidate-pair' && x.id === pairId);
          selectedPort = stats.find((x) => x.id === pair?.remoteCandidateId)?.port;
          if (selectedPort === undefined) await new Promise((r) => setTimeout(r, 50));
        }
        await conn.close();
        return { connected, answerPorts, selectedPort };
      } catch (err) {
        return { connected, answerPorts: [], selectedPort: undefined, error: String(err) };
      }
    }, { url: signalling.url, token: token64(), lanes: LANES })));
    await Promise.all(pages.map((p) => p.close()));
    const port = signalling.udpPort;
    expect(port).toBeGreaterThan(0);
    for (const r of results) {
      expect(r).toEqual({ connected: true, answerPorts: [port], selectedPort: port });
    }
  }, 30_000);

  it('refuses missing, expired and reused tokens with clear reasons', async () => {
    const page = await openPage();
    const spent = token64();
    const reasons = await page.evaluate(async ({ url, spent, expired }) => {
      const gw = (window as unknown as { gamewire: { connectWebRtc(o: object): Promise<{ close(): Promise<void> }> } }).gamewire;
      const bytes = (t: string): Uint8Array => Uint8Array.from(atob(t), (c) => c.charCodeAt(0));
      const attempt = async (token: Uint8Array | undefined): Promise<string> => {
        try {
          let connected = false;
          const c = await gw.connectWebRtc({ url, token, onEvent: (e: { type: string }) => { if (e.type === 'connected') connected = true; } });
          for (let i = 0; i < 500 && !connected; i++) await new Promise((r) => setTimeout(r, 10));
          await c.close();
          return connected ? 'connected' : 'no connected event';
        } catch (err) {
          const e = err as { reason?: string; code?: string };
          return e.reason ?? e.code ?? String(err);
        }
      };
      return [await attempt(undefined), await attempt(bytes(expired)), await attempt(bytes(spent)), await attempt(bytes(spent))];
    }, { url: signalling.url, spent, expired: token64(60) });
    await page.close();
    expect(reasons).toEqual(['invalid-argument', 'expired', 'connected', 'used']);
  }, 60_000);
});
