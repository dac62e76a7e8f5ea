import { newCounters } from '../core/counters.js';
import type { SansIoPeer } from '../core/peer.js';
import { seqAdd16, seqDiff16, u32 } from '../core/wrap.js';
import { bitsetBytes, setBit, testBit } from './bitset.js';
import type { ReceiveBudget } from './budget.js';
import {
  type ChunkReceiverOptions, PIECE_ENTRY_BYTES, pieceSlicesOf, type ResolvedChunkReceiverOptions, resolveReceiverOptions,
} from './config.js';
import {
  ACK_BASE_BYTES, ACK_WINDOW_HEADER_BYTES, type AckWindow, type CancelPacket, CHUNK_MAGIC, decodeChunkPacket, encodeAck,
  encodeRefuse, PacketType, REFUSE_BYTES, SLICE_HEADER_BYTES, readSlice, type SliceHeader, sliceCountOf,
} from './wire.js';

/**
 * Events of a `ChunkReceiver`, in block order; drained with `pollEvent()`. `id` is the block id the
 * sender's `sendBlock` returned (and its events carry): the receiver unwraps the 16-bit wire chunk id.
 */
export type ChunkReceiverEvent =
  /** A complete block (the buffer it was reassembled in; no copy). */
  | { type: 'block'; id: number; data: Uint8Array }
  /** The sender cancelled a block, or a new sender session replaced the old one mid-block; its partial data was freed. */
  | { type: 'cancelled'; id: number; reason: 'sender' | 'session-changed' }
  /** A block announced more than `maxBlockBytes` (bytes) and was refused (the sender was told). */
  | { type: 'refused'; id: number; blockBytes: number; limitBytes: number };

/** One block a `ChunkReceiver` is assembling (or holds complete, waiting for the one before it). */
export interface ChunkReceiverBlockProgress {
  /** The block's id (as the sender's `sendBlock` returned it). */
  id: number;
  /** Size of the whole block, bytes. */
  totalBytes: number;
  /** Payload bytes received so far (duplicates not counted). */
  receivedBytes: number;
}

/** What `ChunkReceiver.progress()` reports. */
export interface ChunkReceiverProgress {
  /** Blocks in progress, oldest first: at most two (the one expected next and the one after it). */
  blocks: ChunkReceiverBlockProgress[];
  /** Blocks delivered so far (as 'block' events). */
  deliveredBlocks: number;
  /** Bytes of those blocks. */
  deliveredBytes: number;
}

const RECEIVER_COUNTERS = [
  'datagramsReceived', 'malformed', 'wrongDirection', 'wrongSession', 'sessionSwitches', 'oldChunk',
  'futureChunk', 'slicesAccepted', 'duplicateSlices', 'finishedChunkSlices', 'inconsistentSlices',
  'refusedBlocks', 'refusedSlices', 'cancelsReceived', 'cancelledBlocks', 'deferredNoMemory', 'deferredNextChunk',
  'blocksDelivered', 'bytesDelivered', 'acksSent', 'refusalsSent', 'ackBytesSent', 'outTooSmall', 'eventsDropped',
  'skippedIds',
] as const;

/** Counter names of a `ChunkReceiver` (see docs/chunk.md §Counters). */
export type ChunkReceiverCounter = (typeof RECEIVER_COUNTERS)[number];

type InKind = 'receiving' | 'complete' | 'cancelled' | 'refused';

/** One chunk the receiver knows: the one it is assembling, the next one, or one of the last two it finished. */
class InChunk {
  readonly chunkId: number;
  /** The block id (the sender's), unwrapped from `chunkId`. */
  readonly id: number;
  kind: InKind;
  blockBytes = 0;
  receivedBytes = 0;
  sliceBytes = 0;
  sliceCount = 0;
  /** The whole block: from its first slice for a lone receiver (or a block of one piece), else once assembled. */
  data: Uint8Array | undefined;
  /** A `ChunkHost`'s receiver: the block in pieces of `pieceSlices` slices, each allocated when its first slice arrives. */
  pieces: (Uint8Array | undefined)[] | undefined;
  pieceSlices = 0;
  /** Bytes of the pieces allocated so far. */
  pieceBytesHeld = 0;
  bits: Uint8Array | undefined;
  received = 0;
  cum = 0;
  highest = -1;
  lastNew = -1;
  rot = 0;
  acks = 0;
  footprint = 0;
  limitBytes = 0;
  // Pending ack/refusal: due at ackDueAt; triggers [trigLo, trigHi] arrived since the last ack.
  ackPending = false;
  ackDueAt = Infinity;
  newSinceAck = 0;
  trigLo = -1;
  trigHi = -1;
  hasEcho = false;
  echoUs = 0;
  echoAt = 0;

