import { PacketAcks, type AckOptions, type AckStats, type PacketOutcomes } from '../ack/index.js';
import { MessageLanes, type ChannelEventFactory, type MessageLanesOptions, type ChannelToken, type LaneStats } from '../channels/index.js';
import type { RateController } from '../congestion/controller.js';
import { Path, type PathOptions } from '../congestion/path.js';
import { checkArg } from '../core/errors.js';
import { BlockLane, type BlockLaneCounters, type BlockLaneProgress, type BlockLaneStats } from './blocks.js';
import type { ResolvedBlockLane } from './options.js';
import { FrameKind } from './wire.js';

/**
 * What crossed the wire for one connection, cumulative since it was made (a netcode `Client`: since
 * its latest `connect`): whole datagrams as the socket sends and receives them (framing, packet
 * header, netcode's header and encryption tag included; the IP and UDP headers not), of every kind
 * (handshake, DATA, BLOCK, keep-alives, DISCONNECTs). Received counts only datagrams this connection
 * accepted (ids or authentication checked, not a duplicate); those it dropped are in `counters()`, and
 * what a server answered before the connection existed (unsecured: the first CONNECT and its COOKIE;
 * netcode: request, challenge, response) is the host's.
 */
export interface WireCounts {
  /** Datagrams this connection sent. */
  datagramsSent: number;
  /** Bytes of those datagrams. */
  bytesSent: number;
  /** Datagrams this connection accepted. */
  datagramsReceived: number;
  /** Bytes of those datagrams. */
  bytesReceived: number;
}

/** A connection's figures: the packet layer's stats, what crossed the wire (`WireCounts`), and every lane's. */
export interface ConnectionStats extends AckStats, WireCounts {
  /** Current pacing rate of the connection's path, bytes/s on the wire. */
  pacingRateBytesPerSec: number;
  /** Per lane, in lane order (a block lane's figures are `BlockLaneStats`). */
  lanes: (LaneStats | BlockLaneStats)[];
}

/** Counters of a session: the packet layer (`acks`), the message lanes (`channels`), the block lane (`blocks`). */
export interface LanesCounters {
  acks: ReturnType<PacketAcks<unknown>['counters']>;
  channels: ReturnType<MessageLanes['counters']>;
  blocks: BlockLaneCounters | undefined;
}

/**
 * Builds the events a session raises, in the owner's final shape (a `ConnectionEvent` naming its
 * connection, a `ServerEvent` naming its client, a `ClientEvent`): each message and outcome is one
 * object, made once. Lanes are numbered as the connection's lane list. @internal
 */
export type SessionEvents<E> = ChannelEventFactory<E>;

/** The lane list split into message lanes and the block lane, and the settings of each part. @internal */
export interface LanesOptions {
  laneCount: number;
  channels: MessageLanesOptions;
  /** `MessageLanes` lane i is connection lane `channelLanes[i]`. */
  channelLanes: readonly number[];
  /** Connection lane → `MessageLanes` lane, or −1 for the block lane. */
  laneToChannel: Int16Array;
  block: ResolvedBlockLane | undefined;
  acks: AckOptions | undefined;
  path: Omit<PathOptions, 'maxDatagramBytes' | 'rateController'> | undefined;
}

/**
 * What a connection carries, whatever its framing (the unsecured one of this directory, or netcode's
 * payload packets): the packet layer, the message lanes, the block lane and the one path they share.
 * The framing owns the lifecycle and puts `headroom` bytes before every body this writes; a body is a
 * DATA body (packet header, channel frames) or a BLOCK body (one chunk datagram). @internal
 */
export class Lanes<E> {
  /** The path every lane sends through (one RTT, one rate). */
  readonly path: Path;
  /** Kind (`FrameKind.Data` or `FrameKind.Block`) of the body the last `write` produced. */
  writtenKind: number = FrameKind.Data;
  private readonly acks: PacketAcks<ChannelToken | undefined>;
  private readonly channels: MessageLanes<E>;
  private readonly make: SessionEvents<E>;
  private readonly blocks: BlockLane | undefined;
  private readonly opt: LanesOptions;
  private readonly maxBytes: number;
  private readonly headroom: number;
  private blockOut: Uint8Array | undefined;
  private bulk: Path | undefined;
  // The block lane's own transport holds more than it lets wait (`holdBulk`).
  private bulkHeld = false;

