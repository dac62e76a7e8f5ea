import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { lookup as dnsLookup } from 'node:dns';
import { lookup as dnsLookupAsync } from 'node:dns/promises';
import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { newCounters } from '../../core/counters.js';
import { DriveLoop, type DrivePlatform, type LingerOptions } from '../../core/drive-loop.js';
import { transportOf, type Address, type Endpoint } from '../../core/endpoint.js';
import { checkConfig, isInt, isObject } from '../../core/config.js';
import { GamewireError } from '../../core/errors.js';
import { isLogger, type Logger } from '../../core/logger.js';
import { PeerEndpoint, type SansIoPeer } from '../../core/peer.js';


/** A UDP endpoint: IPv4/IPv6 address (or host name when given to the driver) and port. */
export interface UdpAddress {
  /** IPv4 or IPv6 address, or host name. */
  host: string;
  /** UDP port, 1..65535. */
  port: number;
}

/**
 * Unix time in seconds from the system clock, for the `unixTime` option of netcode's `Server` (its
 * argument, the driver's `now`, is ignored: token expiry is judged against wall-clock time).
 */
export function systemUnixTime(_now?: number): number {
  return Date.now() / 1000;
}

/** The `Address` string of a UDP endpoint: `"127.0.0.1:9000"`, IPv6 in brackets `"[::1]:9000"`. */
export function addressKey(host: string, port: number): Address {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

/** Inverse of {@link addressKey}; `undefined` for a string that is not `host:port` with a port 0..65535. */
export function parseAddressKey(key: Address): UdpAddress | undefined {
  const i = key.lastIndexOf(':');
  if (i <= 0) return undefined;
  let host = key.slice(0, i);
  if (host.startsWith('[')) {
    if (!host.endsWith(']')) return undefined;
    host = host.slice(1, -1);
  }
  const port = Number(key.slice(i + 1));
  if (host.length === 0 || !Number.isInteger(port) || port < 0 || port > 65535 || i + 1 === key.length) return undefined;
  return { host, port };
}

/** Socket options shared by both ways of opening a {@link UdpDriver}. Sizes in bytes, times in ms. */
export interface UdpSocketOptions {
  /** Local port to bind; 0 (default) lets the OS pick one (see `driver.local`). */
  port?: number;
  /** Local address to bind (default `0.0.0.0`; an IPv6 address such as `::` makes it a udp6 socket). */
  host?: string;
  /** SO_RCVBUF requested, bytes (default 4 MiB). The OS may grant less (see `driver.bufferSizes`). */
  recvBufferBytes?: number;
  /** SO_SNDBUF requested, bytes (default 4 MiB). */
  sendBufferBytes?: number;
  /** Size of the buffer handed to `pollTransmit`, i.e. the largest datagram sent, bytes (default 1472). */
  maxDatagramBytes?: number;
  /**
   * Most datagrams sent in one turn of the event loop (default 256). This is also the number of
   * send buffers in the pool; when all are in flight, sending pauses until one is released.
   */
  maxSendsPerTick?: number;
  /** Monotonic clock in ms (default `performance.now`). */
  clock?: () => number;
  /**
   * Where an exception thrown by an `'event'` listener is reported when nobody listens for
   * `'error'` (default `console`).
   */
  logger?: Logger;
}

/** Options of {@link UdpDriver.open} (one remote). Sizes in bytes, times in ms. */
export interface UdpDriverOptions extends UdpSocketOptions {
  /**
   * The peer's address. When given, the socket is connected to it (the kernel drops datagrams from
   * anyone else); a host name is resolved first and `open` rejects with `invalid-argument` when it
   * does not resolve. When omitted, the first datagram accepted by `acceptFirst` latches the remote.
   */
  remote?: UdpAddress;
  /**
   * Unconnected mode only: decides whether a datagram from an unknown address may latch the remote
   * (default: any datagram). A refused datagram is dropped and counted as `foreignDropped`; after the
   * latch the socket is connected to the remote, so the kernel drops everyone else's datagrams.
   */
  acceptFirst?: (bytes: Uint8Array, from: UdpAddress) => boolean;
}

/** Options of {@link UdpDriver.openEndpoint}. */
export interface UdpEndpointOptions extends UdpSocketOptions {
  /**
   * The one remote of an endpoint that talks to a single server: the socket is connected to it (a
   * host name is resolved first, as in `open`). Omitted: the socket talks to any remote.
   */
  remote?: UdpAddress;
}

/** Options of {@link UdpDriver.close}. */
export interface UdpDriverCloseOptions {
  /**
   * Keep receiving and answering until the remote has been quiet for `quietMs` (default 1000), at
   * most `maxMs` (default 10 000), so it gets the acks it still needs; `true` takes the defaults.
   * Default: close after one last drain.
   */
  linger?: boolean | LingerOptions;
}

/**
 * Names of the driver's own counters. `datagramsIn`/`bytesIn`: what the socket (and any attached
 * transport) delivered to the endpoint; `datagramsOut`/`bytesOut`: what was handed to them. These
 * are the socket's figures, for any endpoint (a one-remote peer has no other count); an endpoint
 * counts what it handled itself (a `Host`'s `datagramsOut` also holds the `unsendable` ones).
 * `sendsQueued`: datagrams sent without a completion callback that libuv had to queue (socket send
 * buffer backed up); their buffers are held until the queue drains. `unsendable`: datagrams whose
 * destination was not a `host:port` address (dropped). `handlerErrors`: exceptions thrown by
 * `'event'` listeners.
 */
export type UdpDriverCounter =
  | 'datagramsIn'
  | 'bytesIn'
  | 'datagramsOut'
  | 'bytesOut'
  | 'foreignDropped'
  | 'sendErrors'
  | 'recvErrors'
  | 'sendPoolExhausted'
  | 'sendsQueued'
  | 'unsendable'
  | 'timerWakeups'
  | 'handlerErrors';

const COUNTER_NAMES: readonly UdpDriverCounter[] = [
  'datagramsIn',
  'bytesIn',
  'datagramsOut',
  'bytesOut',
  'foreignDropped',
  'sendErrors',
  'recvErrors',
  'sendPoolExhausted',
  'sendsQueued',
  'unsendable',
  'timerWakeups',
  'handlerErrors',
];

/** Socket buffer sizes in bytes: what was asked and what the OS reports it granted (Linux reports double). */
export interface SocketBufferSizes {
  recvRequested: number;
  recvGranted: number;
  sendRequested: number;
  sendGranted: number;
}

/** Events of a {@link UdpDriver}. */
export interface UdpDriverEvents<E> {
  /** An event polled from the endpoint. */
  event: [event: E];
  /**
   * An `'event'` listener threw `error` while handling `event`. The driver caught it and keeps
   * serving (the next events, other remotes, the timer). Without an `'error'` listener the error goes
   * to the `logger` option instead (an `'error'` emitted to nobody would end the process). An
   * `'error'` listener that throws is not caught. Rejections of `async` listeners are not seen here.
   */
  error: [error: unknown, event: E];
  /** The remote was latched from the first accepted datagram (one-remote mode, unconnected). */
  remote: [remote: UdpAddress];
  /**
   * A send or receive failed (`ENOBUFS`, `ECONNREFUSED`, …); counted, and the protocol resends. Only
   * one datagram per drain (and sends while the socket's queue is backed up) carries a completion
   * callback, so an error condition is reported at least once per drain, not per datagram.
   */
  'socket-error': [error: NodeJS.ErrnoException];
  /** The socket is closed; no more events follow. */
  close: [];
}

const DEFAULT_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * Runs a sans-IO object over a Node `dgram` socket with the platform-independent `DriveLoop`: a
 * monotonic clock and ONE timer aimed at the object's `pollTimeout()`. Each datagram is fed as it
 * arrives; after all datagrams of one event-loop turn (libuv reads up to 32 per socket), after a
 * timer wake-up and on `flush()`, the loop drains `pollTransmit` into pooled send buffers and
 * `pollEvent` into `'event'`, so a peer that acks lazily answers a burst with one datagram.
 *
 * - {@link UdpDriver.open}: one remote (a `SansIoPeer`: chunk sender/receiver, KCP client); the
 *   socket is connected to it (given, or latched from the first datagram).
 * - {@link UdpDriver.openEndpoint}: any number of remotes (an `Endpoint`: KCP server, host); its
 *   addresses are `"host:port"` strings (see {@link addressKey}).
 *
 * Commands on an object with a `setWaker` hook (`sendBlock`, `send`, `close`…) wake the driver by
 * themselves; `kick()` does the same for objects without one.
 *
 * An exception thrown by an `'event'` listener never stops the driver: it is counted
 * (`handlerErrors`) and emitted as `'error'` (error, event) when someone listens for `'error'`,
 * otherwise reported to the `logger` option (default `console`); the next events, other remotes and
 * the timer go on.
 */
export class UdpDriver<E = unknown> extends EventEmitter<UdpDriverEvents<E>> {
  /** The driven object (a `PeerEndpoint` around the peer in one-remote mode). */
  readonly endpoint: Endpoint<E>;
  /** Local address the socket is bound to. */
  readonly local: UdpAddress;
  /** Socket buffer sizes requested and granted. */
  readonly bufferSizes: SocketBufferSizes;

  private readonly socket: Socket;
  private readonly clock: () => number;
  private readonly logger: Logger;
  private readonly loop: DriveLoop<E, NodeJS.Timeout>;
  // One-remote mode: the wrapper whose remote is latched, whether the socket is connected, the filter.
  private readonly single: PeerEndpoint<E> | undefined;
  private connected: boolean;
  private remoteAddr: UdpAddress | undefined;
  private readonly acceptFirst: ((bytes: Uint8Array, from: UdpAddress) => boolean) | undefined;
  private readonly stats = newCounters<UdpDriverCounter>(COUNTER_NAMES);
  // The four per-datagram counters are plain fields (hot path); folded into counters() on demand.
  private nIn = 0;
  private bIn = 0;
  private nOut = 0;
  private bOut = 0;
  private readonly pool: Buffer[];
  private readonly free: number[];
  private readonly releasers: ((err: Error | null) => void)[];
  private readonly views: (Buffer | undefined)[];
  // Sends with a completion callback not yet completed: a new one is attached only when none is.
  private callbacksOut = 0;
  // Slots sent without a callback while the send queue was backed up: freed once it is empty.
  private readonly held: number[] = [];
  private heldCheck: NodeJS.Immediate | undefined;
  private starved = false;
  private closing: Promise<void> | undefined;
  // Multi-remote address caches: the last source seen and the last destination parsed.
  private lastFromHost = '';
  private lastFromPort = -1;
  private lastFromKey = '';
  private lastTo = '';
  private lastToAddr: UdpAddress | undefined;
  // Other transports carried on this endpoint (attachTransport): transport prefix (transportOf) → sink.
  private readonly sides = new Map<string, (to: Address, bytes: Uint8Array) => void>();
  private readonly onHeldCheckBound = (): void => {
    this.heldCheck = undefined;
    this.releaseHeld();
    if (this.held.length > 0) this.watchHeld();
  };
  private readonly onMessageBound: (msg: Buffer, rinfo: RemoteInfo) => void;
  // Events drained before the caller of open() could listen: emitted in the next check phase.
  private early: E[] | undefined = [];

  private constructor(
    endpoint: Endpoint<E>,
    single: PeerEndpoint<E> | undefined,
    socket: Socket,
    options: UdpDriverOptions,
    sizes: SocketBufferSizes,
    from?: Address,
  ) {
    super();
    this.endpoint = endpoint;
    this.single = single;
    this.socket = socket;
    this.clock = options.clock ?? (() => performance.now());
    this.logger = options.logger ?? console;
    this.connected = options.remote !== undefined;
    this.remoteAddr = options.remote;
    this.acceptFirst = options.acceptFirst;
    this.bufferSizes = sizes;
    const a = socket.address();
    this.local = { host: a.address, port: a.port };
    const slots = options.maxSendsPerTick ?? 256;
    const size = options.maxDatagramBytes ?? 1472;
    // One slab for the whole pool: a send buffer must stay untouched until its send completes.
    const slab = Buffer.allocUnsafeSlow(slots * size);
    this.pool = [];
    this.free = [];
    this.releasers = [];
    this.views = new Array<Buffer | undefined>(slots).fill(undefined);
    for (let i = 0; i < slots; i++) {
      this.pool.push(slab.subarray(i * size, (i + 1) * size));
      this.free.push(slots - 1 - i);
      this.releasers.push((err) => this.release(i, err));
    }
    const platform: DrivePlatform<NodeJS.Timeout> = {
      now: this.clock,
      send: (_bytes, length, to) => this.send(length, to),
      setTimer: (ms, fire) => setTimeout(fire, ms),
      clearTimer: (t) => clearTimeout(t),
      // Check phase: after the poll phase has fed every datagram libuv read this turn.
      defer: (task) => void setImmediate(task),
      buffer: () => this.nextBuffer(),
    };
    this.loop = new DriveLoop<E, NodeJS.Timeout>(endpoint, platform, {
      onEvent: (ev) => {
        if (this.early === undefined) this.emit('event', ev);
        else this.early.push(ev);
      },
      onError: (err, ev) => this.handlerFailed(err, ev),
      maxDatagramBytes: size,
      maxTransmitsPerTurn: slots,
    });
    this.onMessageBound = single !== undefined ? (m, r) => this.onMessageSingle(m, r)
      : from !== undefined ? (m) => this.onMessageConnected(m, from)
      : (m, r) => this.onMessageMulti(m, r);
    socket.on('message', this.onMessageBound);
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.stats.recvErrors++;
      if (this.listenerCount('socket-error') > 0) this.emit('socket-error', err);
    });
  }

  /**
   * Bind a socket (udp4, or udp6 for an IPv6 `host`/`remote`), connect it when `options.remote` is
   * set, enlarge its buffers, and start driving `peer`, the only remote's protocol object. Rejects
   * on bind/connect failure (no socket is left open) and with `invalid-argument` when the remote host
   * does not resolve; throws `invalid-config` on bad options.
   */
  static async open<E = unknown>(peer: SansIoPeer<E>, options: UdpDriverOptions = {}): Promise<UdpDriver<E>> {
    const v = validate(options);
    let remote = await resolveRemote(options);
    const socket = await bindSocket(isIP(options.host ?? '') === 6 || (remote !== undefined && isIP(remote.host) === 6), options.port ?? 0, options.host);
    if (remote !== undefined) remote = await connectSocket(socket, remote);
    const sizes = setBufferSizes(socket, v.recvBytes, v.sendBytes);
    const single = new PeerEndpoint<E>(peer, remote === undefined ? undefined : addressKey(remote.host, remote.port));
    const driver = new UdpDriver<E>(single, single, socket, { ...options, remote }, sizes);
    driver.start();
    return driver;
  }

  /**
   * Bind a socket and drive `endpoint`, which names the remote of every datagram. Unconnected (no
   * `options.remote`): any number of remotes; every datagram is fed with its source as an
   * `addressKey` string (`"1.2.3.4:5"`, `"[::1]:5"`), and each transmit goes to the address it names
   * (an unparsable one is dropped and counted as `unsendable`). With `options.remote` (a one-server
   * endpoint such as `KcpClient`): the socket is connected to it as in `open`, every datagram is fed
   * as from `addressKey(host, port)` of the remote as given (a name resolved first), and every
   * transmit goes to it. Rejects on bind/connect failure and with `invalid-argument` when the remote
   * host does not resolve; throws `invalid-config` on bad options.
   */
  static async openEndpoint<E = unknown>(endpoint: Endpoint<E>, options: UdpEndpointOptions = {}): Promise<UdpDriver<E>> {
    const v = validate(options);
    let remote = await resolveRemote(options);
    const socket = await bindSocket(isIP(options.host ?? '') === 6 || (remote !== undefined && isIP(remote.host) === 6), options.port ?? 0, options.host);
    const from = remote === undefined ? undefined : addressKey(remote.host, remote.port);
    if (remote !== undefined) remote = await connectSocket(socket, remote);
    const sizes = setBufferSizes(socket, v.recvBytes, v.sendBytes);
    const driver = new UdpDriver<E>(endpoint, undefined, socket, { ...options, remote, acceptFirst: undefined }, sizes, from);
    driver.start();
    return driver;
  }

  /**
   * Carry the remotes of another transport on this driver's endpoint (one host, one drive loop, one
   * timer): transmits to addresses whose transport prefix (`transportOf`) is `prefix` (`"webrtc:"`: a
   * lowercase name and a colon) go to `send(to, bytes)` instead of the socket (`bytes` is valid during
   * the call only), and the returned function feeds the endpoint one datagram from such a remote
   * (counted as UDP's are). The WebRTC adapter uses it. Multi-remote drivers only (`openEndpoint`):
   * throws `invalid-state` otherwise, `invalid-argument` for a prefix not of that form or one already
   * attached.
   */
  attachTransport(prefix: string, send: (to: Address, bytes: Uint8Array) => void): (from: Address, bytes: Uint8Array) => void {
    if (this.single !== undefined) throw new GamewireError('invalid-state', 'attachTransport needs a driver from openEndpoint');
    if (typeof prefix !== 'string' || prefix === '' || transportOf(prefix) !== prefix || this.sides.has(prefix)) {
      throw new GamewireError('invalid-argument', `transport prefix '${String(prefix)}' is not a lowercase name and a colon, or is attached already`);
    }
    if (typeof send !== 'function') throw new GamewireError('invalid-argument', 'send must be a function');
    this.sides.set(prefix, send);
    return (from, bytes) => {
      if (this.loop.state === 'closed') return;
      this.nIn++;
      this.bIn += bytes.length;
      this.loop.handleDatagram(from, bytes);
    };
  }

  /** One-remote mode: the peer's address (connected or latched), or `undefined` before the latch. */
  get remote(): UdpAddress | undefined {
    return this.remoteAddr;
  }

  /** Driver clock reading at the last datagram fed to the endpoint, ms (`-Infinity` if none). */
  get lastDatagramAt(): number {
    return this.loop.lastDatagramAt;
  }

  /** Current driver clock, ms (the same clock the endpoint is driven with). */
  now(): number {
    return this.clock();
  }

  /** A copy of the driver's counters (datagrams/bytes in and out, drops, socket errors, wake-ups). */
  counters(): Readonly<Record<UdpDriverCounter, number>> {
    return {
      ...this.stats,
      datagramsIn: this.nIn,
      bytesIn: this.bIn,
      datagramsOut: this.nOut,
      bytesOut: this.bOut,
      timerWakeups: this.loop.counters().timerWakeups,
      handlerErrors: this.loop.counters().handlerErrors,
    };
  }

  /**
   * Schedule one drain after the current task (coalesces many commands). Only needed for objects
   * without a `setWaker` hook; harmless otherwise.
   */
  kick(): void {
    this.loop.wake();
  }

  /** Drain now: run due timers, send every datagram due, emit events, re-aim the timer. */
  flush(): void {
    if (this.loop.state === 'closed') throw new GamewireError('closed', 'flush on a closed UdpDriver');
    this.loop.drain();
  }

  /**
   * Close: by default after one last drain (what is due leaves, queued events are emitted — also
   * when called from an `'event'` handler); with `linger`, first keep answering until the remote has
   * been quiet for a while (see {@link UdpDriverCloseOptions}). Then the socket closes and `'close'`
   * is emitted. Datagrams still queued in the OS may or may not leave. Calling it again while
   * closing returns the same promise (a plain `close()` ends a linger at once).
   */
  close(options: UdpDriverCloseOptions = {}): Promise<void> {
    this.releaseEarly();
    if (this.closing !== undefined) {
      if (options.linger === undefined || options.linger === false) void this.loop.close();
      return this.closing;
    }
    this.closing = this.loop.close(options.linger).then(
      () =>
        new Promise<void>((resolve) => {
          if (this.heldCheck !== undefined) clearImmediate(this.heldCheck);
          this.heldCheck = undefined;
          this.socket.close(() => {
            this.emit('close');
            resolve();
          });
        }),
    );
    return this.closing;
  }

  /** The first drain runs at once; its events wait for the check phase, after the caller of open() attached its listeners. */
  private start(): void {
    this.loop.drain();
    setImmediate(() => this.releaseEarly());
  }

  private releaseEarly(): void {
    const early = this.early;
    if (early === undefined) return;
    this.early = undefined;
    for (const ev of early) {
      try {
        this.emit('event', ev);
      } catch (err) {
        this.loop.handlerErrors++;
        this.handlerFailed(err, ev);
      }
    }
  }

  private handlerFailed(err: unknown, ev: E): void {
    if (this.listenerCount('error') > 0) this.emit('error', err, ev);
    else this.logger.error('gamewire: an \'event\' listener threw; the driver goes on (listen for \'error\' to handle it):', err);
  }

  private onMessageSingle(msg: Buffer, rinfo: RemoteInfo): void {
    if (this.loop.state === 'closed') return;
    if (!this.connected) {
      const r = this.remoteAddr;
      if (r === undefined) {
        const from = { host: rinfo.address, port: rinfo.port };
        if (this.acceptFirst !== undefined && !this.acceptFirst(msg, from)) {
          this.stats.foreignDropped++;
          return;
        }
        this.remoteAddr = from;
        this.single!.remote = addressKey(from.host, from.port);
        this.connectLatched(from);
        this.emit('remote', from);
      } else if (r.port !== rinfo.port || r.host !== rinfo.address) {
        this.stats.foreignDropped++;
        return;
      }
    }
    this.nIn++;
    this.bIn += msg.length;
    this.loop.handleDatagram(this.single!.remote!, msg);
  }

  /** A connected endpoint (`openEndpoint` with a remote): the kernel lets only the remote's datagrams in. */
  private onMessageConnected(msg: Buffer, from: Address): void {
    if (this.loop.state === 'closed') return;
    this.nIn++;
    this.bIn += msg.length;
    this.loop.handleDatagram(from, msg);
  }

  private onMessageMulti(msg: Buffer, rinfo: RemoteInfo): void {
    if (this.loop.state === 'closed') return;
    if (rinfo.port !== this.lastFromPort || rinfo.address !== this.lastFromHost) {
      this.lastFromHost = rinfo.address;
      this.lastFromPort = rinfo.port;
      this.lastFromKey = addressKey(rinfo.address, rinfo.port);
    }
    this.nIn++;
    this.bIn += msg.length;
    this.loop.handleDatagram(this.lastFromKey, msg);
  }

  /**
   * Connect the socket to the latched remote: the kernel then filters strangers and sends skip the
   * per-datagram address lookup. Until the connect completes, sends name the address explicitly.
   */
  private connectLatched(r: UdpAddress): void {
    this.socket.connect(r.port, r.host, (err?: Error) => {
      if (err !== undefined && err !== null) this.stats.sendErrors++;
      else this.connected = true;
    });
    try {
      this.socket.remoteAddress();
      this.connected = true; // the lookup answered synchronously: already connected
    } catch {
      /* still connecting */
    }
  }

  /** The pool's next free buffer (the loop writes the next datagram into it), or none: starved. */
  private nextBuffer(): Uint8Array | undefined {
    const slot = this.free[this.free.length - 1];
    if (slot === undefined) {
      this.stats.sendPoolExhausted++;
      this.starved = true; // release() wakes the loop
      return undefined;
    }
    return this.pool[slot];
  }

  /** Send the first `n` bytes of the buffer `nextBuffer()` handed out to `to`. */
  private send(n: number, to: Address): void {
    const side = this.sides.size === 0 ? undefined : this.sides.get(transportOf(to));
    if (side !== undefined) {
      // The buffer stays on top of the free list: the sink copies the bytes before it returns.
      this.nOut++;
      this.bOut += n;
      side(to, this.pool[this.free[this.free.length - 1]!]!.subarray(0, n));
      return;
    }
    let port = 0;
    let host = '';
    if (!this.connected) {
      const a = this.single === undefined ? this.destination(to) : this.remoteAddr;
      if (a === undefined) {
        this.stats.unsendable++;
        return; // the buffer stays on top of the free list for the next datagram
      }
      port = a.port;
      host = a.host;
    }
    const slot = this.free.pop()!;
    this.nOut++;
    this.bOut += n;
    const view = this.viewOf(slot, n);
    if (this.callbacksOut === 0 || this.held.length > 0) {
      // One send in flight at a time carries a completion callback, so a socket error (an ICMP
      // refusal pending on the socket, ENOBUFS) is reported at least once per drain; so does
      // everything sent while the socket's send queue is backed up (those sends are asynchronous).
      this.callbacksOut++;
      if (port === 0) this.socket.send(view, this.releasers[slot]);
      else this.socket.send(view, port, host, this.releasers[slot]);
      return;
    }
    // No callback: it costs a process.nextTick per datagram. An empty send queue right after the
    // call means libuv sent it synchronously and the buffer is free; otherwise it is queued and the
    // buffer is held until the queue drains.
    if (port === 0) this.socket.send(view);
    else this.socket.send(view, port, host);
    if (this.socket.getSendQueueCount() === 0) {
      this.free.push(slot);
    } else {
      this.stats.sendsQueued++;
      this.held.push(slot);
      this.watchHeld();
    }
  }

  /** Parse a destination `Address`, caching the last one (consecutive datagrams mostly share it). */
  private destination(to: Address): UdpAddress | undefined {
    if (to !== this.lastTo) {
      this.lastTo = to;
      this.lastToAddr = parseAddressKey(to);
      // A host name would be resolved after this call returns, when the send buffer already holds the
      // next datagram: only IP literals (what `addressKey` makes of a datagram's source) are sendable.
      const a = this.lastToAddr;
      if (a !== undefined && (a.port === 0 || isIP(a.host) === 0)) this.lastToAddr = undefined;
    }
    return this.lastToAddr;
  }

  /**
   * The first `n` bytes of send buffer `slot` as a Buffer, cached per slot: dgram's (buf, offset,
   * length) form builds and validates a new view on every send; most datagrams repeat the last size.
   */
  private viewOf(slot: number, n: number): Buffer {
    let v = this.views[slot];
    if (v === undefined || v.length !== n) {
      v = this.pool[slot].subarray(0, n);
      this.views[slot] = v;
    }
    return v;
  }

  /** Poll once per loop turn until the send queue is empty, then free the held buffers. */
  private watchHeld(): void {
    if (this.heldCheck !== undefined || this.loop.state === 'closed') return;
    this.heldCheck = setImmediate(this.onHeldCheckBound);
  }

  private releaseHeld(): void {
    if (this.held.length === 0 || this.loop.state === 'closed' || this.socket.getSendQueueCount() !== 0) return;
    for (const slot of this.held) this.free.push(slot);
    this.held.length = 0;
    this.resume();
  }

  private release(slot: number, err: Error | null): void {
    this.callbacksOut--;
    this.free.push(slot);
    if (this.held.length > 0) this.releaseHeld();
    if (err !== null) {
      this.stats.sendErrors++;
      if (this.listenerCount('socket-error') > 0) this.emit('socket-error', err as NodeJS.ErrnoException);
    }
    this.resume();
  }

  private resume(): void {
    if (!this.starved) return;
    this.starved = false;
    this.loop.wake();
  }
}