  constructor(chunkId: number, id: number, kind: InKind) {
    this.chunkId = chunkId;
    this.id = id;
    this.kind = kind;
  }

  /** Drop reassembly state (data handed on or freed) and pending triggers. */
  release(): void {
    this.data = undefined;
    this.pieces = undefined;
    this.bits = undefined;
    this.footprint = 0;
    this.trigLo = -1;
    this.trigHi = -1;
  }
}

interface SessionMemo {
  session: number;
  expected: number;
  expectedId: number;
  finished: InChunk[];
}

/** Every this many acks of a chunk carries the rotating window (the others only report fresh slices). */
const ROTATE_EVERY = 2;

/** Sessions remembered after switching away, so a sender that comes back resumes where it was. */
const SESSION_MEMO = 4;

/**
 * Reassembles blocks sent by a `ChunkSender` and hands them out in order as 'block' events.
 *
 * Drive contract (`SansIoPeer`): `handleDatagram(now, bytes)` for each datagram, `handleTimeout(now)`
 * when `now ≥ pollTimeout()`, and after any input drain `pollTransmit(now, out)` (acks, refusals)
 * and `pollEvent()` until they return undefined. Every received slice is acked — new ones after
 * `ackEveryNew` slices or `ackDelayMs`, duplicates, gaps, completions and slices of the two blocks it
 * finished last at once — so lost acks never hang the sender. Memory never exceeds `maxMemoryBytes`.
 */
export class ChunkReceiver implements SansIoPeer {
  /** The validated configuration. */
  readonly config: Readonly<ResolvedChunkReceiverOptions>;
  private readonly ctr = newCounters<ChunkReceiverCounter>(RECEIVER_COUNTERS);
  private session: number | undefined;
  private lastActivity = -Infinity;
  private expected = 0;
  // The block id of `expected`: ids and wire chunk ids advance together, so the low 16 bits of
  // (expectedId - 1 + firstChunkId) are always `expected`.
  private expectedId = 1;
  private synced = false;
  private cur: InChunk | undefined;
  private next: InChunk | undefined;
  private finished: InChunk[] = [];
  private readonly memos: SessionMemo[] = [];
  private readonly events: ChunkReceiverEvent[] = [];
  private eventBlockBytes = 0;
  private slotBytes = 0;
  private nonBlockEvents = 0;
  // The last slice's header, overwritten by each (readSlice reads into it).
  private readonly slice: SliceHeader = {
    session: 0, chunkId: 0, pipelined: false, sendTimeUs: 0, blockBytes: 0, sliceBytes: 0, sliceId: 0,
  };
  private readonly budget: ReceiveBudget | undefined;

  /**
   * @param config options (defaults in docs/chunk.md §Defaults)
   * @param budget internal: the receive budget of the `ChunkHost` this receiver belongs to. With it,
   *   blocks are stored in pieces reserved from that budget as slices arrive (and `maxMemoryBytes` is this
   *   sender's share of it); without it, a block's whole buffer is reserved and allocated at its first slice.
   */
  constructor(config: ChunkReceiverOptions = {}, budget?: ReceiveBudget) {
    this.config = resolveReceiverOptions(config);
    this.session = this.config.sessionId;
    this.budget = budget;
  }

  /** Next event, or undefined. A 'block' event's bytes stop counting against memory once polled. */
  pollEvent(): ChunkReceiverEvent | undefined {
    const e = this.events.shift();
    if (e === undefined) return undefined;
    if (e.type === 'block') {
      this.eventBlockBytes -= e.data.length;
      this.budget?.release(e.data.length);
    } else {
      this.nonBlockEvents--;
    }
    return e;
  }

  /**
   * Free the blocks being received now (their bytes return to the budget); finished blocks and queued
   * events are kept. Used by `ChunkHost` when it drops a sender.
   */
  freePartialBlocks(): void {
    this.freeSlot(this.cur);
    this.freeSlot(this.next);
    this.cur = undefined;
    this.next = undefined;
  }

