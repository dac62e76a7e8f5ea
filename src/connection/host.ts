import { PacketAcks } from '../ack/index.js';
import { MessageLanes } from '../channels/index.js';
import { Path } from '../congestion/path.js';
import { newCounters } from '../core/counters.js';
import type { Address } from '../core/endpoint.js';
import { readU32LE } from '../core/bytes.js';
import { checkArg, GamewireError } from '../core/errors.js';
import { Host, HostEndpoint, type PeerId } from '../core/host.js';
import { randomU32 } from '../core/random.js';
import { sipHashKey, type SipHashKey } from '../core/siphash.js';
import { Connection, type ConnectionEvent, type ConnectionOwner } from './connection.js';
import { resolveConnectionOptions, type ConnectionOptions, type ResolvedConnectionOptions } from './options.js';
import {
  CONNECTION_PROTOCOL_VERSION, COOKIE_BYTES, COOKIE_FRAME_BYTES, DATA_PREFIX_BYTES, decodeConnect, encodeCookie, encodeIdReason,
  FrameKind, makeCookie, RefuseCode,
} from './wire.js';

/** Counter names of a `ConnectionHost` (each connection has its own: `connection.counters()`). */
export type ConnectionHostCounter =
  | 'datagramsIn'
  | 'malformed'
  | 'unknownAddress'
  | 'unexpectedConnect'
  | 'refusedFull'
  | 'refusedLanes'
  | 'refusedVersion'
  | 'cookiesSent'
  | 'cookieInvalid'
  | 'cookieExpired'
  | 'superseded'
  | 'connectionsOpened';

// `datagramsIn` is the core host's count (`counters()` reads it there); it is listed for its place only.
const COUNTERS: readonly ConnectionHostCounter[] = [
  'datagramsIn', 'malformed', 'unknownAddress', 'unexpectedConnect', 'refusedFull', 'refusedLanes', 'refusedVersion',
  'cookiesSent', 'cookieInvalid', 'cookieExpired', 'superseded', 'connectionsOpened',
];

/**
 * Many connections behind one address space (docs/connection.md): a client (`connect`), a server
 * (`listen: true`), or both. Sans-IO like every gamewire endpoint: feed datagrams and timeouts,
 * drain `pollTransmit` and `pollEvent`, sleep until `pollTimeout`, or let a driver
 * (`UdpDriver.openEndpoint`, the simulator's `World`) do it. One deadline heap, one round robin and
 * one address index for all connections (the core `Host`: at most one live connection per address).
 */
export class ConnectionHost extends HostEndpoint<Connection, ConnectionEvent, ConnectionEvent> {
  private readonly opt: ResolvedConnectionOptions;
  protected readonly host: Host<Connection, ConnectionEvent>;
  private readonly ctr = newCounters<ConnectionHostCounter>(COUNTERS);
  private readonly scratch = new Uint8Array(COOKIE_FRAME_BYTES);
  private readonly tag = new Uint8Array(COOKIE_BYTES);
  // Secret of the cookies this host grants when it listens (drawn from `random`, never sent).
  private readonly cookieKey: SipHashKey | undefined;

  /** @param options see `ConnectionOptions`; throws `invalid-config` on bad values (lanes included). */
  constructor(options: ConnectionOptions = {}) {
    super();
    this.opt = resolveConnectionOptions(options);
    new MessageLanes(this.opt.channels);
    new PacketAcks(new Path(this.opt.path), { packetDelivered() {}, packetLost() {} }, this.opt.acks);
    this.host = new Host<Connection, ConnectionEvent>({
      maxPeers: this.opt.maxConnections,
      route: (now, from, bytes) => this.route(now, from, bytes),
    });
    if (this.opt.listen) {
      const k = new Uint8Array(16);
      this.opt.random(k);
      this.cookieKey = sipHashKey(k);
    }
  }

  /** Connections held (live and closing). */
  get size(): number {
    return this.host.size;
  }

  /**
   * Open a connection to `address` at `now` (ms): it sends CONNECT until the peer accepts
   * (`'connected'` event) or `handshakeTimeoutMs` passes (`'disconnected'`, `'handshake-timeout'`).
   * Messages may be sent on it at once; they go once connected. Throws `queue-full` at
   * `maxConnections`, `invalid-state` if a connection to `address` exists.
   */
  connect(now: number, address: Address): Connection {
    checkArg(typeof now === 'number' && Number.isFinite(now), 'now must be a finite number of ms');
    checkArg(typeof address === 'string' && address.length > 0, 'address must be a non-empty string');
    if (this.host.firstAt(address) !== undefined) throw new GamewireError('invalid-state', `a connection to ${address} exists`);
    const c = new Connection(this.opt, this, address, this.newId(), undefined, now);
    this.adopt(address, c);
    return c;
  }

