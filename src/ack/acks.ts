import { newCounters } from '../core/counters.js';
import { checkArg, checkConfig, GamewireError } from '../core/errors.js';
import { seqDiff16 } from '../core/wrap.js';
import type { Path } from '../congestion/path.js';
import {
  ACK_DELAY_UNITS_PER_MS, type AckHeader, decodeAckHeader, encodeAckHeader, MAX_ACK_DELAY_VALUE, MAX_ACK_EXT_BYTES,
  MAX_ACK_HEADER_BYTES, newAckHeader,
} from './wire.js';

/**
 * Receives the outcome of every eliciting packet, exactly once (implemented by the connection).
 * Called synchronously from `PacketAcks.accept` and `PacketAcks.handleTimeout`; an implementation
 * must not call back into the same `PacketAcks` except for read-only queries (`canSend`, `stats`,
 * `counters`, `pollTimeout`).
 */
export interface PacketOutcomes<T> {
  /** The packet `seq` (16-bit) sent with `token` and `wireBytes` was acked by the peer at `now` (ms). */
  packetDelivered(now: number, token: T, seq: number, wireBytes: number): void;
  /**
   * The packet `seq` was declared lost at `now` (ms). If the peer acks it later, that is counted
   * as a spurious loss; the packet gets no second outcome.
   */
  packetLost(now: number, token: T, seq: number, wireBytes: number): void;
}

/** Options of a `PacketAcks`; every field is optional. Invalid values throw `invalid-config`. */
export interface AckOptions {
  /**
   * Capacity of the sent-packet record (power of two, 16..16 384; default 1024): eliciting packets
   * from the oldest one without an outcome to the newest. When it is full, `canSend()` is false
   * (back-pressure), never a forced loss.
   */
  maxInFlightPackets?: number;
  /**
   * Received-sequence ring (power of two, 64..16 384; default 1024): a packet older than the
   * newest received minus this is stale (dropped, counted). Also bounds the acked history: 257 packets at most.
   */
  receiveWindow?: number;
  /** An eliciting packet is acked within this many ms (by an ack-only packet if nothing else goes); 0..1000, default 5. */
  maxAckDelayMs?: number;
  /**
   * An ack-only packet is due at once when this many eliciting packets are unacked (1..64, default 2).
   * An eliciting packet that arrives out of order (a gap before it, or older than the newest) is acked at once.
   */
  ackEveryPackets?: number;
  /** A non-eliciting packet is due when nothing was sent for this many ms (10..60 000, default 1000). */
  keepAliveMs?: number;
  /**
   * Time threshold of loss detection: a packet is lost once a later one is acked and
   * (1 + this) × max(srtt, latest raw RTT sample) has passed since it was sent. 0..1, default 1/8 (QUIC);
   * doubled by each spurious loss of such a verdict (real reordering), up to 1, and halved back toward
   * the configured value after 16 such verdicts in a row that held (RACK's reo_wnd persistence). A
   * timeout verdict found spurious (a lost ack, not reordering) leaves it alone.
   */
  reorderFraction?: number;
  /**
   * Floor of the loss timeout (ms, 1..60 000, default 20): a packet with no ack after
   * `path.resendDelayMs(this)` + min(the peer's mean packet gap, srtt) is lost. No loss timeout on a
   * reliable transport (`PathOptions.reliableTransport`).
   */
  minLossTimeoutMs?: number;
}

/** Names of the counters of a `PacketAcks`. */
export type AckCounter =
  | 'packetsSent'
  | 'packetsReceived'
  | 'invalidHeader'
  | 'stale'
  | 'duplicate'
  | 'tooFarAhead'
  | 'ackedUnknown'
  | 'packetsDelivered'
  | 'packetsLost'
  | 'lostByTimeout'
  | 'spuriousLosses';

const COUNTER_NAMES: readonly AckCounter[] = [
  'packetsSent', 'packetsReceived', 'invalidHeader', 'stale', 'duplicate', 'tooFarAhead', 'ackedUnknown',
  'packetsDelivered', 'packetsLost', 'lostByTimeout', 'spuriousLosses',
];