  /** A copy of every counter (see `ChunkReceiverCounter`). */
  counters(): Readonly<Record<ChunkReceiverCounter, number>> {
    return { ...this.ctr };
  }

  /** Bytes held: reassembly buffers and bitfields of the current and next block, plus unpolled blocks (≤ maxMemoryBytes). */
  memoryBytes(): number {
    return this.slotBytes + this.eventBlockBytes;
  }

  /** The bound sender session, or undefined before the first valid slice. */
  get sessionId(): number | undefined {
    return this.session;
  }

  /** Id of the block the receiver is waiting to complete next (1 before any sender was seen). */
  get expectedBlockId(): number {
    return this.expectedId;
  }

  /** The blocks being assembled, with bytes received of each, and the totals delivered so far. */
  progress(): ChunkReceiverProgress {
    const blocks: ChunkReceiverBlockProgress[] = [];
    for (const c of [this.cur, this.next]) {
      if (c !== undefined && (c.kind === 'receiving' || c.kind === 'complete')) {
        blocks.push({ id: c.id, totalBytes: c.blockBytes, receivedBytes: c.receivedBytes });
      }
    }
    const ctr = this.ctr;
    return { blocks, deliveredBlocks: ctr.blocksDelivered, deliveredBytes: ctr.bytesDelivered };
  }

  /** Process one datagram (slice or cancel). Bad or unexpected input is counted and dropped; never throws. */
  handleDatagram(now: number, bytes: Uint8Array): void {
    this.ctr.datagramsReceived++;
    if (bytes.length >= 2 && bytes[0] === CHUNK_MAGIC && bytes[1] === PacketType.Slice) {
      const h = this.slice;
      if (readSlice(bytes, h) < 0) {
        this.ctr.malformed++;
        return;
      }
      if (this.admitSession(now, h.session, h.chunkId, h.pipelined)) this.onSlice(now, h, bytes);
      return;
    }
    const r = decodeChunkPacket(bytes);
    if (!r.ok) {
      this.ctr.malformed++;
      return;
    }
    const p = r.value;
    if (p.type !== 'cancel') {
      this.ctr.wrongDirection++;
      return;
    }
    if (this.admitSession(now, p.session, p.chunkId, p.pipelined)) this.onCancel(now, p);
  }

  /** Nothing to run besides delayed acks, which `pollTransmit` sends once due. */
  handleTimeout(_now: number): void {}

  /** Write the next due ack or refusal into `out`; returns its length, or undefined. */
  pollTransmit(now: number, out: Uint8Array): number | undefined {
    for (let i = 0; i < 4; i++) {
      const c = this.record(i);
      if (c === undefined || !c.ackPending || c.ackDueAt > now) continue;
      c.ackPending = false;
      c.ackDueAt = Infinity;
      const n = c.kind === 'refused' ? this.writeRefuse(c, out) : this.writeAck(now, c, out);
      c.newSinceAck = 0;
      c.trigLo = -1;
      c.trigHi = -1;
      c.hasEcho = false;
      if (n !== undefined) return n;
    }
    return undefined;
  }

  /** When the next delayed ack is due (ms), or undefined. */
  pollTimeout(): number | undefined {
    let t = Infinity;
    for (let i = 0; i < 4; i++) {
      const c = this.record(i);
      if (c !== undefined && c.ackPending && c.ackDueAt < t) t = c.ackDueAt;
    }
    return t === Infinity ? undefined : t;
  }

  /** Records in ack order: the two finished ones (older first), then current, then next. */
  private record(i: number): InChunk | undefined {
    return i < 2 ? this.finished[1 - i] : i === 2 ? this.cur : this.next;
  }

