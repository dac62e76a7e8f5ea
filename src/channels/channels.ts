import { newCounters } from '../core/counters.js';
import { checkArg, checkConfig, GamewireError } from '../core/errors.js';
import { SequenceBuffer } from '../core/sequence-buffer.js';
import { seqDiff16, seqGreaterThan16 } from '../core/wrap.js';
import {
  type MessageLanesOptions, type DeliveryMode, MESSAGE_CHARGE_BYTES, type ResolvedMessageLanesOptions, type ResolvedLane,
  MAX_LANES, resolveMessageLanesOptions,
} from './config.js';
import {
  type FrameView, newFrameView, payloadThatFits, readFrame, reliableHeaderBytes, unreliableHeaderBytes,
  writeReliablePiece, writeUnreliablePiece,
} from './wire.js';

/** What `MessageLanes.pollEvent` returns. */
export type MessageLaneEvent =
  /** A message arrived on `lane` (the bytes are the receiver's own copy). */
  | { type: 'message'; lane: number; bytes: Uint8Array }
  /**
   * Outcome of message `id` (the value `send` returned) on `lane`: every `notify` message gets exactly
   * one; a reliable message sent with `notice` gets `delivered: true` once all its pieces are acked.
   */
  | { type: 'delivery'; lane: number; id: number; delivered: boolean };

/**
 * Builds the objects `MessageLanes` raises, so an owner gets its own final event type without copying
 * (a connection's events name the connection). `lane` is the `MessageLanes` lane number.
 */
export interface ChannelEventFactory<E> {
  /** A message arrived on `lane`: `bytes` is the receiver's own copy. */
  message(lane: number, bytes: Uint8Array): E;
  /** Outcome of message `id` on `lane`. */
  delivery(lane: number, id: number, delivered: boolean): E;
}

const PLAIN_EVENTS: ChannelEventFactory<MessageLaneEvent> = {
  message: (lane, bytes) => ({ type: 'message', lane, bytes }),
  delivery: (lane, id, delivered) => ({ type: 'delivery', lane, id, delivered }),
};

/** Per-lane figures (`MessageLanes.laneStats`). Counts are since construction. */
export interface LaneStats {
  mode: DeliveryMode;
  /** Payload bytes queued and not yet sent (the unsent part of a message being split counts). */
  queuedBytes: number;
  /** Messages queued with at least one piece not yet sent. */
  queuedMessages: number;
  /** Reliable: payload bytes sent and not yet acknowledged. 0 on unreliable lanes. */
  inFlightBytes: number;
  /** Age (ms, at the latest `now` seen) of the oldest message not yet fully sent (unreliable) or acknowledged (reliable); 0 if none. */
  oldestQueuedMs: number;
  /** Messages whose last piece was sent (first transmission). */
  sent: number;
  /** Reliable pieces sent again because every packet carrying them was lost. */
  resent: number;
  /** Reliable pieces that rode again as redundancy, and the frame bytes they took. */
  redundant: number;
  redundantBytes: number;
  /** Frame bytes written for this lane (headers included, redundancy included). */
  sentBytes: number;
  /** Reliable: messages fully acknowledged. Notify: messages reported delivered. */
  delivered: number;
  /** Reliable: pieces whose every carrying packet was lost (each then resent). Notify: messages reported lost. */
  lost: number;
  /** Messages dropped by the sender (unreliable queue limit, or a frame larger than any packet). */
  dropped: number;
  /** Messages delivered to this end's application from this lane. */
  received: number;
}

/** Counter names of `MessageLanes.counters()`: every dropped or refused input. */
export type MessageLanesCounter =
  | 'payloadsRefused' // validate() returned false
  | 'badFrame' // not a canonical frame
  | 'badLane' // lane number out of range or frame type not of the lane's mode
  | 'outsideWindow' // reliable id ≥ next + window: packet refused
  | 'overBudget' // reliable piece beyond the receive budget: packet refused
  | 'duplicatePieces' // reliable piece or unreliable message already received
  | 'staleUnreliable' // unreliable seq 1024 or more behind the newest seen
  | 'olderSequenced' // sequenced message older than the newest delivered
  | 'reassemblyEvicted' // unreliable message evicted from reassembly (slots or budget)
  | 'reassemblyDropped' // unreliable piece dropped (count mismatch, larger than the budget)
  | 'corruptMessages' // reliable pieces with inconsistent FIRST/LAST flags, delivered as one message anyway
  | 'unsendable' // unreliable piece larger than any packet offered: message dropped
  | 'outcomeTwice' // a token reported a second time: ignored
  | 'framesSent'
  | 'framesReceived';

const COUNTER_NAMES: readonly MessageLanesCounter[] = [
  'payloadsRefused', 'badFrame', 'badLane', 'outsideWindow', 'overBudget', 'duplicatePieces', 'staleUnreliable',
  'olderSequenced', 'reassemblyEvicted', 'reassemblyDropped', 'corruptMessages', 'unsendable', 'outcomeTwice',
  'framesSent', 'framesReceived',
];

/** Unreliable seqs this far behind the newest seen are stale (duplicate detection window). */
export const UNRELIABLE_DEDUP_WINDOW = 1024;
/** Smallest reliable piece cut to fill the end of a packet (a smaller remainder waits for the next packet). */
export const MIN_PIECE_BYTES = 64;
/** Pieces are cut this much smaller than the largest room seen (at most a quarter of it), so a later packet with a longer header still holds them. */
export const PIECE_SLACK_BYTES = 48;
const RIDE_SCAN = 64;

