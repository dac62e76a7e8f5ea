/**
 * Server side of bench/stall-probe.ts (run in the server's namespace): a netcode `Server` with
 * `BrowserGateway` echoing a reliable-ordered lane, the page and its bundle, and per-datagram and
 * per-phase timestamps on stdout:
 *   `ready URL`, `R id unixMs` (an echo message received), `L unixMs level message` (libdatachannel's
 *   log, with STALL_NDC_LOG=Info|Debug|Verbose), `H unixMs what` (HTTP request seen / answered),
 *   `C unixMs counters-json` (on SIGTERM: the gateway's and the clients' counters).
 * Usage: tsx bench/stall-probe-server.ts HOST. Environment: STALL_SCTP (JSON, node-datachannel's
 * `setSctpSettings` before any peer connection), STALL_REDUNDANCY (the server's
 * `channels.redundancy`: a number or `auto`; default the gateway's), STALL_ACK_DELAY (its
 * `acks.maxAckDelayMs`, ms), STALL_FAVOR (the gateway's `webrtcFavor`), STALL_HIGH, STALL_LOW and
 * STALL_CLIENT_DC (below).
 */
import { build } from 'esbuild';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ndc from 'node-datachannel';
import { systemUnixTime, UdpDriver } from '../src/adapters/node/udp-driver.js';
import { BrowserGateway } from '../src/adapters/node/gateway.js';
import { sodiumCrypto } from '../src/crypto/sodium.js';
import { Server, type ServerEvent } from '../src/netcode/server.js';
import { tokenAnswer } from './browser-token.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const host = process.argv[2] ?? '127.0.0.1';
const PORTS = { udp: 40100, signalling: 8180, page: 8181 } as const;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => 100 + i);
const PROTOCOL = 0x73746c6cn;
const out = (s: string): void => void process.stdout.write(`${s}\n`);

if (process.env.STALL_NDC_LOG) {
  ndc.initLogger(process.env.STALL_NDC_LOG as 'Info', (level, message) => out(`L ${Date.now()} ${level} ${message.replace(/\n/g, ' ')}`));
}
if (process.env.STALL_SCTP) ndc.setSctpSettings(JSON.parse(process.env.STALL_SCTP) as object);
const red = process.env.STALL_REDUNDANCY;
const ackDelay = process.env.STALL_ACK_DELAY;
const server = new Server({
  protocolId: PROTOCOL, privateKey: KEY, addresses: [`${host}:${PORTS.udp}`], unixTime: systemUnixTime,
  lanes: [{ mode: 'reliable-ordered' }], crypto: await sodiumCrypto(),
  ...(red === undefined ? {} : { channels: { redundancy: red === 'auto' ? 'auto' : Number(red) } }),
  ...(ackDelay === undefined ? {} : { acks: { maxAckDelayMs: Number(ackDelay) } }),
});
const driver = await UdpDriver.openEndpoint(server, { host, port: PORTS.udp });
const clients = new Set<{ counters(): object; stats(): object | undefined }>();
driver.on('event', (e: ServerEvent) => {
  if (e.type === 'connected') clients.add(e.client as never);
  if (e.type !== 'message') return;
  out(`R ${new DataView(e.bytes.buffer, e.bytes.byteOffset).getUint32(0, true)} ${Date.now()}`);
  e.client.send(e.lane, e.bytes);
});
const favor = process.env.STALL_FAVOR as 'bytes' | 'latency' | undefined;
const gateway = await BrowserGateway.open(driver, server, {
  host, port: PORTS.signalling, bindAddress: host, ...(favor === undefined ? {} : { webrtcFavor: favor }),
});
const http = (gateway as unknown as { http: import('node:http').Server }).http;
http.prependListener('request', (_req, res) => {
  out(`H ${Date.now()} request ${_req.method ?? ''}`);
  res.once('finish', () => out(`H ${Date.now()} answered`));
});

// Experiment: STALL_HIGH / STALL_LOW replace the client's hold thresholds (bytes) in the bundle, and
// STALL_CLIENT_DC the browser channel's `ordered: false, maxRetransmits: 1` (e.g. `ordered: false`).
const holdPlugin = {
  name: 'hold',
  setup(b: import('esbuild').PluginBuild): void {
    b.onLoad({ filter: /adapters\/browser\/connect\.ts$/ }, async (args) => {
      let text = readFileSync(args.path, 'utf8');
      if (process.env.STALL_HIGH) text = text.replace(/const CHANNEL_HIGH_BYTES = \d+;/, `const CHANNEL_HIGH_BYTES = ${process.env.STALL_HIGH};`);
      if (process.env.STALL_LOW) text = text.replace(/const CHANNEL_LOW_BYTES = \d+;/, `const CHANNEL_LOW_BYTES = ${process.env.STALL_LOW};`);
      if (process.env.STALL_CLIENT_DC) text = text.replace('ordered: false, maxRetransmits: 1', process.env.STALL_CLIENT_DC);
      return { contents: text, loader: 'ts' };
    });
  },
};
const bundle = await build({
  entryPoints: [join(ROOT, 'src/browser.ts')], bundle: true, format: 'esm', platform: 'browser', target: 'chrome120', write: false,
  external: ['libsodium'], plugins: [holdPlugin],
});
const js = bundle.outputFiles[0]!.text;
const html = '<!doctype html><script type="module">import * as gw from "/gamewire.js"; window.gw = gw;</script>';
const sendToken = tokenAnswer(PROTOCOL, KEY, `${host}:${PORTS.udp}`);
const page = createServer((req, res) => {
  if (req.url === '/gamewire.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
  if (req.url === '/token') return void sendToken(res);
  res.writeHead(200, { 'content-type': 'text/html' }).end(html);
});
await new Promise<void>((r) => page.listen(PORTS.page, host, r));
out(`ready ${gateway.url}`);

const stop = async (): Promise<void> => {
  out(`C ${Date.now()} ${JSON.stringify({ gateway: gateway.counters(), clients: [...clients].map((c) => ({ counters: c.counters(), stats: c.stats() })) })}`);
  server.close();
  await driver.close({ linger: { quietMs: 50, maxMs: 200 } });
  await gateway.close();
  page.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
