import { GamewireError } from '../core/errors.js';
import { newCounters } from '../core/counters.js';
import { timeDiff32, u32, u32Add, u32Mul } from '../core/wrap.js';
import { ACK_LIST_ENTRIES, KcpArena, KCP_SEGMENT_BYTES, type Slab, type SlabCopy } from './arena.js';
import { Deque, SnRing } from './queues.js';
import { KCP_OVERHEAD, KcpCommand, readU32LE, writeHeader } from './segment.js';

/** Default MTU in bytes (`IKCP_MTU_DEF`); mss = mtu - 24. */
export const KCP_MTU_DEFAULT = 1400;
/** Smallest MTU `setMtu` accepts (C rejects anything below with -1). */
export const KCP_MTU_MIN = 50;
/** Largest MTU gamewire accepts (C has no upper bound; see docs/kcp.md). */
export const KCP_MTU_MAX = 65535;
/** Default send window, in segments (`IKCP_WND_SND`). */
export const KCP_WND_SND = 32;
/** Default and minimum receive window, in segments (`IKCP_WND_RCV`); also the fragment bound. */
export const KCP_WND_RCV = 128;
/** Largest window gamewire accepts, in segments (the wire's `wnd` field is a u16). */
export const KCP_WND_MAX = 65535;
/** Most fragments one message may have (`count >= IKCP_WND_RCV` is refused). */
export const KCP_MAX_FRAGMENTS = KCP_WND_RCV - 1;
/** Default update interval, ms (`IKCP_INTERVAL`); setters clamp to [10, 5000]. */
export const KCP_INTERVAL_DEFAULT = 100;
/** Initial retransmission timeout, ms (`IKCP_RTO_DEF`). */
export const KCP_RTO_DEFAULT = 200;
/** Minimum RTO in normal mode, ms (`IKCP_RTO_MIN`). */
export const KCP_RTO_MIN = 100;
/** Minimum RTO when nodelay ≥ 1, ms (`IKCP_RTO_NDL`). */
export const KCP_RTO_NODELAY = 30;
/** Upper bound of the estimated RTO, ms (`IKCP_RTO_MAX`). */
export const KCP_RTO_MAX = 60000;
/** Default transmissions of one segment after which `state` turns dead (`IKCP_DEADLINK`). */
export const KCP_DEAD_LINK_DEFAULT = 20;
/** Default cap on a segment's transmissions for fast retransmit (`IKCP_FASTACK_LIMIT`). */
export const KCP_FAST_LIMIT_DEFAULT = 5;
/** First window-probe delay after the peer's window closes, ms (`IKCP_PROBE_INIT`). */
export const KCP_PROBE_INIT = 7000;
/** Largest window-probe delay, ms (`IKCP_PROBE_LIMIT`). */
export const KCP_PROBE_LIMIT = 120000;
/** `state` value once a segment was sent `deadLink` times. */
export const KCP_STATE_DEAD = 0xffffffff;
/** Default `maxSendQueueSegments` (gamewire's bound on C's unbounded `snd_queue`). */
export const KCP_MAX_SEND_QUEUE_DEFAULT = 65536;
/** Default `maxPendingAcks` (gamewire's bound on C's unbounded ack list). */
export const KCP_MAX_PENDING_ACKS_DEFAULT = 65536;

const THRESH_INIT = 2;
const THRESH_MIN = 2;
const ASK_SEND = 1;
const ASK_TELL = 2;
/** Probe flags and the segment each one sends, in the order a flush writes them (WASK before WINS). */
const PROBE_SEGMENTS: readonly (readonly [number, KcpCommand])[] = [[ASK_SEND, KcpCommand.WASK], [ASK_TELL, KcpCommand.WINS]];
const EMPTY = new Uint8Array(0);
const NO_ACKS = new Uint32Array(0);

export { KcpArena, KCP_ARENA_MAX_RECEIVE_BYTES_DEFAULT, KCP_SEGMENT_BYTES, type KcpArenaCounter, type KcpArenaOptions } from './arena.js';

/** `input()` result: 0 accepted; -1 shorter than 24 bytes or conv mismatch; -2 `len` past the end; -3 unknown cmd. */
export type KcpInputResult = 0 | -1 | -2 | -3;
/**
 * `send()` error: -2 more than 127 fragments needed (C); -4 `maxSendQueueSegments`, `maxSendBytes` or
 * the arena's send budget would be exceeded (gamewire). C's -1 (negative length) cannot happen with a
 * `Uint8Array`.
 */
export type KcpSendError = -2 | -4;
/** `recv()` error: -1 nothing queued; -2 the next message is incomplete; -3 `out` is too small. */
export type KcpRecvError = -1 | -2 | -3;

/**
 * Names of the counters every `Kcp` keeps (see `Kcp.counters()`), bumped in place on the hot path
 * (core/counters.ts).
 */
export type KcpCounterName =
  /** Datagrams passed to `input`. */
  | 'inputDatagrams'
  /** `input` -1: shorter than one header. */
  | 'inputRejectedShort'
  /** `input` -1: a segment with another conv. */
  | 'inputRejectedConv'
  /** `input` -2: a `len` past the end of the datagram. */
  | 'inputRejectedLength'
  /** `input` -3: an unknown cmd. */
  | 'inputRejectedCommand'
  /** Datagrams ending in a tail shorter than a header (ignored, as in C). */
  | 'inputTrailingBytes'
  /** PUSH beyond the receive window (dropped without ACK). */
  | 'pushOutsideWindow'
  /** PUSH already received (ACKed again, data dropped). */
  | 'pushDuplicate'
  /** ACKs dropped at `maxPendingAcks`. */
  | 'ackListFull'
  /** PUSH dropped without ACK: its payload would exceed the arena's receive budget (`KcpArena`). */
  | 'pushOverBudget'
  /** `send` -2: more than 127 fragments. */
  | 'sendTooLarge'
  /** `send` -4: `maxSendQueueSegments` reached. */
  | 'sendQueueFull'
  /** `send` -4: `maxSendBytes` or the arena's send budget (`KcpArena.maxSendBytes`) reached. */
  | 'sendOverBudget'
  /** Segments resent after their RTO expired. */
  | 'retransmitTimeout'
  /** Segments resent by fast retransmit. */
  | 'retransmitFast'
  /** Datagrams handed to `output`. */
  | 'outputDatagrams'
  /** Bytes handed to `output`. */
  | 'outputBytes';

const COUNTER_NAMES: readonly KcpCounterName[] = [
  'inputDatagrams', 'inputRejectedShort', 'inputRejectedConv', 'inputRejectedLength', 'inputRejectedCommand',
  'inputTrailingBytes', 'pushOutsideWindow', 'pushDuplicate', 'ackListFull', 'pushOverBudget', 'sendTooLarge', 'sendQueueFull',
  'sendOverBudget', 'retransmitTimeout', 'retransmitFast', 'outputDatagrams', 'outputBytes',
];

/**
 * Receives each datagram KCP wants sent (C's `output` callback). `datagram` is a view of a shared
 * scratch buffer, valid only during the call: copy it to keep it. Must not throw or call back into
 * the same `Kcp`; flushing other `Kcp`s is fine (nested flushes write to other buffers).
 */