  /**
   * Bind to the first session seen (or the pinned one); adopt a different one only after the bound
   * session sent nothing valid for `sessionIdleMs` (never, when pinned). A session seen for the first
   * time syncs the expected chunk id from its first packet; later packets may skip ids ahead (`skipTo`).
   */
  private admitSession(now: number, session: number, chunkId: number, pipelined: boolean): boolean {
    if (this.session === session && this.synced) {
      this.lastActivity = now;
      if (this.cur === undefined) this.skipTo(pipelined ? seqAdd16(chunkId, -1) : chunkId);
      return true;
    }
    if (this.session !== session) {
      if (this.session !== undefined &&
        (this.config.sessionId !== undefined || now - this.lastActivity < this.config.sessionIdleMs)) {
        this.ctr.wrongSession++;
        return false;
      }
      if (this.session !== undefined && this.synced) this.switchAway();
      this.session = session;
      this.synced = false;
      const memo = this.memos.findIndex((m) => m.session === session);
      if (memo >= 0) {
        const [m] = this.memos.splice(memo, 1);
        this.expected = m.expected;
        this.expectedId = m.expectedId;
        this.finished = m.finished;
        this.synced = true;
      }
    }
    const oldest = pipelined ? seqAdd16(chunkId, -1) : chunkId;
    if (!this.synced) {
      this.expected = oldest;
      this.expectedId = 1 + ((oldest - this.config.firstChunkId) & 0xffff);
      this.finished = [];
      this.synced = true;
    }
    this.lastActivity = now;
    if (this.cur === undefined) this.skipTo(oldest);
    return true;
  }

  /**
   * The sender's oldest block in flight has chunk id `oldest` (a packet's own chunk id, or the one
   * before it when the packet says `pipelined`), so the sender has finished every block before it.
   * Ids from E up to `oldest` that the receiver holds no record of were never sent (blocks cancelled
   * while still queued): skip them. O(1) per packet however far it skips.
   */
  private skipTo(oldest: number): void {
    for (;;) {
      const d = seqDiff16(oldest, this.expected);
      if (d <= 0 || this.cur !== undefined) return;
      const step = this.next === undefined ? d : 1;
      this.cur = this.next;
      this.next = undefined;
      this.expected = seqAdd16(this.expected, step);
      this.expectedId += step;
      this.ctr.skippedIds += step;
      this.deliver();
    }
  }

  private switchAway(): void {
    this.ctr.sessionSwitches++;
    for (const c of [this.cur, this.next]) {
      if (c !== undefined && c.kind === 'receiving' && c.received > 0) {
        this.pushEvent({ type: 'cancelled', id: c.id, reason: 'session-changed' });
      }
    }
    this.freeSlot(this.cur);
    this.freeSlot(this.next);
    this.cur = undefined;
    this.next = undefined;
    for (const f of this.finished) f.ackPending = false;
    if (this.memos.length >= SESSION_MEMO) this.memos.shift();
    this.memos.push({ session: this.session!, expected: this.expected, expectedId: this.expectedId, finished: this.finished });
    this.finished = [];
  }

  private freeSlot(c: InChunk | undefined): void {
    if (c === undefined) return;
    this.slotBytes -= c.footprint;
    this.budget?.release(c.footprint);
    this.budget?.finish(c);
    c.release();
  }

  /**
   * Reserve `bytes` more for `c`, the current block (E) or the next, within `maxMemoryBytes` and the host's
   * budget, if any; false (nothing reserved, counted in `deferredNoMemory`) when either refuses: the slice
   * is then dropped unacked.
   */
  private reserve(c: InChunk, bytes: number, current: boolean): boolean {
    // The next block must leave room in this sender's share for the current one to complete, and may
    // not hold the host's headroom, which could then wait on the current block.
    const keep = current ? 0 : this.stillNeeded(this.cur);
    if (this.memoryBytes() + bytes + keep > this.config.maxMemoryBytes ||
      (this.budget !== undefined && !this.budget.reserve(c, bytes, current))) {
      this.ctr.deferredNoMemory++;
      return false;
    }
    this.slotBytes += bytes;
    c.footprint += bytes;
    return true;
  }

  /** Bytes block `c` may still reserve before it is complete: its pieces not yet allocated and its assembly. */
  private stillNeeded(c: InChunk | undefined): number {
    if (c === undefined || c.kind !== 'receiving' || c.pieces === undefined) return 0;
    return 2 * c.blockBytes - c.pieceBytesHeld;
  }

  /** Return `bytes` of `c`'s reservation. */
  private unreserve(c: InChunk, bytes: number): void {
    this.slotBytes -= bytes;
    c.footprint -= bytes;
    this.budget?.release(bytes);
  }

  /**
   * The record for `chunkId` if it is one the receiver tracks: current (slot 0), next (1) or one of
   * the last two finished (-1; not always E−1 and E−2, as skipped ids leave gaps); else slot -2 (old)
   * or 2 (too far ahead).
   */
  private lookup(chunkId: number): { rec: InChunk | undefined; slot: number } {
    const d = seqDiff16(chunkId, this.expected);
    if (d === 0) return { rec: this.cur, slot: 0 };
    if (d === 1) return { rec: this.next, slot: 1 };
    if (d > 1) return { rec: undefined, slot: 2 };
    for (const f of this.finished) if (f.chunkId === chunkId) return { rec: f, slot: -1 };
    return { rec: undefined, slot: -2 };
  }

