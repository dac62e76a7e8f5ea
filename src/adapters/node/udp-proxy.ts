import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { checkConfig } from '../../core/errors.js';
import type { LinkConfig } from '../../sim/config.js';
import { createLinkPair } from '../../sim/pair.js';
import type { Link, LinkCounters } from '../../sim/link.js';
import type { UdpAddress } from './udp-driver.js';

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

/**
 * A real UDP link conditioner: clients send to `local`; their datagrams cross a seeded `sim` Link
 * (client→server) and leave from a second socket connected to `target`; replies cross the
 * server→client Link and go back to the most recent client address. Delivery is driven by real
 * time and one timer aimed at the earlier of the two links' `pollTimeout()` (±1 ms timer granularity).
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
  private readonly clock: () => number;
  private client: UdpAddress | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  private closed = false;
  private noClient = 0;
  private foreign = 0;
  private socketErrors = 0;
  private readonly target: UdpAddress;
  private readonly onTimerBound = (): void => {
    this.timer = undefined;
    this.timerDue = Infinity;
    if (!this.closed) this.service(this.clock());
  };
  private readonly onSent = (err: Error | null): void => {
    if (err !== null) this.socketErrors++;
  };

  private constructor(front: Socket, back: Socket, options: UdpLinkProxyOptions) {
    super();
    this.front = front;
    this.back = back;
    this.clock = options.clock ?? (() => performance.now());
    const pair = createLinkPair(options.toServer ?? {}, options.seed ?? 1, options.toClient ?? options.toServer ?? {});
    this.toServer = pair.aToB;
    this.toClient = pair.bToA;
    const f = front.address();
    const b = back.address();
    this.local = { host: f.address, port: f.port };
    this.upstream = { host: b.address, port: b.port };
    const r = back.remoteAddress();
    this.target = { host: r.address, port: r.port };
    front.on('message', (msg: Buffer, rinfo: RemoteInfo) => this.fromClient(msg, rinfo));
    back.on('message', (msg: Buffer, rinfo: RemoteInfo) => this.fromServer(msg, rinfo));
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

    const front = createSocket('udp4');
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
    return this.client;
  }

  /** A snapshot of both links' counters and the proxy's own drops. */
  counters(): UdpLinkProxyCounters {
    return {
      toServer: this.toServer.counters(),
      toClient: this.toClient.counters(),
      noClientDropped: this.noClient,
      foreignDropped: this.foreign,
      socketErrors: this.socketErrors,
    };
  }

  /** Stop forwarding and close both sockets; datagrams still inside the links are discarded. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    return Promise.all([
      new Promise<void>((r) => this.front.close(() => r())),
      new Promise<void>((r) => this.back.close(() => r())),
    ]).then(() => {
      this.emit('close');
    });
  }

  private fromClient(msg: Buffer, rinfo: RemoteInfo): void {
    if (this.closed) return;
    const c = this.client;
    if (c === undefined || c.port !== rinfo.port || c.host !== rinfo.address) {
      this.client = { host: rinfo.address, port: rinfo.port };
      this.emit('client', this.client);
    }
    const now = this.clock();
    this.toServer.send(now, msg);
    this.service(now);
  }

  private fromServer(msg: Buffer, rinfo: RemoteInfo): void {
    if (this.closed) return;
    if (rinfo.port !== this.target.port || rinfo.address !== this.target.host) {
      this.foreign++;
      return;
    }
    if (this.client === undefined) {
      this.noClient++;
      return;
    }
    const now = this.clock();
    this.toClient.send(now, msg);
    this.service(now);
  }

  private service(now: number): void {
    // Delivered datagrams are fresh copies owned by us, so they go to the socket without another copy.
    for (let d = this.toServer.pollDeliver(now); d !== undefined; d = this.toServer.pollDeliver(now)) {
      this.back.send(d, this.onSent);
    }
    const c = this.client;
    for (let d = this.toClient.pollDeliver(now); d !== undefined; d = this.toClient.pollDeliver(now)) {
      if (c !== undefined) this.front.send(d, c.port, c.host, this.onSent);
    }
    this.arm(now);
  }

  private arm(now: number): void {
    const a = this.toServer.pollTimeout();
    const b = this.toClient.pollTimeout();
    const due = a === undefined ? b : b === undefined ? a : Math.min(a, b);
    if (due === undefined) return;
    if (this.timer !== undefined && this.timerDue <= due) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const ms = Math.max(1, Math.ceil(due - now));
    this.timerDue = now + ms;
    this.timer = setTimeout(this.onTimerBound, ms);
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
