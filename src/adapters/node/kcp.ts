import { EventEmitter } from 'node:events';
import { checkConfig, GamewireError } from '../../core/errors.js';
import {
  KcpClient, KcpServer, type KcpClientOptions, type KcpCloseReason, type KcpServerOptions, type KcpSession,
  type KcpSessionEvent,
} from '../../kcp/session.js';
import { addressKey, resolveHost, UdpDriver, type UdpAddress } from './udp-driver.js';

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

/** Options of `KcpUdpServer.open`: the `KcpServer` options plus the socket's. */
export interface KcpUdpServerOptions extends KcpServerOptions {
  /** UDP port to bind (0 = any; see `local`). Default 0. */
  port?: number;
  /** Local address to bind (default `0.0.0.0`; an IPv6 address makes it a udp6 socket). */
  host?: string;
  /** SO_RCVBUF / SO_SNDBUF requested, bytes (default 4 MiB each; the OS may grant less). */
  socketBufferBytes?: number;
  /** Monotonic clock, ms (default `performance.now`). */
  clock?: () => number;
}

/**
 * A `KcpServer` on one socket, run by a `UdpDriver` (the shared drive loop: datagrams batched per
 * event-loop turn, pooled in-order sends, ONE timer aimed at `server.pollTimeout()`; only due
 * sessions are updated). Sessions' `send`/`close` wake it; `kick()` is kept for compatibility.
 * Session addresses are `addressKey` strings (`"1.2.3.4:5"`, `"[::1]:5"`).
 */
export class KcpUdpServer extends EventEmitter<KcpUdpEvents> {
  /** The sans-IO server (sessions, counters). */
  readonly server: KcpServer;
  /** The socket driver (its counters, local address). */
  readonly driver: UdpDriver<KcpSessionEvent>;
  /** Bound address. */
  readonly local: UdpAddress;

  private constructor(server: KcpServer, driver: UdpDriver<KcpSessionEvent>) {
    super();
    this.server = server;
    this.driver = driver;
    this.local = driver.local;
    driver.on('event', (ev) => emitSessionEvent(this, ev));
    driver.on('socket-error', (err) => {
      if (this.listenerCount('socket-error') > 0) this.emit('socket-error', err);
    });
  }

  /** Bind and start. Rejects on bind failure; throws `invalid-config` for bad options. */
  static async open(options: KcpUdpServerOptions = {}): Promise<KcpUdpServer> {
    const port = options.port ?? 0;
    checkConfig(Number.isInteger(port) && port >= 0 && port <= 65535, 'port must be 0..65535');
    const server = new KcpServer(options);
    const bytes = options.socketBufferBytes ?? 4 * 1024 * 1024;
    const driver = await UdpDriver.openEndpoint<KcpSessionEvent>(server, {
      port,
      host: options.host,
      recvBufferBytes: bytes,
      sendBufferBytes: bytes,
      maxDatagramBytes: Math.min(65507, Math.max(1472, options.mtu ?? 1400)),
      clock: options.clock,
    });
    return new KcpUdpServer(server, driver);
  }

  /** Run the server after the current task (not needed when sending through sessions). */
  kick(): void {
    this.driver.kick();
  }

  /** Close the socket after one last drain (sessions are dropped without CLOSE packets). */
  close(): Promise<void> {
    return this.driver.close().then(() => {
      this.emit('close');
    });
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
 * A `KcpClient` over a connected socket: the driver drives it as its endpoint (`UdpDriver.openEndpoint` with
 * the server as remote; one timer). Emits the session events;
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
    const s = options.server;
    checkConfig(typeof s === 'object' && s !== null && typeof s.host === 'string' && s.host.length > 0, 'server.host must be a non-empty string');
    // Resolved once: the driver feeds every datagram as from this key, the one the client expects.
    const server = { host: await resolveHost(s.host, undefined), port: s.port };
    const client = new KcpClient({ remote: addressKey(server.host, server.port), ...options });
    const driver = await UdpDriver.openEndpoint<KcpSessionEvent>(client, {
      remote: server,
      port: options.port,
      clock: options.clock,
      maxDatagramBytes: Math.max(64, options.mtu ?? 1400),
    });
    const self = new KcpUdpClient(client, driver);
    driver.on('event', (ev) => emitSessionEvent(self, ev));
    driver.on('socket-error', (err) => {
      if (self.listenerCount('socket-error') > 0) self.emit('socket-error', err);
    });
    return self;
  }

  /** Queue one message (see `KcpClient.send`: false once closed); the session wakes the driver. */
  send(data: Uint8Array): boolean {
    return this.client.send(data);
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
