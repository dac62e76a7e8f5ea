import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import { lookup as dnsLookup } from 'node:dns';
import { EventEmitter } from 'node:events';
import { isIP } from 'node:net';
import { performance } from 'node:perf_hooks';
import { Counters } from '../../core/counters.js';
import { checkConfig, GamewireError } from '../../core/errors.js';
import type { SansIoPeer } from '../../core/peer.js';

/** A sans-IO peer the driver can run; `pollEvent` is drained after every input. */
export type DrivablePeer<E = unknown> = SansIoPeer<E>;

/** A UDP endpoint: IPv4 address (or host name when given to the driver) and port. */
export interface UdpAddress {
  /** IPv4 address or host name. */
  host: string;
  /** UDP port, 1..65535. */
  port: number;
}

/** Options of {@link UdpDriver.open}. Sizes in bytes, times in ms. */
export interface UdpDriverOptions {
  /** Local port to bind; 0 (default) lets the OS pick one (see `driver.local`). */
  port?: number;
  /** Local IPv4 address to bind (default `0.0.0.0`). */
  host?: string;
  /**
   * The peer's address. When given, the socket is connected to it (the kernel drops datagrams from
   * anyone else). When omitted, the first datagram accepted by `acceptFirst` latches the remote.
   */
  remote?: UdpAddress;
  /**
   * Unconnected mode only: decides whether a datagram from an unknown address may latch the remote
   * (default: any datagram). A refused datagram is dropped and counted as `foreignDropped`; after the
   * latch the socket is connected to the remote, so the kernel drops everyone else's datagrams.
   */
  acceptFirst?: (bytes: Uint8Array, from: UdpAddress) => boolean;
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
}

/**
 * Names of the driver's own counters (the peer keeps its own). `sendsQueued`: datagrams sent without
 * a completion callback that libuv had to queue (socket send buffer backed up); their buffers are held
 * until the queue drains.
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
  | 'timerWakeups';

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
  'timerWakeups',
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
  /** An event polled from the peer. */
  event: [event: E];
  /** The remote was latched from the first accepted datagram (unconnected mode). */
  remote: [remote: UdpAddress];
  /**
   * A send or receive failed (`ENOBUFS`, `ECONNREFUSED`, …); counted, and the protocol resends. Only
   * the first datagram of each drain (and sends while the socket's queue is backed up) carries a
   * completion callback, so an error condition is reported at least once per drain, not per datagram.
   */
  'socket-error': [error: NodeJS.ErrnoException];
  /** The socket is closed; no more events follow. */
  close: [];
}

const DEFAULT_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * Runs one point-to-point {@link SansIoPeer} over a Node `dgram` (udp4) socket with a monotonic
 * clock and ONE timer aimed at `peer.pollTimeout()`. Each datagram is fed to the peer as it arrives;
 * after all datagrams of one event-loop turn (libuv reads up to 32 per socket), after a timer
 * wake-up and on `flush()`, the driver drains `pollTransmit` into pooled buffers and `pollEvent` into
 * `'event'` — so a peer that acks lazily answers a burst with one datagram.
 * Create with {@link UdpDriver.open}; call `kick()` after commands such as `sendBlock`.
 */
export class UdpDriver<E = unknown> extends EventEmitter<UdpDriverEvents<E>> {
  /** The driven protocol object. */
  readonly peer: DrivablePeer<E>;
  /** Local address the socket is bound to. */
  readonly local: UdpAddress;
  /** Socket buffer sizes requested and granted. */
  readonly bufferSizes: SocketBufferSizes;

