import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createSocket } from 'node:dgram';
import { type AddressInfo, isIP, type Socket } from 'node:net';
import type { DataChannel, PeerConnection } from 'node-datachannel';
import { ipGroup } from '../../core/address-group.js';
import { newCounters } from '../../core/counters.js';
import { transportOf, type Address } from '../../core/endpoint.js';
import { checkConfig, GamewireError } from '../../core/errors.js';
import type { Server, ServerEvent, TokenCheck } from '../../netcode/server.js';
import { WEBRTC_SERVER_TRANSPORT } from '../../netcode/options.js';
import { CONNECT_TOKEN_BYTES, type ConnectTokenPublic, readConnectToken } from '../../netcode/wire.js';
import { TAG_BYTES } from '../../crypto/provider.js';
import type { UdpDriver } from './udp-driver.js';

/** Options of {@link WebRtcSignalling.open}. Times in ms. */
export interface WebRtcSignallingOptions {
  /** Host the HTTP signalling endpoint listens on. Default `'127.0.0.1'`. */
  host?: string;
  /** Its TCP port (0: any free one; see `url`). Default 0. */
  port?: number;
  /** Path of the endpoint. Default `'/gamewire/webrtc'`. */
  path?: string;
  /** Address ICE binds the peer connections to, an IP literal (libdatachannel gathers no loopback candidate without it). Default: `host`, unless that is a wildcard. */
  bindAddress?: string;
  /**
   * The one UDP port every peer connection shares (ICE UDP mux: connectivity checks are told apart by
   * their ICE username), so a firewall rule or a container port mapping can expose it. Default: the
   * same number as the signalling `port` (TCP); when that is 0, a free port (see `udpPort` of the
   * instance). `open` binds it once to check it is free; libjuice holds it from the first peer
   * connection to the last, so with no player connected another process could take it. In one
   * process, instances asking for the same port share one socket, bound to the `bindAddress` of the
   * first. Not with `udpPortRange`.
   */
  udpPort?: number;
  /**
   * Instead of the one shared port: each peer connection takes its own UDP port from this inclusive
   * range `[first, last]`; an offer when as many peer connections exist as the range has ports is
   * answered 503 `busy`. Not with `udpPort`.
   */
  udpPortRange?: readonly [number, number];
  /**
   * The public IP address clients reach this server at, when it differs from the address of its
   * interface (1:1 NAT: a cloud VM's private address with a public one mapped to it). The answer's
   * host candidates name it in place of the interface addresses (pion's `SetNAT1To1IPs`). Default:
   * the interface addresses.
   */
  publicAddress?: string;
  /** STUN/TURN servers for the server's peer connections (`'stun:host:port'`). Default none: the server must be reachable. */
  iceServers?: string[];
  /**
   * Peer connections being set up at once (from the offer until the netcode handshake completed: ICE
   * gathering, channel not open, or open without a handshake); more are answered 503 `busy`. Default 64.
   */
  maxPending?: number;
  /**
   * Peer connections being set up at once for one source address (an IPv4 address, or an IPv6 /64,
   * as the HTTP request came from); more are answered 429 `busy`. Behind a reverse proxy every
   * request comes from the proxy: raise it to `maxPending` there. Default 4.
   */
  maxPendingPerAddress?: number;
  /** Open data channels at once; more are answered 503 `busy`. Default the server's `maxClients`. */
  maxPeers?: number;
  /** A peer connection whose channel is not open this long after its answer is closed. Default 10 000. */
  openTimeoutMs?: number;
  /**
   * A channel whose netcode handshake has not completed (the server's `connected` for its client)
   * this long after it opened is closed, and its slot freed. Default 5 000.
   */
  handshakeTimeoutMs?: number;
  /**
   * An HTTP connection whose request headers have not all arrived this long after it opened (or
   * after its previous response) is answered 408 and closed; checked every quarter of it, so it
   * closes within 1.25× of it. Default 2 000 (Node's own: 60 000).
   */
  headersTimeoutMs?: number;
  /** The same for the whole request, body included (≥ `headersTimeoutMs`). Default 5 000 (Node's own: 300 000). */
  requestTimeoutMs?: number;
  /**
   * Open HTTP connections at once. A connection beyond closes the oldest one whose offer is not
   * being answered (one still sending its request, or idle after its answer), so slow clients cannot
   * keep a player out; only when every one is being answered is the new one closed. Default 256.
   */
  maxConnections?: number;
  /** Open HTTP connections at once from one source address (IPv4, or IPv6 /64); more are closed as they are accepted. Default 16. */
  maxConnectionsPerAddress?: number;
  /** Largest request body, bytes; a larger one is answered 413 and its connection closed. Default 16 384. */
  maxBodyBytes?: number;
  /** How long ICE may gather the answer's candidates before the request fails (504 `ice-timeout`). Default 5 000. */
  gatherTimeoutMs?: number;
  /** `Access-Control-Allow-Origin` of the answers (a page on another origin may post offers). Default `'*'`. */
  allowOrigin?: string;
}