/** Statistics of one `PacketAcks` (a fresh object per `stats()` call). */
export interface AckStats {
  /** Smoothed RTT (ms), from the path. */
  srttMs: number;
  /** RTT variation (ms), from the path. */
  rttvarMs: number;
  /** Smallest RTT sample (ms), or undefined before the first. */
  minRttMs: number | undefined;
  /** Latest RTT sample (ms, ack delay removed), or undefined. */
  latestRttMs: number | undefined;
  /** Jitter (ms): mean absolute change between consecutive RTT samples, from the path. */
  jitterMs: number;
  /**
   * Lost outcomes among the last 256 outcomes (delivered + lost), in percent (0 before any); a
   * loss found spurious while still in the window counts as delivered.
   */
  lossPercent: number;
  /** Wire kbit/s sent (every packet): EWMA (gain 1/4) of 1-second windows. */
  sentKbps: number;
  /** Wire kbit/s received (every accepted packet): same averaging. */
  receivedKbps: number;
  /** Wire kbit/s newly acked (delivered eliciting packets): same averaging. */
  ackedKbps: number;
  /** Packets sent (every `onSent`). */
  packetsSent: number;
  /** Packets accepted. */
  packetsReceived: number;
  /** Eliciting packets reported delivered. */
  packetsDelivered: number;
  /** Eliciting packets reported lost. */
  packetsLost: number;
  /** Packets reported lost and acked later. */
  spuriousLosses: number;
  /** Eliciting packets without an outcome yet. */
  inFlightPackets: number;
  /** The reorder fraction in use (raised by spurious losses). */
  reorderFraction: number;
}

/**
 * How far the next sequence may run ahead of the newest one the peer acked (or of the first, before
 * any ack): below half of the half-space, so the peer's wrap-aware comparison never flips.
 */
export const ACK_WRAP_GUARD = 16384;

const KEYS: ReadonlySet<string> = new Set([
  'maxInFlightPackets', 'receiveWindow', 'maxAckDelayMs', 'ackEveryPackets', 'keepAliveMs', 'reorderFraction',
  'minLossTimeoutMs',
]);

/** Entries the sent-packet record starts with (it doubles on demand up to `maxInFlightPackets`). */
const INITIAL_SENT_RECORD = 8;
/** Packets with an outcome stay in the sent-packet record at least this long (ms), for late acks. */
const RECORD_HORIZON_MS = 2000;

const PENDING = 0;
const DELIVERED = 1;
const LOST = 2;
/** Lost by the loss timeout, not by the reorder threshold. */
const LOST_BY_TIMEOUT = 3;
/** Reorder-threshold verdicts that held in a row before the reorder fraction is halved back. */
const REORDER_PERSIST = 16;

const LOSS_WINDOW = 256;
const RATE_WINDOW_MS = 1000;
const RATE_GAIN = 0.25;
/** Our packets after the first that repeat an extended history (each old packet reported up to 3 times). */
const EXT_REPEATS = 2;
/** Absolute numbers of received packets start here, so they stay positive (the ring's empty mark is -1). */
const RECV_BASE = 65536;
const NO_OUTCOMES: Float64Array<ArrayBuffer> = new Float64Array(0);
/** The header `writeHeader` fills and encodes at once: one for every instance (nothing keeps it between calls). */
const OUT_HDR: AckHeader = newAckHeader();

function isPow2In(v: unknown, lo: number, hi: number): v is number {
  return typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi && (v & (v - 1)) === 0;
}

function inRange(v: unknown, lo: number, hi: number): v is number {
  return typeof v === 'number' && Number.isFinite(v) && v >= lo && v <= hi;
}

/** Wire bytes per ~1 s window, averaged (EWMA) into kbit/s. */
class RateMeter {
  private start = NaN;
  private bytes = 0;
  kbps = 0;
  private seeded = false;

  add(now: number, bytes: number): void {
    this.roll(now);
    this.bytes += bytes;
  }

  roll(now: number): void {
    if (Number.isNaN(this.start)) {
      this.start = now;
      return;
    }
    const elapsed = now - this.start;
    if (elapsed < RATE_WINDOW_MS) return;
    const sample = (this.bytes * 8) / elapsed;
    this.kbps = this.seeded ? this.kbps + RATE_GAIN * (sample - this.kbps) : sample;
    this.seeded = true;
    this.bytes = 0;
    this.start = now;
  }
}

/** `AckOptions.maxAckDelayMs` when unset, ms. */
const DEFAULT_ACK_DELAY_MS = 5;

/**
 * The packet layer of a connection: numbers outgoing packets, acks incoming ones (a 3..40-byte
 * header, docs/ack.md), and reports for every eliciting packet exactly one outcome, delivered or
 * lost, with the caller's token. Feeds the connection's `Path` (RTT samples without the peer's ack
 * delay, acked and lost wire bytes, peer heard). Sans-IO: every method takes `now` in ms; no clock,
 * no timers. Memory is fixed by the config.
 *
 * Sending: `canSend()` → `writeHeader(now, out, off)` → frames → `onSent(now, wire, eliciting, token)`.
 * Receiving: `readHeader(now, bytes, off)` (≥ 0) → check the payload → `accept(now, eliciting, wire)`.
 * Time: `wantsPacket(now)` (an ack or keep-alive is due), `pollTimeout()`, `handleTimeout(now)`.
 */
