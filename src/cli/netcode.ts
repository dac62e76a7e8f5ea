import type { Command } from 'commander';
import { createSocket } from 'node:dgram';
import { existsSync, readFileSync } from 'node:fs';
import { isIP, isIPv4 } from 'node:net';
import { sodiumCrypto } from '../crypto/sodium.js';
import { addressKey, systemUnixTime, UdpDriver } from '../adapters/node/udp-driver.js';
import { BrowserGateway } from '../adapters/node/gateway.js';
import { cryptoRandom } from '../core/random.js';
import { Client, type ClientEvent } from '../netcode/client.js';
import { Server, type ServerEvent } from '../netcode/server.js';
import { CONNECT_TOKEN_BYTES, generateConnectToken, readConnectToken } from '../netcode/wire.js';
import { readInput, writeOutput } from './files.js';
import { echoPayload, formatEchoSummary, sendOnSchedule } from './kcp-echo.js';
import {
  aborted, arg, durationOption, EXIT_FAILURE, EXIT_INTERRUPTED, parseHostPort, parsePort, parseSizeFor, parseUint, resolveHostPort, untilStopped,
  UsageError, type HostPort,
} from './units.js';

/** The fastest AEAD (libsodium in WASM), loaded once when the CLI starts. */
const aead = await sodiumCrypto();

/**
 * The development key and protocol id `serve` and `connect` use when given no `--key`: public, so
 * anyone can connect to such a server. For trying the pair on one machine, never for a game.
 */
export const DEV_KEY = Uint8Array.from({ length: 32 }, (_, i) => (0x67 + i * 29) & 0xff);
export const DEV_PROTOCOL_ID = 0x67616d6577697265n; // "gamewire"

/** `--key`: 64 hex digits. */
function parseKey(text: string): Uint8Array {
  if (!/^[0-9a-fA-F]{64}$/.test(text)) throw new UsageError('--key: expected 64 hex digits (32 bytes)');
  return Uint8Array.from(text.match(/../g)!.map((h) => Number.parseInt(h, 16)));
}

/** `--protocol-id`: 1..16 hex digits (u64). */
function parseProtocolId(text: string): bigint {
  if (!/^(0x)?[0-9a-fA-F]{1,16}$/.test(text)) throw new UsageError('--protocol-id: expected 1..16 hex digits (a u64)');
  return BigInt(text.startsWith('0x') ? text : `0x${text}`);
}

/** `--client-id`: a decimal u64. */
function parseClientId(text: string): bigint {
  if (!/^\d{1,20}$/.test(text) || BigInt(text) >= 1n << 64n) throw new UsageError('--client-id: expected a decimal integer in 0..2^64-1');
  return BigInt(text);
}

/** Options of `gamewire token`. */
export interface TokenCommandOptions {
  key: Uint8Array;
  protocolId: bigint;
  clientId: bigint;
  servers: HostPort[];
  expireSeconds: number;
  timeoutSeconds: number;
  out: string;
}

/** Write a connect token for `servers` to `out`. Resolves to the exit code; a write failure rejects with a `FileError`. */
export async function runToken(o: TokenCommandOptions): Promise<number> {
  const token = generateConnectToken({
    protocolId: o.protocolId, privateKey: o.key, clientId: o.clientId,
    serverAddresses: o.servers.map((s) => addressKey(s.host, s.port)),
    nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: o.expireSeconds, timeoutSeconds: o.timeoutSeconds,
    crypto: aead,
  });
  await writeOutput(o.out, token, '--out');
  process.stderr.write(`token: ${CONNECT_TOKEN_BYTES} bytes for client ${o.clientId} -> ${o.out} (expires in ${o.expireSeconds} s)\n`);
  return 0;
}

/** Options of `gamewire serve`. */
export interface ServeCommandOptions {
  port: number;
  host: string;
  key: Uint8Array | undefined;
  protocolId: bigint | undefined;
  maxClients: number;
  raw: boolean;
  quiet: boolean;
  /** Clients may move to another address (`ServerOptions.migration`; default true). */
  migration?: boolean;
  /** TCP port of the WebRTC signalling endpoint for browser clients (0 = any), or undefined for none. */
  webrtc: number | undefined;
  /** UDP port every browser peer shares (default: the signalling port's number). */
  webrtcUdpPort?: number | undefined;
  /** What the WebRTC data channels favor under loss (`BrowserGatewayOptions.webrtcFavor`; default `'bytes'`). */
  webrtcFavor?: 'bytes' | 'latency' | undefined;
  /** A public IPv4/IPv6 address to put in the WebRTC answers (1:1 NAT). */
  publicAddress?: string | undefined;
  /** Take clients over WebSockets too: on the `webrtc` port, or on this TCP port when there is none. */
  ws?: number | true | undefined;
  /** Files of the certificate chain and private key (PEM): the browser endpoint serves HTTPS and WSS. */
  tlsCert?: string | undefined;
  tlsKey?: string | undefined;
}

