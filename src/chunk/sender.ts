import { Path } from '../congestion/path.js';
import { newCounters } from '../core/counters.js';
import { checkArg, GamewireError } from '../core/errors.js';
import type { SansIoPeer } from '../core/peer.js';
import { timeDiff32, u32 } from '../core/wrap.js';
import { bitsetBytes, setBit, testBit } from './bitset.js';
import { type ChunkSenderOptions, type ResolvedChunkSenderOptions, resolveSenderOptions } from './config.js';
import {
  type AckPacket, CANCEL_BYTES, decodeChunkPacket, encodeCancel, MAX_BLOCK_BYTES, type RefusePacket,
  SLICE_HEADER_BYTES, sliceCountOf, writeSlice,
} from './wire.js';

/** Why a block was cancelled. */
export type CancelReason = 'user' | 'datagram-too-large';

/** Outcomes and notices of a `ChunkSender`, drained with `pollEvent()`. `id` is the value `sendBlock` returned. */
export type ChunkSenderEvent =
  /** Every slice was acked: the receiver has the whole block. */
  | { type: 'delivered'; id: number; bytes: number; durationMs: number }
  /** Dropped before completion; the receiver (if it saw any of it) was told and freed it. */
  | { type: 'cancelled'; id: number; reason: CancelReason }
  /** The receiver will not accept the block (`limitBytes` is its maxBlockBytes). */
  | { type: 'refused'; id: number; reason: 'too-large'; limitBytes: number }
  /**
   * No ack progress for `stallTimeoutMs` (link down, peer gone, or slices too big for the path:
   * `suspectMtu` when only short slices were ever acked). Informational: sending continues.
   */
  | { type: 'stalled'; id: number; sinceMs: number; suspectMtu: boolean };

/** What `progress(now)` reports. Rates in bytes/s of block payload, times in ms. */
export interface ChunkSenderProgress {
  /** Blocks queued or in flight. */
  queuedBlocks: number;
  /** Bytes of blocks queued or in flight. */
  queuedBytes: number;
  /** The oldest block in flight, or undefined when idle. */
  current: { id: number; totalBytes: number; ackedBytes: number; sentBytes: number } | undefined;
  /** Payload bytes acked per second, measured over roughly the last second (0 before any ack). */
  rateBytesPerSec: number;
  /** Estimated ms until `current` is acked, or undefined without a rate. */
  etaMs: number | undefined;
  /** Estimated ms until everything queued is acked, or undefined without a rate. */
  queueEtaMs: number | undefined;
  /** Smoothed RTT (ms). */
  srttMs: number;
}

const SENDER_COUNTERS = [
  'blocksQueued', 'blocksDelivered', 'blocksCancelled', 'blocksRefused', 'datagramsSent', 'wireBytesSent',
  'slicesSent', 'slicesResent', 'cancelsSent', 'datagramsReceived', 'acksReceived', 'refusalsReceived',
  'malformed', 'wrongDirection', 'wrongSession', 'staleAck', 'ackMismatch', 'rttSamples', 'rttRejected',
  'outTooSmall', 'stalls', 'eventsDropped',
] as const;

/** Counter names of a `ChunkSender` (see docs/chunk.md §Counters). */
export type ChunkSenderCounter = (typeof SENDER_COUNTERS)[number];

type OutState = 'sending' | 'cancelling' | 'done';

/** One block on the wire: per-slice ack bits, last send times, and a FIFO of sent slices (oldest first). */
class OutChunk {
  readonly id: number;
  readonly chunkId: number;
  readonly data: Uint8Array;
  readonly sliceCount: number;
  readonly acked: Uint8Array;
  readonly sentAt: Float64Array;
  readonly fifo: Uint32Array;
  fifoHead = 0;
  fifoLen = 0;
  nextFresh = 0;
  ackedCount = 0;
  ackedPrefix = 0;
  ackedBytes = 0;
  ackedFull = 0;
  sentBytes = 0;
  burst: boolean;
  state: OutState = 'sending';
  outcome: ChunkSenderEvent | undefined;
  cancelReason: CancelReason = 'user';
  cancelSentAt = -Infinity;
  readonly startedAt: number;
  lastProgressAt: number;
  stalled = false;