interface Stats {
  sent: number; resent: number; redundant: number; redundantBytes: number; sentBytes: number;
  delivered: number; lost: number; dropped: number; received: number;
}
const newStats = (): Stats => ({ sent: 0, resent: 0, redundant: 0, redundantBytes: 0, sentBytes: 0, delivered: 0, lost: 0, dropped: 0, received: 0 });

interface ReliableMsg {
  id: number;
  bytes: Uint8Array;
  /** Bytes already cut into pieces. */
  cut: number;
  /** Pieces cut and not yet acknowledged. */
  unacked: number;
  notice: boolean;
  queuedAt: number;
}

interface Piece {
  lane: number;
  msg: ReliableMsg;
  /** Full (unwrapped) piece id. */
  id: number;
  start: number;
  end: number;
  first: boolean;
  last: boolean;
  /** Packets carrying this piece without an outcome yet. */
  carriers: number;
  acked: boolean;
  needResend: boolean;
  rides: number;
  lastPacket: number;
}

interface NotifyState {
  lane: number;
  id: number;
  carriers: number;
  failed: boolean;
  allWritten: boolean;
  done: boolean;
  lastPacket: number;
}

interface UnreliableMsg {
  id: number;
  seq: number;
  bytes: Uint8Array;
  count: number;
  next: number;
  queuedAt: number;
  notify: NotifyState | undefined;
}

/** Opaque: what one packet carried, handed back through `packetDelivered` / `packetLost`. */
export class ChannelToken {
  /** @internal */ readonly pieces: Piece[] = [];
  /** @internal */ readonly notes: NotifyState[] = [];
  /** @internal */ settled = false;
}

/**
 * A FIFO of objects with O(1) shift: a ring whose capacity is a power of two, doubled when full, so a
 * queue that drains reuses the same few slots instead of growing an array between compactions.
 */
class Fifo<T> {
  private buf: (T | undefined)[] = [];
  private mask = -1;
  private head = 0;
  length = 0;
  peek(): T | undefined {
    return this.length === 0 ? undefined : this.buf[this.head];
  }
  at(i: number): T {
    return this.buf[(this.head + i) & this.mask]!;
  }
  push(v: T): void {
    if (this.length === this.buf.length) this.grow();
    this.buf[(this.head + this.length) & this.mask] = v;
    this.length++;
  }
  shift(): T | undefined {
    if (this.length === 0) return undefined;
    const v = this.buf[this.head];
    this.buf[this.head] = undefined;
    this.head = (this.head + 1) & this.mask;
    this.length--;
    return v;
  }
  private grow(): void {
    const n = this.buf.length;
    const b: (T | undefined)[] = [];
    for (let i = 0; i < n; i++) b.push(this.buf[(this.head + i) & this.mask]);
    for (let i = n, cap = n === 0 ? 4 : 2 * n; i < cap; i++) b.push(undefined);
    this.buf = b;
    this.mask = b.length - 1;
    this.head = 0;
  }
}

abstract class SendLane {
  readonly index: number;
  cfg: ResolvedLane;
  readonly stats = newStats();
  /** Charged bytes: queued + unacknowledged messages, each length + MESSAGE_CHARGE_BYTES. */
  charged = 0;
  nextMessageId = 0;
  vt = 0;
  idle = true;
  blocked = -1;
  /** Payload bytes queued and not yet sent. */
  queuedBytes = 0;

  constructor(index: number, cfg: ResolvedLane) {
    this.index = index;
    this.cfg = cfg;
  }
  abstract hasWork(): boolean;
}

class ReliableSendLane extends SendLane {
  readonly queue = new Fifo<ReliableMsg>();
  /** Pieces from the first piece of the oldest message not fully acknowledged, in id order. */
  readonly span = new Fifo<Piece>();
  spanBytes = 0;
  readonly resend: Piece[] = [];
  resendSorted = true;
  nextPieceId = 0;
  inFlightBytes = 0;
  rideCursor = 0;
  /** Index in `span` of the oldest unacknowledged piece (or span.length). */
  ackCursor = 0;
  window: number;

  constructor(index: number, cfg: ResolvedLane, window: number) {
    super(index, cfg);
    this.window = window;
  }

  /** Payload bytes the receive budget still allows past the span. */
  budgetLeft(): number {
    return this.cfg.maxReceiveBytes - this.spanBytes;
  }

  /** Full id of the oldest piece not yet acknowledged (the next new id if none). */
  oldestUnackedId(): number {
    const span = this.span;
    while (this.ackCursor < span.length && span.at(this.ackCursor).acked) this.ackCursor++;
    return this.ackCursor < span.length ? span.at(this.ackCursor).id : this.nextPieceId;
  }

  canCutNew(): boolean {
    const m = this.queue.peek();
    if (m === undefined) return false;
    if (this.nextPieceId - this.oldestUnackedId() >= this.window) return false;
    const remaining = m.bytes.length - m.cut;
    return this.budgetLeft() >= Math.min(remaining, MIN_PIECE_BYTES);
  }

  hasWork(): boolean {
    return this.resend.length > 0 || this.canCutNew();
  }
}

class UnreliableSendLane extends SendLane {
  readonly queue = new Fifo<UnreliableMsg>();
  nextSeq = 0;
  hasWork(): boolean {
    return this.queue.length > 0;
  }
}

interface HeldPiece {
  first: boolean;
  last: boolean;
  bytes: Uint8Array;
}