function validate(options: UdpSocketOptions): { recvBytes: number; sendBytes: number } {
  checkConfig(isObject(options), 'options must be an object');
  const port = options.port ?? 0;
  checkConfig(isInt(port, 0, 65535), 'port must be 0..65535');
  const recvBytes = options.recvBufferBytes ?? DEFAULT_BUFFER_BYTES;
  const sendBytes = options.sendBufferBytes ?? DEFAULT_BUFFER_BYTES;
  checkConfig(isInt(recvBytes, 1), 'recvBufferBytes must be a positive integer');
  checkConfig(isInt(sendBytes, 1), 'sendBufferBytes must be a positive integer');
  const maxDatagram = options.maxDatagramBytes ?? 1472;
  checkConfig(isInt(maxDatagram, 64, 65507), 'maxDatagramBytes must be 64..65507');
  const slots = options.maxSendsPerTick ?? 256;
  checkConfig(isInt(slots, 1, 65536), 'maxSendsPerTick must be 1..65536');
  checkConfig(options.logger === undefined || isLogger(options.logger), 'logger must have an error(message, error) method');
  return { recvBytes, sendBytes };
}

/**
 * @internal `host` as an IP literal (a name resolved once, in the family of `localHost` if that is
 * one), so a name that does not resolve rejects `open` with `invalid-argument` before any socket
 * exists (dgram's own connect would report it later).
 */