/**
 * Counters of a {@link WebRtcSignalling}: `offers` (well-formed requests), `badRequests` (malformed
 * HTTP or JSON, oversized, wrong method or path), `tokensRefused`, `tokensInUse` (409: the token
 * already has a peer connection), `busy` (503), `addressBusy` (429: `maxPendingPerAddress`),
 * `iceTimeouts`, `opened` (data channels), `openTimeouts`, `handshakeTimeouts`, `closed` (peer
 * connections ended), `badMessages` (text or oversized channel messages, dropped), `sendDropped`
 * (datagrams dropped because the channel's buffer was full), `connectionsRefused` (HTTP connections
 * closed as accepted: `maxConnectionsPerAddress`, or `maxConnections` with every connection being
 * answered), `connectionsEvicted` (HTTP connections closed to make room under `maxConnections`),
 * `httpTimeouts` (HTTP connections closed by `headersTimeoutMs` or `requestTimeoutMs`).
 */
export type WebRtcCounter =
  | 'offers' | 'badRequests' | 'tokensRefused' | 'tokensInUse' | 'busy' | 'addressBusy' | 'iceTimeouts' | 'opened'
  | 'openTimeouts' | 'handshakeTimeouts' | 'closed' | 'badMessages' | 'sendDropped' | 'connectionsRefused' | 'connectionsEvicted'
  | 'httpTimeouts';

const COUNTERS: readonly WebRtcCounter[] = [
  'offers', 'badRequests', 'tokensRefused', 'tokensInUse', 'busy', 'addressBusy', 'iceTimeouts', 'opened', 'openTimeouts',
  'handshakeTimeouts', 'closed', 'badMessages', 'sendDropped', 'connectionsRefused', 'connectionsEvicted', 'httpTimeouts',
];

/** Address prefix of the remotes this adapter carries (`"webrtc:17"`). */
export const WEBRTC_ADDRESS_PREFIX = 'webrtc:';
/** Largest datagram taken from a channel, bytes (netcode's largest packet is 1,225). */
const MAX_MESSAGE_BYTES = 1500;
/**
 * Bytes queued in a channel above which datagrams to it are dropped (an unreliable path: dropping is
 * the outcome, and the lanes resend). SCTP's window under loss is small: a deep queue behind it costs
 * seconds of latency, a shallow one drops too much (bench:browser measures both; docs/browser.md).
 */
const MAX_BUFFERED_BYTES = 16 * 1024;
/** How long a peer connection stays after its netcode client disconnected, so the redundant DISCONNECTs leave. */
const CLOSE_LINGER_MS = 1000;

/** The data channel both ends create (pre-negotiated, so no in-band open message to race). */
export const WEBRTC_CHANNEL = { label: 'gamewire', id: 0 } as const;

type Ndc = typeof import('node-datachannel');

interface Peer {
  address: Address;
  pc: PeerConnection;
  dc: DataChannel;
  open: boolean;
  /** Its netcode client connected: no longer pending. */
  joined: boolean;
  /** The token's key in `tokens` (its authentication tag). */
  token: string;
  /** The source address key (`sourceKey`) the offer came from. */
  source: string;
  /** The open timeout, then the handshake timeout. */
  timer: NodeJS.Timeout | undefined;
}

const STATUS: Record<Exclude<TokenCheck, 'ok'>, number> = {
  invalid: 401, expired: 401, 'wrong-server': 401, 'already-connected': 409, used: 401, full: 503,
};

let liveInstances = 0;

/**
 * The offer without the client's ICE candidates: the server answers from the address the client's
 * connectivity checks come from (peer-reflexive), so it never sends a packet to an address a client
 * merely names (a client could otherwise aim the server's checks at a third party).
 */