  private readonly socket: Socket;
  private readonly clock: () => number;
  private connected: boolean;
  private readonly acceptFirst: ((bytes: Uint8Array, from: UdpAddress) => boolean) | undefined;
  private readonly stats = new Counters<UdpDriverCounter>(COUNTER_NAMES);
  // The four per-datagram counters are plain fields (hot path); folded into counters() on demand.
  private nIn = 0;
  private bIn = 0;
  private nOut = 0;
  private bOut = 0;
  private readonly pool: Buffer[];
  private readonly free: number[];
  private readonly releasers: ((err: Error | null) => void)[];
  private readonly views: (Buffer | undefined)[];
  // Slots sent without a callback while the send queue was backed up: freed once it is empty.
  private readonly held: number[] = [];
  private heldCheck: NodeJS.Immediate | undefined;
  private readonly onHeldCheckBound = (): void => {
    this.heldCheck = undefined;
    this.releaseHeld();
    if (this.held.length > 0) this.watchHeld();
  };
  private remoteAddr: UdpAddress | undefined;
  private timer: NodeJS.Timeout | undefined;
  private timerDue = Infinity;
  private immediate: NodeJS.Immediate | undefined;
  private kicked = false;
  private starved = false;
  private servicing = false;
  private again = false;
  private closed = false;
  private lastIn = -Infinity;
  private readonly onMessageBound = (msg: Buffer, rinfo: RemoteInfo): void => this.onMessage(msg, rinfo);
  private readonly onTimerBound = (): void => this.onTimer();
  private readonly onImmediateBound = (): void => {
    this.immediate = undefined;
    this.service(this.clock(), true);
  };
  private readonly onKickBound = (): void => {
    this.kicked = false;
    if (!this.closed) this.service(this.clock(), true);
  };

  private constructor(peer: DrivablePeer<E>, socket: Socket, options: UdpDriverOptions, sizes: SocketBufferSizes) {
    super();
    this.peer = peer;
    this.socket = socket;
    this.clock = options.clock ?? (() => performance.now());
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
    socket.on('message', this.onMessageBound);
    socket.on('error', (err: NodeJS.ErrnoException) => {
      this.stats.add('recvErrors');
      if (this.listenerCount('socket-error') > 0) this.emit('socket-error', err);
    });
  }

  /**
   * Bind a udp4 socket (and connect it when `options.remote` is set), enlarge its buffers, and
   * start driving `peer`. Rejects on bind/connect failure; throws `invalid-config` on bad options.
   */
  static async open<E = unknown>(peer: DrivablePeer<E>, options: UdpDriverOptions = {}): Promise<UdpDriver<E>> {
    const port = options.port ?? 0;
    checkConfig(Number.isInteger(port) && port >= 0 && port <= 65535, 'port must be 0..65535');
    const recvBytes = options.recvBufferBytes ?? DEFAULT_BUFFER_BYTES;
    const sendBytes = options.sendBufferBytes ?? DEFAULT_BUFFER_BYTES;
    checkConfig(Number.isInteger(recvBytes) && recvBytes > 0, 'recvBufferBytes must be a positive integer');
    checkConfig(Number.isInteger(sendBytes) && sendBytes > 0, 'sendBufferBytes must be a positive integer');
    const maxDatagram = options.maxDatagramBytes ?? 1472;
    checkConfig(Number.isInteger(maxDatagram) && maxDatagram >= 64 && maxDatagram <= 65507, 'maxDatagramBytes must be 64..65507');
    const slots = options.maxSendsPerTick ?? 256;
    checkConfig(Number.isInteger(slots) && slots >= 1 && slots <= 65536, 'maxSendsPerTick must be 1..65536');
    if (options.remote !== undefined) {
      const r = options.remote;
      checkConfig(typeof r.host === 'string' && r.host.length > 0, 'remote.host must be a non-empty string');
      checkConfig(Number.isInteger(r.port) && r.port > 0 && r.port <= 65535, 'remote.port must be 1..65535');
    }

    const socket = createSocket({ type: 'udp4', lookup: syncLiteralLookup });
    try {
      await new Promise<void>((resolve, reject) => {
        socket.once('error', reject);
        socket.bind(port, options.host ?? '0.0.0.0', () => {
          socket.off('error', reject);
          resolve();
        });
      });
      if (options.remote !== undefined) {
        const r = options.remote;
        await new Promise<void>((resolve, reject) => {
          socket.once('error', reject);
          socket.connect(r.port, r.host, () => {
            socket.off('error', reject);
            resolve();
          });
        });
      }
    } catch (err) {
      socket.close();
      throw err;
    }
    const sizes = setBufferSizes(socket, recvBytes, sendBytes);
    const remote = options.remote === undefined ? undefined : { host: socket.remoteAddress().address, port: socket.remoteAddress().port };
    const driver = new UdpDriver<E>(peer, socket, { ...options, remote }, sizes);
    driver.service(driver.clock(), true);
    return driver;
  }