  /**
   * @param maxBytes largest framing + body written (the datagram, or the payload a cipher wraps)
   * @param headroom bytes of framing before each body
   * @param chunkSession the block lane's chunk session id (this side's connection id)
   * @param events builds the events `pollEvent` returns
   */
  constructor(opt: LanesOptions, maxBytes: number, headroom: number, chunkSession: number, events: SessionEvents<E>) {
    this.opt = opt;
    this.maxBytes = maxBytes;
    this.headroom = headroom;
    this.make = events;
    this.path = new Path({ ...opt.path, maxDatagramBytes: maxBytes });
    const lanes = opt.channelLanes;
    // MessageLanes numbers its lanes apart from the block lane; only a block lane before a message lane shifts them.
    const channels = new MessageLanes<E>(opt.channels, lanes.every((l, i) => l === i) ? events : {
      message: (lane, bytes) => events.message(lanes[lane]!, bytes),
      delivery: (lane, id, delivered) => events.delivery(lanes[lane]!, id, delivered),
    });
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
    if (opt.block !== undefined) this.blocks = new BlockLane(opt.block, this.path, chunkSession, maxBytes - headroom, headroom);
  }

  /** See `Connection.send`. */
  send(now: number, lane: number, bytes: Uint8Array, notice: boolean): number {
    const ch = this.channelOf(lane);
    checkArg(bytes instanceof Uint8Array, 'a message is a Uint8Array');
    return ch < 0 ? this.blocks!.send(bytes, notice) : this.channels.send(now, ch, bytes, notice);
  }

  /**
   * The peer is now reached over a new network path (proven): the path's estimates start over
   * (`Path.restart`), and `transport`, these lanes' settings resolved for that path's transport,
   * gives its overhead, whether it delivers everything (TCP), the lanes' redundancy and the ack delay.
   */
  newPath(transport: LanesOptions): void {
    this.path.restart(transport.path ?? {});
    this.channels.setRedundancy(transport.channels);
    this.acks.setMaxAckDelay(transport.acks?.maxAckDelayMs);
  }

  /**
   * The block lane moves to a transport of its own (a browser client's second WebSocket): its slices,
   * cancels and acks go by `writeBulk` on a new path with `transport`'s path settings (these lanes'
   * settings resolved for that transport, as for `newPath`: its overhead, whether it delivers
   * everything) and `rateController` (default the path's own), and the message lanes keep the
   * connection's path to themselves. What is in flight stays in flight; its acks and resends go by
   * the new path. False (nothing changes) when there is no block lane.
   */
  bindBulk(transport: LanesOptions, rateController?: RateController): boolean {
    if (this.blocks === undefined) return false;
    this.bulk = new Path({ ...transport.path, rateController, maxDatagramBytes: this.maxBytes });
    this.bulkHeld = false;
    this.blocks.usePath(this.bulk);
    return true;
  }

  /** The block lane's transport ended: it shares the connection's path again (`write`). */
  unbindBulk(): void {
    if (this.bulk === undefined) return;
    this.bulk = undefined;
    this.bulkHeld = false;
    this.blocks!.usePath(this.path);
  }

  /**
   * The block lane's own transport holds more than it lets wait (`held`): no slice is written until
   * it is released (acks of the peer's blocks still go). True when this released a hold: the caller
   * wakes, since slices may be due at once.
   */
  holdBulk(held: boolean): boolean {
    if (this.bulkHeld === held) return false;
    this.bulkHeld = held;
    return !held;
  }

  /** The block lane's own path while it has one (`bindBulk`). */
  get bulkPath(): Path | undefined {
    return this.bulk;
  }

  /** See `Connection.cancel`. */
  cancel(lane: number, id: number): boolean {
    checkArg(this.channelOf(lane) < 0, `lane ${lane} is not a block lane`);
    checkArg(Number.isInteger(id), 'id must be an integer');
    return this.blocks!.cancel(id);
  }

