import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { DriveLoop, type DrivePlatform } from '../../core/drive-loop.js';
import type { Address, Endpoint, Transmit } from '../../core/endpoint.js';
import { checkConfig } from '../../core/errors.js';
import type { LinkConfig } from '../../sim/config.js';
import { createLinkPair } from '../../sim/pair.js';
import type { Link, LinkCounters } from '../../sim/link.js';
import { addressKey, parseAddressKey, syncLiteralLookup, type UdpAddress } from './udp-driver.js';

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
  /** Seed of both links (each direction derives its own stream). Default 1. */
  seed?: number;
  /** SO_RCVBUF / SO_SNDBUF requested on both sockets, bytes (default 4 MiB). */
  socketBufferBytes?: number;
  /** Monotonic clock in ms (default `performance.now`). */
  clock?: () => number;
}

/** Counters of a {@link UdpLinkProxy}: per-direction link counters plus socket-level ones. */
export interface UdpLinkProxyCounters {
  /** Client→server link. */
  toServer: LinkCounters;
  /** Server→client link. */
  toClient: LinkCounters;
  /** Server datagrams dropped because no client had spoken yet. */
  noClientDropped: number;
  /** Datagrams arriving on the upstream socket from anyone but the target. */
  foreignDropped: number;
  /** Failed sends and receive errors (ENOBUFS, ECONNREFUSED, …). */
  socketErrors: number;
}

/** Events of a {@link UdpLinkProxy}. */
export interface UdpLinkProxyEvents {
  /** A datagram came from a client address not seen before; replies now go there. */
  client: [client: UdpAddress];
  /** Both sockets are closed. */
  close: [];
}

/** The proxy's address for the target (server) side; clients are `addressKey` strings. */
const UPSTREAM: Address = 'upstream';
/** Largest UDP payload over IPv4, bytes: any datagram the proxy can receive fits. */
const MAX_UDP_PAYLOAD = 65507;

/**
 * The sans-IO part of the proxy: datagrams from clients cross `toServer` to `UPSTREAM`; datagrams
 * from `UPSTREAM` cross `toClient` to the most recent client. Its event is a new client address.
 */
class LinkProxyEndpoint implements Endpoint<Address> {
  client: Address | undefined;
  noClient = 0;
  private readonly events: Address[] = [];
  private readonly t: Transmit = { length: 0, to: UPSTREAM };

  constructor(
    readonly toServer: Link,
    readonly toClient: Link,
  ) {}

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    if (from === UPSTREAM) {
      if (this.client === undefined) this.noClient++;
      else this.toClient.send(now, bytes);
      return;
    }
    if (from !== this.client) {
      this.client = from;
      this.events.push(from);
    }
    this.toServer.send(now, bytes);
  }

  handleTimeout(): void {
    /* the links deliver by time in pollTransmit */
  }

  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    let n = this.toServer.pollDeliverInto(now, out);
    if (n !== undefined) {
      this.t.to = UPSTREAM;
    } else {
      n = this.toClient.pollDeliverInto(now, out);
      if (n === undefined) return undefined;
      this.t.to = this.client!; // toClient only carries datagrams once a client has spoken
    }
    this.t.length = n;
    return this.t;
  }

  pollTimeout(): number | undefined {
    const a = this.toServer.pollTimeout();
    const b = this.toClient.pollTimeout();
    return a === undefined ? b : b === undefined ? a : Math.min(a, b);
  }

  pollEvent(): Address | undefined {
    return this.events.shift();
  }
}

/**
 * A real UDP link conditioner: clients send to `local`; their datagrams cross a seeded `sim` Link
 * (client→server) and leave from a second socket connected to `target`; replies cross the
 * server→client Link and go back to the most recent client address. Both links sit behind one
 * sans-IO endpoint run by the shared `DriveLoop`: real time, input batched per event-loop turn,
 * and one timer aimed at the earlier of the two links' next delivery (±1 ms timer granularity).
 */
export class UdpLinkProxy extends EventEmitter<UdpLinkProxyEvents> {
  /** Address clients should send to. */
  readonly local: UdpAddress;
  /** Address of the upstream socket (what the server sees as its client). */
  readonly upstream: UdpAddress;
  /** The client→server link (read its counters; do not drive it). */
  readonly toServer: Link;
  /** The server→client link. */
  readonly toClient: Link;

  private readonly front: Socket;
  private readonly back: Socket;
  private readonly endpoint: LinkProxyEndpoint;
  private readonly loop: DriveLoop<Address, NodeJS.Timeout>;
  private foreign = 0;
  private socketErrors = 0;
  private callbacksOut = 0;
  // Datagrams are written here; when a send had to be queued (kernel buffer full), the queued send
  // keeps this buffer and a new one is allocated; while a socket is backed up, sends are copies.
  private scratch = Buffer.allocUnsafeSlow(MAX_UDP_PAYLOAD);
  private lastTo = '';
  private lastToAddr: UdpAddress | undefined;
  private readonly target: UdpAddress;
  private readonly onSent = (err: Error | null): void => {
    this.callbacksOut--;
    if (err !== null) this.socketErrors++;
  };