class ReliableReceiveLane {
  /** Full id of the oldest piece not yet received: the window is [base, base + window). */
  base = 0;
  /** Ordered: full id of the first piece of the next message to deliver (≤ base). */
  next = 0;
  /** Pieces held (received, not yet delivered). Ordered: every id in [base, …) held is here. */
  readonly pieces = new Map<number, HeldPiece>();
  /** Unordered only (undefined on an ordered lane): ids > base received (held or delivered). */
  readonly received: Set<number> | undefined;
  /** Unordered only: runs of held pieces, by first id → last id and back. */
  readonly runEndByStart: Map<number, number> | undefined;
  readonly runStartByEnd: Map<number, number> | undefined;
  heldBytes = 0;
  /** Ordered: every id in [next, scan) is held and none of them is LAST. */
  scan = 0;

  constructor(ordered: boolean) {
    if (ordered) return;
    this.received = new Set();
    this.runEndByStart = new Map();
    this.runStartByEnd = new Map();
  }
}

interface Slot {
  count: number;
  got: number;
  bytes: number;
  parts: (Uint8Array | undefined)[];
}

class UnreliableReceiveLane {
  readonly seen = new SequenceBuffer<true>(UNRELIABLE_DEDUP_WINDOW);
  started = false;
  newestDelivered = 0;
  anyDelivered = false;
  readonly slots = new Map<number, Slot>();
  heldBytes = 0;
}

/** Bytes per lane that one packet's frames would add (`validate`; filled and read within one call, so shared). */
const VALIDATE_SCRATCH = new Float64Array(MAX_LANES);

/** `'auto'` redundancy sends enough copies that losing all of them is rarer than this. */
export const AUTO_REDUNDANCY_TARGET = 3e-4;

/**
 * `'auto'` redundancy sends no riders once this many packet outcomes in a row were deliveries: the
 * path is clean, and riders there would cost bytes and buy nothing. Four loss windows (256 outcomes
 * each), so a path with 1 % loss almost never looks clean (0.99^1024 ≈ 3e-5), as one window would
 * (0.99^256 ≈ 8 %) and its losses would then wait for a resend.
 */
export const AUTO_CLEAN_OUTCOMES = 1024;

/** Rides for a packet loss rate `p`: copies k + 1 with p^(k+1) ≤ the target; p counted as ≥ 1 %, k in 1..8. */
function autoRidesFor(p: number): number {
  const loss = Number.isFinite(p) ? Math.min(Math.max(p, 0.01), 0.9) : 0.01;
  const copies = Math.ceil(Math.log(AUTO_REDUNDANCY_TARGET) / Math.log(loss));
  return Math.min(8, Math.max(1, copies - 1));
}

/**
 * The message layer of one connection: lanes of messages in five delivery modes, split into pieces
 * and merged into packets, with priorities, weights, redundancy and bounded memory at both ends.
 * Sans-IO: it writes frames into the caller's packet and learns each packet's fate from the caller
 * (through the token of `takeToken`). See docs/channels.md.
 */
export class MessageLanes<E = MessageLaneEvent> {
  private config_: ResolvedMessageLanesOptions;
  private readonly send_: SendLane[];
  private readonly recvReliable: (ReliableReceiveLane | undefined)[];
  private readonly recvUnreliable: (UnreliableReceiveLane | undefined)[];
  /** Lane indexes grouped by priority, lowest level first. */
  private readonly levels: number[][];
  private readonly levelVt: number[];
  /** Per priority level, its reliable lanes (whose unacked pieces may ride again). */
  private ridersByLevel: ReliableSendLane[][];
  private readonly events = new Fifo<E>();
  private readonly make: ChannelEventFactory<E>;
  private readonly count = newCounters<MessageLanesCounter>(COUNTER_NAMES);
  private readonly view: FrameView = newFrameView();
  private token: ChannelToken | undefined;
  private tokenReady = false;
  private packetNo = 0;
  private maxRoom = 0;
  private lastNow = 0;
  private autoRides = 0;

  /**
   * Throws `invalid-config` (see `MessageLanesOptions`). `events` builds the events `pollEvent` returns
   * (default: `MessageLaneEvent` objects).
   */
  constructor(config: MessageLanesOptions, events: ChannelEventFactory<E> = PLAIN_EVENTS as unknown as ChannelEventFactory<E>) {
    this.config_ = resolveMessageLanesOptions(config);
    this.make = events;
    const c = this.config_;
    this.send_ = c.lanes.map((l, i) => (l.reliable ? new ReliableSendLane(i, l, c.reliableWindow) : new UnreliableSendLane(i, l)));
    this.recvReliable = c.lanes.map((l) => (l.reliable ? new ReliableReceiveLane(l.ordered) : undefined));
    this.recvUnreliable = c.lanes.map((l) => (l.reliable ? undefined : new UnreliableReceiveLane()));
    const byLevel = new Map<number, number[]>();
    c.lanes.forEach((l, i) => byLevel.set(l.priority, [...(byLevel.get(l.priority) ?? []), i]));
    this.levels = [...byLevel.keys()].sort((a, b) => a - b).map((k) => byLevel.get(k)!);
    this.levelVt = this.levels.map(() => 0);
    this.ridersByLevel = this.riders();
  }

  /** The configuration with every default filled in. */
  get config(): ResolvedMessageLanesOptions {
    return this.config_;
  }