  constructor(id: number, chunkId: number, data: Uint8Array, sliceBytes: number, burst: boolean, now: number) {
    this.id = id;
    this.chunkId = chunkId;
    this.data = data;
    this.sliceCount = sliceCountOf(data.length, sliceBytes);
    this.acked = new Uint8Array(bitsetBytes(this.sliceCount));
    this.sentAt = new Float64Array(this.sliceCount);
    this.fifo = new Uint32Array(this.sliceCount);
    this.burst = burst;
    this.startedAt = now;
    this.lastProgressAt = now;
  }

  /** Bookkeeping bytes this chunk allocated (not counting the caller's block). */
  get overheadBytes(): number {
    return this.acked.byteLength + this.sentAt.byteLength + this.fifo.byteLength;
  }
}

interface Queued {
  id: number;
  data: Uint8Array;
}

/**
 * Most block ids between the newest block on the wire and the next one (seqDiff16's range): ids of
 * blocks cancelled while queued never reach the wire, and the receiver skips such gaps (docs/chunk.md).
 */
const MAX_ID_GAP = 0x8000;

/** Bookkeeping bytes per slice of an in-flight block (bit + f64 send time + u32 FIFO slot), rounded up. */
const OVERHEAD_PER_SLICE = 13;

/**
 * Sends large blocks reliably and in order over an unreliable datagram path (Gaffer's chunk sender,
 * extended: windowed acks for blocks up to 4 GiB, ≤ 2 blocks in flight, cancel, refusal, progress).
 *
 * Drive contract (`SansIoPeer`): feed acks with `handleDatagram(now, bytes)`, call `handleTimeout(now)`
 * when `now ≥ pollTimeout()`, and after any input or command drain `pollTransmit(now, out)` until it
 * returns undefined, then `pollEvent()` likewise. Slices are paced by the `Path` (its rate controller
 * and byte budget; a private path unless `config.path` shares one with other lanes); each unacked slice is resent no sooner than max(RTT × 1.25, minResendMs) after its
 * last send, oldest first. When the peer goes silent, fresh slices stop once the wire bytes of fresh
 * slices sent since it last spoke exceed max(`unackedBdpMultiple` × rate × srtt, `unackedFloorBytes`);
 * due resends (backed off) still go out and the first ack lifts the cap. `sendBlock` keeps a
 * reference to the caller's bytes (no copy): do not modify a block until its outcome event.
 */
export class ChunkSender implements SansIoPeer {
  /** The validated configuration. */
  readonly config: Readonly<ResolvedChunkSenderOptions>;
  private paced: Path;
  private readonly ctr = newCounters<ChunkSenderCounter>(SENDER_COUNTERS);
  private readonly queue: Queued[] = [];
  private readonly inflight: OutChunk[] = [];
  private readonly events: ChunkSenderEvent[] = [];
  private nextId = 1;
  // Id of the newest block put on the wire: bounds how many ids a receiver may have to skip.
  private lastStartedId = 0;
  private queuedBytesTotal = 0;
  private lastNow = -Infinity;
  private pickChunk: OutChunk | undefined;
  private pickSlice = 0;
  private pickResend = false;
  // Goodput samples for progress(): (time ms, cumulative acked payload bytes), ≥ 100 ms apart.
  private readonly rateT = new Float64Array(12);
  private readonly rateB = new Float64Array(12);
  private rateN = 0;
  private rateHead = 0;
  private ackedTotal = 0;
  // Blocks in the 'cancelling' state: pollTransmit only scans for due cancels while there are any.
  private cancelling = 0;
  private waker: (() => void) | undefined;