export type KcpOutput = (datagram: Uint8Array) => void;

/** Construction options. Every field is optional; defaults are those of ikcp.c. */
export interface KcpOptions {
  /** Datagram size limit in bytes, 50..65535 (default 1400). */
  mtu?: number;
  /** Send window in segments, 1..65535 (default 32). */
  sndWnd?: number;
  /** Receive window in segments; raised to at least 128, at most 65535 (default 128). */
  rcvWnd?: number;
  /** 0 normal; 1 RTO ×1.5 backoff, minRto 30; ≥2 linear backoff, minRto 30 (default 0). */
  nodelay?: number;
  /** Internal flush interval in ms, clamped to [10, 5000] (default 100). */
  interval?: number;
  /** Fast-retransmit threshold in skipping ACK datagrams; 0 off (default 0). */
  resend?: number;
  /** True turns congestion control off ("nc"; window = min(sndWnd, peer's window)) (default false). */
  nc?: boolean;
  /** Stream mode: no message boundaries, frg always 0 (default false = message mode). */
  stream?: boolean;
  /** Minimum RTO in ms, applied after `nodelay` (default 100, or 30 when nodelay ≥ 1). */
  minRto?: number;
  /** Fast retransmit only while a segment was sent at most this often; ≤0 unlimited (default 5). */
  fastLimit?: number;
  /** Transmissions of one segment that mark the link dead (default 20). */
  deadLink?: number;
  /** Upstream 2024-04 `IKCP_FASTACK_CONSERVE`: count skips only against older-ts segments (default false). */
  fastAckConserve?: boolean;
  /** Upstream 2023-05: `send` returns bytes accepted; stream mode keeps a partial append (default false). */
  sendReturnsBytes?: boolean;
  /** Bound on queued, not yet windowed segments; `send` returns -4 at the limit (default 65536; Infinity = C). */
  maxSendQueueSegments?: number;
  /** Bound on ACKs waiting for the next flush; further ACKs are dropped and counted (default 65536). */
  maxPendingAcks?: number;
  /**
   * Bound on what this `Kcp` holds to send (queued and unacknowledged payload plus `KCP_SEGMENT_BYTES`
   * per segment, see `sendBytes`), bytes; `send` returns -4 beyond it (default Infinity = C). A host
   * sets it so that no session takes the whole of a shared arena's send budget.
   */
  maxSendBytes?: number;
  /**
   * Where payload copies and datagram scratch live, with the budgets (`KcpArena`). A host passes one
   * arena to all its `Kcp`s; by default each `Kcp` gets its own (8 MiB receive budget, no send budget).
   */
  arena?: KcpArena;
}

/** One segment on a send or receive queue. Fields are C's `IKCPSEG`. */
class Segment implements SlabCopy {
  sn = 0;
  frg: number;
  ts = 0;
  resendts = 0;
  rto = 0;
  fastack = 0;
  xmit = 0;
  len: number;
  /** Payload; on the send queue it may be longer than `len` (stream-mode spare room). */
  data: Uint8Array;
  /** The arena slab `data` lies in (released once), or undefined. */
  slab: Slab | undefined = undefined;
  /** Bytes held in the arena (see `SlabCopy.held`). */
  held = 0;

  constructor(len: number, frg: number) {
    this.data = EMPTY;
    this.len = len;
    this.frg = frg;
  }
}

function intArg(name: string, v: number, lo: number, hi: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new GamewireError('invalid-argument', `${name} must be an integer in [${lo}, ${hi}], got ${String(v)}`);
  }
  return v;
}

function clockArg(now: number): number {
  if (typeof now !== 'number' || !Number.isFinite(now)) {
    throw new GamewireError('invalid-argument', `now must be a finite number of ms, got ${String(now)}`);
  }
  return now >>> 0;
}

/**
 * A KCP control block, wire- and behaviour-compatible with the reference C KCP (the ikcp.c bundled
 * in node-kcp 1.0.13) and sans-IO: it never reads a clock or touches a socket.
 *
 * Drive contract (as ikcp): call `update(now)` repeatedly (every `interval` ms, or at `check(now)`);
 * feed received datagrams to `input()`; queue data with `send()` and drain it with `recv()`. Datagrams
 * leave only from a flush (inside `update`, or `flush()`), through the `output` callback. `now` is u32
 * milliseconds (any number is reduced modulo 2^32); `input` and `flush` use the clock of the last
 * `update` unless given `now`. Return codes are C's; see docs/kcp.md.
 */
export class Kcp {
  /** Conversation id (u32); datagrams with another conv are refused by `input`. */
  readonly conv: number;
  /** @internal Named event counts, bumped in place on the hot path; read them with `counters()`. */
  readonly stats = newCounters<KcpCounterName>(COUNTER_NAMES);
  /** Upstream 2024-04 conservative fast-ack (see `KcpOptions.fastAckConserve`). */
  readonly fastAckConserve: boolean;
  /** Upstream 2023-05 byte-count `send` (see `KcpOptions.sendReturnsBytes`). */
  readonly sendReturnsBytes: boolean;
  /** Bound on the send queue in segments (see `KcpOptions.maxSendQueueSegments`). */
  readonly maxSendQueueSegments: number;
  /** Bound on pending ACKs (see `KcpOptions.maxPendingAcks`). */
  readonly maxPendingAcks: number;
  /** Bound on what this `Kcp` holds to send, bytes (see `KcpOptions.maxSendBytes`). */
  readonly maxSendBytes: number;
  // A send budget applies (this Kcp's or its arena's): only then are records charged to the send pool.
  private readonly sendBudgeted: boolean;
  /** Where this `Kcp`'s payload copies and scratch buffers live (see `KcpOptions.arena`). */
  readonly arena: KcpArena;

  private readonly output: KcpOutput;

  private mtu_ = KCP_MTU_DEFAULT;
  private mss_ = KCP_MTU_DEFAULT - KCP_OVERHEAD;
  private state_ = 0;
  private sndUna_ = 0;
  private sndNxt_ = 0;
  private rcvNxt_ = 0;
  private ssthresh_ = THRESH_INIT;
  private rxRttval_ = 0;
  private rxSrtt_ = 0;
  private rxRto_ = KCP_RTO_DEFAULT;
  private rxMinrto_ = KCP_RTO_MIN;
  private sndWnd_ = KCP_WND_SND;
  private rcvWnd_ = KCP_WND_RCV;
  private rmtWnd_ = KCP_WND_RCV;
  private cwnd_ = 0;
  private incr_ = 0;
  private probe = 0;
  private current_ = 0;
  private interval_ = KCP_INTERVAL_DEFAULT;
  private tsFlush = KCP_INTERVAL_DEFAULT;
  private xmit_ = 0;
  private nodelay_ = 0;
  private updated = false;
  private tsProbe = 0;
  private probeWait = 0;
  private deadLink_ = KCP_DEAD_LINK_DEFAULT;
  private fastresend = 0;
  private fastlimit = KCP_FAST_LIMIT_DEFAULT;
  private nocwnd = false;
  private stream_ = false;

