import { PacketAcks, type AckConfig, type AckStats, type PacketOutcomes } from '../ack/index.js';
import { Channels, type ChannelsConfig, type ChannelToken, type LaneStats } from '../channels/index.js';
import { Path } from '../congestion/path.js';
import { readU32LE } from '../core/bytes.js';
import { checkArg, GamewireError } from '../core/errors.js';
import type { HostedPeer } from '../core/host.js';
import { BlockLane, type BlockLaneCounters, type BlockLaneProgress, type BlockLaneStats } from './blocks.js';
import {
  ACCEPT_BYTES, BLOCK_PREFIX_BYTES, DATA_PREFIX_BYTES, decodeConnect, DISCONNECT_BYTES, DisconnectCode, encodeAccept,
  encodeBlockPrefix, encodeConnect, encodeIdReason, FrameKind, REFUSE_BYTES, RefuseCode,
} from './wire.js';
import type { ResolvedConnectionOptions } from './options.js';

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
  | 'superseded'; // server: a new CONNECT from the same address with another client id replaced it

/** Events polled from a `ConnectionHost`. Every one names its connection. */
export type ConnectionEvent =
  | { type: 'connected'; connection: Connection }
  | { type: 'message'; connection: Connection; lane: number; bytes: Uint8Array }
  | { type: 'delivery'; connection: Connection; lane: number; id: number; delivered: boolean }
  | { type: 'disconnected'; connection: Connection; reason: DisconnectReason };

/** A connection's figures: the packet layer's stats and every lane's. */
export interface ConnectionStats extends AckStats {
  /** Current pacing rate of the connection's path, bytes/s on the wire. */
  pacingRateBytesPerSec: number;
  /** Per lane, in lane order (a block lane's figures are `BlockLaneStats`). */
  lanes: (LaneStats | BlockLaneStats)[];
}

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

/**
 * One connection to one remote: the packet layer (`PacketAcks`), the lanes (`Channels`) and the path
 * (RTT, rate, pacing) composed, driven by its `ConnectionHost`. The application sends on lanes, reads
 * events from the host, and closes. Created by `ConnectionHost.connect` or by a listening host on a
 * peer's CONNECT; never constructed by users.
 */
export class Connection implements HostedPeer<ConnectionEvent> {
  /** This side's random connection id (u32): the peer puts it in every DATA it sends here. */
  readonly localId: number;
  /** True on the side that called `connect`. */
  readonly isClient: boolean;
  /** The remote's address as the host knows it. */
  readonly address: string;
  /** The path every lane of this connection sends through (one RTT, one rate). */
  readonly path: Path;
  private remoteId: number;
  private state_: ConnectionState = 'connecting';
  private readonly acks: PacketAcks<ChannelToken | undefined>;
  private readonly channels: Channels;
  private readonly blocks: BlockLane | undefined;
  private blockOut: Uint8Array | undefined;
  private readonly opt: ResolvedConnectionOptions;
  private readonly owner: ConnectionOwner;
  private readonly events: ConnectionEvent[] = [];
  private disconnectEvent: ConnectionEvent | undefined;
  private now: number;
  private readonly startedAt: number;
  private heardAt: number;
  private nextHandshakeAt: number;
  private announce = false;
  private acceptsOwed = 0;
  private disconnectsLeft = 0;
  private disconnectCode: number = DisconnectCode.Local;
  private finished_ = false;
  private waker: (() => void) | undefined;

  /** @internal */
  constructor(
    opt: ResolvedConnectionOptions, owner: ConnectionOwner, address: string, localId: number, remoteId: number | undefined,
    now: number,
  ) {
    this.now = this.startedAt = this.heardAt = this.nextHandshakeAt = now;
    this.opt = opt;
    this.owner = owner;
    this.address = address;
    this.localId = localId;
    this.isClient = remoteId === undefined;
    this.remoteId = remoteId ?? 0;
    this.path = new Path({ ...opt.path, maxDatagramBytes: opt.maxDatagramBytes });
    const channels = new Channels(opt.channels);
    // Packets whose frames need no outcome (unreliable only) carry no token.
    const outcomes: PacketOutcomes<ChannelToken | undefined> = {
      packetDelivered(now, token) {
        if (token !== undefined) channels.packetDelivered(now, token);
      },
      packetLost(now, token) {
        if (token !== undefined) channels.packetLost(now, token);
      },
    };
    this.acks = new PacketAcks<ChannelToken | undefined>(this.path, outcomes, opt.acks);
    this.channels = channels;
    if (opt.block !== undefined) this.blocks = new BlockLane(opt.block, this.path, localId, opt.maxDatagramBytes);
  }

  /** @internal the peer's connection id (0 until known). */
  get peerId(): number {
    return this.remoteId;
  }

