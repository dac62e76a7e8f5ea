import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { Duplex } from 'node:stream';
import { createSocket } from 'node:dgram';
import { type AddressInfo, isIP, type Socket } from 'node:net';
import type { DataChannel, DataChannelInitConfig, PeerConnection } from 'node-datachannel';
import { ipGroup } from '../../core/address-group.js';
import { newCounters } from '../../core/counters.js';
import { transportOf, type Address } from '../../core/endpoint.js';
import { checkConfig, GamewireError } from '../../core/errors.js';
import type { Server, ServerClient, ServerEvent, TokenCheck } from '../../netcode/server.js';
import { WEBRTC_LATENCY_SERVER_TRANSPORT, WEBRTC_SERVER_TRANSPORT, WEBSOCKET_TRANSPORT } from '../../netcode/options.js';
import { CONNECT_TOKEN_BYTES, type ConnectTokenPublic, readConnectToken, REQUEST_BYTES, writeRequestPacket } from '../../netcode/wire.js';
import { TAG_BYTES } from '../../crypto/provider.js';
import { readWebSocketProtocols, WEBSOCKET_PROTOCOL } from '../../netcode/websocket-protocol.js';
import type { UdpDriver } from './udp-driver.js';

/** Options of {@link BrowserGateway.open}. Times in ms. */
export interface BrowserGatewayOptions {
  /** Host the HTTP(S) endpoint listens on. Default `'127.0.0.1'`. */
  host?: string;
  /** Its TCP port (0: any free one; see `url`). Default 0. */
  port?: number;
  /** Path of the endpoint: WebRTC offers are POSTed to it, WebSockets open on it. Default `'/gamewire'`. */
  path?: string;
  /**
   * Serve HTTPS and WSS with this certificate chain and private key (PEM), as a page served over
   * HTTPS needs (it cannot reach `http:` or `ws:`). Default: plain HTTP (behind a TLS-terminating
   * proxy, docs/deploy.md).
   */
  tls?: { cert: string | Uint8Array; key: string | Uint8Array };
  /** Take browser clients over WebRTC data channels (needs the optional dependency `node-datachannel`). Default true. */
  webrtc?: boolean;
  /**
   * Take clients over WebSockets on the same port and path (needs the optional dependency `ws`): the
   * fallback for networks that block UDP. Default true.
   */
  webSocket?: boolean;
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
  /**
   * What the server's end of each WebRTC data channel spends to recover a lost message. `'bytes'`
   * (default): its SCTP resends a lost chunk, and the lanes ride each piece once more. `'latency'`:
   * SCTP never resends (`maxRetransmits: 0`) and the lanes ride each piece twice, so fewer messages
   * wait for a resend and the ones behind them in an ordered lane wait less; it costs bytes, mostly
   * the FORWARD-TSN and SACK that the two ends' SCTPs exchange for every chunk given up (figures:
   * bench/README.md, "browser data channel probe"). Give the browser's `connect` `channels:
   * { redundancy: 2 }` with it. WebSocket clients are not affected.
   */
  webrtcFavor?: 'bytes' | 'latency';
  /** STUN/TURN servers for the server's peer connections (`'stun:host:port'`). Default none: the server must be reachable. */
  iceServers?: string[];
  /**
   * Peer connections and WebSockets being set up at once (from the offer or upgrade until the netcode
   * handshake completed, or a resuming WebSocket proved its client: ICE gathering, channel not open,
   * or open without a handshake); more are answered 503 `busy`. Default 64.
   */
  maxPending?: number;
  /**
   * The same for one source address (an IPv4 address, or an IPv6 /64, as the HTTP request came
   * from); more are answered 429 `busy`. Behind a reverse proxy every request comes from the proxy:
   * raise it to `maxPending` there. Default 4.
   */
  maxPendingPerAddress?: number;
  /** Open data channels and WebSockets at once; more are answered 503 `busy`. Default the server's `maxClients`. */
  maxPeers?: number;
  /** A peer connection whose channel is not open this long after its answer is closed. Default 10 000. */
  openTimeoutMs?: number;
  /**
   * A channel or WebSocket whose netcode handshake has not completed (the server's `connected` for
   * its client) this long after it opened is closed, and its slot freed. Default 5 000.
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
  /**
   * `Access-Control-Allow-Origin` of the answers (a page on another origin may post offers); unless
   * `'*'`, a WebSocket whose `Origin` differs is refused (403). Default `'*'`.
   */
  allowOrigin?: string;
}