  /** Block id of chunk `chunkId` at `slot` 0 (E) or 1 (E+1). */
  private idAt(slot: number): number {
    return this.expectedId + slot;
  }

  private onSlice(now: number, p: SliceHeader, bytes: Uint8Array): void {
    // Hot path first: a slice of the current chunk while it is being received.
    const cur = this.cur;
    if (cur !== undefined && cur.kind === 'receiving' && p.chunkId === cur.chunkId) {
      this.onCurrentSlice(now, cur, p, bytes);
      return;
    }
    const { rec, slot } = this.lookup(p.chunkId);
    if (slot === -2 || slot === 2) {
      this.ctr[slot < 0 ? 'oldChunk' : 'futureChunk']++;
      return;
    }
    if (slot === -1) {
      this.ctr.finishedChunkSlices++;
      this.trigger(now, rec!, p, true);
      return;
    }
    let c = rec;
    if (c === undefined) {
      c = this.open(p, slot);
      if (c === undefined) return;
    }
    if (c.kind !== 'receiving') {
      if (c.kind === 'refused') this.ctr.refusedSlices++;
      else this.ctr.finishedChunkSlices++;
      this.trigger(now, c, p, true);
      this.deliver();
      return;
    }
    this.onCurrentSlice(now, c, p, bytes);
  }

  /** A slice of chunk `c`, which is receiving: check the layout, copy if new, ack per Ack pacing. */
  private onCurrentSlice(now: number, c: InChunk, p: SliceHeader, bytes: Uint8Array): void {
    if (p.blockBytes !== c.blockBytes || p.sliceBytes !== c.sliceBytes) {
      this.ctr.inconsistentSlices++;
      return;
    }
    const s = p.sliceId;
    if (testBit(c.bits!, s)) {
      this.ctr.duplicateSlices++;
      this.trigger(now, c, p, true);
      return;
    }
    // A plain view, not bytes.subarray(): on a Node Buffer that goes through Buffer's own subarray.
    const len = bytes.length - SLICE_HEADER_BYTES;
    const payload = new Uint8Array(bytes.buffer, bytes.byteOffset + SLICE_HEADER_BYTES, len);
    if (c.pieces === undefined) c.data!.set(payload, s * c.sliceBytes);
    else if (!this.storeInPiece(c, s, payload)) return;
    setBit(c.bits!, s);
    c.received++;
    c.receivedBytes += len;
    this.ctr.slicesAccepted++;
    while (c.cum < c.sliceCount && testBit(c.bits!, c.cum)) c.cum++;
    if (s > c.highest) c.highest = s;
    const gap = s !== c.lastNew + 1;
    c.lastNew = s;
    c.newSinceAck++;
    if (c.received === c.sliceCount) {
      c.kind = 'complete';
      if (c.pieces !== undefined) this.assemble(c);
      this.unreserve(c, c.bits!.length);
      c.bits = undefined;
      this.budget?.finish(c);
      this.trigger(now, c, p, true);
      this.deliver();
      return;
    }
    this.trigger(now, c, p, gap || c.newSinceAck >= this.config.ackEveryNew);
  }

  /**
   * Copy slice `s` into its piece of `c`, allocating the piece if it is the first slice in it, and
   * reserving room to assemble the block if it is the last slice missing. False when memory refuses.
   */
  private storeInPiece(c: InChunk, s: number, payload: Uint8Array): boolean {
    const k = c.pieceSlices;
    const i = Math.floor(s / k);
    const pieceBytes = k * c.sliceBytes;
    let piece = c.pieces![i];
    const need = (piece === undefined ? Math.min(pieceBytes, c.blockBytes - i * pieceBytes) : 0) +
      (c.received + 1 === c.sliceCount ? c.blockBytes : 0);
    if (need > 0 && !this.reserve(c, need, c === this.cur)) return false;
    if (piece === undefined) {
      piece = c.pieces![i] = new Uint8Array(Math.min(pieceBytes, c.blockBytes - i * pieceBytes));
      c.pieceBytesHeld += piece.length;
    }
    piece.set(payload, (s - i * k) * c.sliceBytes);
    return true;
  }