  // Queues and rings start small and grow to what the traffic needs (bounded by the windows and
  // maxSendQueueSegments), so an idle Kcp stays small.
  private readonly sndQueue = new Deque<Segment>(4);
  private readonly rcvQueue = new Deque<Segment>(4);
  private readonly sndBuf = new SnRing<Segment>(4);
  private readonly rcvBuf = new SnRing<Segment>(4);
  private nsndBuf = 0;
  private nrcvBuf = 0;
  // What the send queue and buffer hold: payload bytes plus KCP_SEGMENT_BYTES per segment.
  private sendHeld = 0;
  private disposed = false;
  // Set when a flush advertised a window cut by the arena's budget: the next read tells the new one.
  private memoryLimited = false;

  // Pending ACKs as (sn, ts) pairs: a list from the arena from the first one to the flush that sends
  // them (see releaseAcks).
  private acks: Uint32Array = NO_ACKS;
  private ackCount = 0;
  // Bytes of a grown list charged to the arena's receive budget (kept until dispose, as the list is).
  private acksCharged = 0;

  /**
   * @param conv conversation id, u32, equal on both ends.
   * @param output receives every datagram to send (see `KcpOutput`).
   * @param options tuning; throws `GamewireError('invalid-argument')` for out-of-range values.
   */
  constructor(conv: number, output: KcpOutput, options: KcpOptions = {}) {
    this.conv = intArg('conv', conv, 0, 0xffffffff);
    if (typeof output !== 'function') throw new GamewireError('invalid-argument', 'output must be a function');
    this.output = output;
    const o = options;
    this.fastAckConserve = o.fastAckConserve ?? false;
    this.sendReturnsBytes = o.sendReturnsBytes ?? false;
    const maxQ = o.maxSendQueueSegments ?? KCP_MAX_SEND_QUEUE_DEFAULT;
    if (maxQ !== Infinity) intArg('maxSendQueueSegments', maxQ, 1, 2 ** 31 - 1);
    this.maxSendQueueSegments = maxQ;
    this.maxPendingAcks = intArg('maxPendingAcks', o.maxPendingAcks ?? KCP_MAX_PENDING_ACKS_DEFAULT, 1, 2 ** 26);
    const maxB = o.maxSendBytes ?? Infinity;
    if (maxB !== Infinity) intArg('maxSendBytes', maxB, 1, Number.MAX_SAFE_INTEGER);
    this.maxSendBytes = maxB;
    if (o.arena !== undefined && !(o.arena instanceof KcpArena)) {
      throw new GamewireError('invalid-argument', 'arena must be a KcpArena');
    }
    this.arena = o.arena ?? new KcpArena();
    this.sendBudgeted = maxB !== Infinity || this.arena.maxSendBytes !== Infinity;
    if (o.mtu !== undefined && this.setMtu(o.mtu) !== 0) {
      throw new GamewireError('invalid-argument', `mtu must be at least ${KCP_MTU_MIN}, got ${o.mtu}`);
    }
    if (o.sndWnd !== undefined) intArg('sndWnd', o.sndWnd, 1, KCP_WND_MAX);
    if (o.rcvWnd !== undefined) intArg('rcvWnd', o.rcvWnd, 1, KCP_WND_MAX);
    this.setWndSize(o.sndWnd ?? 0, o.rcvWnd ?? 0);
    this.setNoDelay(o.nodelay ?? -1, o.interval ?? -1, o.resend ?? -1, o.nc ?? -1);
    if (o.minRto !== undefined) this.minRto = o.minRto;
    if (o.fastLimit !== undefined) this.fastLimit = o.fastLimit;
    if (o.deadLink !== undefined) this.deadLink = o.deadLink;
    if (o.stream !== undefined) this.stream = o.stream;
  }

  // ---- configuration ------------------------------------------------------------------------

  /** Datagram size limit, bytes. */
  get mtu(): number {
    return this.mtu_;
  }

  /** Largest payload per segment, bytes (mtu - 24). */
  get mss(): number {
    return this.mss_;
  }

  /** Largest message `send` accepts in message mode, bytes (127 × mss). */
  get maxMessageSize(): number {
    return KCP_MAX_FRAGMENTS * this.mss_;
  }

  /**
   * Set the MTU (`ikcp_setmtu`): returns 0, or -1 (nothing changed) when `mtu` < 50. Throws
   * `invalid-argument` for a non-integer or a value above 65535.
   */
  setMtu(mtu: number): 0 | -1 {
    intArg('mtu', mtu, -(2 ** 31), KCP_MTU_MAX);
    if (mtu < KCP_MTU_MIN) return -1;
    this.mtu_ = mtu;
    this.mss_ = mtu - KCP_OVERHEAD;
    return 0;
  }

  /**
   * Set windows in segments (`ikcp_wndsize`); a value ≤ 0 leaves that window unchanged, `rcvWnd`
   * is raised to at least 128. Returns 0. Throws `invalid-argument` above 65535 or for non-integers.
   */
  setWndSize(sndWnd: number, rcvWnd: number): 0 {
    intArg('sndWnd', sndWnd, -(2 ** 31), KCP_WND_MAX);
    intArg('rcvWnd', rcvWnd, -(2 ** 31), KCP_WND_MAX);
    if (sndWnd > 0) this.sndWnd_ = sndWnd;
    if (rcvWnd > 0) this.rcvWnd_ = Math.max(rcvWnd, KCP_WND_RCV);
    return 0;
  }

  /**
   * `ikcp_nodelay`: each negative argument leaves that knob unchanged. `nodelay` 0/1/2 (also resets
   * minRto to 100 or 30), `interval` ms clamped to [10, 5000], `resend` fast-retransmit threshold
   * (0 off), `nc` true/non-zero = congestion window off. Returns 0.
   */
  setNoDelay(nodelay: number, interval: number, resend: number, nc: number | boolean): 0 {
    const max = 2 ** 31 - 1;
    intArg('nodelay', nodelay, -(2 ** 31), max);
    intArg('interval', interval, -(2 ** 31), max);
    intArg('resend', resend, -(2 ** 31), max);
    if (nodelay >= 0) {
      this.nodelay_ = nodelay;
      this.rxMinrto_ = nodelay !== 0 ? KCP_RTO_NODELAY : KCP_RTO_MIN;
    }
    if (interval >= 0) this.interval_ = Math.min(5000, Math.max(10, interval));
    if (resend >= 0) this.fastresend = resend;
    if (typeof nc === 'boolean') this.nocwnd = nc;
    else if (intArg('nc', nc, -(2 ** 31), max) >= 0) this.nocwnd = nc !== 0;
    return 0;
  }

  /** Set the flush interval in ms (`ikcp_interval`), clamped to [10, 5000]. Returns 0. */
  setUpdateInterval(interval: number): 0 {
    intArg('interval', interval, -(2 ** 31), 2 ** 31 - 1);
    this.interval_ = Math.min(5000, Math.max(10, interval));
    return 0;
  }

  /** Flush interval, ms. */
  get interval(): number {
    return this.interval_;
  }