  /** @internal a new CONNECT from this address with another client id replaced this connection. */
  supersede(): void {
    if (this.state_ === 'closed') return;
    this.end('superseded', DisconnectCode.Local, false);
    this.waker?.();
  }

  /** Current state. */
  get state(): ConnectionState {
    return this.state_;
  }

  /**
   * Queue `bytes` (copied) on lane `lane`; returns the message's id on that lane (for `'delivery'`
   * events). `notice`: on a reliable or block lane, also raise a `'delivery'` event with the outcome
   * (notify lanes always do). On a block lane the message is one block. Allowed while connecting (sent
   * once connected). Throws `closed` after close, `invalid-argument` for a bad lane, `message-too-large`
   * past the lane's `maxMessageBytes`, `queue-full` when a reliable or block lane holds `maxQueuedBytes`
   * (or a block lane `maxQueuedBlocks`).
   */
  send(lane: number, bytes: Uint8Array, notice = false): number {
    if (this.state_ === 'closed') throw new GamewireError('closed', 'send on a closed connection');
    const ch = this.channelOf(lane);
    checkArg(bytes instanceof Uint8Array, 'a message is a Uint8Array');
    const id = ch < 0 ? this.blocks!.send(bytes, notice) : this.channels.send(this.now, ch, bytes, notice);
    this.waker?.();
    return id;
  }

  /**
   * Drop block `id` of block lane `lane`, queued or in transfer (a block the peer already holds in full
   * still counts as delivered). Its `'delivery'` event, if asked for, follows with the outcome. False
   * when `id` is unknown or finished. Throws `invalid-argument` unless `lane` is the block lane.
   */
  cancel(lane: number, id: number): boolean {
    checkArg(this.channelOf(lane) < 0, `lane ${lane} is not a block lane`);
    checkArg(Number.isInteger(id), 'id must be an integer');
    const r = this.blocks!.cancel(id);
    this.waker?.();
    return r;
  }

  /** Progress of the block lane in both directions at `now` (ms); undefined without a block lane. */
  blockProgress(now: number = this.now): BlockLaneProgress | undefined {
    return this.blocks?.progress(now);
  }

  /**
   * Close: raise `'disconnected'` with reason `'local'` and send DISCONNECT a few times so the peer
   * learns it at once (queued messages not yet delivered are dropped). Idempotent.
   */
  close(): void {
    if (this.state_ === 'closed') return;
    this.end('local', DisconnectCode.Local, true);
    this.waker?.();
  }

  /** Figures of the packet layer and the lanes, at `now` (ms). */
  stats(now: number = this.now): ConnectionStats {
    const lanes: (LaneStats | BlockLaneStats)[] = [];
    for (let i = 0; i < this.opt.laneCount; i++) {
      const ch = this.opt.laneToChannel[i]!;
      lanes.push(ch < 0 ? this.blocks!.stats() : this.channels.laneStats(ch, now));
    }
    return { ...this.acks.stats(now), pacingRateBytesPerSec: this.path.pacingRateBytesPerSec, lanes };
  }

  /** Copies of the counters of the packet layer (`acks`), the message lanes (`channels`) and the block lane (`blocks`). */
  counters(): {
    acks: ReturnType<PacketAcks<unknown>['counters']>;
    channels: ReturnType<Channels['counters']>;
    blocks: BlockLaneCounters | undefined;
  } {
    return { acks: this.acks.counters(), channels: this.channels.counters(), blocks: this.blocks?.counters() };
  }

  /** Driver hook (`Endpoint.setWaker`), set by the host. */
  setWaker(waker: (() => void) | undefined): void {
    this.waker = waker;
  }

  /** True once closed: the host then retires the connection. */
  finished(): boolean {
    return this.finished_;
  }

  /** Driven by the host: a datagram for this connection (the host checked its kind and length). */
  handleDatagram(now: number, b: Uint8Array): void {
    this.tick(now);
    if (this.state_ === 'closed') return;
    switch (b[0]) {
      case FrameKind.Connect: {
        const c = decodeConnect(b);
        if (!this.isClient && c !== undefined && c.clientId === this.remoteId) {
          this.acceptsOwed = 1;
          this.heardAt = now;
        }
        return;
      }
      case FrameKind.Accept:
        if (this.isClient && this.state_ === 'connecting' && b.length === ACCEPT_BYTES && readU32LE(b, 1) === this.localId) {
          this.remoteId = readU32LE(b, 5);
          this.heardAt = now;
          this.becomeConnected();
        }
        return;
      case FrameKind.Refuse:
        if (this.isClient && this.state_ === 'connecting' && b.length === REFUSE_BYTES && readU32LE(b, 1) === this.localId) {
          const reason = REFUSE_REASONS[b[5]!];
          if (reason !== undefined) this.end(reason, DisconnectCode.Local, false);
        }
        return;
      case FrameKind.Disconnect:
        if (b.length === DISCONNECT_BYTES && readU32LE(b, 1) === this.localId && this.remoteKnown()) this.end('peer', 0, false);
        return;
      case FrameKind.Data:
        this.receiveData(now, b);
        return;
      case FrameKind.Block:
        if (this.blocks !== undefined && this.state_ === 'connected' && readU32LE(b, 1) === this.localId) {
          this.heardAt = now;
          this.blocks.handle(now, b.subarray(BLOCK_PREFIX_BYTES), this.remoteId);
        }
        return;
      default:
    }
  }