  constructor(config: ChunkSenderOptions = {}) {
    this.config = resolveSenderOptions(config);
    const cfg = this.config;
    this.paced = cfg.path ?? new Path({
      rateController: cfg.rateController, initialRttMs: cfg.initialRttMs, pacingBurstMs: cfg.pacingBurstMs,
      unackedBdpMultiple: cfg.unackedBdpMultiple, unackedFloorBytes: cfg.unackedFloorBytes,
      maxDatagramBytes: cfg.sliceBytes + SLICE_HEADER_BYTES,
    });
  }

  /**
   * Pace on `path` from now on (a connection's block lane moving to a path of its own, or back): what
   * is in flight stays in flight, and its acks and resends now go by `path`'s RTT and rate.
   */
  usePath(path: Path): void {
    this.paced = path;
  }

  /** The path this sender paces on: RTT, rate controller, pacer, in-flight cap, probe backoff, overhead (`usePath` changes it). */
  get path(): Path {
    return this.paced;
  }

  /**
   * Queue `bytes` (0..2^32−1 bytes, kept by reference) for reliable, ordered delivery; returns the
   * block's id (1, 2, 3…) used by events, `cancel` and `progress`, and reported by the receiver's
   * events too. Throws `invalid-argument` for a non-Uint8Array, `block-too-large` if it could never
   * fit `maxQueuedBytes`, `queue-full` at the limits (or once 32 768 ids were handed out since the
   * newest block put on the wire: ids cancelled while queued leave gaps a receiver can skip only that far).
   */
  sendBlock(bytes: Uint8Array): number {
    checkArg(bytes instanceof Uint8Array, 'block must be a Uint8Array');
    const cfg = this.config;
    if (bytes.length > MAX_BLOCK_BYTES || bytes.length > cfg.maxQueuedBytes) {
      throw new GamewireError('block-too-large',
        `block of ${bytes.length} bytes exceeds ${Math.min(MAX_BLOCK_BYTES, cfg.maxQueuedBytes)}`);
    }
    const blocks = this.queue.length + this.inflight.length;
    if (blocks >= cfg.maxQueuedBlocks || this.queuedBytesTotal + bytes.length > cfg.maxQueuedBytes) {
      throw new GamewireError('queue-full',
        `send queue holds ${blocks} blocks / ${this.queuedBytesTotal} bytes (limits ${cfg.maxQueuedBlocks} / ${cfg.maxQueuedBytes})`);
    }
    if (this.nextId - this.lastStartedId > MAX_ID_GAP) {
      throw new GamewireError('queue-full', `${MAX_ID_GAP} block ids handed out since the newest block was put on the wire`);
    }
    const id = this.nextId++;
    this.queue.push({ id, data: bytes });
    this.queuedBytesTotal += bytes.length;
    this.ctr.blocksQueued++;
    this.waker?.();
    return id;
  }

  /**
   * Ask to drop block `id`. A queued block is dropped at once ('cancelled' event now); a block in
   * flight stops sending slices and the receiver is told (cancel resent until answered), then a
   * 'cancelled' event follows — or 'delivered' if the receiver already had all of it. Returns false
   * if `id` is unknown or already finished.
   */
  cancel(id: number): boolean {
    checkArg(Number.isInteger(id), 'id must be an integer');
    const qi = this.queue.findIndex((q) => q.id === id);
    if (qi >= 0) {
      const [q] = this.queue.splice(qi, 1);
      this.queuedBytesTotal -= q.data.length;
      this.ctr.blocksCancelled++;
      this.emit({ type: 'cancelled', id, reason: 'user' });
      this.waker?.();
      return true;
    }
    const c = this.inflight.find((x) => x.id === id);
    if (c === undefined || c.state === 'done') return false;
    if (c.state === 'sending') this.beginCancel(c, 'user');
    this.waker?.();
    return true;
  }

  /** Blocks queued or in flight (their outcome not yet polled). */
  get pendingBlocks(): number {
    return this.queue.length + this.inflight.length;
  }