  blockProgress(now: number): BlockLaneProgress | undefined {
    return this.blocks?.progress(now);
  }

  /** The figures at `now` (ms), with the connection's wire counts (which its framing keeps). */
  stats(now: number, wire: WireCounts): ConnectionStats {
    const lanes: (LaneStats | BlockLaneStats)[] = [];
    for (let i = 0; i < this.opt.laneCount; i++) {
      const ch = this.opt.laneToChannel[i]!;
      lanes.push(ch < 0 ? this.blocks!.stats() : this.channels.laneStats(ch, now));
    }
    return {
      ...this.acks.stats(now),
      datagramsSent: wire.datagramsSent,
      bytesSent: wire.bytesSent,
      datagramsReceived: wire.datagramsReceived,
      bytesReceived: wire.bytesReceived,
      pacingRateBytesPerSec: this.path.pacingRateBytesPerSec,
      lanes,
    };
  }

  counters(): LanesCounters {
    return { acks: this.acks.counters(), channels: this.channels.counters(), blocks: this.blocks?.counters() };
  }

  /**
   * A DATA body at `b[start..]`: true when valid (its messages are then taken in), false when it was
   * dropped and counted. Never throws.
   */
  receiveData(now: number, b: Uint8Array, start: number): boolean {
    const h = this.acks.readHeader(now, b, start);
    if (h < 0) return false;
    const frames = start + h;
    if (!this.channels.validate(b, frames, b.length)) return false;
    this.acks.accept(now, b.length > frames, this.path.wireBytes(b.length));
    this.channels.receive(now, b, frames, b.length);
    return true;
  }

  /**
   * A BLOCK body (one chunk datagram) at `b[start..]` from the peer whose chunk session is
   * `remoteSession`: false when there is no block lane. The chunk protocol checks and counts the rest.
   */
  receiveBlock(now: number, b: Uint8Array, start: number, remoteSession: number): boolean {
    if (this.blocks === undefined) return false;
    this.blocks.handle(now, b.subarray(start), remoteSession);
    return true;
  }

  handleTimeout(now: number): void {
    this.acks.handleTimeout(now);
    this.blocks?.handleTimeout(now);
  }

  /** When (ms) `handleTimeout` or `write` is next needed, or undefined. */
  pollTimeout(): number | undefined {
    let t = this.acks.pollTimeout() ?? Infinity;
    if (this.channels.hasFrames()) {
      const ready = this.path.readyAt(this.path.wireBytes(this.packetEstimate()));
      if (ready !== undefined && ready < t) t = ready;
    }
    const blocks = this.blocks;
    if (blocks !== undefined) {
      const ack = blocks.ackTimeout();
      if (ack !== undefined && ack < t) t = ack;
      // While message frames wait for the path, the next budget is theirs (see write); a block lane
      // on a path of its own waits only for its transport.
      if (this.bulk !== undefined ? !this.bulkHeld : !this.messagesWaiting() || blocks.owedFirst) {
        const b = blocks.sliceTimeout();
        if (b !== undefined && b < t) t = b;
      }
    }
    return t === Infinity ? undefined : t;
  }

  /**
   * Write the next body at `out[headroom..]` (the framing fills `out[0..headroom)`, its kind in
   * `writtenKind`) and return the body's end, or undefined when nothing is due. `force`: write a DATA
   * body even without anything due (the first packet after the handshake). Order: an ack of the
   * peer's blocks; the block lane if it is owed its share; the message lanes if the path allows; block
   * slices only when no message frame waits for the path. A block lane on a path of its own
   * (`bindBulk`) writes nothing here: see `writeBulk`.
   */
  write(now: number, out: Uint8Array, force: boolean): number | undefined {
    const max = Math.min(out.length, this.maxBytes);
    const blocks = this.blocks;
    if (blocks === undefined || this.bulk !== undefined) return this.writeData(now, out, max, force);
    const ack = this.writeBlock(now, out, max, false);
    if (ack !== undefined) return ack;
    if (blocks.owedFirst) {
      const n = this.writeBlock(now, out, max, true);
      if (n !== undefined) return n;
    }
    const d = this.writeData(now, out, max, force);
    if (d !== undefined || this.messagesWaiting()) return d;
    return this.writeBlock(now, out, max, true);
  }

