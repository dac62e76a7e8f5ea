/**
 * The browser example's server: dots on a shared field. Browser tabs connect over WebRTC
 * (`connectWebRtc`), bots over UDP, all to one netcode `Server`; every client sends its position at
 * 20 Hz, the server sends everyone the field at 20 Hz. Serves the page, its script and connect tokens
 * (this file plays your web backend too). See README.md here.
 *
 *   npx tsx examples/browser/server.ts [--port 8080] [--host 127.0.0.1] [--bots 4] [--seconds 0]
 */
import { build } from 'esbuild';
import { createSocket } from 'node:dgram';
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, type ClientEvent, generateConnectToken, Server, type ServerClient, type ServerEvent, sodiumCrypto } from 'gamewire';
import { systemUnixTime, UdpDriver, WebRtcSignalling } from 'gamewire/node';
import { FIELD, LANES, readField, writeField, writePosition, readPosition } from './shared.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const arg = (name: string, def: string): string => {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 ? process.argv[i + 1] ?? def : def;
};
const host = arg('host', '127.0.0.1');
const port = Number(arg('port', '8080'));
const botCount = Number(arg('bots', '4'));
const seconds = Number(arg('seconds', '0'));

const privateKey = crypto.getRandomValues(new Uint8Array(32));
const protocolId = 0x646f7473n; // "dots"
const aead = await sodiumCrypto();

// Tokens name the server's UDP address, so find a free port before the Server exists.
const probe = createSocket('udp4');
await new Promise<void>((r) => probe.bind(0, host, r));
const udpPort = probe.address().port;
await new Promise<void>((r) => probe.close(() => r()));
const udpAddress = `${host}:${udpPort}`;
const server = new Server({ protocolId, privateKey, addresses: [udpAddress], unixTime: systemUnixTime, lanes: LANES, crypto: aead, maxClients: 64 });
const driver = await UdpDriver.openEndpoint(server, { host, port: udpPort });
const signalling = await WebRtcSignalling.open(driver, server, { host });

const dots = new Map<ServerClient, { x: number; y: number }>();
let nextId = 1n;
const browsers = new Set<ServerClient>();
driver.on('event', (e: ServerEvent) => {
  if (e.type === 'connected') {
    dots.set(e.client, { x: FIELD.width / 2, y: FIELD.height / 2 });
    if (e.client.address.startsWith('webrtc:')) {
      browsers.add(e.client);
      console.log(`browser connected (client ${e.client.clientId}); browsers: ${browsers.size}`);
    }
  } else if (e.type === 'disconnected') {
    dots.delete(e.client);
    if (browsers.delete(e.client)) console.log(`browser left (${e.reason}); browsers: ${browsers.size}`);
  } else if (e.type === 'message' && e.lane === 0) {
    const p = readPosition(e.bytes);
    if (p !== undefined) dots.set(e.client, p);
  }
});
const tick = setInterval(() => {
  const field = writeField([...dots].map(([c, p]) => ({ id: Number(c.clientId), ...p })));
  for (const c of dots.keys()) c.send(1, field);
}, 50);

const token = (): Uint8Array => generateConnectToken({
  protocolId, privateKey, clientId: nextId++, serverAddresses: [udpAddress],
  nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 60, timeoutSeconds: 10,
});

const bundle = await build({
  entryPoints: [join(HERE, 'page.ts')], bundle: true, format: 'esm', platform: 'browser', target: 'chrome120', write: false,
  external: ['libsodium'],
  alias: { 'gamewire/browser': join(HERE, '../../src/browser.ts') },
});
const js = bundle.outputFiles[0]!.text;
const html = readFileSync(join(HERE, 'page.html'), 'utf8');
const http = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/app.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
  if (path === '/config') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ signalling: signalling.url }));
  if (path === '/token') return void res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' }).end(Buffer.from(token()).toString('base64'));
  if (path === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(html);
  res.writeHead(404).end();
});
await new Promise<void>((r) => http.listen(port, host, r));
const pageUrl = `http://${host}:${(http.address() as { port: number }).port}/`;
console.log(`open ${pageUrl} in a browser (two tabs: two dots; arrow keys or the mouse move yours)`);

// Bots: netcode clients over UDP in this process, each walking a circle.
const bots: { client: Client; driver: UdpDriver<ClientEvent>; timer: NodeJS.Timeout }[] = [];
let botsConnected = 0;
for (let i = 0; i < botCount; i++) {
  const client = new Client({ lanes: LANES, crypto: aead });
  const d = await UdpDriver.openEndpoint(client, { host });
  d.on('event', (e: ClientEvent) => {
    if (e.type === 'connected') botsConnected++;
    if (e.type === 'message' && e.lane === 1) readField(e.bytes);
  });
  client.connect(d.now(), token());
  const timer = setInterval(() => {
    if (client.state !== 'connected') return;
    const t = d.now() / 1000 + i;
    client.send(0, writePosition({ x: FIELD.width / 2 + Math.cos(t * 0.7) * (60 + 25 * i), y: FIELD.height / 2 + Math.sin(t * 0.7) * (40 + 20 * i) }));
  }, 50);
  bots.push({ client, driver: d, timer });
}

const stop = async (): Promise<void> => {
  clearInterval(tick);
  console.log(`bots connected: ${botsConnected}, browsers: ${browsers.size}`);
  for (const b of bots) {
    clearInterval(b.timer);
    b.client.close();
    await b.driver.close({ linger: { quietMs: 50, maxMs: 300 } });
  }
  server.close();
  await driver.close({ linger: { quietMs: 100, maxMs: 500 } });
  await signalling.close();
  http.close();
  http.closeAllConnections();
};
if (seconds > 0) setTimeout(() => void stop(), seconds * 1000);
process.once('SIGINT', () => void stop());
