import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { DriveLoop, type DrivePlatform } from '../../core/drive-loop.js';
import type { Address, Transmit } from '../../core/endpoint.js';
import { checkConfig } from '../../core/errors.js';
import { Host, HostEndpoint, type HostedPeer, type PeerId } from '../../core/host.js';
import type { LinkConfig } from '../../sim/config.js';
import { createLinkPair } from '../../sim/pair.js';
import { deriveSeed, type Link, type LinkCounters } from '../../sim/link.js';
import { addressKey, parseAddressKey, resolveHost, syncLiteralLookup, type UdpAddress } from './udp-driver.js';

/** Options of {@link UdpLinkProxy.open}. Times in ms, sizes in bytes. */
export interface UdpLinkProxyOptions {
  /** Port clients send to; 0 (default) lets the OS pick (see `proxy.local`). */
  listenPort?: number;
  /** Local IPv4 address to listen on (default `0.0.0.0`). */
  listenHost?: string;
  /** Where client datagrams are forwarded (the server). */
  target: UdpAddress;
  /** Impairments of the client→server direction (a `sim` link config; default: perfect). */
  toServer?: Partial<LinkConfig>;
  /** Impairments of the server→client direction (default: same as `toServer`). */
  toClient?: Partial<LinkConfig>;
  /** Seed of the links: the first client's pair uses it, each later client's pair one derived from it. Default 1. */
  seed?: number;
  /**
   * Most clients served at once (1..1024, default 64). A new address beyond takes the slot of the client
   * quiet longest if it has been quiet for `clientIdleMs`; otherwise its datagrams are dropped and counted.
   */
  maxClients?: number;
  /** A client with no datagram either way for this long may lose its slot to a new one, ms (1..3 600 000; default 30 000). */
  clientIdleMs?: number;
  /** SO_RCVBUF / SO_SNDBUF requested on every socket, bytes (default 4 MiB). */
  socketBufferBytes?: number;
  /** Monotonic clock in ms (default `performance.now`). */
  clock?: () => number;
}

/** Counters of a {@link UdpLinkProxy}: per-direction link counters (summed over clients) plus socket-level ones. */
export interface UdpLinkProxyCounters {
  /** Client→server links, summed. */
  toServer: LinkCounters;
  /** Server→client links, summed. */
  toClient: LinkCounters;
  /** Clients served so far. */
  clients: number;
  /** Clients whose slot went to a new client after `clientIdleMs` of quiet (their links and socket closed). */
  clientsExpired: number;
  /** Datagrams from new client addresses dropped at `maxClients` (no slot quiet long enough to take). */
  clientsRefused: number;
  /** Client datagrams dropped because more than 256 waited for that client's upstream socket to open. */
  noClientDropped: number;
  /** Datagrams arriving on an upstream socket from anyone but the target. */
  foreignDropped: number;
  /** Failed sends and receive errors (ENOBUFS, ECONNREFUSED, …). */
  socketErrors: number;
}

/** Events of a {@link UdpLinkProxy}. */
export interface UdpLinkProxyEvents {
  /** A datagram came from a client address not seen before: it gets its own links and upstream socket. */
  client: [client: UdpAddress];
  /** Every socket is closed. */
  close: [];
}

/** Largest UDP payload over IPv4, bytes: any datagram the proxy can receive fits. */
const MAX_UDP_PAYLOAD = 65507;
/** Datagrams held per client while its upstream socket opens. */
const PENDING_LIMIT = 256;
/** Prefix of the sans-IO endpoint's address for a client's upstream socket. */
const UP = 'up:';

/** What the sans-IO part tells the sockets: a new client (open its upstream), or an expired one (close it). */
interface ProxyEvent {
  kind: 'client' | 'expired';
  address: Address;
}

/**
 * One client's two links (a `Host` peer at the client's address), and when it last sent or was sent
 * anything (ms). Its datagrams come out of whichever link delivers next, the server's way first; it
 * tells its owner which way through the shared `way`.
 */
