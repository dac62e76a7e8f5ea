/**
 * Server side of `npm run bench:browser`, run inside the server's network namespace by
 * bench/browser.bench.ts: three echo servers for a browser on the other side of linkem.py, and the
 * page that measures them.
 *   - gamewire: a netcode `Server` with one `BrowserGateway` (port 8080, path /gamewire) taking browsers
 *     over WebRTC (offers POSTed) and over WebSockets (upgrades) alike: a reliable-ordered lane, echo; a block lane
 *     (a 4-byte block asks for a block of that many bytes back),
 *   - the same on port 8083 with `webrtcFavor: 'latency'` (its own `Server` on UDP 40001; its tokens from
 *     /token-latency),
 *   - WebSocket: `ws`, echo of every binary message (kernel TCP underneath); a block's chunks are counted;
 *     a 4-byte message asks for that many bytes back,
 *   - geckos.io 3.1.0: echo of every reliable message,
 *   - a bare WebRTC data channel (unordered, no retransmission; POST /raw with the offer): echo of
 *     every message, no protocol of ours on it: what the transport itself does to the messages that arrive.
 * Usage: tsx bench/browser-server.ts HOST. Prints "ready URL PID" to stdout once everything listens (PID:
 * this process, whose /proc/PID/net the client reads for the bytes this namespace sent).
 */
import { build } from 'esbuild';
import { createServer } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import geckos from '@geckos.io/server';
import ndc from 'node-datachannel';
import { WebSocketServer } from 'ws';
import { systemUnixTime, UdpDriver } from '../src/adapters/node/udp-driver.js';
import { BrowserGateway, type BrowserGatewayOptions } from '../src/adapters/node/gateway.js';
import { sodiumCrypto } from '../src/crypto/sodium.js';
import { Server, type ServerEvent } from '../src/netcode/server.js';
import { tokenAnswer } from './browser-token.js';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const host = process.argv[2] ?? '127.0.0.1';
export const PORTS = { udp: 40000, signalling: 8080, page: 8081, websocket: 8082, geckos: 9208, latencyUdp: 40001, latency: 8083 } as const;

const KEY = Uint8Array.from({ length: 32 }, (_, i) => 200 - i);
const PROTOCOL = 0x62726f77n;
const LANES = [{ mode: 'reliable-ordered' }, { mode: 'block', maxMessageBytes: 16 << 20 }] as const;

// BROWSER_BENCH_SERVER_REDUNDANCY (checked by browser.bench.ts): the server's lanes ride each piece this many times.
const redundancy = process.env.BROWSER_BENCH_SERVER_REDUNDANCY;
const crypto = await sodiumCrypto();

/** A netcode server on UDP `udp` with its gateway on `port`, echoing lane 0 and answering block requests on lane 1. */
async function gamewire(udp: number, port: number, options: Pick<BrowserGatewayOptions, 'webrtcFavor'>): Promise<{ server: Server; driver: UdpDriver<ServerEvent>; gateway: BrowserGateway }> {
  const server = new Server({
    protocolId: PROTOCOL, privateKey: KEY, addresses: [`${host}:${udp}`], unixTime: systemUnixTime, lanes: LANES, crypto,
    ...(redundancy === undefined ? {} : { channels: { redundancy: Number(redundancy) } }),
  });
  const driver = await UdpDriver.openEndpoint(server, { host, port: udp });
  // Lane 0: echo. Lane 1 (blocks): an upload is only counted by its delivery; a 4-byte block asks for a
  // download of that many bytes.
  driver.on('event', (e: ServerEvent) => {
    if (e.type !== 'message') return;
    if (e.lane === 0) e.client.send(0, e.bytes);
    else if (e.bytes.length === 4) e.client.send(1, new Uint8Array(new DataView(e.bytes.buffer, e.bytes.byteOffset).getUint32(0, true)).fill(9));
  });
  const gateway = await BrowserGateway.open(driver, server, { host, port, bindAddress: host, webrtc: true, webSocket: true, ...options });
  return { server, driver, gateway };
}
const main = await gamewire(PORTS.udp, PORTS.signalling, {});
const latency = await gamewire(PORTS.latencyUdp, PORTS.latency, { webrtcFavor: 'latency' });