  /** The peer's address: the connected remote, the latched one, or `undefined` before the latch. */
  get remote(): UdpAddress | undefined {
    return this.remoteAddr;
  }

  /** Driver clock reading at the last datagram accepted for the peer, ms (`-Infinity` if none). */
  get lastDatagramAt(): number {
    return this.lastIn;
  }

  /** Current driver clock, ms (the same clock the peer is driven with). */
  now(): number {
    return this.clock();
  }

  /** A copy of the driver's counters (datagrams/bytes in and out, drops, socket errors). */
  counters(): Readonly<Record<UdpDriverCounter, number>> {
    return { ...this.stats.snapshot(), datagramsIn: this.nIn, bytesIn: this.bIn, datagramsOut: this.nOut, bytesOut: this.bOut };
  }

  /** Schedule one drain of the peer after the current task (coalesces many commands). */
  kick(): void {
    if (this.kicked || this.closed) return;
    this.kicked = true;
    queueMicrotask(this.onKickBound);
  }

  /** Drain the peer now: run due timers, send every datagram due, emit events, re-aim the timer. */
  flush(): void {
    if (this.closed) throw new GamewireError('closed', 'flush on a closed UdpDriver');
    this.service(this.clock(), true);
  }

  /** Stop the timer and close the socket. Datagrams still queued in the OS may or may not leave. */
  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.clearTimer();
    if (this.immediate !== undefined) clearImmediate(this.immediate);
    this.immediate = undefined;
    if (this.heldCheck !== undefined) clearImmediate(this.heldCheck);
    this.heldCheck = undefined;
    return new Promise((resolve) => {
      this.socket.close(() => {
        this.emit('close');
        resolve();
      });
    });
  }

  private onMessage(msg: Buffer, rinfo: RemoteInfo): void {
    if (this.closed) return;
    if (!this.connected) {
      const r = this.remoteAddr;
      if (r === undefined) {
        const from = { host: rinfo.address, port: rinfo.port };
        if (this.acceptFirst !== undefined && !this.acceptFirst(msg, from)) {
          this.stats.add('foreignDropped');
          return;
        }
        this.remoteAddr = from;
        this.connectLatched(from);
        this.emit('remote', from);
      } else if (r.port !== rinfo.port || r.host !== rinfo.address) {
        this.stats.add('foreignDropped');
        return;
      }
    }
    this.nIn++;
    this.bIn += msg.length;
    const now = this.clock();
    this.lastIn = now;
    this.peer.handleDatagram(now, msg);
    // libuv reads up to 32 datagrams per socket per loop turn; drain once after all of them (check
    // phase), so a receiver answers a whole batch with one ack instead of one per few datagrams.
    if (this.immediate === undefined) this.immediate = setImmediate(this.onImmediateBound);
  }

  /**
   * Connect the socket to the latched remote: the kernel then filters strangers and sends skip the
   * per-datagram address lookup. Until the connect completes, sends name the address explicitly.
   */
  private connectLatched(r: UdpAddress): void {
    this.socket.connect(r.port, r.host, (err?: Error) => {
      if (err !== undefined && err !== null) this.stats.add('sendErrors');
      else this.connected = true;
    });
    try {
      this.socket.remoteAddress();
      this.connected = true; // the lookup answered synchronously: already connected
    } catch {
      /* still connecting */
    }
  }

  private onTimer(): void {
    this.timer = undefined;
    this.timerDue = Infinity;
    if (this.closed) return;
    this.stats.add('timerWakeups');
    this.service(this.clock(), true);
  }

  /**
   * Run due timers (when `timers`; a datagram does not need them: the armed timer fires soon), then
   * drain datagrams and events, then re-aim the timer.
   */
  private service(now: number, timers: boolean): void {
    if (this.servicing) {
      // An event handler issued a command: loop once more after the current pass.
      this.again = true;
      return;
    }
    this.servicing = true;
    try {
      let first = true;
      do {
        this.again = false;
        if (!first) now = this.clock();
        if (timers || !first) {
          const due = this.peer.pollTimeout();
          if (due !== undefined && due <= now) this.peer.handleTimeout(now);
        }
        first = false;
        this.transmit(now);
        this.deliverEvents();
      } while (this.again && !this.closed);
    } finally {
      this.servicing = false;
    }
    if (!this.closed) this.arm(now);
  }

  private transmit(now: number): void {
    if (this.remoteAddr === undefined) return;
    const limit = this.pool.length;
    let sent = 0;
    while (sent < limit) {
      const slot = this.free.pop();
      if (slot === undefined) {
        this.stats.add('sendPoolExhausted');
        this.starved = true;
        return; // resumed by release() when a send completes
      }
      const buf = this.pool[slot];
      const n = this.peer.pollTransmit(now, buf);
      if (n === undefined) {
        this.free.push(slot);
        return;
      }
      this.nOut++;
      this.bOut += n;
      if (!this.connected) {
        this.socket.send(buf, 0, n, this.remoteAddr.port, this.remoteAddr.host, this.releasers[slot]);
      } else if (sent === 0 || this.held.length > 0) {
        // The first datagram of a drain carries a completion callback, so a socket error (an ICMP
        // refusal pending on the socket, ENOBUFS) is reported at least once per drain; so does
        // everything sent while the socket's send queue is backed up (those sends are asynchronous).
        this.socket.send(this.viewOf(slot, n), this.releasers[slot]);
      } else {
        // No callback: it costs a process.nextTick per datagram. An empty send queue right after
        // the call means libuv sent it synchronously and the buffer is free; otherwise it is queued
        // and the buffer is held until the queue drains.
        this.socket.send(this.viewOf(slot, n));
        if (this.socket.getSendQueueCount() === 0) {
          this.free.push(slot);
        } else {
          this.stats.add('sendsQueued');
          this.held.push(slot);
          this.watchHeld();
        }
      }
      sent++;
    }
    // The turn's budget is spent; continue after pending I/O (acks) has had a chance to run.
    if (this.immediate === undefined) this.immediate = setImmediate(this.onImmediateBound);
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
    if (this.heldCheck !== undefined || this.closed) return;
    this.heldCheck = setImmediate(this.onHeldCheckBound);
  }

  private releaseHeld(): void {
    if (this.held.length === 0 || this.closed || this.socket.getSendQueueCount() !== 0) return;
    for (const slot of this.held) this.free.push(slot);
    this.held.length = 0;
    if (this.starved && this.immediate === undefined) {
      this.starved = false;
      this.immediate = setImmediate(this.onImmediateBound);
    }
  }

  private release(slot: number, err: Error | null): void {
    this.free.push(slot);
    if (this.held.length > 0) this.releaseHeld();
    if (err !== null) {
      this.stats.add('sendErrors');
      if (this.listenerCount('socket-error') > 0) this.emit('socket-error', err as NodeJS.ErrnoException);
    }
    if (this.starved && !this.closed && this.immediate === undefined) {
      this.starved = false;
      this.immediate = setImmediate(this.onImmediateBound);
    }
  }

  private deliverEvents(): void {
    for (let ev = this.peer.pollEvent(); ev !== undefined; ev = this.peer.pollEvent()) {
      this.emit('event', ev);
      if (this.closed) return;
    }
  }

  private arm(now: number): void {
    const due = this.peer.pollTimeout();
    if (due === undefined) {
      this.clearTimer();
      return;
    }
    // Keep the armed timer unless the new deadline is a whole timer tick earlier: waking early is
    // harmless (we re-arm), rescheduling on every datagram is not free, and Node timers have 1 ms ticks.
    if (this.timer !== undefined && this.timerDue - 1 <= due) return;
    this.clearTimer();
    // Node timers have 1 ms granularity; whatever falls due meanwhile is sent in that one wake-up.
    const ms = Math.max(1, Math.ceil(due - now));
    this.timerDue = now + ms;
    this.timer = setTimeout(this.onTimerBound, ms);
  }

  private clearTimer(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.timerDue = Infinity;
  }
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
 * next tick. Answering synchronously keeps sends in order with our loop; names still go to DNS.
 */
function syncLiteralLookup(host: string, options: unknown, callback: LookupCallback): void {
  if (isIP(host) === 4) {
    callback(null, host, 4);
    return;
  }
  const family = typeof options === 'number' ? options : 4;
  dnsLookup(host, { family }, (err, address, fam) => callback(err, address, fam));
}