class ClientLinks implements HostedPeer<ProxyEvent> {
  lastActive: number;
  private expired = false;
  private readonly events: ProxyEvent[];

  constructor(
    private readonly toServer: Link,
    private readonly toClient: Link,
    private readonly way: { towardServer: boolean },
    address: Address,
    now: number,
  ) {
    this.lastActive = now;
    this.events = [{ kind: 'client', address }];
  }

  /** A datagram from the client. */
  handleDatagram(now: number, bytes: Uint8Array): void {
    this.lastActive = now;
    this.toServer.send(now, bytes);
  }

  /** A datagram from the server, arrived on the client's upstream socket. */
  fromServer(now: number, bytes: Uint8Array): void {
    this.lastActive = now;
    this.toClient.send(now, bytes);
  }

  handleTimeout(): void {
    /* the links deliver by time in pollTransmit */
  }

  pollTransmit(now: number, out: Uint8Array): number | undefined {
    if (this.expired) return undefined;
    let n = this.toServer.pollDeliverInto(now, out);
    this.way.towardServer = n !== undefined;
    if (n === undefined) n = this.toClient.pollDeliverInto(now, out);
    return n;
  }

  pollTimeout(): number | undefined {
    if (this.expired) return undefined;
    const a = this.toServer.pollTimeout();
    const b = this.toClient.pollTimeout();
    return a === undefined || (b !== undefined && b < a) ? b : a;
  }

  pollEvent(): ProxyEvent | undefined {
    return this.events.shift();
  }

  /** Its slot goes to a new client: what is still inside its links is discarded. */
  expire(address: Address): void {
    this.expired = true;
    this.events.push({ kind: 'expired', address });
  }

  /** Both links' counters added into `toServer` and `toClient`. */
  addCounters(toServer: LinkCounters, toClient: LinkCounters): void {
    addCounters(toServer, this.toServer.counters());
    addCounters(toClient, this.toClient.counters());
  }
}

/**
 * The sans-IO part of the proxy: a `Host` of per-client link pairs (one deadline heap, round robin
 * across clients). Datagrams from client C cross C's `toServer` link to `up:C` (C's upstream
 * socket); datagrams arriving on `up:C` cross C's `toClient` link back to C. Its events are a new
 * client address and an expired one.
 */
class LinkProxyEndpoint extends HostEndpoint<ClientLinks, ProxyEvent, ProxyEvent> {
  protected readonly host: Host<ClientLinks, ProxyEvent>;
  refused = 0;
  expired = 0;
  private readonly way = { towardServer: false };

  constructor(
    private readonly toServerCfg: Partial<LinkConfig>,
    private readonly toClientCfg: Partial<LinkConfig>,
    private readonly seed: number,
    private readonly maxClients: number,
    private readonly idleMs: number,
  ) {
    super();
    // Room for as many expired clients as live ones: an expired client's slot is free once the
    // drive loop has passed it (it has nothing more to send).
    this.host = new Host<ClientLinks, ProxyEvent>({ maxPeers: 2 * maxClients });
  }

  /** Clients served so far. */
  get served(): number {
    return this.host.counters().peersAdded;
  }

  /** The clients holding a slot. */
  clients(): ClientLinks[] {
    return this.host.ids().map((id) => this.host.get(id)!);
  }

  /** Their addresses. */
  addresses(): Address[] {
    return this.host.ids().map((id) => this.host.addressOf(id)!);
  }