  /** Current nodelay level (0, 1, 2…). */
  get nodelay(): number {
    return this.nodelay_;
  }

  /** Fast-retransmit threshold (`fastresend`); 0 = off. */
  get resend(): number {
    return this.fastresend;
  }

  /** True when the congestion window is ignored (`nocwnd`). */
  get nc(): boolean {
    return this.nocwnd;
  }

  /** Stream mode (`kcp->stream`): no message boundaries; `recv` returns one segment per call. */
  get stream(): boolean {
    return this.stream_;
  }

  set stream(on: boolean) {
    if (typeof on !== 'boolean') throw new GamewireError('invalid-argument', 'stream must be a boolean');
    this.stream_ = on;
  }

  /** Lower bound of the RTO, ms (`rx_minrto`); `setNoDelay` resets it. */
  get minRto(): number {
    return this.rxMinrto_;
  }

  set minRto(ms: number) {
    this.rxMinrto_ = intArg('minRto', ms, 0, 2 ** 31 - 1);
  }

  /** Fast retransmit allowed while a segment's transmissions ≤ this; ≤ 0 = unlimited (`fastlimit`). */
  get fastLimit(): number {
    return this.fastlimit;
  }

  set fastLimit(n: number) {
    this.fastlimit = intArg('fastLimit', n, -(2 ** 31), 2 ** 31 - 1);
  }

  /** Transmissions of one segment that set `state` to dead (`dead_link`). */
  get deadLink(): number {
    return this.deadLink_;
  }

  set deadLink(n: number) {
    this.deadLink_ = intArg('deadLink', n, 0, 0xffffffff);
  }

  // ---- state (read-only) --------------------------------------------------------------------

  /** 0, or `KCP_STATE_DEAD` (0xFFFFFFFF) once a segment was sent `deadLink` times. Never resets. */
  get state(): number {
    return this.state_;
  }

  /** True once `state` is dead. KCP keeps retransmitting; the application decides what to do. */
  get isDeadLink(): boolean {
    return this.state_ !== 0;
  }

  /** Send window, segments. */
  get sndWnd(): number {
    return this.sndWnd_;
  }

  /** Receive window, segments. */
  get rcvWnd(): number {
    return this.rcvWnd_;
  }

  /** Peer's last advertised free window, segments. */
  get rmtWnd(): number {
    return this.rmtWnd_;
  }

  /** Congestion window, segments (ignored when `nc`). */
  get cwnd(): number {
    return this.cwnd_;
  }

  /** Slow-start threshold, segments. */
  get ssthresh(): number {
    return this.ssthresh_;
  }

  /** Current retransmission timeout, ms. */
  get rxRto(): number {
    return this.rxRto_;
  }

  /** Smoothed RTT, ms (0 before the first sample). */
  get rxSrtt(): number {
    return this.rxSrtt_;
  }

  /** RTT variation, ms. */
  get rxRttval(): number {
    return this.rxRttval_;
  }

  /** Oldest unacknowledged sequence number (u32). */
  get sndUna(): number {
    return this.sndUna_;
  }

  /** Next sequence number to assign (u32). */
  get sndNxt(): number {
    return this.sndNxt_;
  }

  /** Next sequence number expected from the peer (u32). */
  get rcvNxt(): number {
    return this.rcvNxt_;
  }

  /** Clock of the last `update` (or `input`/`flush` given `now`), u32 ms. */
  get current(): number {
    return this.current_;
  }

  /** Timeout retransmissions so far (`kcp->xmit`). */
  get xmit(): number {
    return this.xmit_;
  }

  /** A copy of every counter (bad input, drops at limits, retransmissions, output; see `KcpCounterName`). */
  counters(): Readonly<Record<KcpCounterName, number>> {
    return { ...this.stats };
  }

  /** Segments queued by `send` and not yet moved into the send window (`nsnd_que`). */
  get sndQueueLength(): number {
    return this.sndQueue.length;
  }

  /** Segments sent and not yet acknowledged (`nsnd_buf`). */
  get sndBufLength(): number {
    return this.nsndBuf;
  }

  /** In-order segments waiting for `recv` (`nrcv_que`). */
  get rcvQueueLength(): number {
    return this.rcvQueue.length;
  }

  /** Out-of-order segments held for reassembly (`nrcv_buf`). */
  get rcvBufLength(): number {
    return this.nrcvBuf;
  }

  /** ACKs received PUSHes are owed, waiting for the next flush (or `flushAcks`). */
  get pendingAckCount(): number {
    return this.ackCount;
  }

  /** Segments waiting to be sent or acknowledged (`ikcp_waitsnd`). */
  waitSnd(): number {
    return this.nsndBuf + this.sndQueue.length;
  }

  /**
   * Bytes waiting to be sent or acknowledged, as `maxSendBytes` counts them: payload plus
   * `KCP_SEGMENT_BYTES` per segment.
   */
  get sendBytes(): number {
    return this.sendHeld;
  }

  // ---- application side ---------------------------------------------------------------------

  /**
   * Queue `data` for sending (`ikcp_send`); the bytes are copied. Returns 0 (or, with
   * `sendReturnsBytes`, the bytes accepted) or a `KcpSendError`. Nothing leaves before the next flush.
   */
  send(data: Uint8Array): number {
    if (!(data instanceof Uint8Array)) throw new GamewireError('invalid-argument', 'send() takes a Uint8Array');
    if (this.disposed) throw new GamewireError('closed', 'send() after dispose()');
    const mss = this.mss_;
    let len = data.length;
    const tail = this.stream_ ? this.sndQueue.back() : undefined;
    const extend = tail !== undefined && tail.len < mss ? Math.min(len, mss - tail.len) : 0;

    const rest = len - extend;
    const count = this.stream_ && rest <= 0 ? 0 : rest <= mss ? 1 : Math.ceil(rest / mss);
    if (count < KCP_WND_RCV && this.sndQueue.length + count > this.maxSendQueueSegments) {
      this.stats.sendQueueFull++;
      return -4;
    }
    const pool = this.arena.send;
    const segs = count < KCP_WND_RCV ? count : 0;
    const grow = extend > 0 && tail!.len + extend > tail!.data.length ? this.grownSize(tail!, extend) : 0;
    // Memory is checked before anything changes: a refused send queues nothing, not even a top-up.
    if (this.sendBudgeted && !this.chargeSend(extend + (segs > 0 ? rest : 0), segs, grow)) return this.overBudget(len);

    if (segs > 0) {
      // One slab copy per segment, so a long message needs no buffer of its own.
      for (let i = 0, off = extend; i < count; i++) {
        const size = Math.min(mss, len - off);
        const seg = new Segment(size, this.stream_ ? 0 : count - i - 1);
        if (size > 0 && !pool.copy(seg, data, off, off + size, true)) return this.unsend(i, segs, grow, len);
        this.sndQueue.push(seg);
        off += size;
      }
      this.sendHeld += rest + segs * KCP_SEGMENT_BYTES;
    }
    if (extend > 0) {
      this.appendToTail(tail!, data, extend, grow);
      len = rest;
    }
    if (this.stream_ && len <= 0) return this.sendReturnsBytes ? extend : 0;
    if (count >= KCP_WND_RCV) {
      this.stats.sendTooLarge++;
      return this.sendReturnsBytes && this.stream_ && extend > 0 ? extend : -2;
    }
    return this.sendReturnsBytes ? data.length : 0;
  }