  /** Copy the pieces of complete block `c` into one buffer (reserved with its last slice) and free them. */
  private assemble(c: InChunk): void {
    const data = new Uint8Array(c.blockBytes);
    const pieces = c.pieces!;
    const pieceBytes = c.pieceSlices * c.sliceBytes;
    for (let i = 0; i < pieces.length; i++) data.set(pieces[i]!, i * pieceBytes);
    c.data = data;
    c.pieces = undefined;
    this.unreserve(c, c.blockBytes + PIECE_ENTRY_BYTES * pieces.length);
  }

  /** First slice of the current (slot 0) or next (slot 1) chunk: refuse, defer, or allocate. */
  private open(p: SliceHeader, slot: number): InChunk | undefined {
    const cfg = this.config;
    if (p.blockBytes > cfg.maxBlockBytes) {
      const c = new InChunk(p.chunkId, this.idAt(slot), 'refused');
      c.blockBytes = p.blockBytes;
      c.limitBytes = cfg.maxBlockBytes;
      this.ctr.refusedBlocks++;
      this.setSlot(slot, c);
      return c;
    }
    if (slot === 1 && this.cur === undefined) {
      // Allocating the next block first could starve the current one of memory.
      this.ctr.deferredNextChunk++;
      return undefined;
    }
    const n = sliceCountOf(p.blockBytes, p.sliceBytes);
    // A ChunkHost's receiver reserves a block's pieces as their slices arrive; a lone one reserves it all now.
    const k = pieceSlicesOf(p.sliceBytes);
    const pieceCount = this.budget !== undefined && n > k ? Math.ceil(n / k) : 0;
    const c = new InChunk(p.chunkId, this.idAt(slot), 'receiving');
    if (!this.reserve(c, bitsetBytes(n) + (pieceCount > 0 ? PIECE_ENTRY_BYTES * pieceCount : p.blockBytes), slot === 0)) {
      this.budget?.finish(c);
      return undefined;
    }
    c.blockBytes = p.blockBytes;
    c.sliceBytes = p.sliceBytes;
    c.sliceCount = n;
    c.bits = new Uint8Array(bitsetBytes(n));
    if (pieceCount > 0) {
      c.pieces = new Array<Uint8Array | undefined>(pieceCount);
      c.pieceSlices = k;
    } else {
      c.data = new Uint8Array(p.blockBytes);
    }
    this.setSlot(slot, c);
    return c;
  }

  private setSlot(slot: number, c: InChunk): void {
    if (slot === 0) this.cur = c;
    else this.next = c;
  }

  /** Note that a slice of `c` arrived; the ack goes out now (`immediate`) or within `ackDelayMs`. */
  private trigger(now: number, c: InChunk, p: SliceHeader, immediate: boolean): void {
    if (c.trigLo < 0 || p.sliceId < c.trigLo) c.trigLo = p.sliceId;
    if (p.sliceId > c.trigHi) c.trigHi = p.sliceId;
    c.hasEcho = true;
    c.echoUs = p.sendTimeUs;
    c.echoAt = now;
    const due = immediate ? now : now + this.config.ackDelayMs;
    if (!c.ackPending || due < c.ackDueAt) c.ackDueAt = due;
    c.ackPending = true;
  }

  private onCancel(now: number, p: CancelPacket): void {
    this.ctr.cancelsReceived++;
    const { rec, slot } = this.lookup(p.chunkId);
    if (slot === -2 || slot === 2) {
      this.ctr[slot < 0 ? 'oldChunk' : 'futureChunk']++;
      return;
    }
    let c = rec;
    if (c === undefined || c.kind === 'receiving') {
      if (c !== undefined) this.freeSlot(c);
      c = new InChunk(p.chunkId, this.idAt(slot), 'cancelled');
      this.ctr.cancelledBlocks++;
      this.setSlot(slot, c);
    }
    // Answer with the chunk's outcome (cancelled, or complete/refused if that came first), no echo.
    c.hasEcho = false;
    c.ackPending = true;
    c.ackDueAt = now;
    this.deliver();
  }