  /** Bytes of the blocks queued or in flight. */
  get pendingBytes(): number {
    return this.queuedBytesTotal;
  }

  /** Next event, or undefined. Drain after every input. */
  pollEvent(): ChunkSenderEvent | undefined {
    return this.events.shift();
  }

  /** A driver's wake hook (see `Endpoint.setWaker`): `sendBlock` and `cancel` call it, so no `kick()` is needed. */
  setWaker(waker: (() => void) | undefined): void {
    this.waker = waker;
  }

  /** A copy of every counter (see `ChunkSenderCounter`). */
  counters(): Readonly<Record<ChunkSenderCounter, number>> {
    return { ...this.ctr };
  }

  /** The path's RTT estimate (ms). */
  rttStats(): { srttMs: number; rttvarMs: number; minRttMs: number | undefined; samples: number } {
    const r = this.path.rtt;
    return { srttMs: r.srttMs, rttvarMs: r.rttvarMs, minRttMs: r.minRttMs, samples: r.samples };
  }

  /**
   * Current minimum delay before an unacked slice is resent (ms): the RTT rule
   * max(minResendMs, 1.25 × srtt, srtt + 4 × rttvar) plus the receiver's recent ack delay, times the
   * backoff (doubled by each probe sent while the receiver is silent, up to 16; reset by any ack).
   */
  resendDelayMs(): number {
    return this.path.resendDelayMs(this.config.minResendMs);
  }

  /** When the oldest sent slice of `c` may be resent (ms); a probe while the receiver is silent (see `Path.resendAt`). */
  private headEligibleAt(c: OutChunk, delay: number): number {
    return this.path.resendAt(c.sentAt[c.fifo[c.fifoHead]], delay);
  }

  /**
   * Bytes held: the caller's blocks referenced while queued or in flight, plus per-slice
   * bookkeeping (≤ `memoryLimitBytes()`).
   */
  memoryBytes(): number {
    let n = this.queuedBytesTotal;
    for (const c of this.inflight) n += c.overheadBytes;
    return n;
  }

  /** Upper bound of `memoryBytes()` implied by the configuration. */
  memoryLimitBytes(): number {
    const cfg = this.config;
    const slices = Math.ceil(cfg.maxQueuedBytes / cfg.sliceBytes) + 2;
    return cfg.maxQueuedBytes + OVERHEAD_PER_SLICE * slices + 16;
  }

  /** Progress of the oldest block in flight and of the whole queue, at `now` (ms). */
  progress(now: number): ChunkSenderProgress {
    const rate = this.goodput(now);
    const cur = this.inflight[0];
    const current = cur === undefined ? undefined : {
      id: cur.id, totalBytes: cur.data.length, ackedBytes: cur.ackedBytes, sentBytes: cur.sentBytes,
    };
    let remainingAll = 0;
    for (const c of this.inflight) remainingAll += c.data.length - c.ackedBytes;
    for (const q of this.queue) remainingAll += q.data.length;
    const eta = (rem: number): number | undefined => (rate > 0 ? (rem * 1000) / rate : undefined);
    return {
      queuedBlocks: this.queue.length + this.inflight.length,
      queuedBytes: this.queuedBytesTotal,
      current,
      rateBytesPerSec: rate,
      etaMs: current === undefined ? undefined : eta(current.totalBytes - current.ackedBytes),
      queueEtaMs: eta(remainingAll),
      srttMs: this.path.rtt.srttMs,
    };
  }

  /** Process an ack or refusal from the receiver. Anything else is counted and dropped; never throws. */
  handleDatagram(now: number, bytes: Uint8Array): void {
    this.ctr.datagramsReceived++;
    const r = decodeChunkPacket(bytes);
    if (!r.ok) {
      this.ctr.malformed++;
      return;
    }
    const p = r.value;
    if (p.type === 'slice' || p.type === 'cancel') {
      this.ctr.wrongDirection++;
      return;
    }
    if (p.session !== this.config.sessionId) {
      this.ctr.wrongSession++;
      return;
    }
    this.path.onPeerHeard(now);
    if (p.type === 'ack') this.onAck(now, p);
    else this.onRefuse(p);
    this.advance(now);
  }