export class PacketAcks<T> {
  /** Largest header `writeHeader` writes (40 bytes): leave this much room before the frames. */
  readonly maxHeaderBytes: number = MAX_ACK_HEADER_BYTES;

  private readonly path: Path;
  private readonly outcomes: PacketOutcomes<T>;
  private maxAckDelay: number;
  private readonly ackEvery: number;
  private readonly keepAlive: number;
  private readonly minLossTimeout: number;
  private reorderFraction: number;
  private readonly baseReorderFraction: number;
  private thresholdVerdictsHeld = 0;

  // Sent eliciting packets, a FIFO in sequence order (positions grow forever; index = pos & sMask).
  // The arrays start small and double up to sLimit (maxInFlightPackets): an idle connection stays small.
  private readonly sLimit: number;
  private sCap: number;
  private sMask: number;
  // Per record entry i: sequence at sRec[3i], send time at sRec[3i + 1], wire bytes at sRec[3i + 2].
  private sRec: Float64Array;
  private sState: Uint8Array;
  private sToken: (T | undefined)[];
  private head = 0;
  private tail = 0;
  private firstPending = 0;
  private pending = 0;
  private nextAbs = 0;
  private headerWritten = false;
  private largestAcked = -1;
  private lastSentAt = NaN;
  private latestRawRtt = 0;
  private lastHeardAt = NaN;
  private peerGap = 0;

  // Received sequences in (newestRecv − rWindow, newestRecv]: bit (abs & rMask) of rBits is set ⇔ received.
  private readonly rWindow: number;
  private readonly rMask: number;
  private readonly rBits: Uint32Array;
  private newestRecv = -1;
  private newestRecvAt = 0;
  private unackedEliciting = 0;
  private ackDeadline = Infinity;
  private oldestUnreported = Infinity;
  // The oldest unreported sequence of each of our last EXT_REPEATS packets.
  private extOldest0 = Infinity;
  private extOldest1 = Infinity;
  private extIdx = 0;

  // The header last read (valid until `accept` or the next `readHeader`).
  private readonly inHdr: AckHeader = newAckHeader();
  private readOk = false;
  private readAbs = 0;
  private readAckAbs = -1;

  private readonly counts = newCounters<AckCounter>(COUNTER_NAMES);
  // The last LOSS_WINDOW outcomes, a ring of 2 × sequence + (1 if lost); it starts empty and doubles from 16.
  private loss: Float64Array<ArrayBuffer> = NO_OUTCOMES;
  private lossIdx = 0;
  private lossFilled = 0;
  private lossInRing = 0;
  // Outcomes recorded since the newest loss not found spurious (Infinity: none ever).
  private sinceLoss = Infinity;
  private readonly sentRate = new RateMeter();
  private readonly recvRate = new RateMeter();
  private readonly ackedRate = new RateMeter();

  /**
   * @param path the connection's path (RTT, rate controller); this object reports to it.
   * @param outcomes receives one outcome per eliciting packet.
   * @param config optional settings; throws `GamewireError('invalid-config')` on bad values.
   */
  constructor(path: Path, outcomes: PacketOutcomes<T>, config: AckOptions = {}) {
    checkConfig(typeof path === 'object' && path !== null && typeof path.onRttSample === 'function', 'path must be a Path');
    checkConfig(typeof outcomes === 'object' && outcomes !== null && typeof outcomes.packetDelivered === 'function'
      && typeof outcomes.packetLost === 'function', 'outcomes must implement PacketOutcomes');
    checkConfig(typeof config === 'object' && config !== null, 'ack config must be an object');
    for (const k of Object.keys(config)) checkConfig(KEYS.has(k), `unknown ack config key '${k}'`);
    const cap = config.maxInFlightPackets ?? 1024;
    const win = config.receiveWindow ?? 512;
    const delay = config.maxAckDelayMs ?? DEFAULT_ACK_DELAY_MS;
    const every = config.ackEveryPackets ?? 2;
    const keep = config.keepAliveMs ?? 1000;
    const frac = config.reorderFraction ?? 1 / 8;
    const floor = config.minLossTimeoutMs ?? 20;
    checkConfig(isPow2In(cap, 16, 16384), 'maxInFlightPackets must be a power of two in 16..16384');
    checkConfig(isPow2In(win, 64, 16384), 'receiveWindow must be a power of two in 64..16384');
    checkConfig(inRange(delay, 0, 1000), 'maxAckDelayMs must be a number in 0..1000');
    checkConfig(inRange(every, 1, 64) && Number.isInteger(every), 'ackEveryPackets must be an integer in 1..64');
    checkConfig(inRange(keep, 10, 60_000), 'keepAliveMs must be a number in 10..60000');
    checkConfig(inRange(frac, 0, 1), 'reorderFraction must be a number in 0..1');
    checkConfig(inRange(floor, 1, 60_000), 'minLossTimeoutMs must be a number in 1..60000');
    this.path = path;
    this.outcomes = outcomes;
    this.maxAckDelay = delay;
    this.ackEvery = every;
    this.keepAlive = keep;
    this.reorderFraction = frac;
    this.baseReorderFraction = frac;
    this.minLossTimeout = floor;
    this.sLimit = cap;
    this.sCap = Math.min(cap, INITIAL_SENT_RECORD);
    this.sMask = this.sCap - 1;
    this.sRec = new Float64Array(3 * this.sCap);
    this.sState = new Uint8Array(this.sCap);
    this.sToken = new Array<T | undefined>(this.sCap).fill(undefined);
    this.rWindow = win;
    this.rMask = win - 1;
    this.rBits = new Uint32Array(win >>> 5);
  }

