import type { Path } from '../congestion/path.js';
import { readU32LE, writeU32LE } from '../core/bytes.js';
import { newCounters } from '../core/counters.js';
import type { HostedPeer } from '../core/host.js';
import type { BlockLaneProgress } from './blocks.js';
import type { ResolvedConnectionOptions } from './options.js';
import { Lifecycle, Phase, Timer } from './lifecycle.js';
import { Lanes, type ConnectionStats, type LanesCounters, type SessionEvents } from './session.js';
import {
  ACCEPT_BYTES, COOKIE_BYTES, DATA_PREFIX_BYTES, decodeConnect, decodeCookie, DISCONNECT_BYTES, DisconnectCode, encodeAccept,
  encodeConnect, encodeIdReason, FrameKind, REFUSE_BYTES, RefuseCode,
} from './wire.js';

export type { ConnectionStats } from './session.js';

/**
 * Counters of a `Connection`: the session's (packet layer, message lanes, block lane) and
 * `sendsAfterClose`, the `send` calls made after it had closed (nothing sent).
 */
export interface ConnectionCounters extends LanesCounters {
  sendsAfterClose: number;
}

/** Lifecycle of a `Connection`. */
export type ConnectionState = 'connecting' | 'connected' | 'closed';

/** Why a connection ended. */
export type DisconnectReason =
  | 'local' // close() on this side
  | 'peer' // the peer sent DISCONNECT (it closed)
  | 'timeout' // nothing valid received for timeoutMs
  | 'handshake-timeout' // client: no ACCEPT within handshakeTimeoutMs; server: no DATA after ACCEPT
  | 'refused-full' // client: the server holds maxConnections
  | 'refused-lanes' // client: the server's lane list differs
  | 'refused-version' // client: the server speaks another framing version
  | 'superseded'; // server: a proven CONNECT from the same address with another client id replaced it

/** Events polled from a `ConnectionHost`. Every one names its connection. */
export type ConnectionEvent =
  | { type: 'connected'; connection: Connection }
  | { type: 'message'; connection: Connection; lane: number; bytes: Uint8Array }
  | { type: 'delivery'; connection: Connection; lane: number; id: number; delivered: boolean }
  | { type: 'disconnected'; connection: Connection; reason: DisconnectReason };

/** Copies of DISCONNECT sent on close (each unreliable; the peer's timeout covers all being lost). */
const DISCONNECT_COPIES = 3;

const REFUSE_REASONS: Record<number, DisconnectReason> = {
  [RefuseCode.Full]: 'refused-full',
  [RefuseCode.Lanes]: 'refused-lanes',
  [RefuseCode.Version]: 'refused-version',
};

/** The owner a connection tells when it ends (the `ConnectionHost`). @internal */
export interface ConnectionOwner {
  released(connection: Connection): void;
}

/** Builds a connection's message and delivery events, naming it (one object per event). */
class ConnectionEvents implements SessionEvents<ConnectionEvent> {
  constructor(private readonly connection: Connection) {}

  message(lane: number, bytes: Uint8Array): ConnectionEvent {
    return { type: 'message', connection: this.connection, lane, bytes };
  }

  delivery(lane: number, id: number, delivered: boolean): ConnectionEvent {
    return { type: 'delivery', connection: this.connection, lane, id, delivered };
  }
}

/**
 * One connection to one remote: the packet layer (`PacketAcks`), the lanes (`MessageLanes`) and the path
 * (RTT, rate, pacing) composed, driven by its `ConnectionHost`. The application sends on lanes, reads
 * events from the host, and closes. Created by `ConnectionHost.connect` or by a listening host on a
 * peer's CONNECT; never constructed by users. Its timers, close and events are the shared
 * `Lifecycle`'s; this class is the unsecured framing (connection/wire.ts) and its cookie handshake.
 */
export class Connection extends Lifecycle<ConnectionEvent> implements HostedPeer<ConnectionEvent> {
  /** This side's random connection id (u32): the peer puts it in every DATA it sends here. */
  readonly localId: number;
  /** True on the side that called `connect`. */
  readonly isClient: boolean;
  /** The remote's address as the host knows it. */
  readonly address: string;
  /** The path every lane of this connection sends through (one RTT, one rate). */
  readonly path: Path;
  private remoteId: number;
  private readonly lanes: Lanes<ConnectionEvent>;
  private readonly opt: ResolvedConnectionOptions;
  private readonly owner: ConnectionOwner;
  private cookie: Uint8Array | undefined;
  // The first packet once connected goes even with nothing to carry: the peer learns the handshake is done.
  private announce = false;
  // Output owed at once (a poll follows every input and command): the first CONNECT and its echo of a new cookie; an ACCEPT.
  private connectOwed: boolean;
  private acceptsOwed = 0;
  private disconnectCode: number = DisconnectCode.Local;
  private readonly ctr = newCounters(['sendsAfterClose'] as const);