/**
 * Server counters that do not count a datagram dropped or refused (the rest each count one, by
 * reason, so the summary adds them up).
 */
const SERVER_COUNTERS_NOT_DROPS: ReadonlySet<string> = new Set(['challengesSent', 'deniedSent', 'clientsConnected', 'migrations']);

/** Datagrams the server dropped or refused, in total and by reason (`unknownAddress 744, malformed 6`). */
export function serverDrops(c: Readonly<Record<string, unknown>>): { total: number; reasons: string } {
  let total = 0;
  const reasons: string[] = [];
  for (const [name, n] of Object.entries(c)) {
    if (typeof n !== 'number' || SERVER_COUNTERS_NOT_DROPS.has(name) || n === 0) continue;
    total += n;
    reasons.push(`${name} ${n}`);
  }
  return { total, reasons: reasons.join(', ') };
}

/**
 * A netcode echo server until SIGINT/SIGTERM: every message (or raw payload) goes back to its
 * client. On the signal it closes every client (each is told), prints a summary and resolves to 130.
 */
export async function runServe(o: ServeCommandOptions): Promise<number> {
  return untilStopped((signal) => serveUntil(o, signal));
}

async function serveUntil(o: ServeCommandOptions, signal: AbortSignal): Promise<number> {
  if (o.key === undefined) process.stderr.write('serve: no --key: using the public development key (anyone can connect)\n');
  // The server checks its own address in every token, so it must know its port before it binds.
  const port = o.port === 0 ? await freeUdpPort(o.host) : o.port;
  const server = new Server({
    protocolId: o.protocolId ?? DEV_PROTOCOL_ID, privateKey: o.key ?? DEV_KEY,
    addresses: [addressKey(o.host === '0.0.0.0' ? '127.0.0.1' : o.host, port)],
    unixTime: systemUnixTime, maxClients: o.maxClients, crypto: aead, ...(o.raw ? { raw: true } : {}), migration: o.migration ?? true,
  });
  const tls = o.tlsCert === undefined || o.tlsKey === undefined ? undefined : { cert: readFileSync(o.tlsCert), key: readFileSync(o.tlsKey) };
  const driver = await UdpDriver.openEndpoint(server, { port, host: o.host });
  const webPort = o.webrtc ?? (typeof o.ws === 'number' ? o.ws : undefined);
  let web: BrowserGateway | undefined;
  try {
    web = webPort === undefined ? undefined : await BrowserGateway.open(driver, server, {
      host: o.host, port: webPort, webrtc: o.webrtc !== undefined, webSocket: o.ws !== undefined,
      ...(o.webrtcUdpPort !== undefined ? { udpPort: o.webrtcUdpPort } : {}),
      ...(o.publicAddress !== undefined ? { publicAddress: o.publicAddress } : {}),
      ...(o.webrtcFavor !== undefined ? { webrtcFavor: o.webrtcFavor } : {}),
      ...(tls !== undefined ? { tls } : {}),
    });
  } catch (err) {
    await driver.close();
    throw err;
  }
  let echoed = 0;
  let notEchoed = 0;
  driver.on('event', (e: ServerEvent) => {
    if (e.type === 'message' || e.type === 'payload') {
      // A full queue, or a client that closed in the same batch: that client misses an echo, the
      // server goes on serving everyone else.
      try {
        if (e.type === 'message') e.client.send(e.lane, e.bytes);
        else e.client.sendRaw(e.bytes);
        echoed++;
      } catch {
        notEchoed++;
      }
    } else if (!o.quiet && (e.type === 'connected' || e.type === 'disconnected')) {
      process.stderr.write(`client ${e.client.clientId} (${e.client.address}) ${e.type}${e.type === 'disconnected' ? ` (${e.reason})` : ''}\n`);
    } else if (!o.quiet && e.type === 'migrated') {
      process.stderr.write(`client ${e.client.clientId} moved from ${e.previous} to ${e.client.address}\n`);
    }
  });
  process.stderr.write(`serve listening on ${driver.local.host}:${driver.local.port} (netcode 1.02${o.raw ? ', raw payloads' : ''}, max ${o.maxClients} clients)\n`);
  if (web !== undefined) {
    const kinds = [o.webrtc !== undefined ? 'WebRTC' : '', o.ws !== undefined ? 'WebSocket' : ''].filter((k) => k !== '').join(' and ');
    const peers = web.udpPort === undefined ? '' : `, their WebRTC peers on UDP port ${web.udpPort}${o.publicAddress !== undefined ? ` (announced as ${o.publicAddress})` : ''}`
      + `${web.webrtcFavor === 'latency' ? ', favoring latency' : ''}`;
    process.stderr.write(`serve: browser clients (${kinds}) at ${web.url}${peers}\n`);
  }
  await aborted(signal);
  const c = server.counters();
  const drops = serverDrops(c);
  process.stderr.write(
    `serve: ${c.clientsConnected} clients, ${echoed} echoed, ${notEchoed} not echoed, ` +
      `${drops.total} datagrams dropped${drops.total > 0 ? ` (${drops.reasons})` : ''}\n`,
  );
  server.close();
  await driver.close({ linger: true });
  await web?.close();
  return EXIT_INTERRUPTED;
}