  /**
   * How long (ms, 0..1000; default 5) an ack may now wait for data to ride on (`AckOptions.maxAckDelayMs`):
   * the connection moved to a transport that wants another. Throws `invalid-config` out of range.
   */
  setMaxAckDelay(ms = DEFAULT_ACK_DELAY_MS): void {
    checkConfig(inRange(ms, 0, 1000), 'maxAckDelayMs must be a number in 0..1000');
    this.maxAckDelay = ms;
  }

  /**
   * True when a packet may be written now. `eliciting` (default true): a packet that will need an
   * outcome, refused while the sent-packet record is full (`maxInFlightPackets`). Any packet is
   * refused at the wrap guard: the next sequence would be 16 384 ahead of the newest the peer acked.
   */
  canSend(eliciting = true): boolean {
    if (this.nextAbs - Math.max(this.largestAcked, 0) >= ACK_WRAP_GUARD) return false;
    if (!eliciting) return true;
    this.makeRoom();
    return this.tail - this.head < this.sCap;
  }

  /**
   * Write the next packet's header at `out[offset]` (at most `maxHeaderBytes`); returns the bytes
   * written. The sequence is the next one; `onSent` commits it (and pays any ack owed). Called again
   * before `onSent`, it writes a fresh header for the same sequence (the first is abandoned).
   * Throws `invalid-state` at the wrap guard, `buffer-too-small` when `out` lacks room.
   */
  writeHeader(now: number, out: Uint8Array, offset: number): number {
    if (!this.canSend(false)) throw new GamewireError('invalid-state', 'wrap guard: canSend(false) is false');
    const h = OUT_HDR;
    h.seq = this.nextAbs & 0xffff;
    const newest = this.newestRecv;
    if (newest < 0) {
      h.hasAck = false;
      h.ack = 0;
      h.ackDelay = 0;
      h.ackBits = 0;
      h.extBytes = 0;
    } else {
      h.hasAck = true;
      h.ack = newest & 0xffff;
      const held = now - this.newestRecvAt;
      h.ackDelay = held > 0 ? Math.min(MAX_ACK_DELAY_VALUE, Math.floor(held * ACK_DELAY_UNITS_PER_MS)) : 0;
      const seen = this.rBits;
      const mask = this.rMask;
      let bits = 0;
      for (let i = 0; i < 32; i++) {
        const s = newest - 1 - i;
        if ((seen[(s & mask) >>> 5]! >>> (s & 31)) & 1) bits |= 1 << i;
      }
      h.ackBits = bits >>> 0;
      let k = 0;
      let oldest = this.oldestUnreported;
      oldest = Math.min(oldest, this.extOldest0, this.extOldest1);
      const span = newest - oldest;
      if (span > 32) {
        k = Math.min(MAX_ACK_EXT_BYTES, Math.ceil((span - 32) / 8), (this.rWindow - 33) >> 3);
      }
      h.extBytes = k;
      for (let i = 0; i < k; i++) {
        let b = 0;
        for (let j = 0; j < 8; j++) {
          const s = newest - 33 - 8 * i - j;
          if ((seen[(s & mask) >>> 5]! >>> (s & 31)) & 1) b |= 1 << j;
        }
        h.ext[i] = b;
      }
    }
    const n = encodeAckHeader(h, out, offset);
    this.headerWritten = true;
    return n;
  }