function withoutCandidates(sdp: string): string {
  return sdp.split(/\r?\n/).filter((l) => !l.startsWith('a=candidate:')).join('\r\n');
}

/**
 * `sdp` with `address` in place of its host candidates' addresses (one candidate per port: interfaces
 * that differ only in their address become one) and in its `c=` lines.
 */
export function withPublicAddress(sdp: string, address: string): string {
  const family = isIP(address) === 6 ? 'IP6' : 'IP4';
  const seen = new Set<string>();
  const out: string[] = [];
  for (const l of sdp.split(/\r?\n/)) {
    if (l.startsWith('c=IN ')) {
      out.push(`c=IN ${family} ${address}`);
      continue;
    }
    if (l.startsWith('a=candidate:')) {
      const f = l.split(' ');
      if (f.length >= 8 && f[6] === 'typ' && f[7] === 'host') {
        f[4] = address;
        const key = `${f[1]} ${f[2].toLowerCase()} ${f[5]}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push(f.join(' '));
        continue;
      }
    }
    out.push(l);
  }
  return out.join('\r\n');
}

/** The per-source key of a request's remote IP (`ipGroup`; '' when the socket has none). */
function sourceKey(ip: string | undefined): string {
  return ip === undefined ? '' : ipGroup(ip);
}

/** Add `d` to `key`'s count in `m`, forgetting keys that reach 0 (so the map holds only live counts). */
function bump(m: Map<string, number>, key: string, d: number): void {
  const n = (m.get(key) ?? 0) + d;
  if (n > 0) m.set(key, n);
  else m.delete(key);
}

/**
 * Browser clients for a netcode `Server` over WebRTC data channels, on the server's own `UdpDriver`
 * (one host, one drive loop: the game sees the same `ServerClient`s whichever way they came). An HTTP
 * endpoint takes `POST {token, sdp}`: the connect token (base64) is checked first
 * (`Server.checkConnectToken`), so a request without a valid, unexpired token costs no peer
 * connection; then the offer is answered. One pre-negotiated unordered, unreliable channel
 * (`WEBRTC_CHANNEL`) carries netcode packets both ways, exactly as UDP datagrams: the netcode
 * handshake, encryption and replay protection run inside it. Needs the optional dependency
 * `node-datachannel`. See docs/browser.md.
 */
export class WebRtcSignalling {
  /** The endpoint's URL (`http://host:port/path`). */
  readonly url: string;
  /** The UDP port every peer connection shares, or undefined with `udpPortRange`. */
  readonly udpPort: number | undefined;

  private readonly ndc: Ndc;
  private readonly http: HttpServer;
  private readonly server: Server;
  private readonly feed: (from: Address, bytes: Uint8Array) => void;
  private readonly opts: Required<Omit<WebRtcSignallingOptions, 'bindAddress' | 'maxPeers' | 'udpPort' | 'udpPortRange' | 'publicAddress'>>
    & { bindAddress: string | undefined; maxPeers: number; ports: readonly [number, number]; mux: boolean; publicAddress: string | undefined };
  private readonly peers = new Map<Address, Peer>();
  // Tokens (by authentication tag) that have a peer connection; bounded by maxPending + maxPeers.
  private readonly tokens = new Set<string>();
  // Pending peer connections and open HTTP connections per source address; only keys with a count.
  private readonly pendingBySource = new Map<string, number>();
  private readonly socketsBySource = new Map<string, number>();
  // Open HTTP connections, oldest first; true while their offer is being answered.
  private readonly sockets = new Map<Socket, boolean>();
  private readonly ctr = newCounters<WebRtcCounter>(COUNTERS);
  private readonly now: () => number;
  private next = 1;
  private pending = 0;
  private closing: Promise<void> | undefined;

  private constructor(
    ndc: Ndc, http: HttpServer, driver: UdpDriver<ServerEvent>, server: Server, opts: WebRtcSignalling['opts'],
  ) {
    this.ndc = ndc;
    this.udpPort = opts.mux ? opts.ports[0] : undefined;
    this.http = http;
    this.server = server;
    this.opts = opts;
    this.now = () => driver.now();
    const a = http.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    this.url = `http://${host}:${a.port}${opts.path}`;
    this.feed = driver.attachTransport(WEBRTC_ADDRESS_PREFIX, (to, bytes) => this.send(to, bytes));
    server.registerTransport(WEBRTC_ADDRESS_PREFIX, WEBRTC_SERVER_TRANSPORT);
    // First in line, so a user's listener that throws cannot keep a completed handshake from being seen.
    driver.prependListener('event', (e) => {
      if ((e.type !== 'connected' && e.type !== 'disconnected') || transportOf(e.client.address) !== WEBRTC_ADDRESS_PREFIX) return;
      const p = this.peers.get(e.client.address);
      if (p === undefined) return;
      if (e.type === 'connected') this.joined(p);
      else setTimeout(() => this.drop(p), CLOSE_LINGER_MS).unref();
    });
    http.on('connection', (socket: Socket) => this.onConnection(socket));
    http.on('clientError', (err: NodeJS.ErrnoException, socket: Socket) => this.onClientError(err, socket));
    http.on('request', (req, res) => this.onRequest(req, res));
  }

  /**
   * Start the signalling endpoint for `server`, driven by `driver` (from `UdpDriver.openEndpoint`).
   * Rejects when `node-datachannel` is not installed (`invalid-state`) or the port cannot be bound;
   * throws `invalid-config` on bad options.
   */
  static async open(driver: UdpDriver<ServerEvent>, server: Server, options: WebRtcSignallingOptions = {}): Promise<WebRtcSignalling> {
    checkConfig(typeof options === 'object' && options !== null, 'options must be an object');
    const host = options.host ?? '127.0.0.1';
    const wildcard = host === '0.0.0.0' || host === '::';
    const port = options.port ?? 0;
    const range = options.udpPortRange;
    checkConfig(options.udpPort === undefined || range === undefined, 'udpPort and udpPortRange exclude each other');
    const udpPort = options.udpPort ?? port;
    const opts: WebRtcSignalling['opts'] = {
      host,
      port,
      path: options.path ?? '/gamewire/webrtc',
      bindAddress: options.bindAddress ?? (wildcard ? undefined : host),
      mux: range === undefined,
      ports: range === undefined ? [udpPort, udpPort] : [range[0], range[1]],
      publicAddress: options.publicAddress,
      iceServers: options.iceServers ?? [],
      maxPending: options.maxPending ?? 64,
      maxPendingPerAddress: options.maxPendingPerAddress ?? 4,
      maxPeers: options.maxPeers ?? server.maxClients,
      openTimeoutMs: options.openTimeoutMs ?? 10_000,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? 5_000,
      gatherTimeoutMs: options.gatherTimeoutMs ?? 5_000,
      headersTimeoutMs: options.headersTimeoutMs ?? 2_000,
      requestTimeoutMs: options.requestTimeoutMs ?? 5_000,
      maxConnections: options.maxConnections ?? 256,
      maxConnectionsPerAddress: options.maxConnectionsPerAddress ?? 16,
      maxBodyBytes: options.maxBodyBytes ?? 16_384,
      allowOrigin: options.allowOrigin ?? '*',
    };
    checkConfig(Number.isInteger(opts.port) && opts.port >= 0 && opts.port <= 65535, 'port must be 0..65535');
    if (range === undefined) {
      checkConfig(Number.isInteger(udpPort) && udpPort >= 0 && udpPort <= 65535, 'udpPort must be 0..65535');
    } else {
      checkConfig(Array.isArray(range) && range.length === 2 && range.every((p) => Number.isInteger(p) && p >= 1 && p <= 65535)
        && range[0] <= range[1], 'udpPortRange must be [first, last] with 1 ≤ first ≤ last ≤ 65535');
    }
    checkConfig(options.bindAddress === undefined || (typeof options.bindAddress === 'string' && isIP(options.bindAddress) !== 0),
      'bindAddress must be an IP address');
    checkConfig(opts.publicAddress === undefined || (typeof opts.publicAddress === 'string' && isIP(opts.publicAddress) !== 0),
      'publicAddress must be an IP address');
    checkConfig(typeof opts.path === 'string' && opts.path.startsWith('/'), 'path must start with /');
    checkConfig(Array.isArray(opts.iceServers) && opts.iceServers.every((s) => typeof s === 'string'), 'iceServers must be strings');
    for (const k of [
      'maxPending', 'maxPendingPerAddress', 'maxPeers', 'openTimeoutMs', 'handshakeTimeoutMs', 'gatherTimeoutMs', 'headersTimeoutMs',
      'requestTimeoutMs', 'maxConnections', 'maxConnectionsPerAddress', 'maxBodyBytes',
    ] as const) {
      checkConfig(Number.isInteger(opts[k]) && opts[k] >= 1, `${k} must be an integer ≥ 1`);
    }
    checkConfig(opts.requestTimeoutMs >= opts.headersTimeoutMs, 'requestTimeoutMs must be ≥ headersTimeoutMs');
    let ndc: Ndc;
    try {
      ndc = await import('node-datachannel');
    } catch (err) {
      throw new GamewireError('invalid-state', `WebRTC needs the optional dependency node-datachannel (npm install node-datachannel): ${String(err)}`);
    }
    if (opts.mux) {
      const bound = await WebRtcSignalling.probePort(opts);
      opts.ports = [bound, bound];
    }
    const http = createServer({
      headersTimeout: opts.headersTimeoutMs,
      requestTimeout: opts.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.floor(opts.headersTimeoutMs / 4)),
    });
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(opts.port, host, () => {
        http.off('error', reject);
        resolve();
      });
    });
    liveInstances++;
    return new WebRtcSignalling(ndc, http, driver, server, opts);
  }

  /**
   * Bind the shared port once and release it, so a port in use or an address not of this host fails
   * `open`, not the first player; for port 0, the free port found. libjuice binds it again with the
   * first peer connection and releases it with the last.
   */
  private static async probePort(opts: WebRtcSignalling['opts']): Promise<number> {
    const address = opts.bindAddress ?? (opts.host === '::' ? '::' : '0.0.0.0');
    const socket = createSocket(isIP(address) === 6 ? 'udp6' : 'udp4');
    try {
      return await new Promise<number>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind({ port: opts.ports[0], address, exclusive: true }, () => resolve(socket.address().port));
      });
    } catch (err) {
      throw new GamewireError('invalid-config',
        `WebRTC cannot use UDP port ${opts.ports[0]} on ${address} (in use, or not an address of this host? set udpPort or bindAddress): ${String(err)}`);
    } finally {
      socket.close();
    }
  }

  /** libdatachannel's configuration of every server-side peer connection. */
  private static rtcConfig(opts: WebRtcSignalling['opts']): ConstructorParameters<Ndc['PeerConnection']>[1] {
    return {
      iceServers: opts.iceServers,
      ...(opts.bindAddress === undefined ? {} : { bindAddress: opts.bindAddress }),
      enableIceUdpMux: opts.mux,
      portRangeBegin: opts.ports[0],
      portRangeEnd: opts.ports[1],
    };
  }

  /** Open data channels. */
  get size(): number {
    let n = 0;
    for (const p of this.peers.values()) if (p.open) n++;
    return n;
  }

  /** A copy of the counters. */
  counters(): Readonly<Record<WebRtcCounter, number>> {
    return { ...this.ctr };
  }

  /**
   * Stop taking offers and close every peer connection (close the netcode server's clients first,
   * and let the driver linger, so their DISCONNECTs leave). The last instance in the process also
   * releases node-datachannel's threads (`cleanup()`), without which Node does not exit.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await new Promise<void>((resolve) => {
        this.http.close(() => resolve());
        this.http.closeAllConnections();
      });
      for (const p of [...this.peers.values()]) this.drop(p);
      if (--liveInstances === 0) this.ndc.cleanup();
    })();
    return this.closing;
  }

  private send(to: Address, bytes: Uint8Array): void {
    const p = this.peers.get(to);
    if (p === undefined || !p.open) return;
    if (p.dc.bufferedAmount() > MAX_BUFFERED_BYTES) {
      this.ctr.sendDropped++;
      return;
    }
    try {
      p.dc.sendMessageBinary(bytes);
    } catch {
      this.ctr.sendDropped++;
    }
  }

  private onConnection(socket: Socket): void {
    const key = sourceKey(socket.remoteAddress);
    if ((this.socketsBySource.get(key) ?? 0) >= this.opts.maxConnectionsPerAddress
      || (this.sockets.size >= this.opts.maxConnections && !this.evictOne())) {
      this.ctr.connectionsRefused++;
      socket.destroy();
      return;
    }
    bump(this.socketsBySource, key, 1);
    this.sockets.set(socket, false);
    socket.once('close', () => {
      bump(this.socketsBySource, key, -1);
      this.sockets.delete(socket);
    });
  }

  /** Close the oldest connection whose offer is not being answered; false if there is none. */
  private evictOne(): boolean {
    for (const [socket, answering] of this.sockets) {
      if (answering) continue;
      this.sockets.delete(socket);
      this.ctr.connectionsEvicted++;
      socket.destroy();
      return true;
    }
    return false;
  }

  /** Node's default answer to a client error (408 a timeout, 431 headers too large, 400 other bad HTTP), counted. */
  private onClientError(err: NodeJS.ErrnoException, socket: Socket): void {
    const timeout = err.code === 'ERR_HTTP_REQUEST_TIMEOUT';
    if (timeout) this.ctr.httpTimeouts++;
    else if (err.code?.startsWith('HPE_') === true) this.ctr.badRequests++;
    if (socket.writable && socket.bytesWritten === 0 && err.code !== 'ECONNRESET') {
      const status = timeout ? '408 Request Timeout'
        : err.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : '400 Bad Request';
      socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\n\r\n`);
    }
    socket.destroy();
  }

  private reply(res: ServerResponse, status: number, body: object): void {
    if (res.headersSent) return;
    res.writeHead(status, {
      'content-type': 'application/json',
      'access-control-allow-origin': this.opts.allowOrigin,
      'cache-control': 'no-store',
    });
    res.end(JSON.stringify(body));
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const path = (req.url ?? '').split('?')[0];
    if (path !== this.opts.path) {
      this.ctr.badRequests++;
      this.reply(res, 404, { error: 'not-found' });
      req.resume();
      return;
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204, {
        'access-control-allow-origin': this.opts.allowOrigin,
        'access-control-allow-methods': 'POST',
        'access-control-allow-headers': 'content-type',
      });
      res.end();
      return;
    }
    if (req.method !== 'POST') {
      this.ctr.badRequests++;
      this.reply(res, 405, { error: 'method' });
      req.resume();
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > this.opts.maxBodyBytes) {
        this.ctr.badRequests++;
        this.reply(res, 413, { error: 'too-large' });
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      if (size > this.opts.maxBodyBytes) return;
      const socket = req.socket;
      if (this.sockets.has(socket)) {
        this.sockets.set(socket, true);
        res.once('close', () => {
          if (this.sockets.has(socket)) this.sockets.set(socket, false);
        });
      }
      void this.onOffer(Buffer.concat(chunks).toString('utf8'), sourceKey(req.socket.remoteAddress), res);
    });
    req.on('error', () => undefined);
  }

  private async onOffer(text: string, source: string, res: ServerResponse): Promise<void> {
    let token: Uint8Array | undefined;
    let sdp: string | undefined;
    try {
      const j = JSON.parse(text) as unknown;
      if (typeof j === 'object' && j !== null) {
        const o = j as Record<string, unknown>;
        if (typeof o.token === 'string') token = new Uint8Array(Buffer.from(o.token, 'base64'));
        if (typeof o.sdp === 'string') sdp = o.sdp;
      }
    } catch {
      /* answered below */
    }
    if (token === undefined || token.length !== CONNECT_TOKEN_BYTES || sdp === undefined || sdp.length === 0) {
      this.ctr.badRequests++;
      this.reply(res, 400, { error: 'bad-request' });
      return;
    }
    this.ctr.offers++;
    const check = this.server.checkConnectToken(this.now(), token);
    if (check !== 'ok') {
      this.ctr[check === 'full' ? 'busy' : 'tokensRefused']++;
      this.reply(res, STATUS[check], { error: check });
      return;
    }
    // The check above decrypted the token, so its tag is authentic: one tag, one token.
    const priv = (readConnectToken(token) as { value: ConnectTokenPublic }).value.privateData;
    const tokenKey = Buffer.from(priv.subarray(priv.length - TAG_BYTES)).toString('base64');
    if (this.tokens.has(tokenKey)) {
      this.ctr.tokensInUse++;
      this.reply(res, 409, { error: 'already-connected' });
      return;
    }
    if ((this.pendingBySource.get(source) ?? 0) >= this.opts.maxPendingPerAddress) {
      this.ctr.addressBusy++;
      this.reply(res, 429, { error: 'busy' });
      return;
    }
    if (this.closing !== undefined || this.pending >= this.opts.maxPending || this.size >= this.opts.maxPeers
      || (!this.opts.mux && this.peers.size > this.opts.ports[1] - this.opts.ports[0])) {
      this.ctr.busy++;
      this.reply(res, 503, { error: 'busy' });
      return;
    }
    const address = `${WEBRTC_ADDRESS_PREFIX}${this.next++}`;
    let peer: Peer;
    try {
      peer = this.makePeer(address, withoutCandidates(sdp), tokenKey, source);
    } catch {
      this.ctr.badRequests++;
      this.reply(res, 400, { error: 'bad-offer' });
      return;
    }
    const answer = await this.gathered(peer);
    if (answer === undefined) {
      this.ctr.iceTimeouts++;
      this.drop(peer);
      this.reply(res, 504, { error: 'ice-timeout' });
      return;
    }
    this.reply(res, 200, { type: 'answer', sdp: this.opts.publicAddress === undefined ? answer : withPublicAddress(answer, this.opts.publicAddress) });
  }

  private makePeer(address: Address, offer: string, token: string, source: string): Peer {
    const pc = new this.ndc.PeerConnection(address, WebRtcSignalling.rtcConfig(this.opts));
    let dc: DataChannel;
    try {
      // The offer first: a channel made before it would make libdatachannel offer too (glare).
      pc.setRemoteDescription(offer, 'offer' as never);
      dc = pc.createDataChannel(WEBRTC_CHANNEL.label, { negotiated: true, id: WEBRTC_CHANNEL.id, unordered: true, maxRetransmits: 0 });
    } catch (err) {
      pc.close();
      throw err;
    }
    const peer: Peer = { address, pc, dc, open: false, joined: false, token, source, timer: undefined };
    this.pending++;
    bump(this.pendingBySource, source, 1);
    this.tokens.add(token);
    this.peers.set(address, peer);
    peer.timer = setTimeout(() => {
      peer.timer = undefined;
      this.ctr.openTimeouts++;
      this.drop(peer);
    }, this.opts.openTimeoutMs).unref();
    dc.onOpen(() => {
      if (peer.open || this.peers.get(address) !== peer) return;
      peer.open = true;
      this.ctr.opened++;
      clearTimeout(peer.timer);
      peer.timer = peer.joined ? undefined : setTimeout(() => {
        peer.timer = undefined;
        this.ctr.handshakeTimeouts++;
        this.drop(peer);
      }, this.opts.handshakeTimeoutMs).unref();
    });
    dc.onMessage((msg) => {
      const b = typeof msg === 'string' ? undefined : msg instanceof ArrayBuffer ? new Uint8Array(msg) : msg;
      if (b === undefined || b.length > MAX_MESSAGE_BYTES) {
        this.ctr.badMessages++;
        return;
      }
      this.feed(address, b);
    });
    dc.onClosed(() => this.drop(peer));
    pc.onStateChange((state) => {
      if (state === 'failed' || state === 'closed') this.drop(peer);
    });
    return peer;
  }

  /** The answer once ICE gathered its candidates, or undefined after `gatherTimeoutMs`. */
  private gathered(peer: Peer): Promise<string | undefined> {
    return new Promise((resolve) => {
      const done = (): boolean => {
        if (peer.pc.gatheringState() !== 'complete') return false;
        clearTimeout(timer);
        resolve(peer.pc.localDescription()?.sdp);
        return true;
      };
      const timer = setTimeout(() => resolve(undefined), this.opts.gatherTimeoutMs);
      if (!done()) peer.pc.onGatheringStateChange(() => void done());
    });
  }

  /** Its netcode client connected: it stops counting as pending and its timeout ends. */
  private joined(peer: Peer): void {
    if (peer.joined) return;
    peer.joined = true;
    this.pending--;
    bump(this.pendingBySource, peer.source, -1);
    clearTimeout(peer.timer);
    peer.timer = undefined;
  }

  private drop(peer: Peer): void {
    if (this.peers.get(peer.address) !== peer) return;
    this.peers.delete(peer.address);
    this.tokens.delete(peer.token);
    if (!peer.joined) {
      this.pending--;
      bump(this.pendingBySource, peer.source, -1);
    }
    clearTimeout(peer.timer);
    this.ctr.closed++;
    try {
      peer.dc.close();
    } catch {
      /* already closed */
    }
    try {
      peer.pc.close();
    } catch {
      /* already closed */
    }
  }
}