  /**
   * Take the redundancy of `config`, the same lanes resolved for another transport (a connection
   * that moved onto TCP, which delivers everything, rides nothing); nothing else of it is taken.
   * Throws `invalid-config` when `config` is invalid or its lanes are not these, in the same modes.
   */
  setRedundancy(config: MessageLanesOptions): void {
    const c = resolveMessageLanesOptions(config);
    checkConfig(c.lanes.length === this.send_.length && c.lanes.every((l, i) => l.mode === this.send_[i]!.cfg.mode),
      'setRedundancy: the same lanes, in the same modes');
    this.send_.forEach((l, i) => {
      l.cfg = { ...l.cfg, redundancy: c.lanes[i]!.redundancy };
    });
    this.config_ = { ...this.config_, redundancy: c.redundancy, lanes: this.send_.map((l) => l.cfg) };
    this.ridersByLevel = this.riders();
  }

  /** Per priority level, its reliable lanes that may ride again. */
  private riders(): ReliableSendLane[][] {
    return this.levels.map((level) => level.map((i) => this.send_[i]!)
      .filter((l): l is ReliableSendLane => l instanceof ReliableSendLane && l.cfg.redundancy !== 0));
  }

  /**
   * Queue a message (the bytes are copied; 0 bytes is allowed) at time `now` (ms); returns its id,
   * per lane from 0, as reported in `delivery` events. Throws `invalid-argument` (bad lane, not a
   * Uint8Array, `notice` on an unreliable lane), `message-too-large` (above the lane's
   * `maxMessageBytes`), `queue-full` (reliable lane at `maxQueuedBytes`). An unreliable lane at its
   * limit drops its oldest queued messages instead (counted `dropped`; a notify message so dropped
   * gets `delivered: false`).
   */
  send(now: number, lane: number, bytes: Uint8Array, notice = false): number {
    checkArg(Number.isInteger(lane) && lane >= 0 && lane < this.send_.length, `lane must be 0..${this.send_.length - 1}`);
    checkArg(bytes instanceof Uint8Array, 'a message is a Uint8Array');
    this.lastNow = now;
    const l = this.send_[lane]!;
    const cfg = l.cfg;
    if (bytes.length > cfg.maxMessageBytes) {
      throw new GamewireError('message-too-large', `${bytes.length} bytes > lane ${lane} maxMessageBytes ${cfg.maxMessageBytes}`);
    }
    const charge = bytes.length + MESSAGE_CHARGE_BYTES;
    if (l instanceof ReliableSendLane) {
      if (l.charged + charge > cfg.maxQueuedBytes) {
        throw new GamewireError('queue-full', `lane ${lane}: ${l.charged} bytes queued or unacknowledged, max ${cfg.maxQueuedBytes}`);
      }
      const id = l.nextMessageId++;
      l.queue.push({ id, bytes: bytes.slice(), cut: 0, unacked: 0, notice, queuedAt: now });
      l.charged += charge;
      l.queuedBytes += bytes.length;
      return id;
    }
    checkArg(!notice, 'notice is for reliable lanes (notify lanes always report)');
    const u = l as UnreliableSendLane;
    while (u.charged + charge > cfg.maxQueuedBytes && u.queue.length > 0) this.dropUnreliable(u);
    const id = u.nextMessageId++;
    const frag = this.config_.fragmentBytes;
    const count = bytes.length <= frag ? 1 : Math.ceil(bytes.length / frag);
    const notify = cfg.mode === 'notify'
      ? { lane, id, carriers: 0, failed: false, allWritten: false, done: false, lastPacket: -1 }
      : undefined;
    u.queue.push({ id, seq: u.nextSeq, bytes: bytes.slice(), count, next: 0, queuedAt: now, notify });
    u.nextSeq = (u.nextSeq + 1) & 0xffff;
    u.charged += charge;
    u.queuedBytes += bytes.length;
    return id;
  }

  private dropUnreliable(u: UnreliableSendLane): void {
    const m = u.queue.shift()!;
    u.charged -= m.bytes.length + MESSAGE_CHARGE_BYTES;
    u.queuedBytes -= this.unsentBytes(m);
    u.stats.dropped++;
    if (m.notify !== undefined) {
      m.notify.failed = true;
      m.notify.allWritten = true;
      this.settleNotify(m.notify);
    }
  }

  private unsentBytes(m: UnreliableMsg): number {
    return m.bytes.length - Math.min(m.bytes.length, m.next * this.config_.fragmentBytes);
  }

  /**
   * The packet loss the connection measures: `fraction`, 0..1, the share of its packets reported lost
   * lately, and `outcomesSinceLoss`, packet outcomes since its latest loss (Infinity: none; by default
   * 0 when `fraction` > 0, else Infinity). Sets how many times pieces of `'auto'` lanes ride again:
   * none on a clean path (`outcomesSinceLoss` ≥ `AUTO_CLEAN_OUTCOMES`), else as `fraction` asks, at
   * least once. Before any call: none.
   */
  setLossRate(fraction: number, outcomesSinceLoss: number = fraction > 0 ? 0 : Infinity): void {
    this.autoRides = outcomesSinceLoss >= AUTO_CLEAN_OUTCOMES ? 0 : autoRidesFor(fraction);
  }

  /**
   * Bytes waiting to be sent on every lane (new payload; a lane with resends pending counts the
   * largest room seen for them), for the caller's pacing estimate. Cheap: no allocation.
   */
  pendingBytes(): number {
    let n = 0;
    for (const l of this.send_) {
      n += l.queuedBytes;
      if (l instanceof ReliableSendLane && l.resend.length > 0) n += this.maxRoom;
    }
    return n;
  }