/**
 * Counters of a {@link BrowserGateway}: `offers` (well-formed WebRTC requests), `upgrades`
 * (well-formed WebSocket requests), `badRequests` (malformed HTTP, JSON or WebSocket request,
 * oversized, wrong method, path or origin), `tokensRefused`, `tokensInUse` (409: the token already
 * has a peer connection, or a WebSocket), `busy` (503), `addressBusy` (429: `maxPendingPerAddress`),
 * `iceTimeouts`, `opened` (data channels), `webSockets` (WebSockets opened), `openTimeouts`,
 * `handshakeTimeouts`, `closed` (peer connections and WebSockets ended), `badMessages` (text or
 * oversized messages, dropped; an oversized WebSocket frame also closes its WebSocket), `sendDropped`
 * (datagrams dropped because the channel's or WebSocket's buffer was full), `connectionsRefused` (HTTP connections
 * closed as accepted: `maxConnectionsPerAddress`, or `maxConnections` with every connection being
 * answered), `connectionsEvicted` (HTTP connections closed to make room under `maxConnections`),
 * `httpTimeouts` (HTTP connections closed by `headersTimeoutMs` or `requestTimeoutMs`).
 */
export type BrowserGatewayCounter =
  | 'offers' | 'upgrades' | 'badRequests' | 'tokensRefused' | 'tokensInUse' | 'busy' | 'addressBusy' | 'iceTimeouts' | 'opened'
  | 'webSockets' | 'openTimeouts' | 'handshakeTimeouts' | 'closed' | 'badMessages' | 'sendDropped' | 'connectionsRefused'
  | 'connectionsEvicted' | 'httpTimeouts';

const COUNTERS: readonly BrowserGatewayCounter[] = [
  'offers', 'upgrades', 'badRequests', 'tokensRefused', 'tokensInUse', 'busy', 'addressBusy', 'iceTimeouts', 'opened',
  'webSockets', 'openTimeouts', 'handshakeTimeouts', 'closed', 'badMessages', 'sendDropped', 'connectionsRefused',
  'connectionsEvicted', 'httpTimeouts',
];

/** Address prefix of the remotes that came over WebRTC (`"webrtc:17"`). */
export const WEBRTC_ADDRESS_PREFIX = 'webrtc:';
/** Address prefix of the remotes that came over a WebSocket (`"ws:17"`). */
export const WEBSOCKET_ADDRESS_PREFIX = 'ws:';
/** Largest datagram taken from a channel, bytes (netcode's largest packet is 1,225). */
const MAX_MESSAGE_BYTES = 1500;
/**
 * Bytes queued in a channel above which datagrams to it are dropped (an unreliable path: dropping is
 * the outcome, and the lanes resend). SCTP's window under loss is small: a deep queue behind it costs
 * seconds of latency, a shallow one drops too much (bench:browser measures both; docs/browser.md).
 */
const MAX_BUFFERED_BYTES = 16 * 1024;
/**
 * Bytes queued on a WebSocket above which datagrams to it are dropped (counted `sendDropped`): what a
 * client that stops reading can make the server hold. The lanes recover a dropped packet once the
 * client acks a later one; the path's delay-based rate keeps the queue far below this otherwise.
 */
const MAX_WEBSOCKET_BUFFERED_BYTES = 256 * 1024;
/**
 * Bytes queued on a block lane's own WebSocket above which the lane's slices wait (`holdBulk`) until
 * the socket has written them: TCP, not the path, sets that lane's rate (`bulkRateBytesPerSec`).
 */
const BULK_HIGH_BYTES = 64 * 1024;
/** How long a peer connection stays after its netcode client disconnected, so the redundant DISCONNECTs leave. */
const CLOSE_LINGER_MS = 1000;

/** The data channel both ends create (pre-negotiated, so no in-band open message to race). */
export const WEBRTC_CHANNEL = { label: 'gamewire', id: 0 } as const;
/**
 * The server's end of the channel: unordered and reliable (SCTP resends a lost chunk; each end sets
 * the reliability of what it sends). An end that abandons chunks (`maxRetransmits: 0`) has to move
 * its peer past them with FORWARD-TSN: usrsctp sends one with every SACK that still reports the
 * abandoned chunk missing, and Chromium's SCTP (dcsctp) answers each with a SACK, so under steady
 * loss the two ends keep several such packets per message going (docs/browser.md). Resent chunks are
 * few (the loss rate) and what waits for them is bounded by usrsctp's send buffer, as before.
 */
const SERVER_CHANNEL = { negotiated: true, id: WEBRTC_CHANNEL.id, unordered: true } as const;
/** The server's end with `webrtcFavor: 'latency'`: a lost chunk is given up at once, the lanes' rides and resends recover it. */
const LATENCY_SERVER_CHANNEL = { ...SERVER_CHANNEL, maxRetransmits: 0 } as const;

type Ndc = typeof import('node-datachannel');
type Ws = typeof import('ws');
type WsSocket = import('ws').WebSocket;

