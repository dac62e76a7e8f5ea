import { ChunkReceiver, type ChunkReceiverCounter, type ChunkReceiverProgress } from '../chunk/receiver.js';
import { ChunkSender, type ChunkSenderCounter, type ChunkSenderProgress } from '../chunk/sender.js';
import { newCounters } from '../core/counters.js';
import { PacketType, peekPacketType, SLICE_HEADER_BYTES } from '../chunk/wire.js';
import type { Path } from '../congestion/path.js';
import { GamewireError } from '../core/errors.js';
import type { ResolvedBlockLane } from './options.js';

/** Progress of a connection's block lane, both directions. Rates in bytes/s of block payload, times in ms. */
export interface BlockLaneProgress {
  /** Blocks this side sends (see `ChunkSenderProgress`). */
  sending: ChunkSenderProgress;
  /** Blocks this side receives (see `ChunkReceiverProgress`). */
  receiving: ChunkReceiverProgress;
}

/** Figures of a block lane in `ConnectionStats.lanes`. Bytes are block payload unless the name says wire. */
export interface BlockLaneStats {
  mode: 'block';
  /** Bytes of blocks queued or in transfer, not yet acked in full. */
  queuedBytes: number;
  /** Blocks queued or in transfer. */
  queuedMessages: number;
  /** Wire bytes of block datagrams sent (slices, cancels and acks of the peer's blocks), transport overhead included. */
  sentWireBytes: number;
  /** Slices sent again (no ack within ~RTT × 1.25). */
  resent: number;
  /** Blocks the peer acked in full. */
  delivered: number;
  /** Blocks received from the peer (handed out as `'message'` events). */
  received: number;
}

/** What a block lane raises; the connection adds itself and the lane number. */
export type BlockLaneEvent =
  | { type: 'message'; bytes: Uint8Array }
  | { type: 'delivery'; id: number; delivered: boolean };

/** Counters of the two halves of a block lane (undefined until that half was first needed). */
export interface BlockLaneCounters {
  sender: Readonly<Record<ChunkSenderCounter, number>> | undefined;
  receiver: Readonly<Record<ChunkReceiverCounter, number>> | undefined;
  /** Block datagrams that were neither a slice, cancel, ack nor refusal, or an ack with no sender here. */
  stray: number;
}

/** Most bytes the block lane can be owed (its share of what message lanes sent): a few datagrams. */
const OWED_CAP_DATAGRAMS = 4;

const EMPTY_RECEIVING: ChunkReceiverProgress = { blocks: [], deliveredBlocks: 0, deliveredBytes: 0 };

/**
 * The block lane of one connection: a `ChunkSender` and a `ChunkReceiver` on the connection's path,
 * each built when first needed (an idle connection pays for neither). The connection puts every
 * chunk datagram (at most `maxChunkBytes`) after `headroom` bytes of framing and asks this lane for
 * one when the message lanes have nothing the path lets go, or first when the lane is owed its
 * `minShare`. @internal
 */
export class BlockLane {
  private sender: ChunkSender | undefined;
  private receiver: ChunkReceiver | undefined;
  private readonly notices = new Set<number>();
  private owed = 0;
  private readonly ctr = newCounters(['stray'] as const);
  private sentWire = 0;
  private owedCap = 0;
  private fullWire = 0;
  private readonly shareFactor: number;

  constructor(
    private readonly cfg: ResolvedBlockLane,
    private path: Path,
    private readonly localId: number,
    private readonly maxChunkBytes: number,
    private readonly headroom: number,
  ) {
    this.shareFactor = cfg.minShare / (1 - cfg.minShare);
    this.usePath(path);
  }

  /** Send and pace on `path` from now on (`Lanes.bindBulk`, `unbindBulk`); slices in flight stay so. */
  usePath(path: Path): void {
    this.path = path;
    this.fullWire = path.wireBytes(this.maxChunkBytes + this.headroom);
    this.owedCap = OWED_CAP_DATAGRAMS * this.fullWire;
    this.owed = 0;
    this.sender?.usePath(path);
  }

  /** Queue a copy of `bytes` as one block; its id (1, 2, 3…). Throws `message-too-large`, `queue-full`. */
  send(bytes: Uint8Array, notice: boolean): number {
    if (bytes.length > this.cfg.maxMessageBytes) {
      throw new GamewireError('message-too-large',
        `block of ${bytes.length} bytes exceeds lane ${this.cfg.lane}'s maxMessageBytes ${this.cfg.maxMessageBytes}`);
    }
    this.sender ??= new ChunkSender({
      path: this.path,
      sessionId: this.localId,
      sliceBytes: this.maxChunkBytes - SLICE_HEADER_BYTES,
      maxQueuedBytes: this.cfg.maxQueuedBytes,
      maxQueuedBlocks: this.cfg.maxQueuedBlocks,
    });
    const id = this.sender.sendBlock(bytes.slice());
    if (notice) this.notices.add(id);
    return id;
  }