  override handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    const h = this.host;
    if (from.startsWith(UP)) {
      const id = h.peerAt(from.slice(UP.length));
      if (id === undefined) return;
      h.get(id)!.fromServer(now, bytes);
      h.touch(id);
      return;
    }
    if (h.peerAt(from) === undefined && !this.admit(now, from)) {
      this.refused++;
      return;
    }
    h.handleDatagram(now, from, bytes);
  }

  override pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    const t = this.host.pollTransmit(now, out);
    if (t !== undefined && this.way.towardServer) t.to = UP + t.to;
    return t;
  }

  pollEvent(): ProxyEvent | undefined {
    return this.host.pollPeerEvent();
  }

  /** A new client at `from`: true once it has its links (taking the slot of one quiet for `idleMs` at `maxClients`). */
  private admit(now: number, from: Address): boolean {
    const h = this.host;
    if ((h.liveCount >= this.maxClients && !this.expireQuietest(now)) || h.full) return false;
    const n = this.served;
    const pair = createLinkPair(this.toServerCfg, n === 0 ? this.seed : deriveSeed(this.seed, 1000 + n), this.toClientCfg);
    h.add(from, new ClientLinks(pair.aToB, pair.bToA, this.way, from, now));
    return true;
  }

  /** Free the slot of the client quiet longest, if quiet for `idleMs`; true if one was freed. */
  private expireQuietest(now: number): boolean {
    const h = this.host;
    let oldest: PeerId | undefined;
    let at = Infinity;
    for (const id of h.ids()) {
      const t = h.get(id)!.lastActive;
      if (t < at) {
        at = t;
        oldest = id;
      }
    }
    if (oldest === undefined || now - at < this.idleMs) return false;
    h.get(oldest)!.expire(h.addressOf(oldest)!);
    h.remove(oldest);
    this.expired++;
    return true;
  }
}

/** A client's upstream socket, and the datagrams that wait for it to open. */
interface Upstream {
  socket: Socket | undefined;
  pending: Buffer[];
  /** Closed (its client expired) before it finished opening. */
  closed: boolean;
}

/**
 * A real UDP link conditioner for any number of clients (up to `maxClients`): clients send to
 * `local`; each client's datagrams cross its own seeded `sim` Link (client→server) and leave from an
 * upstream socket of its own connected to `target` (so the server sees one address per client);
 * replies cross that client's server→client Link back to it. All links sit behind one sans-IO
 * endpoint, a core `Host` of per-client link pairs (one deadline heap, clients served in turn), run
 * by the shared `DriveLoop`: real time, input batched per event-loop turn, and one timer aimed at the
 * earliest next delivery (±1 ms timer granularity). At `maxClients`, a new client takes the slot of
 * one quiet for `clientIdleMs`.
 */
export class UdpLinkProxy extends EventEmitter<UdpLinkProxyEvents> {
  /** Address clients should send to. */
  readonly local: UdpAddress;

  private readonly front: Socket;
  private readonly endpoint: LinkProxyEndpoint;
  private readonly loop: DriveLoop<ProxyEvent, NodeJS.Timeout>;
  private readonly upstreams = new Map<Address, Upstream>();
  private readonly target: UdpAddress;
  private readonly bufBytes: number;
  private foreign = 0;
  private noClient = 0;
  private socketErrors = 0;
  private callbacksOut = 0;
  private closing = false;
  // Datagrams are written here; when a send had to be queued (kernel buffer full), the queued send
  // keeps this buffer and a new one is allocated; while a socket is backed up, sends are copies.
  private scratch = Buffer.allocUnsafeSlow(MAX_UDP_PAYLOAD);
  private lastTo = '';
  private lastToAddr: UdpAddress | undefined;
  private readonly onSent = (err: Error | null): void => {
    this.callbacksOut--;
    if (err !== null) this.socketErrors++;
  };

  private constructor(front: Socket, options: UdpLinkProxyOptions, bufBytes: number, maxClients: number, idleMs: number) {
    super();
    this.front = front;
    this.bufBytes = bufBytes;
    const f = front.address();
    this.local = { host: f.address, port: f.port };
    this.target = { host: options.target.host, port: options.target.port };
    this.endpoint = new LinkProxyEndpoint(options.toServer ?? {}, options.toClient ?? options.toServer ?? {}, options.seed ?? 1, maxClients, idleMs);
    const platform: DrivePlatform<NodeJS.Timeout> = {
      now: options.clock ?? (() => performance.now()),
      send: (_bytes, length, to) => this.send(length, to),
      setTimer: (ms, fire) => setTimeout(fire, ms),
      clearTimer: (t) => clearTimeout(t),
      defer: (task) => void setImmediate(task),
      buffer: () => this.scratch,
    };
    this.loop = new DriveLoop<ProxyEvent, NodeJS.Timeout>(this.endpoint, platform, {
      onEvent: (e) => {
        if (e.kind === 'client') this.emit('client', parseAddressKey(e.address)!);
        else this.closeUpstream(e.address);
      },
    });
    front.on('message', (msg: Buffer, rinfo: RemoteInfo) => this.loop.handleDatagram(addressKey(rinfo.address, rinfo.port), msg));
    front.on('error', () => this.socketErrors++);
  }