interface Peer {
  address: Address;
  /** A WebRTC peer connection and its channel, or a WebSocket. */
  rtc: { pc: PeerConnection; dc: DataChannel } | undefined;
  ws: WsSocket | undefined;
  open: boolean;
  /** Its netcode client connected: no longer pending. */
  joined: boolean;
  /** The token's key in `tokens` (its authentication tag). */
  token: string;
  /** The source address key (`sourceKey`) the offer came from. */
  source: string;
  /** The open timeout, then the handshake timeout. */
  timer: NodeJS.Timeout | undefined;
  /** The netcode connection request its token makes, handed to the server once the peer opens (none for a resumption). */
  request: Uint8Array | undefined;
  /**
   * Once bound, a WebSocket of a block lane's own: the client whose lane it carries, whether that lane
   * is held back (`ServerClient.holdBulk`: the WebSocket holds more than `BULK_HIGH_BYTES`), and the
   * callback of each frame written to it (`drainBulk`).
   */
  bulk?: { client: ServerClient; held: boolean; written: () => void };
}

/** A peer the gateway let in: its key in `tokens`, and the connection request its token makes (none for a resumption). */
interface Admission {
  key: string;
  request: Uint8Array | undefined;
}

/** Why the gateway turned a peer away: the HTTP status and the error it answers. */
interface Refusal {
  status: number;
  error: string;
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
 * Browser clients for a netcode `Server`, over WebRTC data channels and WebSockets, on the server's
 * own `UdpDriver` (one host, one drive loop: the game sees the same `ServerClient`s whichever way they
 * came). One HTTP(S) endpoint (`url`) takes both:
 * - `POST {token, sdp}`: the connect token (base64) is checked first (`Server.checkConnectToken`), so
 *   a request without a valid, unexpired token costs no peer connection; then the offer is answered.
 *   One pre-negotiated unordered channel (`WEBRTC_CHANNEL`) carries netcode packets.
 * - a WebSocket upgrade whose subprotocols carry the token (`WEBSOCKET_PROTOCOL`): checked the same
 *   way before the upgrade completes. Each binary message is one netcode packet.
 *
 * Either way the packets are exactly UDP's: the netcode handshake, encryption and replay protection
 * run inside. WebRTC needs the optional dependency `node-datachannel`, WebSockets `ws`. See
 * docs/browser.md.
 */
export class BrowserGateway {
  /** The endpoint's URL (`http://host:port/path`, or `https:` with `tls`); WebSockets open at the same URL as `ws:`/`wss:`. */
  readonly url: string;
  /** The UDP port every peer connection shares, or undefined with `udpPortRange`. */
  readonly udpPort: number | undefined;
  /** What its data channels favor under loss (`BrowserGatewayOptions.webrtcFavor`). */
  readonly webrtcFavor: 'bytes' | 'latency';

  private readonly ndc: Ndc | undefined;
  private readonly wss: InstanceType<Ws['WebSocketServer']> | undefined;
  private readonly http: HttpServer;
  private readonly server: Server;
  private readonly feed: (from: Address, bytes: Uint8Array) => void;
  private readonly opts: Required<Omit<BrowserGatewayOptions, 'bindAddress' | 'maxPeers' | 'udpPort' | 'udpPortRange' | 'publicAddress' | 'tls'>>
    & { bindAddress: string | undefined; maxPeers: number; ports: readonly [number, number]; mux: boolean; publicAddress: string | undefined };
  private readonly peers = new Map<Address, Peer>();
  // The server's end of every data channel (`webrtcFavor`).
  private readonly channelInit: DataChannelInitConfig;
  // Tokens (by authentication tag, 'rtc:' or 'ws:' before it) that have a peer connection or a
  // WebSocket: one of each, so a client may try both at once; bounded by 2 × (maxPending + maxPeers).
  private readonly tokens = new Set<string>();
  // Pending peer connections and open HTTP connections per source address; only keys with a count.
  private readonly pendingBySource = new Map<string, number>();
  private readonly socketsBySource = new Map<string, number>();
  // Open HTTP connections, oldest first. `byRemote` finds one by its remote address and port (under
  // TLS a request's socket is not the one accepted).
  private readonly sockets = new Map<Socket, HttpConnection>();
  private readonly byRemote = new Map<string, Socket>();
  private readonly ctr = newCounters<BrowserGatewayCounter>(COUNTERS);
  private readonly now: () => number;
  private next = 1;
  // Numbers the keys of resumptions and block-lane WebSockets: each claim is a key of its own.
  private claimCount = 0;
  private pending = 0;
  private closing: Promise<void> | undefined;