  /** Run timers due by `now` (ms): start queued blocks, detect stalls. Sending happens in `pollTransmit`. */
  handleTimeout(now: number): void {
    this.advance(now);
  }

  /**
   * Write the next datagram (a cancel, or the next slice the budget allows) into `out` and return its
   * length, or undefined. A slice that cannot fit `out` fails its block ('cancelled', reason
   * 'datagram-too-large') instead of hanging.
   */
  pollTransmit(now: number, out: Uint8Array): number | undefined {
    this.advance(now);
    if (this.cancelling > 0) return this.pollCancelOrSlice(now, out);
    return this.pollSlice(now, out);
  }

  private pollCancelOrSlice(now: number, out: Uint8Array): number | undefined {
    for (const c of this.inflight) {
      if (c.state === 'cancelling' && now >= c.cancelSentAt + this.resendDelayMs()) {
        if (out.length < CANCEL_BYTES) {
          this.ctr.outTooSmall++;
          return undefined;
        }
        const n = encodeCancel(out, { session: this.config.sessionId, chunkId: c.chunkId, pipelined: this.isPipelined(c) });
        if (c.cancelSentAt !== -Infinity) this.path.onResend(now, c.cancelSentAt);
        c.cancelSentAt = now;
        this.ctr.cancelsSent++;
        this.noteSent(now, n);
        return n;
      }
    }
    return this.pollSlice(now, out);
  }

  /** The slice part of `pollTransmit` (after `advance` and any due cancel). */
  private pollSlice(now: number, out: Uint8Array): number | undefined {
    if (!this.pick(now)) return undefined;
    const c = this.pickChunk!;
    const s = this.pickSlice;
    const sliceBytes = this.config.sliceBytes;
    const offset = s * sliceBytes;
    const len = Math.min(sliceBytes, c.data.length - offset);
    const size = SLICE_HEADER_BYTES + len;
    if (size > out.length) {
      this.ctr.outTooSmall++;
      this.beginCancel(c, 'datagram-too-large');
      return this.pollCancelOrSlice(now, out);
    }
    const wire = this.path.wireBytes(size);
    const unpaced = c.burst && !this.pickResend;
    if (!unpaced) {
      if (!this.path.covers(wire)) return undefined;
      this.path.spend(wire);
    }
    writeSlice(out, 0, this.config.sessionId, c.chunkId, this.isPipelined(c), u32(Math.floor(now * 1000)),
      c.data.length, sliceBytes, s, c.data, offset, len);
    if (this.pickResend) {
      c.fifoHead = (c.fifoHead + 1) % c.sliceCount;
      c.fifoLen--;
      this.ctr.slicesResent++;
      this.path.onLoss(now, wire);
      this.path.onResend(now, c.sentAt[s]);
    } else {
      c.nextFresh++;
      c.sentBytes += len;
      if (c.burst && c.nextFresh === c.sliceCount) {
        c.burst = false;
        this.path.clearBudget();
      }
    }
    c.sentAt[s] = now;
    c.fifo[(c.fifoHead + c.fifoLen) % c.sliceCount] = s;
    c.fifoLen++;
    this.ctr.slicesSent++;
    this.noteSent(now, size, !this.pickResend);
    return size;
  }