  /**
   * Bind the listening socket (upstream sockets open per client). Throws `invalid-config` on bad
   * options (including bad link configs); rejects with `invalid-argument` when `target.host` does
   * not resolve (to IPv4), and on a bind failure.
   */
  static async open(options: UdpLinkProxyOptions): Promise<UdpLinkProxy> {
    const port = options.listenPort ?? 0;
    checkConfig(Number.isInteger(port) && port >= 0 && port <= 65535, 'listenPort must be 0..65535');
    const t = options.target;
    checkConfig(typeof t === 'object' && t !== null && typeof t.host === 'string' && t.host.length > 0, 'target.host must be a non-empty string');
    checkConfig(Number.isInteger(t.port) && t.port > 0 && t.port <= 65535, 'target.port must be 1..65535');
    const seed = options.seed ?? 1;
    checkConfig(Number.isInteger(seed), 'seed must be an integer');
    const maxClients = options.maxClients ?? 64;
    checkConfig(Number.isInteger(maxClients) && maxClients >= 1 && maxClients <= 1024, 'maxClients must be an integer in 1..1024');
    const idleMs = options.clientIdleMs ?? 30_000;
    checkConfig(typeof idleMs === 'number' && idleMs >= 1 && idleMs <= 3_600_000, 'clientIdleMs must be a number in 1..3600000');
    const bufBytes = options.socketBufferBytes ?? 4 * 1024 * 1024;
    checkConfig(Number.isInteger(bufBytes) && bufBytes > 0, 'socketBufferBytes must be a positive integer');
    // Validate the link configs before touching sockets.
    createLinkPair(options.toServer ?? {}, seed, options.toClient ?? options.toServer ?? {});
    // Upstream sockets are udp4 and connect per client: a name that does not resolve fails here, not at the first datagram.
    const target = { host: await resolveHost(t.host, '0.0.0.0'), port: t.port };

    // Sends to clients name their address: resolve it synchronously, or the send would go out after
    // the scratch buffer holds the next datagram (see syncLiteralLookup).
    const front = createSocket({ type: 'udp4', lookup: syncLiteralLookup });
    try {
      await bind(front, port, options.listenHost ?? '0.0.0.0');
    } catch (err) {
      front.close();
      throw err;
    }
    setBuffers(front, bufBytes);
    return new UdpLinkProxy(front, { ...options, target }, bufBytes, maxClients, idleMs);
  }

  /** The clients holding a slot now (each has its own links and upstream socket). */
  get clients(): UdpAddress[] {
    return this.endpoint.addresses().map((a) => parseAddressKey(a)!);
  }

  /** A snapshot of the links' counters (summed over clients) and the proxy's own drops. */
  counters(): UdpLinkProxyCounters {
    const toServer = emptyCounters();
    const toClient = emptyCounters();
    for (const c of this.endpoint.clients()) c.addCounters(toServer, toClient);
    return {
      toServer, toClient, clients: this.endpoint.served, clientsExpired: this.endpoint.expired, clientsRefused: this.endpoint.refused,
      noClientDropped: this.noClient, foreignDropped: this.foreign, socketErrors: this.socketErrors,
    };
  }