/** Options of `gamewire connect`. */
export interface ConnectCommandOptions {
  token: string | undefined;
  server: HostPort | undefined;
  key: Uint8Array | undefined;
  protocolId: bigint | undefined;
  count: number;
  intervalMs: number;
  size: number;
  raw: boolean;
  timeoutMs: number;
}

/** What most likely went wrong when a server never answered our connection request (it answers nothing it refuses). */
export const REQUEST_TIMED_OUT_HINT =
  'connect: hint: the server never answered; likely nothing is listening there, or its --key or --protocol-id differ, ' +
  'or the token was already used, has expired (check both clocks) or does not name the address the server has';

/**
 * Connect with a token (or one made on the spot for `--server` with the development key), send
 * `count` messages (or raw payloads whose byte i is i mod 256), check every echo, print the summary
 * line, close. Resolves to 0, 1 on a failure (a token file that is not a token fails at once), or
 * 130 on SIGINT/SIGTERM, after telling the server.
 */
export async function runConnect(o: ConnectCommandOptions): Promise<number> {
  let token: Uint8Array;
  if (o.token !== undefined) {
    token = await readInput(o.token, '--token');
    if (!readConnectToken(token).ok) {
      const size = token.length === CONNECT_TOKEN_BYTES ? 'its public part does not read' : `${token.length} bytes; a token has ${CONNECT_TOKEN_BYTES}`;
      process.stderr.write(`error: --token ${o.token} is not a netcode 1.02 connect token (${size})\n`);
      return EXIT_FAILURE;
    }
  } else {
    const server = await resolveHostPort(o.server!, '--server');
    token = generateConnectToken({
      protocolId: o.protocolId ?? DEV_PROTOCOL_ID, privateKey: o.key ?? DEV_KEY, clientId: randomClientId(),
      serverAddresses: [addressKey(server.host, server.port)], nowUnixSeconds: Math.floor(systemUnixTime()),
      expireSeconds: 60, timeoutSeconds: 5, crypto: aead,
    });
  }
  return untilStopped((signal) => connectUntil(o, token, signal));
}