  /**
   * When `handleTimeout` is next needed (ms), or undefined when idle. Mirrors `pick`: a block with
   * fresh slices is always the one picked (its due resend first); an earlier block's resend that
   * becomes due takes priority over any later block from then on. While the unacked cap holds fresh
   * slices back, only due resends, cancels and the stall timer count.
   */
  pollTimeout(): number | undefined {
    const now = this.lastNow;
    if (this.canStartNext()) return now;
    let t = Infinity;
    let horizon = Infinity;
    const delay = this.resendDelayMs();
    for (const c of this.inflight) {
      if (c.state === 'done') continue;
      if (!c.stalled) t = Math.min(t, c.lastProgressAt + this.config.stallTimeoutMs);
      if (c.state === 'cancelling') {
        t = Math.min(t, c.cancelSentAt + delay);
        continue;
      }
      while (c.nextFresh < c.sliceCount && testBit(c.acked, c.nextFresh)) c.nextFresh++;
      if (c.burst && c.nextFresh < c.sliceCount) return now;
      const fresh = c.nextFresh < c.sliceCount && this.path.freshAllowed();
      this.dropAckedHead(c);
      const due = c.fifoLen > 0 ? this.headEligibleAt(c, delay) : Infinity;
      const headAt = due === Infinity ? Infinity : Math.max(due, this.budgetReadyAt(c, c.fifo[c.fifoHead]));
      if (fresh) {
        const freshAt = this.budgetReadyAt(c, c.nextFresh);
        const at = freshAt < due ? freshAt : headAt;
        if (at < horizon) t = Math.min(t, at);
        break;
      }
      if (headAt < horizon) t = Math.min(t, headAt);
      horizon = Math.min(horizon, due);
    }
    return t === Infinity ? undefined : t;
  }

  private budgetReadyAt(c: OutChunk, slice: number): number {
    const len = Math.min(this.config.sliceBytes, c.data.length - slice * this.config.sliceBytes);
    const t = this.path.readyAt(this.path.wireBytes(SLICE_HEADER_BYTES + len));
    // A zero rate (controller paused): look again in 100 ms.
    return t ?? this.lastNow + 100;
  }

  private noteSent(now: number, size: number, fresh = false): void {
    const wire = this.path.wireBytes(size);
    this.ctr.datagramsSent++;
    this.ctr.wireBytesSent += wire;
    this.path.onSent(now, wire, fresh);
  }

  private isPipelined(c: OutChunk): boolean {
    return this.inflight[0] !== c;
  }

  /** Choose the next slice: per chunk (oldest first) a due resend, then a fresh slice. Sets pick*. */
  private pick(now: number): boolean {
    const delay = this.resendDelayMs();
    for (const c of this.inflight) {
      if (c.state !== 'sending') continue;
      while (c.nextFresh < c.sliceCount && testBit(c.acked, c.nextFresh)) c.nextFresh++;
      if (c.burst && c.nextFresh < c.sliceCount) return this.setPick(c, c.nextFresh, false);
      this.dropAckedHead(c);
      if (c.fifoLen > 0 && this.headEligibleAt(c, delay) <= now) return this.setPick(c, c.fifo[c.fifoHead], true);
      if (c.nextFresh < c.sliceCount && this.path.freshAllowed()) return this.setPick(c, c.nextFresh, false);
    }
    return false;
  }

  private setPick(c: OutChunk, s: number, resend: boolean): boolean {
    this.pickChunk = c;
    this.pickSlice = s;
    this.pickResend = resend;
    return true;
  }

  private dropAckedHead(c: OutChunk): void {
    while (c.fifoLen > 0 && testBit(c.acked, c.fifo[c.fifoHead])) {
      c.fifoHead = (c.fifoHead + 1) % c.sliceCount;
      c.fifoLen--;
    }
  }

  /** Refill the budget, retire finished blocks, start queued ones, raise stall notices. */
  private advance(now: number): void {
    if (now > this.lastNow) this.lastNow = now;
    this.path.update(now);
    this.retire();
    while (this.canStartNext()) this.startNext(now);
    for (const c of this.inflight) {
      if (c.state !== 'done' && !c.stalled && now - c.lastProgressAt >= this.config.stallTimeoutMs) {
        c.stalled = true;
        this.ctr.stalls++;
        this.emit({
          type: 'stalled', id: c.id, sinceMs: c.lastProgressAt,
          suspectMtu: c.ackedCount > 0 && c.ackedFull === 0 && c.sliceCount > 1,
        });
      }
    }
  }

