import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { EventEmitter } from 'node:events';
import { performance } from 'node:perf_hooks';
import { checkConfig, GamewireError } from '../../core/errors.js';
import {
  KcpClient, KcpServer, type KcpClientOptions, type KcpCloseReason, type KcpServerOptions, type KcpSession,
  type KcpSessionEvent,
} from '../../kcp/session.js';
import { UdpDriver, type DrivablePeer, type UdpAddress } from './udp-driver.js';

/** Events of `KcpUdpServer` and `KcpUdpClient` (the session events, one listener argument list each). */
export interface KcpUdpEvents {
  /** A session opened (server: a new peer; client: ready to send). */
  open: [session: KcpSession];
  /** One message (stream mode: one chunk) from `session`'s peer. */
  message: [session: KcpSession, data: Uint8Array];
  /** Cookie mode: `session` moved from address `from` to `session.address`. */
  migrated: [session: KcpSession, from: string];
  /** KCP's dead link with `deadLinkPolicy: 'notify'`. */
  'dead-link': [session: KcpSession];
  /** A session ended (`session` is undefined for a client whose handshake failed). */
  closed: [session: KcpSession | undefined, reason: KcpCloseReason];
  /** A socket send or receive failed; counted, KCP retransmits. */
  'socket-error': [error: NodeJS.ErrnoException];
  /** The socket is closed. */
  close: [];
}

/** Turn a session event into the matching emitter call. */
function emitSessionEvent(em: EventEmitter<KcpUdpEvents>, ev: KcpSessionEvent): void {
  switch (ev.type) {
    case 'open':
      em.emit('open', ev.session);
      break;
    case 'message':
      em.emit('message', ev.session, ev.data);
      break;
    case 'migrated':
      em.emit('migrated', ev.session, ev.from);
      break;
    case 'dead-link':
      em.emit('dead-link', ev.session);
      break;
    case 'closed':
      em.emit('closed', ev.session, ev.reason);
      break;
  }
}

/** "host:port", the address key the KCP server sees. */
export function addressKey(host: string, port: number): string {
  return `${host}:${port}`;
}

/** Inverse of `addressKey` (IPv4 host). */
export function parseAddressKey(key: string): UdpAddress {
  const i = key.lastIndexOf(':');
  return { host: key.slice(0, i), port: Number(key.slice(i + 1)) };
}

/** Options of `KcpUdpServer.open`: the `KcpServer` options plus the socket's. */
export interface KcpUdpServerOptions extends KcpServerOptions {
  /** UDP port to bind (0 = any; see `local`). Default 0. */
  port?: number;
  /** Local IPv4 address to bind (default `0.0.0.0`). */
  host?: string;
  /** SO_RCVBUF / SO_SNDBUF requested, bytes (default 4 MiB each; the OS may grant less). */
  socketBufferBytes?: number;
  /** Monotonic clock, ms (default `performance.now`). */
  clock?: () => number;
}

/**
 * A `KcpServer` on one udp4 socket with ONE timer aimed at `server.pollTimeout()`: every datagram
 * and timer wake-up runs the server, sends what it produced and emits its events. Only due
 * sessions are updated. Call `kick()` after sending outside an event handler.
 */
export class KcpUdpServer extends EventEmitter<KcpUdpEvents> {
  /** The sans-IO server (sessions, counters). */
  readonly server: KcpServer;
  /** Bound address. */
  readonly local: UdpAddress;
  /** Timer wake-ups so far. */
  wakeups = 0;

  private readonly socket: Socket;
  private readonly clock: () => number;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  private servicing = false;
  private again = false;
  private kicked = false;
  private closed = false;

  private constructor(server: KcpServer, socket: Socket, clock: () => number) {
    super();
    this.server = server;
    this.socket = socket;
    this.clock = clock;
    const a = socket.address();
    this.local = { host: a.address, port: a.port };
    socket.on('message', (msg: Buffer, r: RemoteInfo) => {
      if (this.closed) return;
      const now = this.clock();
      this.server.handleDatagram(now, addressKey(r.address, r.port), msg);
      this.service(now);
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      if (this.listenerCount('socket-error') > 0) this.emit('socket-error', err);
    });
  }