  // Under a send budget: `bytes` of payload in `segs` new segments (and `grow` bytes for a stream
  // top-up's larger buffer) fit this Kcp's share and, charged, the arena's budget.
  private chargeSend(bytes: number, segs: number, grow: number): boolean {
    if (this.sendHeld + bytes + segs * KCP_SEGMENT_BYTES > this.maxSendBytes) return false;
    const pool = this.arena.send;
    if (grow > 0 && !pool.charge(grow, true)) return false;
    if (segs > 0 && !pool.charge(segs * KCP_SEGMENT_BYTES, true)) {
      pool.uncharge(grow);
      return false;
    }
    return true;
  }

  // The copy of a message's segment `i` found no room: give back the `i` copied before it and the charges.
  private unsend(i: number, segs: number, grow: number, bytes: number): -4 {
    const pool = this.arena.send;
    for (let j = 0; j < i; j++) pool.release(this.sndQueue.pop()!);
    if (this.sendBudgeted) pool.uncharge(grow + segs * KCP_SEGMENT_BYTES);
    return this.overBudget(bytes);
  }

  private overBudget(bytes: number): -4 {
    this.stats.sendOverBudget++;
    this.arena.countSendRefused(bytes);
    return -4;
  }

  private grownSize(tail: Segment, extend: number): number {
    return Math.min(this.mss_, Math.max(tail.len + extend, tail.data.length * 2, 64));
  }

  // `grow` bytes (0: none needed) were charged to the send pool for the grown buffer.
  private appendToTail(tail: Segment, data: Uint8Array, extend: number, grow: number): void {
    const need = tail.len + extend;
    if (grow > 0) {
      const grown = new Uint8Array(grow);
      grown.set(tail.len === tail.data.length ? tail.data : tail.data.subarray(0, tail.len));
      const pool = this.arena.send;
      pool.release(tail);
      if (this.sendBudgeted) pool.uncharge(grow);
      pool.adopt(tail, grown);
    }
    tail.data.set(extend === data.length ? data : data.subarray(0, extend), tail.len);
    tail.len = need;
    tail.frg = 0;
    this.sendHeld += extend;
  }

  /**
   * Size in bytes of the next message `recv` would return, or -1 if none is complete
   * (`ikcp_peeksize`). In stream mode: the next segment's size.
   */
  peekSize(): number {
    const q = this.rcvQueue;
    if (q.length === 0) return -1;
    const head = q.at(0);
    if (head.frg === 0) return head.len;
    if (q.length < head.frg + 1) return -1;
    let length = 0;
    for (let i = 0; i < q.length; i++) {
      const seg = q.at(i);
      length += seg.len;
      if (seg.frg === 0) break;
    }
    return length;
  }

  /**
   * Copy the next message into `out` and return its length (`ikcp_recv`), or a `KcpRecvError`.
   * In stream mode each call returns one segment (up to mss bytes).
   */
  recv(out: Uint8Array): number {
    if (!(out instanceof Uint8Array)) throw new GamewireError('invalid-argument', 'recv() takes a Uint8Array');
    if (this.rcvQueue.length === 0) return -1;
    const size = this.peekSize();
    if (size < 0) return -2;
    if (size > out.length) return -3;
    this.consume(out);
    return size;
  }

  /**
   * The next message as a new `Uint8Array` that the caller owns, or `undefined` when none is
   * complete. Same effects as `recv`.
   */
  recvMessage(): Uint8Array | undefined {
    const size = this.peekSize();
    if (size < 0) return undefined;
    const head = this.rcvQueue.at(0);
    if (head.frg === 0) return this.consume(undefined);
    const out = new Uint8Array(size);
    this.consume(out);
    return out;
  }

  // Remove one message from rcv_queue (into `out` if given, else the caller gets the single segment's
  // bytes to own), refill from rcv_buf, maybe tell our window.
  private consume(out: Uint8Array | undefined): Uint8Array {
    const q = this.rcvQueue;
    const pool = this.arena.receive;
    const recover = q.length >= this.rcvWnd_;
    let first: Uint8Array = EMPTY;
    let len = 0;
    while (q.length > 0) {
      const seg = q.shift()!;
      if (out !== undefined) out.set(seg.data, len);
      // A slab view is copied: the slab is reused once its copies are released.
      else first = seg.slab === undefined ? seg.data : seg.data.slice();
      pool.release(seg, KCP_SEGMENT_BYTES);
      len += seg.len;
      if (seg.frg === 0) break;
    }
    this.moveRcvBuf();
    if ((recover || this.memoryLimited) && q.length < this.rcvWnd_) this.probe |= ASK_TELL;
    this.memoryLimited = false;
    return first;
  }

  private moveRcvBuf(): void {
    const q = this.rcvQueue;
    while (this.nrcvBuf > 0 && q.length < this.rcvWnd_) {
      const seg = this.rcvBuf.get(this.rcvNxt_);
      if (seg === undefined) break;
      this.rcvBuf.clear(seg.sn);
      this.nrcvBuf--;
      q.push(seg);
      this.rcvNxt_ = u32Add(this.rcvNxt_, 1);
    }
  }

  // ---- network side -------------------------------------------------------------------------

  /**
   * Process one received datagram (`ikcp_input`). Returns a `KcpInputResult`; never throws on bad
   * bytes. As in C, segments before a bad one in the same datagram have already taken effect, and
   * trailing bytes shorter than a header are ignored. RTT samples use the clock of the last
   * `update`, or `now` when given (which also becomes the current clock).
   */
  input(data: Uint8Array, now?: number): KcpInputResult {
    if (!(data instanceof Uint8Array)) throw new GamewireError('invalid-argument', 'input() takes a Uint8Array');
    if (this.disposed) throw new GamewireError('closed', 'input() after dispose()');
    if (now !== undefined) this.current_ = clockArg(now);
    const c = this.stats;
    c.inputDatagrams++;
    const size = data.length;
    if (size < KCP_OVERHEAD) {
      c.inputRejectedShort++;
      return -1;
    }
    const prevUna = this.sndUna_;
    let flag = false;
    let maxack = 0;
    let latestTs = 0;
    let off = 0;
    while (size - off >= KCP_OVERHEAD) {
      if (readU32LE(data, off) !== this.conv) {
        c.inputRejectedConv++;
        return -1;
      }
      const cmd = data[off + 4]!;
      const frg = data[off + 5]!;
      const wnd = data[off + 6]! | (data[off + 7]! << 8);
      const ts = readU32LE(data, off + 8);
      const sn = readU32LE(data, off + 12);
      const una = readU32LE(data, off + 16);
      const len = readU32LE(data, off + 20);
      off += KCP_OVERHEAD;
      if (len > size - off) {
        c.inputRejectedLength++;
        return -2;
      }
      if (cmd < KcpCommand.PUSH || cmd > KcpCommand.WINS) {
        c.inputRejectedCommand++;
        return -3;
      }
      this.rmtWnd_ = wnd;
      this.parseUna(una);

      if (cmd === KcpCommand.ACK) {
        const rtt = timeDiff32(this.current_, ts);
        if (rtt >= 0) this.updateAck(rtt);
        this.parseAck(sn);
        if (!flag) {
          flag = true;
          maxack = sn;
          latestTs = ts;
        } else if (timeDiff32(sn, maxack) > 0 && (!this.fastAckConserve || timeDiff32(ts, latestTs) > 0)) {
          maxack = sn;
          latestTs = ts;
        }
      } else if (cmd === KcpCommand.PUSH) {
        this.parsePush(data, off, frg, ts, sn, len);
      } else if (cmd === KcpCommand.WASK) {
        this.probe |= ASK_TELL;
      }
      off += len;
    }
    if (off < size) c.inputTrailingBytes++;
    if (flag) this.parseFastack(maxack, latestTs);
    if (timeDiff32(this.sndUna_, prevUna) > 0) this.growCwnd();
    return 0;
  }