  private canStartNext(): boolean {
    if (this.queue.length === 0) return false;
    if (this.inflight.length === 0) return true;
    if (this.inflight.length >= 2 || !this.config.pipeline) return false;
    const c = this.inflight[0];
    // Only the direct successor may be pipelined: a pipelined packet tells the receiver id − 1 is in flight.
    return (c.state !== 'sending' || c.nextFresh === c.sliceCount) && this.queue[0].id === c.id + 1;
  }

  private startNext(now: number): void {
    const q = this.queue.shift()!;
    const cfg = this.config;
    const burst = cfg.burst && q.data.length <= cfg.burstMaxBlockBytes;
    this.inflight.push(new OutChunk(q.id, (cfg.firstChunkId + q.id - 1) & 0xffff, q.data, cfg.sliceBytes, burst, now));
    this.lastStartedId = q.id;
  }

  /** Stop sending slices of `c`; the receiver is told with cancel packets until it answers. */
  private beginCancel(c: OutChunk, reason: CancelReason): void {
    c.state = 'cancelling';
    this.cancelling++;
    c.cancelReason = reason;
    c.burst = false;
    c.cancelSentAt = -Infinity;
    c.lastProgressAt = this.lastNow;
    c.stalled = false;
  }

  /** Retire finished blocks from the front, in order, emitting their outcome events. */
  private retire(): void {
    while (this.inflight.length > 0 && this.inflight[0].state === 'done') {
      const c = this.inflight.shift()!;
      this.queuedBytesTotal -= c.data.length;
      this.emit(c.outcome!);
    }
  }

  private finish(c: OutChunk, outcome: ChunkSenderEvent): void {
    if (c.state === 'cancelling') this.cancelling--;
    c.state = 'done';
    c.outcome = outcome;
    if (outcome.type === 'delivered') this.ctr.blocksDelivered++;
    else if (outcome.type === 'cancelled') this.ctr.blocksCancelled++;
    else if (outcome.type === 'refused') this.ctr.blocksRefused++;
  }

  private emit(e: ChunkSenderEvent): void {
    if (this.events.length >= this.config.maxEvents) {
      this.events.shift();
      this.ctr.eventsDropped++;
    }
    this.events.push(e);
  }

  private onRefuse(p: RefusePacket): void {
    this.ctr.refusalsReceived++;
    const c = this.inflight.find((x) => x.chunkId === p.chunkId && x.state !== 'done');
    if (c === undefined) {
      this.ctr.staleAck++;
      return;
    }
    if (c.state === 'cancelling') this.finish(c, { type: 'cancelled', id: c.id, reason: c.cancelReason });
    else this.finish(c, { type: 'refused', id: c.id, reason: p.reason, limitBytes: p.limitBytes });
  }

  private onAck(now: number, p: AckPacket): void {
    this.ctr.acksReceived++;
    let sample: number | undefined;
    if (p.hasEcho) {
      const rawUs = timeDiff32(u32(Math.floor(now * 1000)), p.echoTimeUs);
      const ms = (rawUs - p.ackDelayUs) / 1000;
      // Allow 1 ms of rounding below zero (µs truncation on both ends), clamp it to 0.
      if (rawUs >= 0 && ms > -1 && this.path.onRttSample(now, Math.max(ms, 0), p.ackDelayUs / 1000)) {
        sample = Math.max(ms, 0);
        this.ctr.rttSamples++;
      } else {
        this.ctr.rttRejected++;
      }
    }
    const c = this.inflight.find((x) => x.chunkId === p.chunkId && x.state !== 'done');
    let newlyWire = 0;
    if (c === undefined) {
      this.ctr.staleAck++;
    } else if (c.state === 'cancelling') {
      if (p.status === 'cancelled') this.finish(c, { type: 'cancelled', id: c.id, reason: c.cancelReason });
      else if (p.status === 'complete') this.finishDelivered(now, c);
    } else if (p.status === 'cancelled') {
      this.ctr.ackMismatch++;
    } else if (p.cumAck > c.sliceCount || (p.status === 'complete' && p.cumAck !== c.sliceCount)) {
      this.ctr.ackMismatch++;
    } else {
      const before = c.ackedBytes;
      const beforeCount = c.ackedCount;
      this.ackPrefix(c, p.status === 'complete' ? c.sliceCount : p.cumAck);
      for (const win of p.windows) this.ackWindow(c, win.base, win.bits);
      const newSlices = c.ackedCount - beforeCount;
      if (newSlices > 0) {
        c.lastProgressAt = now;
        c.stalled = false;
        newlyWire = c.ackedBytes - before + newSlices * this.path.wireBytes(SLICE_HEADER_BYTES);
        this.noteGoodput(now);
        this.ackedTotal += c.ackedBytes - before;
      }
      if (c.ackedCount === c.sliceCount) this.finishDelivered(now, c);
    }
    if (newlyWire > 0 || sample !== undefined) this.path.onAck(now, newlyWire, sample !== undefined);
  }