  /**
   * The packet whose header was just written went out at `now` (ms): `wireBytes` is
   * `path.wireBytes(datagram)`; `eliciting` when it carries frames (it will get exactly one outcome,
   * with `token`). A non-eliciting packet (ack-only, keep-alive) gets no outcome. The acks the
   * header carried are now sent: no ack is owed until the next eliciting packet arrives. Throws
   * `invalid-state` without a header written, or for an eliciting packet when `canSend()` is false.
   * Does not call `path.onSent` (the connection does, with its pacing).
   */
  onSent(now: number, wireBytes: number, eliciting: boolean, token: T | undefined): void {
    if (!this.headerWritten) throw new GamewireError('invalid-state', 'onSent without writeHeader');
    checkArg(Number.isFinite(wireBytes) && wireBytes >= 0, 'wireBytes must be a finite number ≥ 0');
    if (eliciting && !this.canSend(true)) {
      throw new GamewireError('invalid-state', 'eliciting packet sent while canSend() is false');
    }
    this.headerWritten = false;
    this.unackedEliciting = 0;
    this.ackDeadline = Infinity;
    if (this.extIdx === 0) this.extOldest0 = this.oldestUnreported;
    else this.extOldest1 = this.oldestUnreported;
    this.extIdx = (this.extIdx + 1) % EXT_REPEATS;
    this.oldestUnreported = Infinity;
    const abs = this.nextAbs++;
    this.lastSentAt = now;
    this.counts.packetsSent++;
    this.sentRate.add(now, wireBytes);
    if (!eliciting) return;
    const i = this.tail & this.sMask;
    this.sRec[3 * i] = abs;
    this.sRec[3 * i + 1] = now;
    this.sRec[3 * i + 2] = wireBytes;
    this.sState[i] = PENDING;
    this.sToken[i] = token;
    this.tail++;
    this.pending++;
  }

  /**
   * Parse and check the header of a received packet at `bytes[offset]`: returns the header length,
   * or -1 when it is invalid, stale, a duplicate, too far ahead, or acks a sequence never sent
   * (each counted). Changes nothing else: the caller checks the payload, then calls `accept`.
   */
  readHeader(now: number, bytes: Uint8Array, offset: number): number {
    this.readOk = false;
    const h = this.inHdr;
    const n = decodeAckHeader(bytes, offset, h);
    if (n < 0) {
      this.counts.invalidHeader++;
      return -1;
    }
    let abs: number;
    const newest = this.newestRecv;
    if (newest < 0) {
      abs = RECV_BASE + h.seq;
    } else {
      const d = seqDiff16(h.seq, newest & 0xffff);
      if (d >= ACK_WRAP_GUARD) {
        this.counts.tooFarAhead++;
        return -1;
      }
      abs = newest + d;
      if (abs <= newest - this.rWindow) {
        this.counts.stale++;
        return -1;
      }
      if (abs <= newest && (this.rBits[(abs & this.rMask) >>> 5]! >>> (abs & 31)) & 1) {
        this.counts.duplicate++;
        return -1;
      }
    }
    let ackAbs = -1;
    if (h.hasAck) {
      const last = this.nextAbs - 1;
      const back = ((last & 0xffff) - h.ack) & 0xffff;
      ackAbs = last - back;
      if (last < 0 || back >= 32768 || ackAbs < 0) {
        this.counts.ackedUnknown++;
        return -1;
      }
    }
    this.readAbs = abs;
    this.readAckAbs = ackAbs;
    this.readOk = true;
    return n;
  }

  /** The window moves from newest `from` to `to`: clear the bits of (from, to], which held sequences a window older. */
  private forget(from: number, to: number): void {
    const bits = this.rBits;
    if (to - from >= this.rWindow) {
      bits.fill(0);
      return;
    }
    const mask = this.rMask;
    for (let s = from + 1; s <= to; s++) bits[(s & mask) >>> 5]! &= ~(1 << (s & 31));
  }