  /** True when frames are waiting to be sent (new or to resend), not counting redundancy. */
  hasFrames(): boolean {
    for (const l of this.send_) if (l.hasWork()) return true;
    return false;
  }

  /**
   * Write frames into `out[offset, end)` at time `now` (ms): resends and new pieces by priority and
   * weight, then redundancy into the room left; `ridersOnly`: redundancy alone (a packet that goes
   * anyway, an ack, while pacing holds new data back). Returns bytes written (0: nothing to send or nothing
   * fits). After a call that wrote anything, call `takeToken()` before the next `writeFrames`
   * (else `invalid-state`). The room offered should not shrink below the largest room seen by more
   * than `PIECE_SLACK_BYTES`: pieces keep their size when resent.
   */
  writeFrames(now: number, out: Uint8Array, offset: number, end: number, ridersOnly = false): number {
    if (this.tokenReady) throw new GamewireError('invalid-state', 'takeToken() was not called after the last writeFrames');
    checkArg(Number.isInteger(offset) && Number.isInteger(end) && offset >= 0 && offset <= end && end <= out.length, 'bad range');
    this.lastNow = now;
    const pkt = ++this.packetNo;
    if (end - offset > this.maxRoom) this.maxRoom = end - offset;
    let o = offset;
    for (let li = 0; li < this.levels.length; li++) {
      const level = this.levels[li]!;
      for (;;) {
        if (ridersOnly || end - o < 5) break;
        let best: SendLane | undefined;
        for (const i of level) {
          const l = this.send_[i]!;
          if (l.blocked === pkt || !l.hasWork()) continue;
          if (l.idle) {
            l.idle = false;
            if (l.vt < this.levelVt[li]!) l.vt = this.levelVt[li]!;
          }
          if (best === undefined || l.vt < best.vt) best = l;
        }
        if (best === undefined) break;
        const n = best instanceof ReliableSendLane ? this.writeReliable(best, out, o, end, pkt) : this.writeUnreliable(best as UnreliableSendLane, out, o, end, pkt);
        if (n === 0) {
          best.blocked = pkt;
          continue;
        }
        this.levelVt[li] = best.vt;
        best.vt += n / best.cfg.weight;
        o += n;
      }
      // Redundancy is part of a level's service: a high-priority lane's pieces ride again before a
      // lower level's new data, so a saturating bulk lane cannot leave its loss recovery to the RTT.
      o = this.writeRiders(out, o, end, pkt, this.ridersByLevel[li]!);
    }
    for (const l of this.send_) if (!l.hasWork()) l.idle = true;
    if (o > offset) this.tokenReady = true;
    return o - offset;
  }

  /** The token of the packet last written (once), or undefined if it carries nothing needing an outcome. */
  takeToken(): ChannelToken | undefined {
    const t = this.token;
    this.token = undefined;
    this.tokenReady = false;
    return t;
  }

  private tokenOf(): ChannelToken {
    return (this.token ??= new ChannelToken());
  }

  private cutLimit(): number {
    const slack = Math.min(PIECE_SLACK_BYTES, this.maxRoom >> 2);
    return Math.max(0, payloadThatFits(this.maxRoom - slack, 4));
  }

  private writeReliable(l: ReliableSendLane, out: Uint8Array, o: number, end: number, pkt: number): number {
    const room = end - o;
    if (l.resend.length > 0) {
      if (!l.resendSorted) {
        l.resend.sort((a, b) => a.id - b.id);
        l.resendSorted = true;
      }
      for (let i = 0; i < l.resend.length; i++) {
        const p = l.resend[i]!;
        const n = p.end - p.start;
        if (reliableHeaderBytes(n) + n > room) continue;
        l.resend.splice(i, 1);
        p.needResend = false;
        l.stats.resent++;
        return this.putPiece(l, p, out, o, pkt, false);
      }
    }
    if (!l.canCutNew()) return 0;
    const m = l.queue.peek()!;
    const remaining = m.bytes.length - m.cut;
    const fit = payloadThatFits(room, 4);
    const n = Math.min(remaining, this.cutLimit(), l.budgetLeft(), fit);
    if (n < 0 || (n < remaining && n < Math.min(MIN_PIECE_BYTES, this.cutLimit()))) return 0;
    if (n === 0 && remaining > 0) return 0;
    const p: Piece = {
      lane: l.index, msg: m, id: l.nextPieceId++, start: m.cut, end: m.cut + n, first: m.cut === 0,
      last: m.cut + n === m.bytes.length, carriers: 0, acked: false, needResend: false, rides: 0, lastPacket: -1,
    };
    m.cut += n;
    m.unacked++;
    l.queuedBytes -= n;
    l.inFlightBytes += n;
    l.span.push(p);
    l.spanBytes += n;
    if (p.last) {
      l.queue.shift();
      l.stats.sent++;
    }
    return this.putPiece(l, p, out, o, pkt, false);
  }

  private putPiece(l: ReliableSendLane, p: Piece, out: Uint8Array, o: number, pkt: number, ride: boolean): number {
    const n = writeReliablePiece(out, o, l.index, p.id & 0xffff, p.first, p.last, p.msg.bytes, p.start, p.end);
    p.carriers++;
    p.lastPacket = pkt;
    this.tokenOf().pieces.push(p);
    l.stats.sentBytes += n;
    if (ride) {
      l.stats.redundant++;
      l.stats.redundantBytes += n;
    }
    this.count.framesSent++;
    return n;
  }