const wss = new WebSocketServer({ host, port: PORTS.websocket });
wss.on('connection', (ws) => {
  // Echo; a message above 1,000 bytes is a block chunk, answered by the bytes of them received so far (u32);
  // a 4-byte message asks for a download of that many bytes, in 64 KiB messages.
  let blockBytes = 0;
  ws.on('message', (data: Buffer, isBinary) => {
    if (data.length === 4) {
      const chunk = Buffer.alloc(64 << 10, 9);
      for (let left = data.readUInt32LE(0); left > 0; left -= chunk.length) ws.send(left >= chunk.length ? chunk : chunk.subarray(0, left));
      return;
    }
    if (data.length <= 1000) return void ws.send(data, { binary: isBinary });
    blockBytes += data.length;
    const n = Buffer.alloc(4);
    n.writeUInt32LE(blockBytes);
    ws.send(n, { binary: true });
  });
});

const io = geckos({ iceServers: [], bindAddress: host, cors: { origin: '*', allowAuthorization: false } });
io.listen(PORTS.geckos);
io.onConnection((channel) => {
  channel.on('echo', (data) => void channel.emit('echo', data, { reliable: true }));
});

const bundles = await build({
  entryPoints: {
    gamewire: join(ROOT, 'src/browser.ts'), extend: join(ROOT, 'src/extend.ts'), geckos: join(ROOT, 'node_modules/@geckos.io/client/lib/index.js'),
  },
  bundle: true, format: 'esm', platform: 'browser', target: 'chrome120', write: false, outdir: '/out', external: ['libsodium'],
});
const files = new Map(bundles.outputFiles.map((f) => [`/${f.path.split('/').pop()}`, f.text]));
const html = '<!doctype html><script type="module">import * as gw from "/gamewire.js"; import * as gwx from "/extend.js"; '
  + 'import geckos from "/geckos.js"; window.gw = gw; window.gwx = gwx; window.geckos = geckos;</script>';
const sendToken = tokenAnswer(PROTOCOL, KEY, `${host}:${PORTS.udp}`);
const sendLatencyToken = tokenAnswer(PROTOCOL, KEY, `${host}:${PORTS.latencyUdp}`);
const page = createServer((req, res) => {
  const js = files.get(req.url ?? '');
  if (js !== undefined) return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
  if (req.url === '/raw' && req.method === 'POST') {
    let offer = '';
    req.on('data', (c: Buffer) => void (offer += c.toString()));
    req.on('end', () => {
      const pc = new ndc.PeerConnection('raw', { iceServers: [], bindAddress: host });
      pc.setRemoteDescription(offer, 'offer' as never);
      const dc = pc.createDataChannel('raw', { negotiated: true, id: 0, unordered: true, maxRetransmits: 0 });
      dc.onMessage((m) => void dc.sendMessageBinary(m as Buffer));
      dc.onClosed(() => pc.close());
      const answer = (): void => void res.writeHead(200, { 'content-type': 'text/plain' }).end(pc.localDescription()?.sdp ?? '');
      if (pc.gatheringState() === 'complete') answer();
      else pc.onGatheringStateChange((st) => st === 'complete' && answer());
    });
    return;
  }
  if (req.url === '/token') return void sendToken(res);
  if (req.url === '/token-latency') return void sendLatencyToken(res);
  res.writeHead(200, { 'content-type': 'text/html' }).end(html);
});
await new Promise<void>((r) => page.listen(PORTS.page, host, r));
process.stdout.write(`ready ${main.gateway.url} ${process.pid}\n`);

const stop = async (): Promise<void> => {
  for (const g of [main, latency]) {
    g.server.close();
    await g.driver.close({ linger: { quietMs: 100, maxMs: 500 } });
    await g.gateway.close();
  }
  wss.close();
  page.close();
  process.exit(0);
};
process.once('SIGTERM', () => void stop());
process.once('SIGINT', () => void stop());