  private constructor(front: Socket, back: Socket, options: UdpLinkProxyOptions) {
    super();
    this.front = front;
    this.back = back;
    const pair = createLinkPair(options.toServer ?? {}, options.seed ?? 1, options.toClient ?? options.toServer ?? {});
    this.toServer = pair.aToB;
    this.toClient = pair.bToA;
    const f = front.address();
    const b = back.address();
    this.local = { host: f.address, port: f.port };
    this.upstream = { host: b.address, port: b.port };
    const r = back.remoteAddress();
    this.target = { host: r.address, port: r.port };
    this.endpoint = new LinkProxyEndpoint(this.toServer, this.toClient);
    const platform: DrivePlatform<NodeJS.Timeout> = {
      now: options.clock ?? (() => performance.now()),
      send: (_bytes, length, to) => this.send(length, to),
      setTimer: (ms, fire) => setTimeout(fire, ms),
      clearTimer: (t) => clearTimeout(t),
      defer: (task) => void setImmediate(task),
      buffer: () => this.scratch,
    };
    this.loop = new DriveLoop<Address, NodeJS.Timeout>(this.endpoint, platform, {
      onEvent: (client) => this.emit('client', parseAddressKey(client)!),
    });
    front.on('message', (msg: Buffer, rinfo: RemoteInfo) => this.loop.handleDatagram(addressKey(rinfo.address, rinfo.port), msg));
    back.on('message', (msg: Buffer, rinfo: RemoteInfo) => {
      if (rinfo.port !== this.target.port || rinfo.address !== this.target.host) this.foreign++;
      else this.loop.handleDatagram(UPSTREAM, msg);
    });
    front.on('error', () => this.socketErrors++);
    back.on('error', () => this.socketErrors++);
  }

  /**
   * Bind the listening socket and an upstream socket connected to `options.target`. Throws
   * `invalid-config` on bad options (including bad link configs); rejects on bind/connect failure.
   */
  static async open(options: UdpLinkProxyOptions): Promise<UdpLinkProxy> {
    const port = options.listenPort ?? 0;
    checkConfig(Number.isInteger(port) && port >= 0 && port <= 65535, 'listenPort must be 0..65535');
    const t = options.target;
    checkConfig(typeof t === 'object' && t !== null && typeof t.host === 'string' && t.host.length > 0, 'target.host must be a non-empty string');
    checkConfig(Number.isInteger(t.port) && t.port > 0 && t.port <= 65535, 'target.port must be 1..65535');
    const seed = options.seed ?? 1;
    checkConfig(Number.isInteger(seed), 'seed must be an integer');
    const bufBytes = options.socketBufferBytes ?? 4 * 1024 * 1024;
    checkConfig(Number.isInteger(bufBytes) && bufBytes > 0, 'socketBufferBytes must be a positive integer');
    // Validate the link configs before touching sockets.
    createLinkPair(options.toServer ?? {}, seed, options.toClient ?? options.toServer ?? {});

    // Sends to clients name their address: resolve it synchronously, or the send would go out after
    // the scratch buffer holds the next datagram (see syncLiteralLookup).
    const front = createSocket({ type: 'udp4', lookup: syncLiteralLookup });
    const back = createSocket('udp4');
    try {
      await bind(front, port, options.listenHost ?? '0.0.0.0');
      await bind(back, 0, '0.0.0.0');
      await new Promise<void>((resolve, reject) => {
        back.once('error', reject);
        back.connect(t.port, t.host, () => {
          back.off('error', reject);
          resolve();
        });
      });
    } catch (err) {
      front.close();
      back.close();
      throw err;
    }
    for (const s of [front, back]) {
      try {
        s.setRecvBufferSize(bufBytes);
        s.setSendBufferSize(bufBytes);
      } catch {
        /* the OS refused; defaults stay */
      }
    }
    return new UdpLinkProxy(front, back, options);
  }

  /** The client replies go to (the last address a datagram came from), if any yet. */
  get clientAddress(): UdpAddress | undefined {
    const c = this.endpoint.client;
    return c === undefined ? undefined : parseAddressKey(c);
  }

  /** A snapshot of both links' counters and the proxy's own drops. */
  counters(): UdpLinkProxyCounters {
    return {
      toServer: this.toServer.counters(),
      toClient: this.toClient.counters(),
      noClientDropped: this.endpoint.noClient,
      foreignDropped: this.foreign,
      socketErrors: this.socketErrors,
    };
  }

  /** Stop forwarding and close both sockets; datagrams still inside the links are discarded. */
  async close(): Promise<void> {
    if (this.loop.state === 'closed') return;
    this.loop.close();
    await Promise.all([
      new Promise<void>((r) => this.front.close(() => r())),
      new Promise<void>((r) => this.back.close(() => r())),
    ]);
    this.emit('close');
  }

  private send(n: number, to: Address): void {
    let socket = this.back;
    let port = 0;
    let host = '';
    if (to !== UPSTREAM) {
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

function bind(socket: Socket, port: number, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(port, host, () => {
      socket.off('error', reject);
      resolve();
    });
  });
}