  private writeUnreliable(u: UnreliableSendLane, out: Uint8Array, o: number, end: number, pkt: number): number {
    const frag = this.config_.fragmentBytes;
    for (;;) {
      const m = u.queue.peek();
      if (m === undefined) return 0;
      const start = m.next * frag;
      const stop = m.count === 1 ? m.bytes.length : Math.min(m.bytes.length, start + frag);
      const len = stop - start;
      const need = unreliableHeaderBytes(len, m.count !== 1) + len;
      if (need > end - o) {
        if (need <= this.maxRoom) return 0;
        this.count.unsendable++;
        this.dropUnreliable(u);
        continue;
      }
      const n = writeUnreliablePiece(out, o, u.index, m.seq, m.next, m.count, m.bytes, start, stop);
      m.next++;
      u.queuedBytes -= len;
      u.stats.sentBytes += n;
      this.count.framesSent++;
      const s = m.notify;
      if (s !== undefined && s.lastPacket !== pkt) {
        s.lastPacket = pkt;
        s.carriers++;
        this.tokenOf().notes.push(s);
      }
      if (m.next === m.count) {
        u.queue.shift();
        u.charged -= m.bytes.length + MESSAGE_CHARGE_BYTES;
        u.stats.sent++;
        if (s !== undefined) s.allWritten = true;
      }
      return n;
    }
  }

  private writeRiders(out: Uint8Array, o: number, end: number, pkt: number, lanes: readonly ReliableSendLane[]): number {
    for (const l of lanes) {
      const max = l.cfg.redundancy < 0 ? this.autoRides : l.cfg.redundancy;
      // The cursor stays: once loss is measured, the pieces still unacknowledged may ride.
      if (max === 0) continue;
      const span = l.span;
      while (l.rideCursor < span.length) {
        const p = span.at(l.rideCursor);
        if (!p.acked && p.rides < max) break;
        l.rideCursor++;
      }
      for (let i = l.rideCursor, seen = 0; i < span.length && seen < RIDE_SCAN && end - o >= 5; i++, seen++) {
        const p = span.at(i);
        if (p.acked || p.needResend || p.rides >= max || p.lastPacket === pkt) continue;
        const n = p.end - p.start;
        if (reliableHeaderBytes(n) + n > end - o) continue;
        p.rides++;
        o += this.putPiece(l, p, out, o, pkt, true);
      }
    }
    return o;
  }

  /** The packet that carried `token` was delivered (the peer accepted it). Call once per token. */
  packetDelivered(now: number, token: ChannelToken): void {
    this.settle(now, token, true);
  }

  /** The packet that carried `token` was lost. Call once per token. */
  packetLost(now: number, token: ChannelToken): void {
    this.settle(now, token, false);
  }

  private settle(now: number, token: ChannelToken, delivered: boolean): void {
    this.lastNow = now;
    if (token.settled) {
      this.count.outcomeTwice++;
      return;
    }
    token.settled = true;
    for (const p of token.pieces) {
      p.carriers--;
      const l = this.send_[p.lane] as ReliableSendLane;
      if (p.acked) continue;
      if (delivered) {
        p.acked = true;
        l.inFlightBytes -= p.end - p.start;
        const m = p.msg;
        if (--m.unacked === 0 && m.cut === m.bytes.length) {
          l.charged -= m.bytes.length + MESSAGE_CHARGE_BYTES;
          l.stats.delivered++;
          if (m.notice) this.events.push(this.make.delivery(p.lane, m.id, true));
        }
      } else if (p.carriers === 0 && !p.needResend) {
        p.needResend = true;
        l.stats.lost++;
        l.resend.push(p);
        if (l.resend.length > 1 && l.resend[l.resend.length - 2]!.id > p.id) l.resendSorted = false;
      }
    }
    for (const p of token.pieces) {
      if (!delivered) break;
      const l = this.send_[p.lane] as ReliableSendLane;
      this.trimSpan(l);
    }
    for (const s of token.notes) {
      s.carriers--;
      if (!delivered) s.failed = true;
      this.settleNotify(s);
    }
  }

  private trimSpan(l: ReliableSendLane): void {
    for (;;) {
      const p = l.span.peek();
      if (p === undefined || !p.acked || p.msg.unacked !== 0 || p.msg.cut !== p.msg.bytes.length) return;
      l.span.shift();
      l.spanBytes -= p.end - p.start;
      if (l.rideCursor > 0) l.rideCursor--;
      if (l.ackCursor > 0) l.ackCursor--;
    }
  }

  private settleNotify(s: NotifyState): void {
    if (s.done || !s.allWritten || s.carriers !== 0) return;
    s.done = true;
    const l = this.send_[s.lane]!;
    if (s.failed) l.stats.lost++;
    else l.stats.delivered++;
    this.events.push(this.make.delivery(s.lane, s.id, !s.failed));
  }