  /** Driven by the host: run the timers due at `now` (ms). */
  handleTimeout(now: number): void {
    this.tick(now);
    if (this.state_ === 'closed') return;
    if (this.state_ === 'connecting') {
      if (now - this.startedAt >= this.opt.handshakeTimeoutMs) this.end('handshake-timeout', DisconnectCode.Timeout, !this.isClient);
      return;
    }
    if (now - this.heardAt >= this.opt.timeoutMs) {
      this.end('timeout', DisconnectCode.Timeout, true);
      return;
    }
    this.acks.handleTimeout(now);
    this.blocks?.handleTimeout(now);
  }

  /** Driven by the host: when (ms) `handleTimeout` is next due. */
  pollTimeout(): number | undefined {
    if (this.state_ === 'closed') return undefined;
    if (this.state_ === 'connecting') {
      const giveUp = this.startedAt + this.opt.handshakeTimeoutMs;
      return this.isClient ? Math.min(this.nextHandshakeAt, giveUp) : giveUp;
    }
    if (this.announce) return this.now;
    let t = this.heardAt + this.opt.timeoutMs;
    const a = this.acks.pollTimeout();
    if (a !== undefined && a < t) t = a;
    if (this.channels.hasFrames()) {
      const ready = this.path.readyAt(this.path.wireBytes(this.packetEstimate()));
      if (ready !== undefined && ready < t) t = ready;
    }
    const blocks = this.blocks;
    if (blocks === undefined) return t;
    const ack = blocks.ackTimeout();
    if (ack !== undefined && ack < t) t = ack;
    // While message frames wait for the path, the next budget is theirs (see pollTransmit).
    if (!this.messagesWaiting() || blocks.owedFirst) {
      const b = blocks.sliceTimeout();
      if (b !== undefined && b < t) t = b;
    }
    return t;
  }

  /** Driven by the host: write the next datagram into `out`; its length, or `undefined`. */
  pollTransmit(now: number, out: Uint8Array): number | undefined {
    this.tick(now);
    const max = Math.min(out.length, this.opt.maxDatagramBytes);
    if (this.acceptsOwed > 0 && this.state_ !== 'closed') {
      this.acceptsOwed = 0;
      return encodeAccept(out, this.remoteId, this.localId);
    }
    if (this.state_ === 'closed') {
      if (this.disconnectsLeft === 0) return undefined;
      this.disconnectsLeft--;
      return encodeIdReason(out, FrameKind.Disconnect, this.remoteId, this.disconnectCode);
    }
    if (this.state_ === 'connecting') {
      if (!this.isClient || now < this.nextHandshakeAt) return undefined;
      this.nextHandshakeAt = now + this.opt.handshakeResendMs;
      return encodeConnect(out, this.localId, this.opt.lanesHash);
    }
    const blocks = this.blocks;
    if (blocks === undefined) return this.writeData(now, out, max);
    // Acks of the peer's blocks first (small), then the message lanes unless the block lane is owed
    // its share, then block slices with what pacing leaves.
    const ack = this.writeBlock(now, out, max, false);
    if (ack !== undefined) return ack;
    if (blocks.owedFirst) {
      const n = this.writeBlock(now, out, max, true);
      if (n !== undefined) return n;
    }
    const d = this.writeData(now, out, max);
    if (d !== undefined || this.messagesWaiting()) return d;
    return this.writeBlock(now, out, max, true);
  }

  /** Driven by the host: the next event (applications poll the host instead). */
  pollEvent(): ConnectionEvent | undefined {
    const own = this.events.shift();
    if (own !== undefined) return own;
    const e = this.channels.pollEvent();
    if (e !== undefined) {
      const lane = this.opt.channelLanes[e.lane]!;
      return e.type === 'message'
        ? { type: 'message', connection: this, lane, bytes: e.bytes }
        : { type: 'delivery', connection: this, lane, id: e.id, delivered: e.delivered };
    }
    const b = this.blocks?.pollEvent();
    if (b !== undefined) {
      const lane = this.opt.block!.lane;
      return b.type === 'message'
        ? { type: 'message', connection: this, lane, bytes: b.bytes }
        : { type: 'delivery', connection: this, lane, id: b.id, delivered: b.delivered };
    }
    const d = this.disconnectEvent;
    this.disconnectEvent = undefined;
    return d;
  }