  private parsePush(data: Uint8Array, off: number, frg: number, ts: number, sn: number, len: number): void {
    if (timeDiff32(sn, u32Add(this.rcvNxt_, this.rcvWnd_)) >= 0) {
      this.stats.pushOutsideWindow++;
      return;
    }
    if (timeDiff32(sn, this.rcvNxt_) < 0 || this.rcvBuf.get(sn) !== undefined) {
      this.pushAck(sn, ts);
      this.stats.pushDuplicate++;
      return;
    }
    const seg = new Segment(len, frg);
    // Not acknowledged when refused, so the peer sends it again. Only the segment that fills the gap
    // at rcvNxt is urgent: later ones, held and already acknowledged, free nothing until it arrives,
    // so they must not take the room it needs (see SlabPool). Its record is charged too, so that
    // empty segments cannot be held without limit.
    const pool = this.arena.receive;
    const urgent = sn === this.rcvNxt_;
    if (len > 0 ? !pool.copy(seg, data, off, off + len, urgent, KCP_SEGMENT_BYTES) : !pool.charge(KCP_SEGMENT_BYTES, urgent)) {
      this.refused(len);
      return;
    }
    this.pushAck(sn, ts);
    seg.sn = sn;
    seg.ts = ts;
    // Every sn held lies in [rcvNxt, sn]; rcvNxt only grows, so this keeps them in distinct slots.
    this.rcvBuf.reserve(u32(sn - this.rcvNxt_) + 1);
    this.rcvBuf.set(seg);
    this.nrcvBuf++;
    this.moveRcvBuf();
  }

  private refused(len: number): void {
    this.stats.pushOverBudget++;
    this.arena.countDrop(len);
  }

  private pushAck(sn: number, ts: number): void {
    const n = this.ackCount;
    if (n >= this.maxPendingAcks) {
      this.stats.ackListFull++;
      return;
    }
    if (2 * n + 2 > this.acks.length) {
      if (n === 0) {
        this.acks = this.arena.takeAckList();
      } else {
        // A grown list is the peer's doing (every PUSH in the window is acknowledged, duplicates
        // too): it is charged to the receive budget, like data held for the peer.
        const size = Math.min(this.acks.length * 2, 2 * this.maxPendingAcks);
        const more = (size - this.acks.length) * 4;
        if (!this.arena.receive.charge(more)) {
          this.stats.ackListFull++;
          return;
        }
        this.acksCharged += more;
        const grown = new Uint32Array(size);
        grown.set(this.acks);
        this.acks = grown;
      }
    }
    this.acks[2 * n] = sn;
    this.acks[2 * n + 1] = ts;
    this.ackCount = n + 1;
  }

  // RFC 6298 shape in C's integer types: IINT32 fields, wrapping products, unsigned clamps.
  private updateAck(rtt: number): void {
    if (this.rxSrtt_ === 0) {
      this.rxSrtt_ = rtt;
      this.rxRttval_ = rtt >> 1;
    } else {
      const delta = Math.abs(rtt - this.rxSrtt_);
      this.rxRttval_ = Math.trunc((Math.imul(3, this.rxRttval_) + delta) / 4);
      this.rxSrtt_ = Math.trunc(((Math.imul(7, this.rxSrtt_) + rtt) | 0) / 8);
      if (this.rxSrtt_ < 1) this.rxSrtt_ = 1;
    }
    const rto = u32Add(this.rxSrtt_, Math.max(this.interval_, u32(Math.imul(4, this.rxRttval_))));
    this.rxRto_ = Math.min(Math.max(this.rxMinrto_, rto), KCP_RTO_MAX);
  }

  // sndUna is kept equal to the lowest unacknowledged sn in sndBuf (C's shrink_buf), or sndNxt.
  private advanceUna(): void {
    const buf = this.sndBuf;
    let una = this.sndUna_;
    const nxt = this.sndNxt_;
    if (this.nsndBuf === 0) una = nxt;
    else while (una !== nxt && buf.slot(una) === undefined) una = u32Add(una, 1);
    this.sndUna_ = una;
  }

  private parseUna(una: number): void {
    const buf = this.sndBuf;
    while (this.nsndBuf > 0 && timeDiff32(una, this.sndUna_) > 0) {
      const seg = buf.slot(this.sndUna_);
      if (seg !== undefined) this.dropSent(seg);
      buf.clear(this.sndUna_);
      this.nsndBuf--;
      this.sndUna_ = u32Add(this.sndUna_, 1);
      this.advanceUna();
    }
  }

  // An acknowledged (or disposed) segment gives back its copy, its record's charge and its share.
  private dropSent(seg: Segment): void {
    this.arena.send.release(seg, this.sendBudgeted ? KCP_SEGMENT_BYTES : 0);
    this.sendHeld -= seg.len + KCP_SEGMENT_BYTES;
  }

  private parseAck(sn: number): void {
    if (timeDiff32(sn, this.sndUna_) < 0 || timeDiff32(sn, this.sndNxt_) >= 0) return;
    const seg = this.sndBuf.slot(sn);
    if (seg === undefined) return;
    this.dropSent(seg);
    this.sndBuf.clear(sn);
    this.nsndBuf--;
    if (sn === this.sndUna_) this.advanceUna();
  }

  private parseFastack(sn: number, ts: number): void {
    if (timeDiff32(sn, this.sndUna_) < 0 || timeDiff32(sn, this.sndNxt_) >= 0) return;
    const buf = this.sndBuf;
    const conserve = this.fastAckConserve;
    for (let s = this.sndUna_; s !== sn; s = u32Add(s, 1)) {
      const seg = buf.slot(s);
      if (seg !== undefined && (!conserve || timeDiff32(ts, seg.ts) >= 0)) seg.fastack = u32Add(seg.fastack, 1);
    }
  }