  /**
   * While the block lane has a path of its own (`bindBulk`): its next body, for the block lane's
   * transport, as `write` (an ack of the peer's blocks first, then a slice or cancel unless
   * `bulkHeld`); undefined when nothing is due or there is no such path.
   */
  writeBulk(now: number, out: Uint8Array): number | undefined {
    if (this.bulk === undefined) return undefined;
    const max = Math.min(out.length, this.maxBytes);
    return this.writeBlock(now, out, max, false) ?? (this.bulkHeld ? undefined : this.writeBlock(now, out, max, true));
  }

  /** The next message or outcome: the message lanes' first, then the block lane's. */
  pollEvent(): E | undefined {
    const e = this.channels.pollEvent();
    if (e !== undefined) return e;
    const b = this.blocks?.pollEvent();
    if (b === undefined) return undefined;
    const lane = this.opt.block!.lane;
    return b.type === 'message' ? this.make.message(lane, b.bytes) : this.make.delivery(lane, b.id, b.delivered);
  }

  /** The `MessageLanes` lane of connection lane `lane`, or −1 for the block lane; throws `invalid-argument` for a bad lane. */
  private channelOf(lane: number): number {
    checkArg(Number.isInteger(lane) && lane >= 0 && lane < this.opt.laneCount, `lane must be 0..${this.opt.laneCount - 1}`);
    return this.opt.laneToChannel[lane]!;
  }

  /** True when message frames wait to be sent (only the pacing budget holds them back). */
  private messagesWaiting(): boolean {
    return this.channels.hasFrames() && this.acks.canSend();
  }

  /** Bytes the next data packet will likely take: a full one when a packet's worth is queued. */
  private packetEstimate(): number {
    return Math.min(this.maxBytes, this.headroom + this.acks.maxHeaderBytes + 8 + this.channels.pendingBytes());
  }

  private writeData(now: number, out: Uint8Array, max: number, force: boolean): number | undefined {
    const path = this.path;
    path.update(now);
    const room = this.acks.canSend();
    const frames = room && this.channels.hasFrames() && path.covers(path.wireBytes(this.packetEstimate()));
    if (!frames && !(force && this.acks.canSend(false)) && !this.acks.wantsPacket(now)) return undefined;
    const start = this.headroom + this.acks.writeHeader(now, out, this.headroom);
    let n = 0;
    if (room) {
      // A packet that goes anyway (an ack, a keep-alive) carries redundancy too, never new data
      // that pacing holds back.
      this.channels.setLossRate(this.acks.lossRate(), this.acks.outcomesSinceLoss());
      n = this.channels.writeFrames(now, out, start, max, !frames);
    }
    const length = start + n;
    const wire = path.wireBytes(length);
    const token = n > 0 ? this.channels.takeToken() : undefined;
    this.acks.onSent(now, wire, n > 0, token);
    if (n > 0) {
      path.spend(wire);
      path.onSent(now, wire, true);
      if (this.bulk === undefined) this.blocks?.messagesSent(wire);
    }
    this.writtenKind = FrameKind.Data;
    return length;
  }

  /** A BLOCK body: the block lane's next ack (`slices` false) or its next slice or cancel. */
  private writeBlock(now: number, out: Uint8Array, max: number, slices: boolean): number | undefined {
    const h = this.headroom;
    let view = this.blockOut;
    if (view === undefined || view.buffer !== out.buffer || view.byteOffset !== out.byteOffset + h || view.length !== max - h) {
      view = this.blockOut = out.subarray(h, max);
    }
    const n = slices ? this.blocks!.pollSlice(now, view) : this.blocks!.pollAck(now, view);
    if (n === undefined) return undefined;
    this.writtenKind = FrameKind.Block;
    return h + n;
  }
}