  /** Stop forwarding and close every socket; datagrams still inside the links are discarded. */
  async close(): Promise<void> {
    if (this.loop.state === 'closed') return;
    this.closing = true;
    this.loop.close();
    const sockets = [this.front, ...[...this.upstreams.values()].flatMap((u) => (u.socket === undefined ? [] : [u.socket]))];
    await Promise.all(sockets.map((s) => new Promise<void>((r) => s.close(() => r()))));
    this.emit('close');
  }

  /** `client` lost its slot: close its upstream socket (a socket still opening closes when it is open). */
  private closeUpstream(client: Address): void {
    const up = this.upstreams.get(client);
    if (up === undefined) return;
    this.upstreams.delete(client);
    up.pending = [];
    if (up.socket !== undefined) up.socket.close();
    else up.closed = true;
  }

  /** `client`'s upstream socket, opened (connected to the target) on first use; datagrams wait while it opens. */
  private upstream(client: Address): Upstream {
    const known = this.upstreams.get(client);
    if (known !== undefined) return known;
    const up: Upstream = { socket: undefined, pending: [], closed: false };
    this.upstreams.set(client, up);
    const s = createSocket('udp4');
    s.on('error', () => this.socketErrors++);
    s.bind(0, '0.0.0.0', () => {
      s.connect(this.target.port, this.target.host, () => {
        if (this.closing || up.closed) {
          s.close();
          return;
        }
        setBuffers(s, this.bufBytes);
        up.socket = s;
        const r = s.remoteAddress();
        s.on('message', (msg: Buffer, rinfo: RemoteInfo) => {
          if (rinfo.port !== r.port || rinfo.address !== r.address) this.foreign++;
          else this.loop.handleDatagram(UP + client, msg);
        });
        for (const b of up.pending) s.send(b);
        up.pending = [];
      });
    });
    return up;
  }

  private send(n: number, to: Address): void {
    let socket: Socket;
    let port = 0;
    let host = '';
    if (to.startsWith(UP)) {
      const up = this.upstream(to.slice(UP.length));
      if (up.socket === undefined) {
        if (up.pending.length < PENDING_LIMIT) up.pending.push(Buffer.from(this.scratch.subarray(0, n)));
        else this.noClient++;
        return;
      }
      socket = up.socket;
    } else {
      if (to !== this.lastTo) {
        this.lastTo = to;
        this.lastToAddr = parseAddressKey(to);
      }
      const a = this.lastToAddr!;
      socket = this.front;
      port = a.port;
      host = a.host;
    }
    const backedUp = socket.getSendQueueCount() > 0;
    const view = backedUp ? Buffer.from(this.scratch.subarray(0, n)) : this.scratch.subarray(0, n);
    // One send in flight at a time carries a callback, so socket errors are counted at least once per drain.
    const cb = this.callbacksOut === 0 ? this.onSent : undefined;
    if (cb !== undefined) this.callbacksOut++;
    if (port === 0) socket.send(view, cb);
    else socket.send(view, port, host, cb);
    if (!backedUp && socket.getSendQueueCount() > 0) this.scratch = Buffer.allocUnsafeSlow(MAX_UDP_PAYLOAD);
  }
}

function setBuffers(s: Socket, bytes: number): void {
  try {
    s.setRecvBufferSize(bytes);
    s.setSendBufferSize(bytes);
  } catch {
    /* the OS refused; defaults stay */
  }
}

function emptyCounters(): LinkCounters {
  return {
    sent: 0, bytesSent: 0, delivered: 0, bytesDelivered: 0, droppedLoss: 0, droppedQueue: 0, droppedMtu: 0,
    droppedOutage: 0, droppedInFlight: 0, duplicated: 0, queuedPeakDatagrams: 0, queuedPeakBytes: 0, inFlightPeak: 0,
  };
}

/** Add `b` into `a` (peaks take the larger). */
function addCounters(a: LinkCounters, b: LinkCounters): void {
  for (const k of Object.keys(a) as (keyof LinkCounters)[]) a[k] = k.endsWith('Peak') || k.startsWith('queuedPeak') ? Math.max(a[k], b[k]) : a[k] + b[k];
}

function bind(socket: Socket, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}