  /** Drop block `id` (see `ChunkSender.cancel`); false when unknown or finished. */
  cancel(id: number): boolean {
    return this.sender?.cancel(id) ?? false;
  }

  /** A chunk datagram from the peer (the BLOCK frame's payload). Never throws. */
  handle(now: number, b: Uint8Array, remoteId: number): void {
    const t = peekPacketType(b);
    if (t === PacketType.Ack || t === PacketType.Refuse) {
      if (this.sender === undefined) this.ctr.stray++;
      else this.sender.handleDatagram(now, b);
    } else if (t === PacketType.Slice || t === PacketType.Cancel) {
      this.receiver ??= new ChunkReceiver({ maxBlockBytes: this.cfg.maxMessageBytes, sessionId: remoteId });
      this.receiver.handleDatagram(now, b);
    } else {
      this.ctr.stray++;
    }
  }

  handleTimeout(now: number): void {
    this.receiver?.handleTimeout(now);
    this.sender?.handleTimeout(now);
  }

  /** When (ms) the receiver's next ack is due, or undefined. */
  ackTimeout(): number | undefined {
    return this.receiver?.pollTimeout();
  }

  /** When (ms) the sender next needs a turn (a slice the path allows, a resend, a stall check), or undefined. */
  sliceTimeout(): number | undefined {
    return this.sender?.pollTimeout();
  }

  /** True when the lane has blocks to send and is owed a full datagram: it goes before the message lanes. */
  get owedFirst(): boolean {
    return this.owed >= this.fullWire && this.busy;
  }

  /** The message lanes sent `wireBytes` of frames: while blocks wait, the lane is owed its share of it. */
  messagesSent(wireBytes: number): void {
    if (!this.busy) {
      this.owed = 0;
      return;
    }
    this.owed = Math.min(this.owed + wireBytes * this.shareFactor, this.owedCap);
  }

  /** An ack of the peer's blocks, when one is due (acks are small and never paced). */
  pollAck(now: number, out: Uint8Array): number | undefined {
    const n = this.receiver?.pollTransmit(now, out);
    if (n !== undefined) this.sentWire += this.path.wireBytes(n + this.headroom);
    return n;
  }

  /** The sender's next cancel or slice, when the path lets it go. */
  pollSlice(now: number, out: Uint8Array): number | undefined {
    const n = this.sender?.pollTransmit(now, out);
    if (n === undefined) return undefined;
    // The sender paced the chunk datagram; the framing around it is paced here.
    this.path.spend(this.headroom);
    const wire = this.path.wireBytes(n + this.headroom);
    this.sentWire += wire;
    this.owed = Math.max(0, this.owed - wire);
    return n;
  }

  pollEvent(): BlockLaneEvent | undefined {
    for (let e = this.receiver?.pollEvent(); e !== undefined; e = this.receiver!.pollEvent()) {
      // A block the sender cancelled or that was too large: the sender hears its outcome; nothing to hand out here.
      if (e.type === 'block') return { type: 'message', bytes: e.data };
    }
    for (let e = this.sender?.pollEvent(); e !== undefined; e = this.sender!.pollEvent()) {
      if (e.type === 'stalled' || !this.notices.delete(e.id)) continue;
      return { type: 'delivery', id: e.id, delivered: e.type === 'delivered' };
    }
    return undefined;
  }

  progress(now: number): BlockLaneProgress {
    return {
      sending: this.sender?.progress(now) ?? {
        queuedBlocks: 0, queuedBytes: 0, current: undefined, rateBytesPerSec: 0, etaMs: undefined, queueEtaMs: undefined,
        srttMs: this.path.rtt.srttMs,
      },
      receiving: this.receiver?.progress() ?? { ...EMPTY_RECEIVING, blocks: [] },
    };
  }

  stats(): BlockLaneStats {
    const s = this.sender;
    const sc = s?.counters();
    return {
      mode: 'block',
      queuedBytes: s?.pendingBytes ?? 0,
      queuedMessages: s?.pendingBlocks ?? 0,
      sentWireBytes: this.sentWire,
      resent: sc?.slicesResent ?? 0,
      delivered: sc?.blocksDelivered ?? 0,
      received: this.receiver?.counters().blocksDelivered ?? 0,
    };
  }

  counters(): BlockLaneCounters {
    return { sender: this.sender?.counters(), receiver: this.receiver?.counters(), stray: this.ctr.stray };
  }

  private get busy(): boolean {
    return this.sender !== undefined && this.sender.pendingBlocks > 0;
  }
}