  /** The live connection with `address`, if any. */
  connectionAt(address: Address): Connection | undefined {
    const id = this.host.firstAt(address);
    return id === undefined ? undefined : this.host.get(id);
  }

  /** The live connections (a snapshot). */
  connections(): Connection[] {
    return this.host.ids().map((id) => this.host.get(id)!);
  }

  /** Close every connection (each sends DISCONNECT and raises `'disconnected'`). */
  close(): void {
    for (const c of this.connections()) c.close();
  }

  /** A copy of the host's counters, the core host's included (`host`; `datagramsIn` is its count). */
  counters(): Readonly<Record<ConnectionHostCounter, number>> & { host: ReturnType<Host<Connection>['counters']> } {
    const host = this.host.counters();
    return { ...this.ctr, datagramsIn: host.datagramsIn, host };
  }

  pollEvent(): ConnectionEvent | undefined {
    return this.host.pollPeerEvent();
  }

  /**
   * @internal a connection ended. Nothing to forget here: it is `finished()` from then on, so the
   * host retires it after this input (its address is free for a new connection at once).
   */
  released(_connection: Connection): void {}

  private adopt(address: Address, c: Connection): PeerId {
    const id = this.host.add(address, c);
    this.ctr.connectionsOpened++;
    return id;
  }

  private newId(): number {
    let id = randomU32(this.opt.random);
    while (id === 0) id = randomU32(this.opt.random);
    return id;
  }

  private refuse(to: Address, clientId: number, code: number, counter: ConnectionHostCounter): undefined {
    this.ctr[counter]++;
    this.host.sendTo(to, this.scratch.subarray(0, encodeIdReason(this.scratch, FrameKind.Refuse, clientId, code)));
    return undefined;
  }

  /**
   * A CONNECT from an address proves nothing until it echoes a cookie made for that address, so
   * until then the answer is stateless and smaller than the CONNECT (a COOKIE, or REFUSE for a version
   * that cannot echo one). A proven CONNECT is checked in full before anything changes: only then may
   * it replace the connection at its address (a restarted client) or take a slot.
   */
  private route(now: number, from: Address, b: Uint8Array): PeerId | undefined {
    if (b.length < DATA_PREFIX_BYTES || b[0]! < FrameKind.Connect || b[0]! > FrameKind.Cookie) {
      this.ctr.malformed++;
      return undefined;
    }
    const existing = this.host.firstAt(from);
    if (b[0] !== FrameKind.Connect) {
      if (existing === undefined) this.ctr.unknownAddress++;
      return existing;
    }
    const r = decodeConnect(b);
    if (!r.ok) {
      this.ctr.malformed++;
      return undefined;
    }
    const c = r.value;
    const conn = existing === undefined ? undefined : this.host.get(existing)!;
    if (conn !== undefined && (conn.isClient || c.clientId === conn.peerId)) return existing;
    if (!this.opt.listen) {
      this.ctr.unexpectedConnect++;
      return undefined;
    }
    if (c.version !== CONNECTION_PROTOCOL_VERSION) return this.refuse(from, c.clientId, RefuseCode.Version, 'refusedVersion');
    if (!this.proven(now, from, c.clientId, c.cookie)) {
      this.ctr.cookiesSent++;
      const n = makeCookie(this.cookieKey!, from, c.clientId, Math.floor(now), this.tag, 0);
      this.host.sendTo(from, this.scratch.subarray(0, encodeCookie(this.scratch, c.clientId, this.tag.subarray(0, n))));
      return undefined;
    }
    if (c.lanesHash !== this.opt.lanesHash) return this.refuse(from, c.clientId, RefuseCode.Lanes, 'refusedLanes');
    if (this.host.full) return this.refuse(from, c.clientId, RefuseCode.Full, 'refusedFull');
    if (conn !== undefined) {
      this.ctr.superseded++;
      conn.supersede();
    }
    return this.adopt(from, new Connection(this.opt, this, from, this.newId(), c.clientId, now));
  }

  /** True when `cookie` was made by this host for (`from`, `clientId`) at most `handshakeTimeoutMs` ago. */
  private proven(now: number, from: Address, clientId: number, cookie: Uint8Array | undefined): boolean {
    if (cookie === undefined) return false;
    const issuedAt = readU32LE(cookie, 0);
    makeCookie(this.cookieKey!, from, clientId, issuedAt, this.tag, 0);
    // Compared in full whatever differs, so timing does not tell a forger how many bytes were right.
    let diff = 0;
    for (let i = 4; i < COOKIE_BYTES; i++) diff |= this.tag[i]! ^ cookie[i]!;
    if (diff !== 0) {
      this.ctr.cookieInvalid++;
      return false;
    }
    if (((Math.floor(now) - issuedAt) >>> 0) > this.opt.handshakeTimeoutMs) {
      this.ctr.cookieExpired++;
      return false;
    }
    return true;
  }
}