  /** @internal */
  constructor(
    opt: ResolvedConnectionOptions, owner: ConnectionOwner, address: string, localId: number, remoteId: number | undefined,
    now: number,
  ) {
    super(DISCONNECT_COPIES, opt.timeoutMs, now, Phase.Handshake);
    this.opt = opt;
    this.owner = owner;
    this.address = address;
    this.localId = localId;
    this.isClient = remoteId === undefined;
    this.remoteId = remoteId ?? 0;
    this.connectOwed = this.isClient;
    this.timers.set(Timer.Handshake, now + opt.handshakeTimeoutMs);
    // DATA and BLOCK share their 5-byte framing: kind, receiver id.
    this.lanes = this.session = new Lanes(opt, opt.maxDatagramBytes, DATA_PREFIX_BYTES, localId, new ConnectionEvents(this));
    this.path = this.lanes.path;
  }

  /** @internal the peer's connection id (0 until known). */
  get peerId(): number {
    return this.remoteId;
  }

  /** @internal a proven CONNECT from this address with another client id replaced this connection. */
  supersede(): void {
    if (this.ended) return;
    this.finish('superseded', DisconnectCode.Local, false);
    this.wake();
  }

  /** Current state. */
  get state(): ConnectionState {
    const p = this.phase;
    return p === Phase.Open ? 'connected' : p === Phase.Handshake ? 'connecting' : 'closed';
  }

  /**
   * Queue `bytes` (copied) on lane `lane`; returns the message's id on that lane (for `'delivery'`
   * events). `notice`: on a reliable or block lane, also raise a `'delivery'` event with the outcome
   * (notify lanes always do). On a block lane the message is one block. Allowed while connecting (sent
   * once connected). Once closed (locally, by the peer, or by a timeout) nothing is queued: returns −1
   * and counts `sendsAfterClose` (`counters()`), so answering a message that arrived together with the
   * peer's DISCONNECT is safe. Otherwise throws `invalid-argument` for a bad lane, `message-too-large`
   * past the lane's `maxMessageBytes`, `queue-full` when a reliable or block lane holds `maxQueuedBytes`
   * (or a block lane `maxQueuedBlocks`).
   */
  send(lane: number, bytes: Uint8Array, notice = false): number {
    return this.sendOnLane(lane, bytes, notice);
  }

  /**
   * Drop block `id` of block lane `lane`, queued or in transfer (a block the peer already holds in full
   * still counts as delivered). Its `'delivery'` event, if asked for, follows with the outcome. False
   * when `id` is unknown or finished, and once the connection has closed (its blocks went with it).
   * Throws `invalid-argument` unless `lane` is the block lane.
   */
  cancel(lane: number, id: number): boolean {
    return this.cancelOnLane(lane, id);
  }

  /** Progress of the block lane in both directions at `now` (ms); undefined without a block lane. */
  blockProgress(now: number = this.now): BlockLaneProgress | undefined {
    return this.lanes.blockProgress(now);
  }

  /**
   * Close: raise `'disconnected'` with reason `'local'` and send DISCONNECT a few times so the peer
   * learns it at once (queued messages not yet delivered are dropped). Idempotent.
   */
  close(): void {
    if (this.ended) return;
    this.finish('local', DisconnectCode.Local, true);
    this.wake();
  }

  /**
   * Figures at `now` (ms): the packet layer's, what crossed the wire since the connection was made
   * (`datagramsSent`, `bytesSent`, `datagramsReceived`, `bytesReceived`: whole datagrams, see
   * `WireCounts`), and every lane's.
   */
  stats(now: number = this.now): ConnectionStats {
    return this.sessionStats(now)!;
  }

  /**
   * Copies of the counters of the packet layer (`acks`), the message lanes (`channels`), the block
   * lane (`blocks`), and `sendsAfterClose`.
   */
  counters(): ConnectionCounters {
    return { ...this.lanes.counters(), ...this.ctr };
  }

  /** True once closed: the host then retires the connection (and drains its DISCONNECTs). */
  finished(): boolean {
    return this.ended;
  }

