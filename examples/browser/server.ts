/**
 * The browser example's server: dots on a shared field, replicated by the state layer
 * (`gamewire/state`). Browser tabs connect over WebRTC or a WebSocket (`connect`, through one
 * `BrowserGateway`), bots over UDP, all to one
 * netcode `Server`; each client's dot is spawned when it joins and moved by its inputs (a target to
 * head for), and every client gets snapshots at 20 Hz: the others' dots interpolated, its own
 * predicted. Serves the page, its script and connect tokens (this file plays your web backend too).
 * See README.md here.
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
import { systemUnixTime, UdpDriver, BrowserGateway } from 'gamewire/node';
import { StateClient, StateServer } from 'gamewire/state';
import { type Dot, type DotView, FIELD, LANES, loop, schema, step, TICK_HZ } from './shared.js';

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
const gateway = await BrowserGateway.open(driver, server, { host }); // WebRTC and WebSocket on one port

// The game: a dot per client that joins the state layer, moved by its inputs.
const world = new StateServer({ schema, tickHz: TICK_HZ });
world.on('join', (p) => {
  p.entity = world.spawn('dot', { x: FIELD.width / 2, y: FIELD.height / 2 });
});
world.on('input', (p, _tick, input) => {
  if (p.entity !== undefined) step(p.entity.values, input);
});
world.on('leave', (p) => {
  if (p.entity !== undefined) world.despawn(p.entity);
});
let nextId = 1n;
const browsers = new Set<ServerClient>();
driver.on('event', (e: ServerEvent) => {
  if (e.type === 'connected' && /^(webrtc|ws):/.test(e.client.address)) {
    browsers.add(e.client);
    const over = e.client.address.startsWith('ws:') ? 'a WebSocket' : 'WebRTC';
    console.log(`browser connected over ${over} (client ${e.client.clientId}); browsers: ${browsers.size}`);
  } else if (e.type === 'disconnected' && browsers.delete(e.client)) {
    console.log(`browser left (${e.reason}); browsers: ${browsers.size}`);
  }
  world.handle(e);
});
// The dots at each recent tick, to check what the bots hold against; ticks on the clock (a late timer runs the ticks it owes).
const truth = new Map<number, Map<number, Dot>>();
let nextTick = driver.now() + 1000 / TICK_HZ;
const tick = setInterval(() => {
  const now = driver.now();
  for (; now >= nextTick; nextTick += 1000 / TICK_HZ) {
    world.tick(now);
    const dots = new Map<number, Dot>();
    for (const e of world.entities()) dots.set(e.id, { ...e.values });
    truth.set(world.tickNo, dots);
    truth.delete(world.tickNo - 100);
  }
}, 10);

const token = (): Uint8Array => generateConnectToken({
  protocolId, privateKey, clientId: nextId++, serverAddresses: [udpAddress],
  nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 60, timeoutSeconds: 10,
});

const bundle = await build({
  entryPoints: [join(HERE, 'page.ts')], bundle: true, format: 'esm', platform: 'browser', target: 'chrome120', write: false,
  external: ['libsodium'],
  alias: { 'gamewire/browser': join(HERE, '../../src/browser.ts'), 'gamewire/state': join(HERE, '../../src/state/index.ts') },
});
const js = bundle.outputFiles[0]!.text;
const html = readFileSync(join(HERE, 'page.html'), 'utf8');
const http = createServer((req, res) => {
  const path = (req.url ?? '/').split('?')[0];
  if (path === '/app.js') return void res.writeHead(200, { 'content-type': 'text/javascript' }).end(js);
  if (path === '/config') return void res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ signalling: gateway.url }));
  if (path === '/token') return void res.writeHead(200, { 'content-type': 'text/plain', 'cache-control': 'no-store' }).end(Buffer.from(token()).toString('base64'));
  if (path === '/') return void res.writeHead(200, { 'content-type': 'text/html' }).end(html);
  res.writeHead(404).end();
});
await new Promise<void>((r) => http.listen(port, host, r));
const pageUrl = `http://${host}:${(http.address() as { port: number }).port}/`;
console.log(`open ${pageUrl} in a browser (two tabs: two dots; arrow keys or the mouse move yours)`);

// Bots: netcode clients over UDP in this process, each a StateClient steering its dot round a loop.
const bots: { client: Client; driver: UdpDriver<ClientEvent>; view: DotView; timer: NodeJS.Timeout }[] = [];
let botsConnected = 0;
for (let i = 0; i < botCount; i++) {
  const client = new Client({ lanes: LANES, crypto: aead });
  const d = await UdpDriver.openEndpoint(client, { host });
  const view = new StateClient(client, { schema, predict: step });
  d.on('event', (e: ClientEvent) => {
    if (e.type === 'connected') botsConnected++;
    view.handle(d.now(), e);
  });
  client.connect(d.now(), token());
  const timer = setInterval(() => {
    if (client.state !== 'connected') return;
    const now = d.now();
    view.input(now, loop(i, now / 1000));
    view.sample(now);
  }, 1000 / 60);
  bots.push({ client, driver: d, view, timer });
}

/** One line per bot: the dots it holds, and whether each is the server's dot at the tick it holds it from. */
function botReport(view: DotView, i: number): string {
  const ids = view.ids();
  let matching = 0;
  for (const id of ids) {
    const held = view.latest(id);
    const want = held === undefined ? undefined : truth.get(held.tick)?.get(id);
    if (held !== undefined && want !== undefined && held.values.x === want.x && held.values.y === want.y) matching++;
  }
  const s = view.stats(driver.now());
  return `state: bot ${i} holds ${ids.length} dots, ${matching} as the server had them; ${s.snapshots} snapshots, ${s.corrections} corrections`;
}

let stopped = false;
const stop = async (): Promise<void> => {
  if (stopped) return;
  stopped = true;
  clearTimeout(stopTimer);
  clearInterval(tick);
  console.log(`bots connected: ${botsConnected}, browsers: ${browsers.size}`);
  console.log(`state: ${world.tickNo} ticks at ${TICK_HZ} Hz, ${world.entityCount} dots`);
  bots.forEach((b, i) => console.log(botReport(b.view, i)));
  for (const b of bots) {
    clearInterval(b.timer);
    b.client.close();
    await b.driver.close({ linger: { quietMs: 50, maxMs: 300 } });
  }
  server.close();
  await driver.close({ linger: { quietMs: 100, maxMs: 500 } });
  await gateway.close();
  http.close();
  http.closeAllConnections();
};
const stopTimer = seconds > 0 ? setTimeout(() => void stop(), seconds * 1000) : undefined;
process.once('SIGINT', () => void stop());