  private constructor(
    ndc: Ndc | undefined, ws: Ws | undefined, http: HttpServer, tls: boolean, driver: UdpDriver<ServerEvent>, server: Server,
    opts: BrowserGateway['opts'],
  ) {
    this.ndc = ndc;
    this.udpPort = ndc !== undefined && opts.mux ? opts.ports[0] : undefined;
    this.http = http;
    this.server = server;
    this.opts = opts;
    this.now = () => driver.now();
    const a = http.address() as AddressInfo;
    const host = a.family === 'IPv6' ? `[${a.address}]` : a.address;
    this.url = `${tls ? 'https' : 'http'}://${host}:${a.port}${opts.path}`;
    const send = (to: Address, bytes: Uint8Array): void => this.send(to, bytes);
    const feedRtc = ndc === undefined ? undefined : driver.attachTransport(WEBRTC_ADDRESS_PREFIX, send);
    const feedWs = ws === undefined ? undefined : driver.attachTransport(WEBSOCKET_ADDRESS_PREFIX, send);
    this.feed = (from, bytes) => (from.startsWith(WEBRTC_ADDRESS_PREFIX) ? feedRtc : feedWs)!(from, bytes);
    this.webrtcFavor = opts.webrtcFavor;
    const latency = opts.webrtcFavor === 'latency';
    this.channelInit = latency ? LATENCY_SERVER_CHANNEL : SERVER_CHANNEL;
    if (ndc !== undefined) server.registerTransport(WEBRTC_ADDRESS_PREFIX, latency ? WEBRTC_LATENCY_SERVER_TRANSPORT : WEBRTC_SERVER_TRANSPORT);
    if (ws !== undefined) {
      server.registerTransport(WEBSOCKET_ADDRESS_PREFIX, WEBSOCKET_TRANSPORT);
      this.wss = new ws.WebSocketServer({
        noServer: true, maxPayload: MAX_MESSAGE_BYTES, perMessageDeflate: false, clientTracking: false,
        handleProtocols: () => WEBSOCKET_PROTOCOL,
      });
      http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => this.onUpgrade(req, socket as Socket, head));
    }
    // First in line, so a user's listener that throws cannot keep a completed handshake from being seen.
    driver.prependListener('event', (e) => {
      if (e.type === 'migrated') {
        // The client proved its new path: that peer carries it now; the one it left goes.
        const moved = this.peers.get(e.client.address);
        if (moved !== undefined) this.joined(moved);
        const left = this.peers.get(e.previous);
        if (left !== undefined) this.drop(left);
        return;
      }
      if (e.type === 'bulk') {
        // The client proved its block lane's WebSocket: it is no longer pending; one it replaced goes.
        const bulk = this.peers.get(e.address);
        if (bulk !== undefined) {
          this.joined(bulk);
          bulk.bulk = { client: e.client, held: false, written: () => this.drainBulk(bulk) };
        }
        const old = e.previous === undefined ? undefined : this.peers.get(e.previous);
        if (old !== undefined) this.drop(old);
        return;
      }
      if (e.type === 'disconnected' && e.client.bulkAddress !== undefined) {
        const bulk = this.peers.get(e.client.bulkAddress);
        if (bulk !== undefined) setTimeout(() => this.drop(bulk), CLOSE_LINGER_MS).unref();
      }
      if (e.type !== 'connected' && e.type !== 'disconnected') return;
      const t = transportOf(e.client.address);
      if (t !== WEBRTC_ADDRESS_PREFIX && t !== WEBSOCKET_ADDRESS_PREFIX) return;
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
   * Start the endpoint for `server`, driven by `driver` (from `UdpDriver.openEndpoint`). Rejects when
   * `node-datachannel` (for `webrtc`) or `ws` (for `webSocket`) is not installed (`invalid-state`),
   * or the port cannot be bound; throws `invalid-config` on bad options (a `tls` certificate or key
   * Node cannot read included).
   */
  static async open(driver: UdpDriver<ServerEvent>, server: Server, options: BrowserGatewayOptions = {}): Promise<BrowserGateway> {
    checkConfig(typeof options === 'object' && options !== null, 'options must be an object');
    const host = options.host ?? '127.0.0.1';
    const wildcard = host === '0.0.0.0' || host === '::';
    const port = options.port ?? 0;
    const range = options.udpPortRange;
    checkConfig(options.udpPort === undefined || range === undefined, 'udpPort and udpPortRange exclude each other');
    const udpPort = options.udpPort ?? port;
    const opts: BrowserGateway['opts'] = {
      host,
      port,
      path: options.path ?? '/gamewire',
      webrtc: options.webrtc ?? true,
      webSocket: options.webSocket ?? true,
      bindAddress: options.bindAddress ?? (wildcard ? undefined : host),
      mux: range === undefined,
      ports: range === undefined ? [udpPort, udpPort] : [range[0], range[1]],
      publicAddress: options.publicAddress,
      webrtcFavor: options.webrtcFavor ?? 'bytes',
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
    checkConfig(typeof opts.webrtc === 'boolean' && typeof opts.webSocket === 'boolean', 'webrtc and webSocket must be booleans');
    checkConfig(opts.webrtc || opts.webSocket, 'webrtc and webSocket are both false: nothing to serve');
    const tls = options.tls;
    checkConfig(tls === undefined || (typeof tls === 'object' && tls !== null && isPem(tls.cert) && isPem(tls.key)),
      'tls must be { cert, key } in PEM (strings or bytes)');
    checkConfig(opts.webrtcFavor === 'bytes' || opts.webrtcFavor === 'latency', "webrtcFavor must be 'bytes' or 'latency'");
    checkConfig(Array.isArray(opts.iceServers) && opts.iceServers.every((s) => typeof s === 'string'), 'iceServers must be strings');
    for (const k of [
      'maxPending', 'maxPendingPerAddress', 'maxPeers', 'openTimeoutMs', 'handshakeTimeoutMs', 'gatherTimeoutMs', 'headersTimeoutMs',
      'requestTimeoutMs', 'maxConnections', 'maxConnectionsPerAddress', 'maxBodyBytes',
    ] as const) {
      checkConfig(Number.isInteger(opts[k]) && opts[k] >= 1, `${k} must be an integer ≥ 1`);
    }
    checkConfig(opts.requestTimeoutMs >= opts.headersTimeoutMs, 'requestTimeoutMs must be ≥ headersTimeoutMs');
    let ndc: Ndc | undefined;
    let ws: Ws | undefined;
    if (opts.webrtc) {
      try {
        ndc = await import('node-datachannel');
      } catch (err) {
        throw new GamewireError('invalid-state',
          `WebRTC needs the optional dependency node-datachannel (npm install node-datachannel, or webrtc: false): ${String(err)}`);
      }
    }
    if (opts.webSocket) {
      try {
        ws = await import('ws');
      } catch (err) {
        throw new GamewireError('invalid-state', `WebSockets need the optional dependency ws (npm install ws, or webSocket: false): ${String(err)}`);
      }
    }
    if (ndc !== undefined && opts.mux) {
      const bound = await BrowserGateway.probePort(opts);
      opts.ports = [bound, bound];
    }
    const httpOptions = {
      headersTimeout: opts.headersTimeoutMs,
      requestTimeout: opts.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.floor(opts.headersTimeoutMs / 4)),
    };
    let http: HttpServer;
    try {
      http = tls === undefined ? createServer(httpOptions) : createHttpsServer({ ...httpOptions, cert: pem(tls.cert), key: pem(tls.key) }) as unknown as HttpServer;
    } catch (err) {
      throw new GamewireError('invalid-config', `tls: Node cannot use this certificate and key: ${String(err)}`);
    }
    await new Promise<void>((resolve, reject) => {
      http.once('error', reject);
      http.listen(opts.port, host, () => {
        http.off('error', reject);
        resolve();
      });
    });
    try {
      const gateway = new BrowserGateway(ndc, ws, http, tls !== undefined, driver, server, opts);
      if (ndc !== undefined) liveInstances++;
      return gateway;
    } catch (err) {
      http.close();
      throw err;
    }
  }

  /**
   * Bind the shared port once and release it, so a port in use or an address not of this host fails
   * `open`, not the first player; for port 0, the free port found. libjuice binds it again with the
   * first peer connection and releases it with the last.
   */
  private static async probePort(opts: BrowserGateway['opts']): Promise<number> {
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
  private static rtcConfig(opts: BrowserGateway['opts']): ConstructorParameters<Ndc['PeerConnection']>[1] {
    return {
      iceServers: opts.iceServers,
      ...(opts.bindAddress === undefined ? {} : { bindAddress: opts.bindAddress }),
      enableIceUdpMux: opts.mux,
      portRangeBegin: opts.ports[0],
      portRangeEnd: opts.ports[1],
    };
  }

  /** Open data channels and WebSockets. */
  get size(): number {
    let n = 0;
    for (const p of this.peers.values()) if (p.open) n++;
    return n;
  }

  /** A copy of the counters. */
  counters(): Readonly<Record<BrowserGatewayCounter, number>> {
    return { ...this.ctr };
  }

  /**
   * Stop taking offers and close every peer connection (close the netcode server's clients first,
   * and let the driver linger, so their DISCONNECTs leave). The last instance in the process also
   * releases node-datachannel's threads (`cleanup()`), without which Node does not exit.
   */
  close(): Promise<void> {
    this.closing ??= (async () => {
      const closed = new Promise<void>((resolve) => this.http.close(() => resolve()));
      this.http.closeAllConnections();
      // WebSockets are TCP connections of the HTTP server too: it is closed once they are gone.
      for (const p of [...this.peers.values()]) this.drop(p, true);
      this.wss?.close();
      await closed;
      if (this.ndc !== undefined && --liveInstances === 0) this.ndc.cleanup();
    })();
    return this.closing;
  }

  private send(to: Address, bytes: Uint8Array): void {
    const p = this.peers.get(to);
    if (p === undefined || !p.open) return;
    if (p.ws !== undefined) {
      if (p.ws.readyState !== p.ws.OPEN) return;
      if (p.ws.bufferedAmount > MAX_WEBSOCKET_BUFFERED_BYTES) {
        this.ctr.sendDropped++;
        return;
      }
      // A copy (`bytes` is a Buffer, whose slice() would be a view): the socket may write it later,
      // and the driver reuses `bytes` for the next datagram.
      if (p.bulk === undefined) return void p.ws.send(Buffer.from(bytes), { binary: true });
      p.ws.send(Buffer.from(bytes), { binary: true }, p.bulk.written);
      if (!p.bulk.held && p.ws.bufferedAmount > BULK_HIGH_BYTES) {
        p.bulk.held = true;
        p.bulk.client.holdBulk(true);
      }
      return;
    }
    const dc = p.rtc!.dc;
    if (dc.bufferedAmount() > MAX_BUFFERED_BYTES) {
      this.ctr.sendDropped++;
      return;
    }
    try {
      dc.sendMessageBinary(bytes);
    } catch {
      this.ctr.sendDropped++;
    }
  }

  /** A frame left a block lane's own WebSocket: once it holds no more than `BULK_HIGH_BYTES`, the lane goes on. */
  private drainBulk(p: Peer): void {
    const b = p.bulk!;
    if (!b.held || p.ws!.bufferedAmount > BULK_HIGH_BYTES) return;
    b.held = false;
    // A WebSocket the lane has left since no longer speaks for it.
    if (b.client.bulkAddress === p.address) b.client.holdBulk(false);
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
    const conn: HttpConnection = { answering: false, source: key, remote: remoteKey(socket) };
    this.sockets.set(socket, conn);
    this.byRemote.set(conn.remote, socket);
    socket.once('close', () => this.forget(socket));
  }

  /** The accepted connection a request or upgrade came on (`socket` is a TLS socket over it under TLS). */
  private connectionOf(socket: Socket): [Socket, HttpConnection] | undefined {
    const raw = this.byRemote.get(remoteKey(socket));
    const conn = raw === undefined ? undefined : this.sockets.get(raw);
    return conn === undefined ? undefined : [raw!, conn];
  }

  /** An HTTP connection closed, was evicted, or became a WebSocket (then a peer, under the peer limits): it no longer counts. */
  private forget(socket: Socket): void {
    const conn = this.sockets.get(socket);
    if (conn === undefined) return;
    this.sockets.delete(socket);
    bump(this.socketsBySource, conn.source, -1);
    if (this.byRemote.get(conn.remote) === socket) this.byRemote.delete(conn.remote);
  }

  /** Close the oldest connection whose offer is not being answered; false if there is none. */
  private evictOne(): boolean {
    for (const [socket, conn] of this.sockets) {
      if (conn.answering) continue;
      this.forget(socket);
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
    if (req.method !== 'POST' || this.ndc === undefined) {
      this.ctr.badRequests++;
      this.reply(res, 405, { error: this.ndc === undefined ? 'no-webrtc' : 'method' });
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
      const conn = this.connectionOf(req.socket)?.[1];
      if (conn !== undefined) {
        conn.answering = true;
        res.once('close', () => {
          conn.answering = false;
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
    const admitted = this.admit(token, source, 'rtc:');
    if ('status' in admitted) {
      this.reply(res, admitted.status, { error: admitted.error });
      return;
    }
    const address = `${WEBRTC_ADDRESS_PREFIX}${this.next++}`;
    let peer: Peer;
    try {
      peer = this.makePeer(address, withoutCandidates(sdp), admitted, source);
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

  /**
   * The checks before a peer connection or a WebSocket: the token (`Server.checkConnectToken`), one of
   * each kind per token, the pending limits, the peer limits. The token's key and the connection
   * request it makes, or what to answer.
   */
  private admit(token: Uint8Array, source: string, kind: 'rtc:' | 'ws:'): Admission | Refusal {
    const check = this.server.checkConnectToken(this.now(), token);
    if (check !== 'ok') {
      this.ctr[check === 'full' ? 'busy' : 'tokensRefused']++;
      return { status: STATUS[check], error: check };
    }
    // The check above decrypted the token, so its tag is authentic: one tag, one token.
    const pub = (readConnectToken(token) as { value: ConnectTokenPublic }).value;
    const priv = pub.privateData;
    const key = this.room(kind + Buffer.from(priv.subarray(priv.length - TAG_BYTES)).toString('base64'), source, kind);
    if (typeof key !== 'string') return key;
    const request = new Uint8Array(REQUEST_BYTES);
    writeRequestPacket(request, pub);
    return { key, request };
  }

  /**
   * The checks before a WebSocket that claims the connected client at `index`: to resume it (a move,
   * `Server.claimAddress`; 403 without `migration`, and it replaces a peer) or to carry its block
   * lane (`connect`'s `bulk`, `Server.claimBulk`; a peer of its own). The client is connected (else
   * 404), and the pending and peer limits apply. Its key in `tokens`, or what to answer. What proves
   * it is its first packet; until then several may claim one client (each its own key), so a
   * stranger's claim cannot keep the client's own out.
   */
  private admitClaim(kind: 'resume' | 'bulk', index: number, source: string): Admission | Refusal {
    if (kind === 'resume' && !this.server.migration) {
      this.ctr.tokensRefused++;
      return { status: 403, error: 'no-migration' };
    }
    if (!this.server.clients().some((c) => c.clientIndex === index)) {
      this.ctr.tokensRefused++;
      return { status: 404, error: 'no-such-client' };
    }
    const key = this.room(`${kind}:${index}:${this.claimCount++}`, source, kind === 'resume' ? 'resume' : 'ws:');
    return typeof key === 'string' ? { key, request: undefined } : key;
  }

  /**
   * Room for one more peer under `key` (a token's, or a resumed client's): one per key, the pending
   * limits, and the peer limits (not for a resumption: it replaces a peer). `key`, or what to answer.
   */
  private room(key: string, source: string, kind: 'rtc:' | 'ws:' | 'resume'): string | Refusal {
    if (this.tokens.has(key)) {
      this.ctr.tokensInUse++;
      return { status: 409, error: 'already-connected' };
    }
    if ((this.pendingBySource.get(source) ?? 0) >= this.opts.maxPendingPerAddress) {
      this.ctr.addressBusy++;
      return { status: 429, error: 'busy' };
    }
    if (this.closing !== undefined || this.pending >= this.opts.maxPending || (kind !== 'resume' && this.size >= this.opts.maxPeers)
      || (kind === 'rtc:' && !this.opts.mux && this.rtcPeers() > this.opts.ports[1] - this.opts.ports[0])) {
      this.ctr.busy++;
      return { status: 503, error: 'busy' };
    }
    return key;
  }

  /** Peer connections (each holds a port of `udpPortRange`). */
  private rtcPeers(): number {
    let n = 0;
    for (const p of this.peers.values()) if (p.rtc !== undefined) n++;
    return n;
  }

  /**
   * A WebSocket request: the same path, the origin (unless `allowOrigin` is `'*'`), the token from
   * the subprotocols, then `admit`; refused with an HTTP answer before the upgrade completes.
   */
  private onUpgrade(req: IncomingMessage, socket: Socket, head: Buffer): void {
    socket.on('error', () => undefined);
    const refuse = (status: number, error: string): void => {
      if (socket.writable) {
        const body = JSON.stringify({ error });
        socket.write(`HTTP/1.1 ${status} ${STATUS_TEXT[status] ?? 'Error'}\r\nContent-Type: application/json\r\n`
          + `Content-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`);
      }
      socket.destroy();
    };
    const path = (req.url ?? '').split('?')[0];
    const origin = req.headers.origin;
    if (path !== this.opts.path || (this.opts.allowOrigin !== '*' && origin !== undefined && origin !== this.opts.allowOrigin)) {
      this.ctr.badRequests++;
      refuse(path !== this.opts.path ? 404 : 403, path !== this.opts.path ? 'not-found' : 'origin');
      return;
    }
    const asked = readWebSocketProtocols(req.headers['sec-websocket-protocol']);
    if (asked === undefined || req.headers.upgrade?.toLowerCase() !== 'websocket'
      || ('resume' in asked && asked.resume >= this.server.maxClients) || ('bulk' in asked && asked.bulk >= this.server.maxClients)) {
      this.ctr.badRequests++;
      refuse(400, 'bad-request');
      return;
    }
    this.ctr.upgrades++;
    const source = sourceKey(socket.remoteAddress);
    const admitted = 'token' in asked ? this.admit(asked.token, source, 'ws:')
      : 'resume' in asked ? this.admitClaim('resume', asked.resume, source) : this.admitClaim('bulk', asked.bulk, source);
    if ('status' in admitted) {
      refuse(admitted.status, admitted.error);
      return;
    }
    const accepted = this.connectionOf(socket)?.[0];
    if (accepted !== undefined) this.forget(accepted);
    const address = `${WEBSOCKET_ADDRESS_PREFIX}${this.next++}`;
    const peer = this.addPeer({
      address, rtc: undefined, ws: undefined, open: false, joined: false, token: admitted.key, source, timer: undefined, request: admitted.request,
    });
    // A request ws refuses (a bad key or version) never calls back: its socket closes.
    socket.once('close', () => {
      if (peer.ws === undefined) this.drop(peer);
    });
    this.wss!.handleUpgrade(req, socket, head, (ws) => {
      if (this.peers.get(address) !== peer || ('resume' in asked && !this.server.claimAddress(address, asked.resume))
        || ('bulk' in asked && !this.server.claimBulk(address, asked.bulk))) {
        this.drop(peer);
        ws.terminate();
        return;
      }
      peer.ws = ws;
      ws.binaryType = 'nodebuffer';
      ws.on('message', (data: Buffer, isBinary: boolean) => {
        if (!isBinary) {
          this.ctr.badMessages++;
          return;
        }
        this.feed(address, data);
      });
      ws.on('error', () => {
        this.ctr.badMessages++;
      });
      ws.on('close', () => this.drop(peer));
      this.ctr.webSockets++;
      this.opened(peer);
    });
  }

  /** Count a peer as pending and give it `openTimeoutMs` to open. */
  private addPeer(peer: Peer): Peer {
    this.pending++;
    bump(this.pendingBySource, peer.source, 1);
    this.tokens.add(peer.token);
    this.peers.set(peer.address, peer);
    peer.timer = setTimeout(() => {
      peer.timer = undefined;
      this.ctr.openTimeouts++;
      this.drop(peer);
    }, this.opts.openTimeoutMs).unref();
    return peer;
  }

  /**
   * Its channel or WebSocket opened: the netcode handshake has `handshakeTimeoutMs` from now, and
   * starts at once with the connection request its token makes, so the server's challenge is on its
   * way before the client's own request could arrive (a round trip less to connect).
   */
  private opened(peer: Peer): void {
    if (peer.open || this.peers.get(peer.address) !== peer) return;
    peer.open = true;
    clearTimeout(peer.timer);
    peer.timer = peer.joined ? undefined : setTimeout(() => {
      peer.timer = undefined;
      this.ctr.handshakeTimeouts++;
      this.drop(peer);
    }, this.opts.handshakeTimeoutMs).unref();
    const request = peer.request;
    peer.request = undefined;
    if (request !== undefined) this.feed(peer.address, request);
  }

  private makePeer(address: Address, offer: string, { key, request }: Admission, source: string): Peer {
    const pc = new this.ndc!.PeerConnection(address, BrowserGateway.rtcConfig(this.opts));
    let dc: DataChannel;
    try {
      // The offer first: a channel made before it would make libdatachannel offer too (glare).
      pc.setRemoteDescription(offer, 'offer' as never);
      dc = pc.createDataChannel(WEBRTC_CHANNEL.label, this.channelInit);
    } catch (err) {
      pc.close();
      throw err;
    }
    const peer = this.addPeer({ address, rtc: { pc, dc }, ws: undefined, open: false, joined: false, token: key, source, timer: undefined, request });
    dc.onOpen(() => {
      if (peer.open || this.peers.get(address) !== peer) return;
      this.ctr.opened++;
      this.opened(peer);
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
    const pc = peer.rtc!.pc;
    return new Promise((resolve) => {
      const done = (): boolean => {
        if (pc.gatheringState() !== 'complete') return false;
        clearTimeout(timer);
        resolve(pc.localDescription()?.sdp);
        return true;
      };
      const timer = setTimeout(() => resolve(undefined), this.opts.gatherTimeoutMs);
      if (!done()) pc.onGatheringStateChange(() => void done());
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

  /** End a peer; `now`: a WebSocket's TCP connection goes at once, without waiting for the close handshake. */
  private drop(peer: Peer, now = false): void {
    if (this.peers.get(peer.address) !== peer) return;
    this.peers.delete(peer.address);
    this.tokens.delete(peer.token);
    this.server.releaseClaim(peer.address);
    if (!peer.joined) {
      this.pending--;
      bump(this.pendingBySource, peer.source, -1);
    }
    clearTimeout(peer.timer);
    this.ctr.closed++;
    if (peer.ws !== undefined) {
      if (now) {
        peer.ws.terminate();
        return;
      }
      peer.ws.close(1000);
      // A client that does not answer the close handshake loses its socket soon after.
      const ws = peer.ws;
      setTimeout(() => ws.terminate(), CLOSE_LINGER_MS).unref();
      return;
    }
    if (peer.rtc === undefined) return;
    try {
      peer.rtc.dc.close();
    } catch {
      /* already closed */
    }
    try {
      peer.rtc.pc.close();
    } catch {
      /* already closed */
    }
  }
}

/** An accepted HTTP connection: its source address key, remote address and port, and whether its offer is being answered. */
interface HttpConnection {
  answering: boolean;
  source: string;
  remote: string;
}

/** A socket's remote address and port, as one key. */
function remoteKey(socket: Socket): string {
  return `${socket.remoteAddress ?? ''}|${socket.remotePort ?? ''}`;
}

/** PEM text or bytes as Node's TLS takes them. */
function pem(v: string | Uint8Array): string | Buffer {
  return typeof v === 'string' ? v : Buffer.from(v);
}

/** A certificate or key given as PEM text or bytes. */
function isPem(v: unknown): boolean {
  return (typeof v === 'string' || v instanceof Uint8Array) && v.length > 0;
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found', 409: 'Conflict', 429: 'Too Many Requests',
  503: 'Service Unavailable',
};