  /** Driven by the host: a datagram for this connection (the host checked its kind and length). */
  handleDatagram(now: number, b: Uint8Array): void {
    this.tick(now);
    if (this.ended) return;
    const connecting = this.phase === Phase.Handshake;
    switch (b[0]) {
      case FrameKind.Connect: {
        const c = decodeConnect(b);
        if (!this.isClient && c.ok && c.value.clientId === this.remoteId) {
          this.accepted(b.length);
          this.acceptsOwed = 1;
          this.heard(now);
        }
        return;
      }
      case FrameKind.Cookie: {
        const r = decodeCookie(b);
        const c = r.ok ? r.value : undefined;
        if (this.isClient && connecting && c !== undefined && c.clientId === this.localId) {
          this.accepted(b.length);
          if (this.cookie === undefined) this.cookie = new Uint8Array(COOKIE_BYTES);
          else if (this.cookie.every((x, i) => x === c.cookie[i])) return;
          this.cookie.set(c.cookie);
          this.connectOwed = true;
        }
        return;
      }
      case FrameKind.Accept:
        if (this.isClient && connecting && b.length === ACCEPT_BYTES && readU32LE(b, 1) === this.localId) {
          this.accepted(b.length);
          this.remoteId = readU32LE(b, 5);
          this.heard(now);
          this.becomeConnected();
        }
        return;
      case FrameKind.Refuse:
        if (this.isClient && connecting && b.length === REFUSE_BYTES && readU32LE(b, 1) === this.localId) {
          const reason = REFUSE_REASONS[b[5]!];
          if (reason === undefined) return;
          this.accepted(b.length);
          this.finish(reason, DisconnectCode.Local, false);
        }
        return;
      case FrameKind.Disconnect:
        if (b.length === DISCONNECT_BYTES && readU32LE(b, 1) === this.localId && this.remoteKnown()) {
          this.accepted(b.length);
          this.finish('peer', 0, false);
        }
        return;
      case FrameKind.Data:
        this.receiveData(now, b);
        return;
      case FrameKind.Block:
        if (this.phase === Phase.Open && readU32LE(b, 1) === this.localId && this.lanes.receiveBlock(now, b, DATA_PREFIX_BYTES, this.remoteId)) {
          this.accepted(b.length);
          this.heard(now);
        }
        return;
      default:
    }
  }

  /** Driven by the host: write the next datagram into `out`; its length, or `undefined`. */
  pollTransmit(now: number, out: Uint8Array): number | undefined {
    return this.transmit(now, out);
  }

  protected override onTimer(_now: number, timer: number): void {
    if (timer === Timer.Handshake) this.finish('handshake-timeout', DisconnectCode.Timeout, !this.isClient);
    else if (timer === Timer.Idle) this.finish('timeout', DisconnectCode.Timeout, true);
  }

  protected override write(now: number, out: Uint8Array): number | undefined {
    if (this.acceptsOwed > 0) {
      this.acceptsOwed = 0;
      return encodeAccept(out, this.remoteId, this.localId);
    }
    if (this.phase === Phase.Handshake) {
      if (!this.connectOwed && !this.timers.expired(Timer.Resend, now)) return undefined;
      this.connectOwed = false;
      this.timers.set(Timer.Resend, now + this.opt.handshakeResendMs);
      return encodeConnect(out, this.localId, this.opt.lanesHash, this.cookie);
    }
    const n = this.lanes.write(now, out, this.announce);
    if (n === undefined) return undefined;
    this.announce = false;
    out[0] = this.lanes.writtenKind;
    writeU32LE(out, 1, this.remoteId);
    return n;
  }

  protected override writeDisconnect(out: Uint8Array): number {
    return encodeIdReason(out, FrameKind.Disconnect, this.remoteId, this.disconnectCode);
  }

  protected override sentAfterClose(): void {
    this.ctr.sendsAfterClose++;
  }

  private remoteKnown(): boolean {
    return !this.isClient || this.phase !== Phase.Handshake;
  }

  private becomeConnected(): void {
    this.open();
    this.announce = true;
    this.push({ type: 'connected', connection: this });
  }

  private receiveData(now: number, b: Uint8Array): void {
    if (b.length < DATA_PREFIX_BYTES || readU32LE(b, 1) !== this.localId || !this.remoteKnown()) return;
    if (!this.lanes.receiveData(now, b, DATA_PREFIX_BYTES)) return;
    this.accepted(b.length);
    if (this.phase === Phase.Handshake) this.becomeConnected();
    this.heard(now);
  }

  private finish(reason: DisconnectReason, code: number, tellPeer: boolean): void {
    this.acceptsOwed = 0;
    this.disconnectCode = code;
    this.end(tellPeer, { type: 'disconnected', connection: this, reason });
    this.owner.released(this);
  }
}