  /**
   * The packet last read by `readHeader` is valid (its payload checked): mark it received (it will
   * be acked), process its acks (outcomes reported synchronously through `outcomes`) and feed the
   * path: `onPeerHeard`, `onRttSample` (ack delay removed), `onAck` (newly acked wire bytes),
   * `onLoss` (wire bytes of the packets this ack showed lost). `eliciting`: the payload carries
   * frames (it must be acked); `wireBytes` counts in the received rate. Throws `invalid-state`
   * unless the last `readHeader` returned ≥ 0.
   */
  accept(now: number, eliciting: boolean, wireBytes: number): void {
    if (!this.readOk) throw new GamewireError('invalid-state', 'accept without a valid readHeader');
    this.readOk = false;
    const abs = this.readAbs;
    const newest = this.newestRecv;
    let outOfOrder: boolean;
    if (newest < 0 || abs > newest) {
      outOfOrder = newest >= 0 && abs > newest + 1;
      if (newest >= 0) this.forget(newest, abs);
      this.newestRecv = abs;
      this.newestRecvAt = now;
    } else {
      outOfOrder = true;
    }
    this.rBits[(abs & this.rMask) >>> 5]! |= 1 << (abs & 31);
    if (eliciting) {
      this.unackedEliciting++;
      if (this.unackedEliciting === 1) this.ackDeadline = now + this.maxAckDelay;
      if (outOfOrder || this.unackedEliciting >= this.ackEvery) this.ackDeadline = Math.min(this.ackDeadline, now);
      if (abs < this.oldestUnreported) this.oldestUnreported = abs;
    }
    this.counts.packetsReceived++;
    this.recvRate.add(now, wireBytes);
    this.path.onPeerHeard(now);
    if (now >= this.lastHeardAt) this.peerGap += ((now - this.lastHeardAt) - this.peerGap) / 8;
    this.lastHeardAt = now;
    if (this.inHdr.hasAck) this.processAcks(now, this.inHdr, this.readAckAbs);
    this.detectLosses(now);
  }

  /** Share of the last 256 outcomes that were losses (spurious ones corrected), 0..1; 0 before any. */
  lossRate(): number {
    return this.lossFilled === 0 ? 0 : this.lossInRing / this.lossFilled;
  }

  /**
   * Outcomes (packets reported delivered or lost) since the newest loss that was not found spurious:
   * 0 right after a loss, Infinity when there was none. A loss found spurious once it has left the
   * last 256 outcomes still counts here, so the figure may be shorter than the truth, never longer.
   */
  outcomesSinceLoss(): number {
    return this.sinceLoss;
  }

  /** True when a packet should go now even with no frames: an ack is due, or a keep-alive is (and the wrap guard allows it). */
  wantsPacket(now: number): boolean {
    if (now >= this.ackDeadline || now >= this.lastSentAt + this.keepAlive) return this.canSend(false);
    return false;
  }

  /**
   * Earliest time (ms) this object needs attention: ack deadline, keep-alive (both only while the
   * wrap guard allows a packet), loss timer; undefined if none.
   */
  pollTimeout(): number | undefined {
    let t = Infinity;
    if (this.canSend(false)) {
      // At the wrap guard nothing can be sent: only the loss timer counts.
      t = this.ackDeadline;
      const keep = this.lastSentAt + this.keepAlive;
      if (keep < t) t = keep;
    }
    const loss = this.lossTimerAt();
    if (loss < t) t = loss;
    return t === Infinity || Number.isNaN(t) ? undefined : t;
  }

  /** Declare lost every packet whose time has come at `now` (ms); outcomes reported synchronously. */
  handleTimeout(now: number): void {
    this.detectLosses(now);
  }

  /** Current statistics at `now` (ms); a fresh object. */
  stats(now: number): AckStats {
    this.sentRate.roll(now);
    this.recvRate.roll(now);
    this.ackedRate.roll(now);
    const rtt = this.path.rtt;
    return {
      srttMs: rtt.srttMs,
      rttvarMs: rtt.rttvarMs,
      minRttMs: rtt.minRttMs,
      latestRttMs: rtt.latestMs,
      jitterMs: rtt.jitterMs,
      lossPercent: this.lossFilled === 0 ? 0 : (100 * this.lossInRing) / this.lossFilled,
      sentKbps: this.sentRate.kbps,
      receivedKbps: this.recvRate.kbps,
      ackedKbps: this.ackedRate.kbps,
      packetsSent: this.counts.packetsSent,
      packetsReceived: this.counts.packetsReceived,
      packetsDelivered: this.counts.packetsDelivered,
      packetsLost: this.counts.packetsLost,
      spuriousLosses: this.counts.spuriousLosses,
      inFlightPackets: this.pending,
      reorderFraction: this.reorderFraction,
    };
  }

  /** A copy of every counter. */
  counters(): Readonly<Record<AckCounter, number>> {
    return { ...this.counts };
  }

  private makeRoom(): void {
    // Outcomes older than the horizon leave the record (a later ack for them could only have counted
    // a spurious loss), so an idle or slow connection keeps a small record.
    const horizon = this.lastSentAt - RECORD_HORIZON_MS;
    while (this.head < this.tail && this.sState[this.head & this.sMask] !== PENDING && this.sRec[3 * (this.head & this.sMask) + 1]! < horizon) this.head++;
    if (this.tail - this.head >= this.sCap && this.sCap < this.sLimit) this.grow();
    while (this.tail - this.head >= this.sCap && this.sState[this.head & this.sMask] !== PENDING) this.head++;
  }