async function connectUntil(o: ConnectCommandOptions, token: Uint8Array, signal: AbortSignal): Promise<number> {
  const client = new Client({ crypto: aead, ...(o.raw ? { raw: true } : {}) });
  const driver = await UdpDriver.openEndpoint(client, { port: 0, host: '0.0.0.0' });
  const sentAt: number[] = [];
  const rtts: number[] = [];
  let received = 0;
  let failure: string | undefined;
  let lastProgress = driver.now();
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const fail = (why: string): void => {
    failure ??= why;
    done();
  };
  let interrupted = false;
  void aborted(signal).then(() => {
    interrupted = true;
    done();
  });
  const pattern = Uint8Array.from({ length: o.size }, (_, i) => i % 256);
  let stop = (): void => {};
  const start = (): void => {
    stop = sendOnSchedule(o.count, o.intervalMs, (i) => {
      if (failure !== undefined) return false;
      sentAt[i] = driver.now();
      try {
        if (o.raw) client.sendRaw(pattern);
        else client.send(0, echoPayload(i, o.size));
      } catch (err) {
        fail(`send failed: ${(err as Error).message}`);
        return false;
      }
      return true;
    });
  };
  let over = false;
  driver.on('event', (e: ClientEvent) => {
    if (over) return; // our own close() at the end
    const now = driver.now();
    if (e.type === 'connected') {
      process.stderr.write(`connect: connected to ${client.serverAddress} as client index ${e.clientIndex} of ${e.maxClients}\n`);
      lastProgress = now;
      start();
    } else if (e.type === 'disconnected') {
      if (failure === undefined && received < o.count) fail(`disconnected (${e.reason})`);
    } else if (e.type === 'payload') {
      if (e.bytes.length !== o.size || !e.bytes.every((v, j) => v === j % 256)) return fail(`raw payload ${received} does not follow the pattern`);
      rtts.push(now - sentAt[received]!);
      received++;
      lastProgress = now;
      if (received === o.count) done();
    } else if (e.type === 'message') {
      const i = new DataView(e.bytes.buffer, e.bytes.byteOffset, e.bytes.byteLength).getUint32(0, true);
      const want = echoPayload(i, o.size);
      if (i !== received || e.bytes.length !== o.size || !want.every((v, j) => e.bytes[j] === v)) return fail(`echo ${i} wrong or out of order`);
      rtts.push(now - sentAt[i]!);
      received++;
      lastProgress = now;
      if (received === o.count) done();
    }
  });
  client.connect(driver.now(), token);
  const watchdog = setInterval(() => {
    if (driver.now() - lastProgress > o.timeoutMs) fail(`timeout: nothing for ${o.timeoutMs} ms (${received}/${o.count} echoed, state ${client.state})`);
  }, 100);
  await finished;
  stop();
  clearInterval(watchdog);
  const stats = client.stats();
  const c = driver.counters();
  const endState = client.state;
  over = true;
  client.close();
  // The DISCONNECT copies leave in the close's last drain; after Ctrl-C nothing else is worth waiting for.
  await driver.close(interrupted ? undefined : { linger: true });
  if (interrupted && failure === undefined) {
    process.stderr.write(`connect: interrupted (${received}/${o.count} echoed)\n`);
    return EXIT_INTERRUPTED;
  }
  if (failure !== undefined) {
    process.stderr.write(`connect: FAILED: ${failure}\n`);
    if (endState === 'request-timed-out' || endState === 'sending-request') process.stderr.write(`${REQUEST_TIMED_OUT_HINT}\n`);
    return EXIT_FAILURE;
  }
  if (stats !== undefined) {
    process.stderr.write(`connect: srtt ${stats.srttMs.toFixed(1)} ms, loss ${stats.lossPercent.toFixed(1)} %, sent ${stats.sentKbps.toFixed(0)} kbit/s\n`);
  }
  process.stdout.write(formatEchoSummary(rtts, c.bytesOut, c.datagramsOut, o.count) + '\n');
  return 0;
}

/** A UDP port free on `host` right now (bound and released: a tiny race, fine for a CLI). */
export async function freeUdpPort(host: string): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((resolve, reject) => {
    s.once('error', reject);
    s.bind(0, host, resolve);
  });
  const { port } = s.address();
  await new Promise<void>((resolve) => s.close(() => resolve()));
  return port;
}

function randomClientId(): bigint {
  const b = new Uint8Array(8);
  cryptoRandom(b);
  return new DataView(b.buffer).getBigUint64(0, true);
}

interface NetcodeFlags {
  key?: Uint8Array;
  protocolId?: bigint;
  clientId?: bigint;
  server?: HostPort[] | HostPort;
  expire: number;
  timeout: number;
  out?: string;
  port?: number;
  host: string;
  maxClients: number;
  raw?: boolean;
  quiet?: boolean;
  migration?: boolean;
  token?: string;
  count: number;
  interval: number;
  size?: number;
  webrtc?: number;
  webrtcUdpPort?: number;
  webrtcFavor?: string;
  publicAddress?: string;
  ws?: number | true;
  tlsCert?: string;
  tlsKey?: string;
}

/** `connect --size` ranges: lane messages (the first 4 bytes number them) and raw payloads. */
const SIZE_RANGE = { lanes: '4..1048576', raw: '1..1200' } as const;