export async function resolveHost(host: string, localHost: string | undefined): Promise<string> {
  if (isIP(host) !== 0) return host;
  const localFamily = isIP(localHost ?? '');
  try {
    const r = await dnsLookupAsync(host, { family: localFamily === 6 ? 6 : localFamily === 4 ? 4 : 0 });
    return r.address;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? String(err);
    throw new GamewireError('invalid-argument', `remote host "${host}" does not resolve (${code})`);
  }
}

/** Check `options.remote` and resolve its host (`resolveHost`); undefined without one. */
async function resolveRemote(options: { remote?: UdpAddress; host?: string }): Promise<UdpAddress | undefined> {
  const r = options.remote;
  if (r === undefined) return undefined;
  checkConfig(typeof r === 'object' && r !== null && typeof r.host === 'string' && r.host.length > 0, 'remote.host must be a non-empty string');
  checkConfig(isInt(r.port, 1, 65535), 'remote.port must be 1..65535');
  return { host: await resolveHost(r.host, options.host), port: r.port };
}

/** Connect `socket` to `r` (an IP literal); the address the kernel reports. On failure the socket is closed before the rejection. */
async function connectSocket(socket: Socket, r: UdpAddress): Promise<UdpAddress> {
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.connect(r.port, r.host, () => {
        socket.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    socket.close();
    throw err;
  }
  const a = socket.remoteAddress();
  return { host: a.address, port: a.port };
}

/** Create and bind a socket; on failure it is closed before the rejection. */
async function bindSocket(v6: boolean, port: number, host: string | undefined): Promise<Socket> {
  const socket = createSocket({ type: v6 ? 'udp6' : 'udp4', lookup: syncLiteralLookup });
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('error', reject);
      socket.bind(port, host ?? (v6 ? '::' : '0.0.0.0'), () => {
        socket.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    socket.close();
    throw err;
  }
  return socket;
}

function setBufferSizes(socket: Socket, recv: number, send: number): SocketBufferSizes {
  // The OS silently caps these (Linux: net.core.rmem_max / wmem_max, then reports double).
  try {
    socket.setRecvBufferSize(recv);
  } catch {
    /* refused: keep the default, reported below */
  }
  try {
    socket.setSendBufferSize(send);
  } catch {
    /* refused: keep the default, reported below */
  }
  return {
    recvRequested: recv,
    recvGranted: socket.getRecvBufferSize(),
    sendRequested: send,
    sendGranted: socket.getSendBufferSize(),
  };
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string, family: number) => void;

/**
 * dgram resolves the destination of every unconnected send; for IP literals Node defers that to the
 * next tick, and the send with it, while our send buffer is reused at once for the next datagram.
 * Answering synchronously sends it before the call returns; names still go to DNS. @internal
 */
export function syncLiteralLookup(host: string, options: unknown, callback: LookupCallback): void {
  const literal = isIP(host);
  if (literal !== 0) {
    callback(null, host, literal);
    return;
  }
  const family = typeof options === 'number' ? options : ((options as { family?: number } | undefined)?.family ?? 4);
  dnsLookup(host, { family }, (err, address, fam) => callback(err, address, fam));
}