  /** The `Channels` lane of connection lane `lane`, or −1 for the block lane; throws `invalid-argument` for a bad lane. */
  private channelOf(lane: number): number {
    checkArg(Number.isInteger(lane) && lane >= 0 && lane < this.opt.laneCount, `lane must be 0..${this.opt.laneCount - 1}`);
    return this.opt.laneToChannel[lane]!;
  }

  /** Write a BLOCK frame: the block lane's next ack (`slices` false) or its next slice or cancel. */
  private writeBlock(now: number, out: Uint8Array, max: number, slices: boolean): number | undefined {
    let view = this.blockOut;
    if (view === undefined || view.buffer !== out.buffer || view.byteOffset !== out.byteOffset + BLOCK_PREFIX_BYTES
      || view.length !== max - BLOCK_PREFIX_BYTES) {
      view = this.blockOut = out.subarray(BLOCK_PREFIX_BYTES, max);
    }
    const n = slices ? this.blocks!.pollSlice(now, view) : this.blocks!.pollAck(now, view);
    if (n === undefined) return undefined;
    return encodeBlockPrefix(out, this.remoteId) + n;
  }

  private tick(now: number): void {
    if (now > this.now) this.now = now;
  }

  private remoteKnown(): boolean {
    return !this.isClient || this.state_ !== 'connecting';
  }

  private becomeConnected(): void {
    this.state_ = 'connected';
    this.announce = true;
    this.events.push({ type: 'connected', connection: this });
  }

  private receiveData(now: number, b: Uint8Array): void {
    if (b.length < DATA_PREFIX_BYTES || readU32LE(b, 1) !== this.localId || !this.remoteKnown()) return;
    const h = this.acks.readHeader(now, b, DATA_PREFIX_BYTES);
    if (h < 0) return;
    const start = DATA_PREFIX_BYTES + h;
    if (!this.channels.validate(b, start, b.length)) return;
    if (this.state_ === 'connecting') this.becomeConnected();
    this.heardAt = now;
    this.acks.accept(now, b.length > start, this.path.wireBytes(b.length));
    this.channels.receive(now, b, start, b.length);
  }

  /** True when message frames wait to be sent (only the pacing budget holds them back). */
  private messagesWaiting(): boolean {
    return this.channels.hasFrames() && this.acks.canSend();
  }

  /** Bytes the next data packet will likely take: a full one when a packet's worth is queued. */
  private packetEstimate(): number {
    return Math.min(this.opt.maxDatagramBytes, DATA_PREFIX_BYTES + this.acks.maxHeaderBytes + 8 + this.channels.pendingBytes());
  }

  private writeData(now: number, out: Uint8Array, max: number): number | undefined {
    const path = this.path;
    path.update(now);
    const room = this.acks.canSend();
    const frames = room && this.channels.hasFrames() && path.covers(path.wireBytes(this.packetEstimate()));
    if (!frames && !(this.announce && this.acks.canSend(false)) && !this.acks.wantsPacket(now)) return undefined;
    this.announce = false;
    out[0] = FrameKind.Data;
    out[1] = this.remoteId;
    out[2] = this.remoteId >>> 8;
    out[3] = this.remoteId >>> 16;
    out[4] = this.remoteId >>> 24;
    const start = DATA_PREFIX_BYTES + this.acks.writeHeader(now, out, DATA_PREFIX_BYTES);
    let n = 0;
    if (room) {
      // A packet that goes anyway (an ack, a keep-alive) carries redundancy too, never new data
      // that pacing holds back.
      this.channels.setLossRate(this.acks.lossRate());
      n = this.channels.writeFrames(now, out, start, max, !frames);
    }
    const length = start + n;
    const wire = path.wireBytes(length);
    const token = n > 0 ? this.channels.takeToken() : undefined;
    this.acks.onSent(now, wire, n > 0, token);
    if (n > 0) {
      path.spend(wire);
      path.onSent(now, wire, true);
      this.blocks?.messagesSent(wire);
    }
    return length;
  }

  private end(reason: DisconnectReason, code: number, tellPeer: boolean): void {
    this.state_ = 'closed';
    this.acceptsOwed = 0;
    this.disconnectCode = code;
    this.disconnectsLeft = tellPeer && this.remoteKnown() ? DISCONNECT_COPIES : 0;
    this.disconnectEvent = { type: 'disconnected', connection: this, reason };
    this.finished_ = true;
    this.owner.released(this);
  }
}