  /** Double the sent-packet record (positions keep their meaning; only the mask changes). */
  private grow(): void {
    const cap = this.sCap * 2;
    const mask = cap - 1;
    const rec = new Float64Array(3 * cap);
    const state = new Uint8Array(cap);
    const token = new Array<T | undefined>(cap).fill(undefined);
    for (let p = this.head; p < this.tail; p++) {
      const i = p & this.sMask;
      const j = p & mask;
      rec[3 * j] = this.sRec[3 * i]!;
      rec[3 * j + 1] = this.sRec[3 * i + 1]!;
      rec[3 * j + 2] = this.sRec[3 * i + 2]!;
      state[j] = this.sState[i]!;
      token[j] = this.sToken[i];
    }
    this.sCap = cap;
    this.sMask = mask;
    this.sRec = rec;
    this.sState = state;
    this.sToken = token;
  }

  /** First position in [head, tail) whose sequence is ≥ `abs`. */
  private lowerBound(abs: number): number {
    let lo = this.head;
    let hi = this.tail;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.sRec[3 * (mid & this.sMask)]! < abs) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private processAcks(now: number, h: AckHeader, ackAbs: number): void {
    if (ackAbs > this.largestAcked) this.largestAcked = ackAbs;
    const mask = this.sMask;
    let p = this.lowerBound(ackAbs - 32 - 8 * h.extBytes);
    if (p >= this.tail) return;
    // The RTT sample comes first so that the loss check below uses it. A packet already declared lost
    // gives one too: when the RTT jumps above the loss timeout, every ack is late, and without those
    // samples srtt (and with it the loss timeout) would never catch up.
    let sampled = false;
    const last = this.lowerBound(ackAbs);
    if (last < this.tail && this.sRec[3 * (last & mask)] === ackAbs && this.sState[last & mask] !== DELIVERED
      && h.ackDelay < MAX_ACK_DELAY_VALUE) {
      const raw = now - this.sRec[3 * (last & mask) + 1]!;
      this.latestRawRtt = raw;
      const delayMs = h.ackDelay / ACK_DELAY_UNITS_PER_MS;
      const min = this.path.rtt.minRttMs;
      let adjusted = raw - delayMs;
      if (min !== undefined && adjusted < min) adjusted = Math.min(raw, min);
      sampled = this.path.onRttSample(now, Math.max(0, adjusted), delayMs);
    }
    let ackedWire = 0;
    for (; p < this.tail; p++) {
      const i = p & mask;
      const s = this.sRec[3 * i]!;
      if (s > ackAbs) break;
      const st = this.sState[i];
      if (st === DELIVERED) continue;
      const back = ackAbs - s;
      let covered: boolean;
      if (back === 0) covered = true;
      else if (back <= 32) covered = ((h.ackBits >>> (back - 1)) & 1) !== 0;
      else {
        const e = back - 33;
        covered = ((h.ext[e >> 3]! >>> (e & 7)) & 1) !== 0;
      }
      if (!covered) continue;
      this.sState[i] = DELIVERED;
      if (st === LOST || st === LOST_BY_TIMEOUT) {
        this.counts.spuriousLosses++;
        this.unrecordLoss(s);
        if (st === LOST) {
          this.reorderFraction = Math.min(1, this.reorderFraction * 2 || 1 / 8);
          this.thresholdVerdictsHeld = 0;
        }
        continue;
      }
      const wire = this.sRec[3 * i + 2]!;
      const token = this.sToken[i] as T;
      this.sToken[i] = undefined;
      this.pending--;
      ackedWire += wire;
      this.counts.packetsDelivered++;
      this.recordOutcome(s, false);
      this.outcomes.packetDelivered(now, token, s & 0xffff, wire);
    }
    this.advance();
    if (ackedWire > 0) {
      this.ackedRate.add(now, ackedWire);
      this.path.onAck(now, ackedWire, sampled);
    }
  }

  /**
   * The path's resend delay plus the peer's mean gap between packets (at most srtt): when the
   * packet carrying an ack is lost, the ack comes with the peer's next packet.
   */
  private lossTimeoutMs(): number {
    return this.path.resendDelayMs(this.minLossTimeout) + Math.min(this.peerGap, this.path.rtt.srttMs);
  }

  /** QUIC's time threshold: its latest RTT is the raw sample (ack delay included), at least 1 ms. */
  private lossThresholdMs(): number {
    return Math.max(1, (1 + this.reorderFraction) * Math.max(this.path.rtt.srttMs, this.latestRawRtt));
  }