  // Per input datagram that advanced snd_una (not per acked segment), as C does.
  private growCwnd(): void {
    if (this.cwnd_ >= this.rmtWnd_) return;
    const mss = this.mss_;
    if (this.cwnd_ < this.ssthresh_) {
      this.cwnd_ = u32Add(this.cwnd_, 1);
      this.incr_ = u32Add(this.incr_, mss);
    } else {
      if (this.incr_ < mss) this.incr_ = mss;
      this.incr_ = u32Add(this.incr_, Math.floor(u32Mul(mss, mss) / this.incr_) + (mss >>> 4));
      if (u32Mul(u32Add(this.cwnd_, 1), mss) <= this.incr_) {
        this.cwnd_ = Math.floor(u32Add(this.incr_, mss - 1) / mss);
      }
    }
    if (this.cwnd_ > this.rmtWnd_) {
      this.cwnd_ = this.rmtWnd_;
      this.incr_ = u32Mul(this.rmtWnd_, mss);
    }
  }

  // ---- clock --------------------------------------------------------------------------------

  /**
   * Advance the clock to `now` (u32 ms) and flush if an interval has passed (`ikcp_update`).
   * A jump of 10 s or more either way resynchronises the flush schedule.
   */
  update(now: number): void {
    this.current_ = clockArg(now);
    if (!this.updated) {
      this.updated = true;
      this.tsFlush = this.current_;
    }
    let slap = timeDiff32(this.current_, this.tsFlush);
    if (slap >= 10000 || slap < -10000) {
      this.tsFlush = this.current_;
      slap = 0;
    }
    if (slap >= 0) {
      this.tsFlush = u32Add(this.tsFlush, this.interval_);
      if (timeDiff32(this.current_, this.tsFlush) >= 0) this.tsFlush = u32Add(this.current_, this.interval_);
      this.flush();
    }
  }

  /**
   * When `update` must next be called, as an absolute u32 ms time (`ikcp_check`): `now` itself
   * if due, else at most `interval` ahead. Pending ACKs and newly sent data are not considered,
   * so call `update`/`flush` after `input` and `send`.
   */
  check(now: number): number {
    const current = clockArg(now);
    if (!this.updated) return current;
    let tsFlush = this.tsFlush;
    const slap = timeDiff32(current, tsFlush);
    if (slap >= 10000 || slap < -10000) tsFlush = current;
    if (timeDiff32(current, tsFlush) >= 0) return current;
    const tmFlush = timeDiff32(tsFlush, current);
    let tmPacket = 0x7fffffff;
    const buf = this.sndBuf;
    for (let s = this.sndUna_; s !== this.sndNxt_; s = u32Add(s, 1)) {
      const seg = buf.slot(s);
      if (seg === undefined) continue;
      const diff = timeDiff32(seg.resendts, current);
      if (diff <= 0) return current;
      if (diff < tmPacket) tmPacket = diff;
    }
    let minimal = Math.min(tmPacket, tmFlush);
    if (minimal >= this.interval_) minimal = this.interval_;
    return u32Add(current, minimal);
  }

  // ---- flush --------------------------------------------------------------------------------

  private emit(buffer: Uint8Array, size: number): void {
    if (size === 0) return;
    this.stats.outputDatagrams++;
    this.stats.outputBytes += size;
    this.output(buffer.subarray(0, size));
  }

  private wndUnused(): number {
    const n = this.rcvQueue.length;
    const wnd = n < this.rcvWnd_ ? this.rcvWnd_ - n : 0;
    // Above C: near the arena's receive budget, advertise what it can still hold (at least one
    // segment, so the peer keeps probing with data rather than waiting 7 s for a window probe).
    const pool = this.arena.receive;
    const room = pool.urgentBytes - pool.inUse;
    const per = this.mss_ + KCP_SEGMENT_BYTES;
    if (room >= wnd * per) return wnd;
    this.memoryLimited = true;
    return Math.max(wnd === 0 ? 0 : 1, Math.floor(room / per));
  }

  // The ACK part of ikcp_flush: writes the pending ACKs from offset 0, emitting each full datagram,
  // clears the list and returns the bytes left in `buffer`.
  private writeAcks(buffer: Uint8Array, wnd: number, una: number): number {
    const conv = this.conv;
    const mtu = this.mtu_;
    const acks = this.acks;
    let ptr = 0;
    for (let i = 0, n = this.ackCount; i < n; i++) {
      if (ptr + KCP_OVERHEAD > mtu) {
        this.emit(buffer, ptr);
        ptr = 0;
      }
      writeHeader(buffer, ptr, conv, KcpCommand.ACK, 0, wnd, acks[2 * i + 1]!, acks[2 * i]!, una, 0);
      ptr += KCP_OVERHEAD;
    }
    this.ackCount = 0;
    return ptr;
  }

  // After the outermost flush on the arena, when no ACK loop of any Kcp on it is still reading a
  // list. A grown list stays: its Kcp had more than 8 ACKs in one flush, and would grow one again.
  private releaseAcks(): void {
    if (this.ackCount !== 0 || this.acks.length !== ACK_LIST_ENTRIES) return;
    this.arena.giveAckList(this.acks);
    this.acks = NO_ACKS;
  }

  /**
   * Send only the pending ACKs, now (above C parity: ikcp has no such call). The ACK segments are
   * byte for byte those the next `flush` would have written first, packed into datagrams the same
   * way, except that the last datagram ends after the last ACK instead of carrying probes or data.
   * Nothing else changes: no data, probe or window segment is sent, no timer or window moves.
   * Does nothing before the first `update` (like `flush`); `now`, if given, becomes the clock.
   */
  flushAcks(now?: number): void {
    if (now !== undefined) this.current_ = clockArg(now);
    if (!this.updated || this.ackCount === 0) return;
    const arena = this.arena;
    const depth = arena.depth++;
    try {
      const buffer = arena.scratchAt(depth, this.mtu_);
      this.emit(buffer, this.writeAcks(buffer, this.wndUnused(), this.rcvNxt_));
    } finally {
      arena.depth = depth;
    }
    if (depth === 0) this.releaseAcks();
  }

  /**
   * Send pending ACKs, window probes and every data segment that is due (`ikcp_flush`); does
   * nothing before the first `update`. `now`, if given, first becomes the current clock (C's
   * flush always uses the clock of the last `update`).
   */
  flush(now?: number): void {
    if (now !== undefined) this.current_ = clockArg(now);
    if (!this.updated) return;
    const arena = this.arena;
    const depth = arena.depth++;
    try {
      this.flushWith(depth);
    } finally {
      arena.depth = depth;
    }
    if (depth === 0) this.releaseAcks();
  }