  /** Hand finished chunks at the front to the user, in order, and slide the window. */
  private deliver(): void {
    while (this.cur !== undefined && this.cur.kind !== 'receiving') {
      const c = this.cur;
      if (c.kind === 'complete') {
        const data = c.data!;
        this.slotBytes -= c.footprint;
        c.release();
        this.eventBlockBytes += data.length;
        this.events.push({ type: 'block', id: c.id, data });
        this.ctr.blocksDelivered++;
        this.ctr.bytesDelivered += data.length;
      } else if (c.kind === 'cancelled') {
        this.pushEvent({ type: 'cancelled', id: c.id, reason: 'sender' });
      } else {
        this.pushEvent({ type: 'refused', id: c.id, blockBytes: c.blockBytes, limitBytes: c.limitBytes });
      }
      this.finished.unshift(c);
      if (this.finished.length > 2) this.finished.pop();
      this.cur = this.next;
      this.next = undefined;
      this.expected = seqAdd16(this.expected, 1);
      this.expectedId++;
    }
  }

  private pushEvent(e: ChunkReceiverEvent): void {
    if (this.nonBlockEvents >= this.config.maxEvents) {
      this.ctr.eventsDropped++;
      return;
    }
    this.nonBlockEvents++;
    this.events.push(e);
  }

  private writeRefuse(c: InChunk, out: Uint8Array): number | undefined {
    if (out.length < REFUSE_BYTES) {
      this.ctr.outTooSmall++;
      return undefined;
    }
    this.ctr.refusalsSent++;
    return encodeRefuse(out, { session: this.session!, chunkId: c.chunkId, reason: 'too-large', limitBytes: c.limitBytes });
  }

  private writeAck(now: number, c: InChunk, out: Uint8Array): number | undefined {
    if (out.length < ACK_BASE_BYTES) {
      this.ctr.outTooSmall++;
      return undefined;
    }
    const status = c.kind === 'complete' ? 'complete' : c.kind === 'cancelled' ? 'cancelled' : 'partial';
    const cumAck = c.kind === 'complete' ? c.sliceCount : c.kind === 'cancelled' ? 0 : c.cum;
    const windows = c.kind === 'receiving' ? this.chooseWindows(c, out.length) : [];
    const delayUs = c.hasEcho ? Math.min(0xffffffff, Math.max(0, Math.round((now - c.echoAt) * 1000))) : 0;
    const n = encodeAck(out, {
      session: this.session!, chunkId: c.chunkId, status, hasEcho: c.hasEcho, echoTimeUs: c.hasEcho ? u32(c.echoUs) : 0,
      ackDelayUs: delayUs, cumAck, windows,
    });
    this.ctr.acksSent++;
    this.ctr.ackBytesSent += n;
    return n;
  }

  /**
   * Up to two bitfield windows (byte-aligned, ≤ ackWindowBytes each, fitting `room`): the first covers
   * the newest slices that prompted this ack; the second covers the oldest such slice if the first
   * missed it, else rotates over [cumAck, highest received] so every received slice is reported in turn.
   */
  private chooseWindows(c: InChunk, room: number): AckWindow[] {
    const bits = c.bits!;
    const cap = Math.min(this.config.ackWindowBytes, Math.floor((room - ACK_BASE_BYTES) / 2) - ACK_WINDOW_HEADER_BYTES);
    if (cap < 1 || c.highest < c.cum) return [];
    const cumByte = c.cum >>> 3;
    const highByte = c.highest >>> 3;
    const wins: AckWindow[] = [];
    let w1Start = Infinity;
    let w1End = -1;
    if (c.trigHi >= c.cum) {
      w1End = c.trigHi >>> 3;
      w1Start = Math.max(cumByte, c.trigLo >>> 3, w1End - cap + 1);
      wins.push({ base: w1Start * 8, bits: bits.subarray(w1Start, w1End + 1) });
    }
    const loByte = c.trigLo >>> 3;
    if (c.trigLo >= c.cum && loByte < w1Start) {
      const end = Math.min(loByte + cap - 1, w1Start - 1);
      wins.push({ base: loByte * 8, bits: bits.subarray(loByte, end + 1) });
      return wins;
    }
    if (c.acks++ % ROTATE_EVERY !== 0) return wins;
    let start = Math.max(c.rot, cumByte);
    if (start > highByte) start = cumByte;
    const end = Math.min(start + cap - 1, highByte);
    c.rot = end + 1;
    if (start >= w1Start && end <= w1End) return wins;
    wins.push({ base: start * 8, bits: bits.subarray(start, end + 1) });
    return wins;
  }
}