  /**
   * Check the frames of a received payload `bytes[offset, end)` without applying anything. False (and
   * counted) if any frame is not canonical, names a lane that does not exist or has another mode, or
   * carries a reliable piece this end cannot hold (id outside the window, receive budget exceeded):
   * the packet must then not be acknowledged, so a conforming sender resends its reliable pieces.
   */
  validate(bytes: Uint8Array, offset: number, end: number): boolean {
    if (!(offset >= 0 && offset <= end && end <= bytes.length)) return this.refuse('badFrame');
    const v = this.view;
    const extra = VALIDATE_SCRATCH;
    extra.fill(0, 0, this.config_.lanes.length);
    const window = this.config_.reliableWindow;
    for (let o = offset; o < end;) {
      const n = readFrame(bytes, o, end, v);
      if (n < 0) return this.refuse('badFrame');
      o += n;
      const lane = this.config_.lanes[v.lane];
      if (lane === undefined || lane.reliable !== v.reliable) return this.refuse('badLane');
      if (!v.reliable) continue;
      const r = this.recvReliable[v.lane]!;
      const d = seqDiff16(v.id, r.base & 0xffff);
      if (d < 0) continue;
      if (d >= window) return this.refuse('outsideWindow');
      const full = r.base + d;
      if (lane.ordered ? r.pieces.has(full) : r.received!.has(full)) continue;
      extra[v.lane] += v.payloadEnd - v.payloadStart;
      if (r.heldBytes + extra[v.lane]! > lane.maxReceiveBytes) return this.refuse('overBudget');
    }
    return true;
  }

  private refuse(why: MessageLanesCounter): false {
    this.count[why]++;
    this.count.payloadsRefused++;
    return false;
  }

  /** Apply a payload that `validate` accepted (after the packet layer accepted the packet), at `now` (ms). */
  receive(now: number, bytes: Uint8Array, offset: number, end: number): void {
    this.lastNow = now;
    if (!(offset >= 0 && offset <= end && end <= bytes.length)) return;
    const v = this.view;
    for (let o = offset; o < end;) {
      const n = readFrame(bytes, o, end, v);
      if (n < 0) {
        this.count.badFrame++;
        return;
      }
      o += n;
      const lane = this.config_.lanes[v.lane];
      if (lane === undefined || lane.reliable !== v.reliable) {
        this.count.badLane++;
        continue;
      }
      this.count.framesReceived++;
      if (v.reliable) this.receiveReliable(v.lane, lane, bytes, v);
      else this.receiveUnreliable(v.lane, lane, bytes, v);
    }
  }

  private receiveReliable(lane: number, cfg: ResolvedLane, bytes: Uint8Array, v: FrameView): void {
    const r = this.recvReliable[lane]!;
    const d = seqDiff16(v.id, r.base & 0xffff);
    if (d >= this.config_.reliableWindow) {
      this.count.outsideWindow++;
      return;
    }
    const full = r.base + d;
    if (d < 0 || r.pieces.has(full) || (!cfg.ordered && r.received!.has(full))) {
      this.count.duplicatePieces++;
      return;
    }
    const len = v.payloadEnd - v.payloadStart;
    if (r.heldBytes + len > cfg.maxReceiveBytes) {
      this.count.overBudget++;
      return;
    }
    if (cfg.ordered && v.first && v.last && full === r.base && r.next === full && r.scan <= full && r.pieces.size === 0) {
      // A whole message, next in order, nothing held: what holding it and assembling it would end in.
      r.base = r.next = r.scan = full + 1;
      this.deliver(lane, bytes.slice(v.payloadStart, v.payloadEnd));
      return;
    }
    r.pieces.set(full, { first: v.first, last: v.last, bytes: bytes.slice(v.payloadStart, v.payloadEnd) });
    r.heldBytes += len;
    if (cfg.ordered) {
      if (full === r.base) {
        r.base++;
        while (r.pieces.has(r.base)) r.base++;
        this.deliverOrdered(lane, r);
      }
    } else {
      r.received!.add(full);
      while (r.received!.delete(r.base)) r.base++;
      this.deliverUnordered(lane, r, full);
    }
  }

  private deliverOrdered(lane: number, r: ReliableReceiveLane): void {
    for (;;) {
      if (r.scan < r.next) r.scan = r.next;
      let p: HeldPiece | undefined;
      while ((p = r.pieces.get(r.scan)) !== undefined && !p.last) r.scan++;
      if (p === undefined) return;
      this.assemble(lane, r, r.next, r.scan);
      r.next = r.scan + 1;
    }
  }

  /**
   * Unordered: held pieces form runs of consecutive ids that never cross a message boundary (a run
   * ends at a LAST piece and starts at a FIRST one); a run from FIRST to LAST is a whole message.
   * O(1) per piece, whatever the message's size.
   */
  private deliverUnordered(lane: number, r: ReliableReceiveLane, id: number): void {
    const p = r.pieces.get(id)!;
    const endOf = r.runEndByStart!;
    const startOf = r.runStartByEnd!;
    let s = id;
    let e = id;
    if (!p.first) {
      const left = startOf.get(id - 1);
      if (left !== undefined && !r.pieces.get(id - 1)!.last) {
        s = left;
        startOf.delete(id - 1);
        endOf.delete(left);
      }
    }
    if (!p.last) {
      const right = endOf.get(id + 1);
      if (right !== undefined && !r.pieces.get(id + 1)!.first) {
        e = right;
        endOf.delete(id + 1);
        startOf.delete(right);
      }
    }
    if (r.pieces.get(s)!.first && r.pieces.get(e)!.last) {
      this.assemble(lane, r, s, e);
    } else {
      endOf.set(s, e);
      startOf.set(e, s);
    }
  }