/** `token --server`: a connect token holds addresses, not names, so a host name is refused here. */
function parseTokenServer(text: string): HostPort {
  const hp = parseHostPort(text, '--server');
  if (!isIPv4(hp.host)) throw new UsageError(`--server: a connect token names IP addresses: expected IPV4:PORT, got "${text}"`);
  return hp;
}

/** Add `gamewire token`, `serve` and `connect` (netcode 1.02) to `program`. */
export function registerNetcode(program: Command, setExit: (code: number) => void): void {
  program
    .command('token')
    .description('write a 2048-byte netcode 1.02 connect token (what a web backend hands a player)')
    .requiredOption('--key <hex32>', 'the 32-byte private key shared with the servers (64 hex digits)', arg(parseKey))
    .requiredOption('--protocol-id <hex>', 'the game\'s protocol id (u64, hex)', arg(parseProtocolId))
    .requiredOption('--client-id <n>', 'the player\'s id (u64, decimal)', arg(parseClientId))
    .requiredOption('--server <ipv4:port>', 'a server address the token is for, as the server binds it (repeat for up to 32)',
      (v: string, prev: HostPort[] | undefined) => [...(prev ?? []), arg(parseTokenServer)(v)])
    .option('--expire <seconds>', 'token lifetime in seconds (at least 1)', arg((v) => parseUint(v, '--expire')), 30)
    .option('--timeout <seconds>', 'connection timeout written in the token, seconds (at least 1)', arg((v) => parseUint(v, '--timeout')), 5)
    .requiredOption('--out <file>', 'file to write the token to')
    .action(async (o: NetcodeFlags) => {
      const servers = o.server as HostPort[];
      if (servers.length > 32) throw new UsageError('--server: at most 32 addresses');
      // 0 would make a token that is expired, or times out, the moment it is made.
      if (o.expire < 1) throw new UsageError('--expire must be at least 1 (seconds)');
      if (o.timeout < 1) throw new UsageError('--timeout must be at least 1 (seconds)');
      setExit(await runToken({
        key: o.key!, protocolId: o.protocolId!, clientId: o.clientId!, servers, expireSeconds: o.expire, timeoutSeconds: o.timeout, out: o.out!,
      }));
    });

  program
    .command('serve')
    .description('a netcode 1.02 echo server: every message (or raw payload) goes back to its client')
    .requiredOption('--port <port>', 'UDP port (0 = any free port; the bound port is printed)', arg((v) => parsePort(v, '--port')))
    .option('--host <addr>', 'local IPv4 address to bind (tokens must name it; 0.0.0.0 is named 127.0.0.1)', '127.0.0.1')
    .option('--key <hex32>', 'private key (default: the public development key)', arg(parseKey))
    .option('--protocol-id <hex>', 'protocol id (u64, hex; default 67616d6577697265)', arg(parseProtocolId))
    .option('--max-clients <n>', 'most connected clients (1..65536)', arg((v) => parseUint(v, '--max-clients')), 256)
    .option('--raw', 'raw payloads (interoperates with any netcode 1.02 client) instead of gamewire lanes')
    .option('--quiet', 'no per-client lines')
    .option('--no-migration', 'keep every client at the address it connected from (no move to a new address or WebSocket)')
    .option('--webrtc <port>', 'also take browser clients: WebRTC signalling on this TCP port (0 = any; the URL is printed)', arg((v) => parsePort(v, '--webrtc')))
    .option('--webrtc-udp-port <port>', 'with --webrtc: the UDP port every browser peer shares (default: the --webrtc number; it must differ from --port)', arg((v) => parsePort(v, '--webrtc-udp-port')))
    .option('--public-address <ip>', 'with --webrtc: the public IP address to announce to browsers (a server behind 1:1 NAT)')
    .option('--webrtc-favor <what>', "with --webrtc: 'bytes' (default) or 'latency' (data channels that never resend, two rides per message: a shorter tail under loss for more bytes)")
    .option('--ws [port]', 'also take clients over WebSockets (the fallback where UDP is blocked): on the --webrtc port, or on this TCP port', arg((v) => parsePort(v, '--ws')))
    .option('--tls-cert <file>', 'with --webrtc or --ws: serve HTTPS and WSS with this certificate chain (PEM; needs --tls-key)')
    .option('--tls-key <file>', 'the private key (PEM) of --tls-cert')
    .action(async (o: NetcodeFlags) => {
      if (o.maxClients < 1 || o.maxClients > 65_536) throw new UsageError('--max-clients must be in 1..65536');
      if (o.webrtc === undefined && (o.webrtcUdpPort !== undefined || o.publicAddress !== undefined || o.webrtcFavor !== undefined)) {
        throw new UsageError('--webrtc-udp-port, --public-address and --webrtc-favor go with --webrtc');
      }
      if (o.webrtcFavor !== undefined && o.webrtcFavor !== 'bytes' && o.webrtcFavor !== 'latency') {
        throw new UsageError(`--webrtc-favor: expected bytes or latency, got "${o.webrtcFavor}"`);
      }
      if (o.ws === true && o.webrtc === undefined) throw new UsageError('--ws needs a port (--ws PORT) when there is no --webrtc PORT');
      if (typeof o.ws === 'number' && o.webrtc !== undefined && o.ws !== o.webrtc) {
        throw new UsageError(`--ws ${o.ws}: WebSockets share the --webrtc port (${o.webrtc}); give --ws without a port`);
      }
      if ((o.tlsCert === undefined) !== (o.tlsKey === undefined)) throw new UsageError('--tls-cert and --tls-key go together');
      if (o.tlsCert !== undefined && o.webrtc === undefined && o.ws === undefined) throw new UsageError('--tls-cert and --tls-key go with --webrtc or --ws');
      for (const f of [o.tlsCert, o.tlsKey]) {
        if (f !== undefined && !existsSync(f)) throw new UsageError(`cannot read ${f}: no such file`);
      }
      if (o.publicAddress !== undefined && isIP(o.publicAddress) === 0) throw new UsageError(`--public-address: expected an IP address, got "${o.publicAddress}"`);
      setExit(await runServe({
        port: o.port!, host: o.host, key: o.key, protocolId: o.protocolId, maxClients: o.maxClients, raw: o.raw === true, quiet: o.quiet === true,
        migration: o.migration !== false, webrtc: o.webrtc, webrtcUdpPort: o.webrtcUdpPort, publicAddress: o.publicAddress,
        webrtcFavor: o.webrtcFavor as 'bytes' | 'latency' | undefined, ws: o.ws, tlsCert: o.tlsCert, tlsKey: o.tlsKey,
      }));
    });

  program
    .command('connect')
    .description('connect to a netcode server, send messages, check every echo, print RTT figures and exit 0')
    .option('--token <file>', 'connect token file (from `gamewire token` or your backend)')
    .option('--server <host:port>', 'without --token: make a token on the spot for this server (development key unless --key)', arg((v) => parseHostPort(v, '--server')))
    .option('--key <hex32>', 'without --token: the private key to make the token with', arg(parseKey))
    .option('--protocol-id <hex>', 'without --token: protocol id (u64, hex)', arg(parseProtocolId))
    .option('--count <n>', 'messages (or raw payloads) to send', arg((v) => parseUint(v, '--count')), 100)
    .addOption(durationOption('--interval <duration>', 'time between messages', 'ms', { ms: 16, shown: '16ms' }))
    .option('--raw', 'send raw payloads whose byte i is i mod 256 (netcode\'s own example pattern)')
    .option('--size <bytes>', `bytes per message (${SIZE_RANGE.lanes}, default 16); with --raw, per raw payload (${SIZE_RANGE.raw}, default 1200)`, arg((v) => parseSizeFor(v, '--size', `${SIZE_RANGE.lanes} bytes (with --raw: ${SIZE_RANGE.raw})`)))
    .addOption(durationOption('--timeout-after <duration>', 'fail after this long without progress', 's', { ms: 10_000, shown: '10s' }))
    .action(async (o: NetcodeFlags & { timeoutAfter: number }) => {
      if ((o.token === undefined) === (o.server === undefined)) throw new UsageError('connect needs exactly one of --token FILE or --server HOST:PORT');
      if (o.count < 1) throw new UsageError('--count must be at least 1');
      const size = o.size ?? (o.raw === true ? 1200 : 16);
      if (o.raw === true ? size < 1 || size > 1200 : size < 4 || size > 1 << 20) {
        throw new UsageError(`--size: expected a size in ${o.raw === true ? `${SIZE_RANGE.raw} bytes (with --raw)` : `${SIZE_RANGE.lanes} bytes`}, got ${size}`);
      }
      setExit(await runConnect({
        token: o.token, server: o.server as HostPort | undefined, key: o.key, protocolId: o.protocolId, count: o.count,
        intervalMs: o.interval, size, raw: o.raw === true, timeoutMs: o.timeoutAfter,
      }));
    });
}