  private flushWith(depth: number): void {
    const current = this.current_;
    const conv = this.conv;
    const mtu = this.mtu_;
    let buffer = this.arena.scratchAt(depth, mtu);
    let ptr = 0;
    const wnd = this.wndUnused();
    const una = this.rcvNxt_;

    // C encodes WASK/WINS from the same scratch segment as the ACKs, so they carry the last ACK's sn/ts.
    let lastSn = 0;
    let lastTs = 0;
    const nAcks = this.ackCount;
    if (nAcks > 0) {
      lastSn = this.acks[2 * nAcks - 2]!;
      lastTs = this.acks[2 * nAcks - 1]!;
      ptr = this.writeAcks(buffer, wnd, una);
    }

    if (this.rmtWnd_ === 0) {
      if (this.probeWait === 0) {
        this.probeWait = KCP_PROBE_INIT;
        this.tsProbe = u32Add(current, this.probeWait);
      } else if (timeDiff32(current, this.tsProbe) >= 0) {
        if (this.probeWait < KCP_PROBE_INIT) this.probeWait = KCP_PROBE_INIT;
        this.probeWait = Math.min(this.probeWait + Math.floor(this.probeWait / 2), KCP_PROBE_LIMIT);
        this.tsProbe = u32Add(current, this.probeWait);
        this.probe |= ASK_SEND;
      }
    } else {
      this.tsProbe = 0;
      this.probeWait = 0;
    }
    for (const [bit, cmd] of PROBE_SEGMENTS) {
      if ((this.probe & bit) === 0) continue;
      if (ptr + KCP_OVERHEAD > mtu) {
        this.emit(buffer, ptr);
        ptr = 0;
      }
      writeHeader(buffer, ptr, conv, cmd, 0, wnd, lastTs, lastSn, una, 0);
      ptr += KCP_OVERHEAD;
    }
    this.probe = 0;

    let cwnd = Math.min(this.sndWnd_, this.rmtWnd_);
    if (!this.nocwnd) cwnd = Math.min(this.cwnd_, cwnd);

    const sndBuf = this.sndBuf;
    const sndQueue = this.sndQueue;
    while (sndQueue.length > 0 && timeDiff32(this.sndNxt_, u32Add(this.sndUna_, cwnd)) < 0) {
      const seg = sndQueue.shift()!;
      if (seg.data.length !== seg.len) seg.data = seg.data.subarray(0, seg.len);
      seg.sn = this.sndNxt_;
      seg.ts = current;
      seg.resendts = current;
      seg.rto = this.rxRto_;
      seg.fastack = 0;
      seg.xmit = 0;
      this.sndNxt_ = u32Add(this.sndNxt_, 1);
      sndBuf.reserve(u32(this.sndNxt_ - this.sndUna_));
      sndBuf.set(seg);
      this.nsndBuf++;
    }

    const resent = this.fastresend > 0 ? this.fastresend : 0xffffffff;
    const rtomin = this.nodelay_ === 0 ? this.rxRto_ >> 3 : 0;
    const rxRto = this.rxRto_;
    const nodelay = this.nodelay_;
    const fastlimit = this.fastlimit;
    let change = false;
    let lost = false;

    for (let s = this.sndUna_, end = this.sndNxt_; s !== end; s = u32Add(s, 1)) {
      const seg = sndBuf.slot(s);
      if (seg === undefined) continue;
      if (seg.xmit === 0) {
        seg.xmit = 1;
        seg.rto = rxRto;
        seg.resendts = u32Add(u32Add(current, seg.rto), rtomin);
      } else if (timeDiff32(current, seg.resendts) >= 0) {
        seg.xmit = u32Add(seg.xmit, 1);
        this.xmit_ = u32Add(this.xmit_, 1);
        if (nodelay === 0) {
          seg.rto = u32Add(seg.rto, Math.max(seg.rto, rxRto));
        } else {
          const step = nodelay < 2 ? seg.rto | 0 : rxRto;
          seg.rto = u32Add(seg.rto, Math.trunc(step / 2));
        }
        seg.resendts = u32Add(current, seg.rto);
        lost = true;
        this.stats.retransmitTimeout++;
      } else if (seg.fastack >= resent && ((seg.xmit | 0) <= fastlimit || fastlimit <= 0)) {
        seg.xmit = u32Add(seg.xmit, 1);
        seg.fastack = 0;
        seg.resendts = u32Add(current, seg.rto);
        change = true;
        this.stats.retransmitFast++;
      } else {
        continue;
      }

      seg.ts = current;
      const need = KCP_OVERHEAD + seg.len;
      if (ptr + need > mtu) {
        this.emit(buffer, ptr);
        ptr = 0;
        if (need > buffer.length) buffer = this.arena.scratchAt(depth, need);
      }
      writeHeader(buffer, ptr, conv, KcpCommand.PUSH, seg.frg, wnd, current, seg.sn, una, seg.len);
      ptr += KCP_OVERHEAD;
      if (seg.len > 0) {
        buffer.set(seg.data, ptr);
        ptr += seg.len;
      }
      if (seg.xmit >= this.deadLink_) this.state_ = KCP_STATE_DEAD;
    }
    this.emit(buffer, ptr);

    if (change) {
      const inflight = u32(this.sndNxt_ - this.sndUna_);
      this.ssthresh_ = Math.max(Math.floor(inflight / 2), THRESH_MIN);
      this.cwnd_ = u32Add(this.ssthresh_, resent);
      this.incr_ = u32Mul(this.cwnd_, this.mss_);
    }
    if (lost) {
      this.ssthresh_ = Math.max(Math.floor(cwnd / 2), THRESH_MIN);
      this.cwnd_ = 1;
      this.incr_ = this.mss_;
    }
    if (this.cwnd_ < 1) {
      this.cwnd_ = 1;
      this.incr_ = this.mss_;
    }
  }

  /**
   * Give every payload copy this `Kcp` holds back to its arena and empty its queues (hosts call it
   * when a session ends, so a shared arena's budget is not held by dead sessions). Afterwards
   * `send` and `input` throw `GamewireError('closed')`; counters and settings stay readable.
   */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    const receive = this.arena.receive;
    const releaseSend = (seg: Segment): void => this.dropSent(seg);
    const releaseReceive = (seg: Segment): void => receive.release(seg, KCP_SEGMENT_BYTES);
    for (let seg = this.sndQueue.shift(); seg !== undefined; seg = this.sndQueue.shift()) releaseSend(seg);
    for (let seg = this.rcvQueue.shift(); seg !== undefined; seg = this.rcvQueue.shift()) releaseReceive(seg);
    this.sndBuf.drain(releaseSend);
    this.rcvBuf.drain(releaseReceive);
    this.nsndBuf = 0;
    this.nrcvBuf = 0;
    this.sndUna_ = this.sndNxt_;
    this.ackCount = 0;
    this.acks = NO_ACKS;
    receive.uncharge(this.acksCharged);
    this.acksCharged = 0;
  }

  /** True after `dispose()`. */
  get isDisposed(): boolean {
    return this.disposed;
  }

  /**
   * Test hook, unstable: start both sequence spaces at `sn` (u32) so wrap-around can be exercised
   * without sending 2^32 segments. Both peers must use the same value. Only before any send/input.
   * @internal
   */
  _startSequenceAt(sn: number): void {
    if (this.sndNxt_ !== 0 || this.rcvNxt_ !== 0 || this.sndQueue.length > 0 || this.nsndBuf > 0 || this.nrcvBuf > 0) {
      throw new GamewireError('invalid-state', '_startSequenceAt must be called before any traffic');
    }
    const v = intArg('sn', sn, 0, 0xffffffff);
    this.sndUna_ = v;
    this.sndNxt_ = v;
    this.rcvNxt_ = v;
  }
}