  private assemble(lane: number, r: ReliableReceiveLane, s: number, e: number): void {
    let total = 0;
    let corrupt = false;
    for (let i = s; i <= e; i++) {
      const p = r.pieces.get(i)!;
      total += p.bytes.length;
      if (p.first !== (i === s) || p.last !== (i === e)) corrupt = true;
    }
    if (corrupt) this.count.corruptMessages++;
    let msg: Uint8Array;
    if (s === e) {
      msg = r.pieces.get(s)!.bytes;
      r.pieces.delete(s);
    } else {
      msg = new Uint8Array(total);
      let at = 0;
      for (let i = s; i <= e; i++) {
        const b = r.pieces.get(i)!.bytes;
        msg.set(b, at);
        at += b.length;
        r.pieces.delete(i);
      }
    }
    r.heldBytes -= total;
    this.deliver(lane, msg);
  }

  private deliver(lane: number, bytes: Uint8Array): void {
    this.send_[lane]!.stats.received++;
    this.events.push(this.make.message(lane, bytes));
  }

  private receiveUnreliable(lane: number, cfg: ResolvedLane, bytes: Uint8Array, v: FrameView): void {
    const r = this.recvUnreliable[lane]!;
    const seq = v.id;
    if (r.started && seqDiff16(r.seen.newestSequence, seq) >= UNRELIABLE_DEDUP_WINDOW) {
      this.count.staleUnreliable++;
      return;
    }
    if (r.started && r.seen.has(seq)) {
      this.count.duplicatePieces++;
      return;
    }
    if (cfg.mode === 'unreliable-sequenced' && r.anyDelivered && !seqGreaterThan16(seq, r.newestDelivered)) {
      this.count.olderSequenced++;
      return;
    }
    if (v.count === 1) {
      this.deliverUnreliable(lane, r, seq, bytes.slice(v.payloadStart, v.payloadEnd), cfg);
      return;
    }
    const len = v.payloadEnd - v.payloadStart;
    let slot = r.slots.get(seq);
    if (slot === undefined) {
      if (r.slots.size >= this.config_.maxReassemblySlots) this.evictOldest(r);
      slot = { count: v.count, got: 0, bytes: 0, parts: new Array<Uint8Array | undefined>(v.count) };
      r.slots.set(seq, slot);
    }
    if (slot.count !== v.count) {
      this.count.reassemblyDropped++;
      return;
    }
    if (slot.parts[v.index] !== undefined) {
      this.count.duplicatePieces++;
      return;
    }
    while (r.heldBytes + len > cfg.maxReceiveBytes && r.slots.size > 1) {
      const first = r.slots.keys().next().value as number;
      if (first === seq) break;
      this.evictOldest(r);
    }
    if (r.heldBytes + len > cfg.maxReceiveBytes) {
      this.count.reassemblyDropped++;
      return;
    }
    slot.parts[v.index] = bytes.slice(v.payloadStart, v.payloadEnd);
    slot.got++;
    slot.bytes += len;
    r.heldBytes += len;
    if (slot.got < slot.count) return;
    r.slots.delete(seq);
    r.heldBytes -= slot.bytes;
    const msg = new Uint8Array(slot.bytes);
    let at = 0;
    for (const part of slot.parts) {
      msg.set(part!, at);
      at += part!.length;
    }
    this.deliverUnreliable(lane, r, seq, msg, cfg);
  }

  private evictOldest(r: UnreliableReceiveLane): void {
    const [seq, slot] = r.slots.entries().next().value as [number, Slot];
    r.slots.delete(seq);
    r.heldBytes -= slot.bytes;
    this.count.reassemblyEvicted++;
  }

  private deliverUnreliable(lane: number, r: UnreliableReceiveLane, seq: number, msg: Uint8Array, cfg: ResolvedLane): void {
    r.started = true;
    r.seen.insert(seq, true);
    if (cfg.mode === 'unreliable-sequenced') {
      r.anyDelivered = true;
      r.newestDelivered = seq;
      for (const s of [...r.slots.keys()]) {
        if (!seqGreaterThan16(s, seq)) {
          r.heldBytes -= r.slots.get(s)!.bytes;
          r.slots.delete(s);
        }
      }
    }
    this.deliver(lane, msg);
  }

  /** The next event, or undefined. */
  pollEvent(): E | undefined {
    return this.events.shift();
  }

  /** Figures of `lane` (see `LaneStats`); ages are measured at `now` (ms; default the latest `now` seen). */
  laneStats(lane: number, now = this.lastNow): LaneStats {
    checkArg(Number.isInteger(lane) && lane >= 0 && lane < this.send_.length, `lane must be 0..${this.send_.length - 1}`);
    const l = this.send_[lane]!;
    let queuedMessages: number;
    let queuedBytes: number;
    let inFlightBytes = 0;
    let oldest: number | undefined;
    if (l instanceof ReliableSendLane) {
      queuedMessages = l.queue.length;
      queuedBytes = l.queuedBytes;
      inFlightBytes = l.inFlightBytes;
      oldest = (l.span.peek()?.msg ?? l.queue.peek())?.queuedAt;
    } else {
      const u = l as UnreliableSendLane;
      queuedMessages = u.queue.length;
      queuedBytes = u.queuedBytes;
      oldest = u.queue.peek()?.queuedAt;
    }
    return {
      mode: l.cfg.mode, queuedBytes, queuedMessages, inFlightBytes,
      oldestQueuedMs: oldest === undefined ? 0 : Math.max(0, now - oldest), ...l.stats,
    };
  }

  /** A copy of the counters (every dropped or refused input, frames sent and received). */
  counters(): Readonly<Record<MessageLanesCounter, number>> {
    return { ...this.count };
  }
}