  private finishDelivered(now: number, c: OutChunk): void {
    this.finish(c, { type: 'delivered', id: c.id, bytes: c.data.length, durationMs: now - c.startedAt });
  }

  private markAcked(c: OutChunk, s: number): void {
    setBit(c.acked, s);
    c.ackedCount++;
    const len = Math.min(this.config.sliceBytes, c.data.length - s * this.config.sliceBytes);
    c.ackedBytes += len;
    if (len === this.config.sliceBytes) c.ackedFull++;
  }

  /** Fuse: mark every slice below `upTo` acked (amortised O(1) per slice over the block). */
  private ackPrefix(c: OutChunk, upTo: number): void {
    while (c.ackedPrefix < upTo) {
      if (!testBit(c.acked, c.ackedPrefix)) this.markAcked(c, c.ackedPrefix);
      c.ackedPrefix++;
    }
    while (c.ackedPrefix < c.sliceCount && testBit(c.acked, c.ackedPrefix)) c.ackedPrefix++;
  }

  /** Fuse: set acked every slice whose bit is set in the window; bits past the block are ignored. */
  private ackWindow(c: OutChunk, base: number, bits: Uint8Array): void {
    const n = c.sliceCount;
    for (let j = 0; j < bits.length; j++) {
      const first = base + 8 * j;
      if (first >= n) break;
      let fresh = bits[j] & ~c.acked[first >>> 3];
      if (first + 8 > n) fresh &= (1 << (n - first)) - 1;
      while (fresh !== 0) {
        const bit = 31 - Math.clz32(fresh & -fresh);
        fresh &= fresh - 1;
        this.markAcked(c, first + bit);
      }
    }
    while (c.ackedPrefix < n && testBit(c.acked, c.ackedPrefix)) c.ackedPrefix++;
  }

  /** Record (now, acked bytes so far) at most every 100 ms, before `ackedTotal` grows. */
  private noteGoodput(now: number): void {
    const cap = this.rateT.length;
    if (this.rateN > 0 && now - this.rateT[(this.rateHead + this.rateN - 1) % cap] < 100) return;
    if (this.rateN === cap) {
      this.rateHead = (this.rateHead + 1) % cap;
      this.rateN--;
    }
    const at = (this.rateHead + this.rateN) % cap;
    this.rateT[at] = now;
    this.rateB[at] = this.ackedTotal;
    this.rateN++;
  }

  /** Acked payload bytes/s since the oldest sample of the last ~1.5 s (the newest sample if all are older). */
  private goodput(now: number): number {
    const cap = this.rateT.length;
    for (let k = 0; k < this.rateN; k++) {
      const i = (this.rateHead + k) % cap;
      if (now - this.rateT[i] <= 1500 || k === this.rateN - 1) {
        const span = now - this.rateT[i];
        return span > 0 ? ((this.ackedTotal - this.rateB[i]) * 1000) / span : 0;
      }
    }
    return 0;
  }
}