  /** Bind and start. Rejects on bind failure; throws `invalid-config` for bad options. */
  static async open(options: KcpUdpServerOptions = {}): Promise<KcpUdpServer> {
    const port = options.port ?? 0;
    checkConfig(Number.isInteger(port) && port >= 0 && port <= 65535, 'port must be 0..65535');
    const server = new KcpServer(options);
    const socket = createSocket('udp4');
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, options.host ?? '0.0.0.0', () => {
        socket.off('error', reject);
        resolve();
      });
    });
    const bytes = options.socketBufferBytes ?? 4 * 1024 * 1024;
    try {
      socket.setRecvBufferSize(bytes);
      socket.setSendBufferSize(bytes);
    } catch {
      /* the OS keeps its defaults */
    }
    const s = new KcpUdpServer(server, socket, options.clock ?? (() => performance.now()));
    s.service(s.clock());
    return s;
  }

  /** Run the server after the current task (coalesces sends made outside event handlers). */
  kick(): void {
    if (this.kicked || this.closed) return;
    this.kicked = true;
    queueMicrotask(() => {
      this.kicked = false;
      if (!this.closed) this.service(this.clock());
    });
  }

  /** Stop the timer and close the socket (sessions are dropped without CLOSE packets). */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    return new Promise((resolve) => {
      this.socket.close(() => {
        this.emit('close');
        resolve();
      });
    });
  }

  private service(now: number): void {
    if (this.servicing) {
      this.again = true;
      return;
    }
    this.servicing = true;
    try {
      for (let round = 0; round < 64 && !this.closed; round++) {
        this.again = false;
        const due = this.server.pollTimeout();
        if (due !== undefined && due <= now) this.server.handleTimeout(now);
        for (let d = this.server.pollDatagram(now); d !== undefined; d = this.server.pollDatagram(now)) {
          const a = parseAddressKey(d.to);
          this.socket.send(d.bytes, a.port, a.host, (err) => {
            if (err !== null && this.listenerCount('socket-error') > 0) this.emit('socket-error', err as NodeJS.ErrnoException);
          });
        }
        for (let ev = this.server.pollEvent(); ev !== undefined && !this.closed; ev = this.server.pollEvent()) {
          emitSessionEvent(this, ev);
        }
        const next = this.server.pollTimeout();
        if (!this.again && (next === undefined || next > now)) break;
        now = this.clock();
      }
    } finally {
      this.servicing = false;
    }
    if (!this.closed) this.arm(now);
  }

  private arm(now: number): void {
    const due = this.server.pollTimeout();
    if (due === undefined) {
      if (this.timer !== undefined) clearTimeout(this.timer);
      this.timer = undefined;
      this.timerDue = Infinity;
      return;
    }
    if (this.timer !== undefined && this.timerDue <= due) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const ms = Math.max(1, Math.ceil(due - now));
    this.timerDue = now + ms;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.timerDue = Infinity;
      this.wakeups++;
      if (!this.closed) this.service(this.clock());
    }, ms);
  }
}

/** Options of `KcpUdpClient.open`. */
export interface KcpUdpClientOptions extends KcpClientOptions {
  /** The server's address. */
  server: UdpAddress;
  /** Local port (default 0 = any). */
  port?: number;
  /** Monotonic clock, ms (default `performance.now`). */
  clock?: () => number;
}

/**
 * A `KcpClient` over a connected udp4 socket (`UdpDriver`, one timer). Emits the session events;
 * `send` queues a message and schedules the flush.
 */
export class KcpUdpClient extends EventEmitter<KcpUdpEvents> {
  /** The sans-IO client. */
  readonly client: KcpClient;
  /** The socket driver (counters, local address). */
  readonly driver: UdpDriver<KcpSessionEvent>;

  private constructor(client: KcpClient, driver: UdpDriver<KcpSessionEvent>) {
    super();
    this.client = client;
    this.driver = driver;
  }

  /** Connect a socket to `options.server` and start (raw mode: ready at once; cookie: after the handshake). */
  static async open(options: KcpUdpClientOptions): Promise<KcpUdpClient> {
    checkConfig(typeof options === 'object' && options !== null && options.server !== undefined, 'server address is required');
    const client = new KcpClient({ remote: addressKey(options.server.host, options.server.port), ...options });
    // Events stay queued inside the client until our listener is attached (open() already drives it).
    let attached = false;
    const peer: DrivablePeer<KcpSessionEvent> = {
      handleDatagram: (now, bytes) => client.handleDatagram(now, bytes),
      handleTimeout: (now) => client.handleTimeout(now),
      pollTransmit: (now, out) => client.pollTransmit(now, out),
      pollTimeout: () => client.pollTimeout(),
      pollEvent: () => (attached ? client.pollEvent() : undefined),
    };
    const driver = await UdpDriver.open<KcpSessionEvent>(peer, {
      remote: options.server,
      port: options.port,
      clock: options.clock,
      maxDatagramBytes: Math.max(64, options.mtu ?? 1400),
    });
    const self = new KcpUdpClient(client, driver);
    driver.on('event', (ev) => emitSessionEvent(self, ev));
    driver.on('socket-error', (err) => {
      if (self.listenerCount('socket-error') > 0) self.emit('socket-error', err);
    });
    queueMicrotask(() => {
      attached = true;
      driver.kick();
    });
    return self;
  }

  /** Queue one message (see `KcpSession.send`) and schedule the send. */
  send(data: Uint8Array): void {
    this.client.send(data);
    this.driver.kick();
  }

  /** Close the session (see `KcpSession.close`), then the socket once it is done. */
  async close(options: { linger?: boolean } = {}): Promise<void> {
    if (this.client.state !== 'closed') {
      this.client.close(options);
      this.driver.flush();
      if ((this.client.state as string) !== 'closed') {
        await new Promise<void>((resolve) => this.once('closed', () => resolve()));
      }
    }
    await this.driver.close();
    this.emit('close');
  }

  /** The session; throws `invalid-state` before it exists (cookie mode: before ACCEPT). */
  get session(): KcpSession {
    const s = this.client.session;
    if (s === undefined) throw new GamewireError('invalid-state', 'no session yet');
    return s;
  }
}