  private lossTimerAt(): number {
    this.advance();
    if (this.firstPending >= this.tail) return Infinity;
    const i = this.firstPending & this.sMask;
    const at = this.sRec[3 * i + 1]!;
    let t = this.path.reliableTransport ? Infinity : at + this.lossTimeoutMs();
    if (this.sRec[3 * i]! < this.largestAcked) t = Math.min(t, at + this.lossThresholdMs());
    return t;
  }

  private detectLosses(now: number): void {
    this.advance();
    if (this.firstPending >= this.tail) return;
    const timeout = this.path.reliableTransport ? Infinity : this.lossTimeoutMs();
    const threshold = this.lossThresholdMs();
    const mask = this.sMask;
    let lostWire = 0;
    for (let p = this.firstPending; p < this.tail; p++) {
      const i = p & mask;
      if (this.sState[i] !== PENDING) continue;
      const at = this.sRec[3 * i + 1]!;
      const s = this.sRec[3 * i]!;
      const byTimeout = at + timeout <= now;
      if (!byTimeout && !(s < this.largestAcked && at + threshold <= now)) break;
      this.sState[i] = byTimeout ? LOST_BY_TIMEOUT : LOST;
      if (!byTimeout) this.settleReorder();
      const wire = this.sRec[3 * i + 2]!;
      const token = this.sToken[i] as T;
      this.sToken[i] = undefined;
      this.pending--;
      lostWire += wire;
      this.counts.packetsLost++;
      if (byTimeout) this.counts.lostByTimeout++;
      this.recordOutcome(s, true);
      this.outcomes.packetLost(now, token, s & 0xffff, wire);
    }
    this.advance();
    if (lostWire > 0) this.path.onLoss(now, lostWire);
  }

  /**
   * A reorder-threshold verdict: after REORDER_PERSIST of them since the last one found spurious,
   * halve the fraction back toward its configured value (a burst of reordering does not widen the
   * threshold for good).
   */
  private settleReorder(): void {
    if (this.reorderFraction <= this.baseReorderFraction) return;
    if (++this.thresholdVerdictsHeld < REORDER_PERSIST) return;
    this.thresholdVerdictsHeld = 0;
    this.reorderFraction = Math.max(this.baseReorderFraction, this.reorderFraction / 2);
  }

  /** Move `firstPending` to the oldest pending packet and drop delivered packets from the head. */
  private advance(): void {
    const mask = this.sMask;
    while (this.head < this.tail && this.sState[this.head & mask] === DELIVERED) this.head++;
    if (this.firstPending < this.head) this.firstPending = this.head;
    while (this.firstPending < this.tail && this.sState[this.firstPending & mask] !== PENDING) this.firstPending++;
  }

  private recordOutcome(abs: number, lost: boolean): void {
    const v = lost ? 1 : 0;
    let cap = this.loss.length;
    if (this.lossFilled === cap && cap < LOSS_WINDOW) {
      const next = new Float64Array(Math.max(16, cap * 2));
      for (let k = 0; k < cap; k++) next[k] = this.loss[(this.lossIdx + k) % cap]!;
      this.loss = next;
      this.lossIdx = cap;
      cap = next.length;
    }
    if (this.lossFilled === LOSS_WINDOW) this.lossInRing -= this.loss[this.lossIdx]! % 2;
    else this.lossFilled++;
    this.loss[this.lossIdx] = 2 * abs + v;
    this.lossInRing += v;
    this.lossIdx = (this.lossIdx + 1) % cap;
    this.sinceLoss = lost ? 0 : this.sinceLoss + 1;
  }

  /** A spurious loss: if its verdict is still in the loss window, it counts as delivered there. */
  private unrecordLoss(abs: number): void {
    for (let i = 0; i < this.lossFilled; i++) {
      if (this.loss[i] === 2 * abs + 1) {
        this.loss[i] = 2 * abs;
        this.lossInRing--;
        this.recountSinceLoss();
        return;
      }
    }
  }

  /** `sinceLoss` from the loss window, newest first; a window without a loss that holds every outcome means none ever. */
  private recountSinceLoss(): void {
    const cap = this.loss.length;
    for (let k = 0; k < this.lossFilled; k++) {
      if (this.loss[(this.lossIdx - 1 - k + cap) % cap]! % 2 === 1) {
        this.sinceLoss = k;
        return;
      }
    }
    if (this.lossFilled < LOSS_WINDOW) this.sinceLoss = Infinity;
    else this.sinceLoss = Math.max(this.sinceLoss, LOSS_WINDOW);
  }
}
