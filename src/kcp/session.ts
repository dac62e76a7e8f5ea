import { addressGroup } from '../core/address-group.js';
import { newCounters, type CounterSet } from '../core/counters.js';
import type { Endpoint, Transmit } from '../core/endpoint.js';
import { checkConfig, isInt, isNum, isObject, isOneOf, isOptionalFn } from '../core/config.js';
import { checkArg, GamewireError } from '../core/errors.js';
import { Host, type HostedPeer, type PeerId } from '../core/host.js';
import { cryptoRandom, type RandomSource, randomU32 } from '../core/random.js';
import { timeDiff32, u32 } from '../core/wrap.js';
import { Kcp, KcpArena, KCP_MTU_DEFAULT, KCP_MTU_MAX, KCP_MTU_MIN, type KcpOptions } from './kcp.js';
import { KCP_OVERHEAD, KcpCommand, readU32LE, writeU32LE } from './segment.js';
import {
  cookieKeyFromBytes, decodeControl, deriveCookie, encodeAccept, encodeClose, encodeConnect, encodeRefuse,
  isWellFormedKcp, KCP_COOKIE_PREFIX, KcpRefuseReason, writeKeepAlive, type CookieKey,
} from './session-wire.js';

/**
 * `'raw'`: datagrams are plain KCP, byte for byte (talks to any KCP implementation; no handshake,
 * no cookie, no close on the wire). `'cookie'`: gamewire's handshake and 4-byte cookie prefix
 * (docs/kcp-session.md); both ends must use it.
 */
export type KcpSessionMode = 'raw' | 'cookie';

/** Why a session ended. */
export type KcpCloseReason =
  | 'local' // close() without linger, or linger finished with everything acknowledged
  | 'linger-timeout' // close({ linger: true }) gave up with data still unacknowledged
  | 'peer' // the peer sent CLOSE (cookie mode)
  | 'idle-timeout' // nothing received for idleTimeoutMs
  | 'dead-link' // a segment was sent deadLink times (deadLinkPolicy 'close')
  | 'handshake-timeout' // client: no ACCEPT within handshakeTimeoutMs
  | 'refused'; // client: the server answered REFUSE (full)

/** Lifecycle state of a session. */
export type KcpSessionState = 'connecting' | 'open' | 'closing' | 'closed';

/** Events polled from a `KcpServer` or `KcpClient`. */
export type KcpSessionEvent =
  | { type: 'open'; session: KcpSession }
  | { type: 'message'; session: KcpSession; data: Uint8Array }
  | { type: 'migrated'; session: KcpSession; from: string }
  | { type: 'dead-link'; session: KcpSession }
  | { type: 'closed'; session: KcpSession | undefined; reason: KcpCloseReason };

/** Options shared by `KcpServer` and `KcpClient`. Times in ms, sizes in bytes; 0 turns a timer off. */
export interface KcpSessionOptions {
  /** `'raw'` (default) or `'cookie'`. */
  mode?: KcpSessionMode;
  /** Largest datagram sent, bytes (default 1400). KCP's own mtu is this minus 4 in cookie mode. */
  mtu?: number;
  /**
   * Tuning of every session's `Kcp` (windows, nodelay, interval, resend, nc, stream, minRto…). An
   * `arena` given here is shared by the sessions instead of the host's own (see `maxReceiveBytes`).
   */
  kcp?: Omit<KcpOptions, 'mtu'>;
  /**
   * Received payload held by all sessions together, bytes: the budget of the one `KcpArena` the host
   * owns for every session (default 8 MiB, `KCP_ARENA_MAX_RECEIVE_BYTES_DEFAULT`). Beyond it incoming
   * data segments are dropped and counted (`arena.counters()`), and near it sessions advertise smaller
   * windows. Honest traffic needs about 2 × rcvWnd × (mss + 48) per receiving session.
   */
  maxReceiveBytes?: number;
  /**
   * What all sessions together hold to send (queued and unacknowledged payload plus 256 B per
   * segment), bytes: the send budget of the host's one `KcpArena` (default 32 MiB,
   * `KCP_HOST_MAX_SEND_BYTES_DEFAULT`). Each session may hold at most `kcp.maxSendBytes` of it
   * (`KcpServer`: 384 KiB by default, so that no session takes the budget from the others). A `send`
   * beyond either throws `queue-full` and is counted (`arena.counters().sendRefused`).
   */
  maxSendBytes?: number;
  /** Send the ACKs an input owes at once (`Kcp.flushAcks`), not at the next interval; data still waits (default false). */
  immediateAck?: boolean;
  /** Send a keep-alive probe (a KCP WASK) after this long without receiving anything (default 1000; 0 off). */
  keepAliveMs?: number;
  /** Close with `'idle-timeout'` after this long without receiving anything (default 10 000; 0 off). */
  idleTimeoutMs?: number;
  /** On KCP's dead link: `'close'` the session (default) or only emit `'dead-link'` once. */
  deadLinkPolicy?: 'close' | 'notify';
  /** `close({ linger: true })` waits at most this long for unacknowledged data (default 5000). */
  lingerTimeoutMs?: number;
  /** Datagrams waiting for `pollTransmit`; beyond it new ones are dropped and counted (default 8192). */
  maxOutboxDatagrams?: number;
  /** CSPRNG filling its argument (cookie keys, nonces, conv). Default `cryptoRandom` (`crypto.getRandomValues`). */
  random?: RandomSource;
}

/** Counter names of a `KcpServer` / `KcpClient` (sessions keep KCP's own counters: `session.kcp.counters()`). */
export type KcpHostCounter =
  | 'datagramsIn'
  | 'droppedMalformed'
  | 'droppedUnknown'
  | 'droppedBadCookie'
  | 'droppedConv'
  | 'refusedFull'
  | 'refusedAddress'
  | 'handshakes'
  | 'sessionsOpened'
  | 'sessionsClosed'
  | 'migrations'
  | 'keepAlivesSent'
  | 'outboxFull'
  | 'transmitTooLarge'
  | 'datagramsOut'
  | 'addressesValidated'
  | 'heldUnvalidated'
  | 'probesUnvalidated'
  | 'droppedUnvalidated'
  | 'sendsAfterClose';

// `datagramsIn`/`datagramsOut` are the core host's counts (`counters()` reads them there); they are listed for their place only.
const COUNTERS: readonly KcpHostCounter[] = [
  'datagramsIn', 'droppedMalformed', 'droppedUnknown', 'droppedBadCookie', 'droppedConv', 'refusedFull',
  'refusedAddress', 'handshakes', 'sessionsOpened', 'sessionsClosed', 'migrations', 'keepAlivesSent', 'outboxFull',
  'transmitTooLarge', 'datagramsOut', 'addressesValidated', 'heldUnvalidated', 'probesUnvalidated', 'droppedUnvalidated',
  'sendsAfterClose',
];

/** Copies of each CLOSE packet sent (it is unreliable; the peer's idle timeout covers all being lost). */
const CLOSE_COPIES = 3;
/** Datagrams one session may queue for an address not yet validated; beyond it new ones are dropped (KCP resends). */
const UNVALIDATED_QUEUE = 16;
/** ACKs with a ts we never sent after which an address can no longer be validated (each is a guess). */
const MAX_WRONG_PROOFS = 16;

/**
 * Raw mode, one remote address: what it has shown, shared by its sessions (the host finds them by
 * address). Until `validated`, the bytes sent to it stay within `amplificationLimit` × the bytes
 * received from it.
 */
class RawAddress {
  /** Bytes received from it (well-formed datagrams for its sessions). */
  rx = 0;
  /** Bytes sent to it while not validated. */
  tx = 0;
  /** Bytes queued for it that fitted its allowance when queued (sent before anything that waits). */
  queued = 0;
  /** It acknowledged a segment we sent: it receives at this address. */
  validated = false;
  /** ACKs that echoed no ts we sent. */
  wrong = 0;
  /** A datagram for it is waiting for more bytes from it. */
  waiting = false;
  /** `rx` when we last sent it a window probe to earn allowance (one per reply). */
  probedAt = -1;
}

interface ResolvedOptions {
  mode: KcpSessionMode;
  mtu: number;
  kcp: Omit<KcpOptions, 'mtu'>;
  immediateAck: boolean;
  keepAliveMs: number;
  idleTimeoutMs: number;
  deadLinkPolicy: 'close' | 'notify';
  lingerTimeoutMs: number;
  maxOutboxDatagrams: number;
  maxReceiveBytes: number | undefined;
  maxSendBytes: number;
  random: (out: Uint8Array) => void;
}

/** Default `KcpSessionOptions.maxSendBytes`: 32 MiB for all the sessions of a host. */
export const KCP_HOST_MAX_SEND_BYTES_DEFAULT = 32 * 1024 * 1024;
/**
 * Default `kcp.maxSendBytes` of each `KcpServer` session: 384 KiB (two send windows of full segments,
 * a 127-fragment message, or about 1,400 small messages; 64 sessions of one IP hold less than the host's 32 MiB).
 */
export const KCP_SESSION_MAX_SEND_BYTES_DEFAULT = 384 * 1024;

function ms(v: number | undefined, def: number, name: string): number {
  const x = v ?? def;
  checkConfig(isNum(x, 0), `${name} must be a finite number of ms ≥ 0`);
  return x;
}

function resolveOptions(o: KcpSessionOptions): ResolvedOptions {
  checkConfig(isObject(o), 'options must be an object');
  const mode = o.mode ?? 'raw';
  checkConfig(isOneOf(mode, ['raw', 'cookie'] as const), "mode must be 'raw' or 'cookie'");
  const mtu = o.mtu ?? KCP_MTU_DEFAULT;
  const prefix = mode === 'cookie' ? KCP_COOKIE_PREFIX : 0;
  checkConfig(isInt(mtu, KCP_MTU_MIN + prefix, KCP_MTU_MAX + prefix),
    `mtu must be an integer in [${KCP_MTU_MIN + prefix}, ${KCP_MTU_MAX + prefix}]`);
  const policy = o.deadLinkPolicy ?? 'close';
  checkConfig(isOneOf(policy, ['close', 'notify'] as const), "deadLinkPolicy must be 'close' or 'notify'");
  const maxOut = o.maxOutboxDatagrams ?? 8192;
  checkConfig(isInt(maxOut, 1), 'maxOutboxDatagrams must be an integer ≥ 1');
  checkConfig(isOptionalFn(o.random), 'random must be a function');
  const kcp = { ...(o.kcp ?? {}) };
  if ('mtu' in kcp) throw new GamewireError('invalid-config', 'set mtu on the session options, not in kcp');
  const mrb = o.maxReceiveBytes;
  checkConfig(mrb === undefined || mrb === Infinity || isInt(mrb, 0), 'maxReceiveBytes must be an integer ≥ 0 or Infinity');
  checkConfig(mrb === undefined || kcp.arena === undefined, 'give maxReceiveBytes or kcp.arena, not both');
  const msb = o.maxSendBytes;
  checkConfig(msb === undefined || msb === Infinity || isInt(msb, 0), 'maxSendBytes must be an integer ≥ 0 or Infinity');
  checkConfig(msb === undefined || kcp.arena === undefined, 'give maxSendBytes or kcp.arena, not both');
  return {
    mode, mtu, kcp, immediateAck: o.immediateAck ?? false,
    keepAliveMs: ms(o.keepAliveMs, 1000, 'keepAliveMs'),
    idleTimeoutMs: ms(o.idleTimeoutMs, 10_000, 'idleTimeoutMs'),
    deadLinkPolicy: policy,
    lingerTimeoutMs: ms(o.lingerTimeoutMs, 5000, 'lingerTimeoutMs'),
    maxOutboxDatagrams: maxOut,
    maxReceiveBytes: mrb,
    maxSendBytes: msb ?? KCP_HOST_MAX_SEND_BYTES_DEFAULT,
    random: o.random ?? cryptoRandom,
  };
}

/**
 * What the sessions of one `KcpServer` or `KcpClient` share, made once by it and handed to each
 * session: the options, the arena, the counters, the outbox budget and the latest clock. Sessions
 * read and bump this, never their host's fields.
 */
class SessionShared {
  /** The latest clock seen (ms): the reference for session deadlines after a command. */
  lastNow = -Infinity;
  /** Datagrams waiting in every session's outbox (≤ maxOutboxDatagrams). */
  queued = 0;
  /** Of those, datagrams for addresses not yet validated (raw server). */
  unvalidatedQueued = 0;
  /** Bound on `unvalidatedQueued`: a quarter of the outbox. */
  readonly maxUnvalidatedQueued: number;
  /** Raw server: bytes sent to an unvalidated address ≤ this × bytes received from it. */
  amplificationLimit = Infinity;

  constructor(
    readonly opts: ResolvedOptions,
    readonly arena: KcpArena,
    /** The host's live counters: sessions bump theirs here. */
    readonly ctr: CounterSet<KcpHostCounter>,
    /** A command left work in a session. */
    readonly touch: (s: KcpSession) => void,
    /** A session closed: its host retires it. */
    readonly closeSession: (s: KcpSession) => void,
  ) {
    this.maxUnvalidatedQueued = Math.max(1, opts.maxOutboxDatagrams >>> 2);
  }
}

/**
 * One KCP conversation inside a `KcpServer` or `KcpClient`, and the peer its host drives (updates,
 * timers, datagrams). The application sends, reads `'message'` events, and closes.
 */
export class KcpSession implements HostedPeer<KcpSessionEvent> {
  /** Conversation id (u32). */
  readonly conv: number;
  /** Cookie-mode cookie (u32, never 0), or `undefined` in raw mode. */
  readonly cookie: number | undefined;
  /**
   * The underlying KCP object, for tuning and statistics (`rxSrtt`, `waitSnd()`, `sendBytes`,
   * `counters()`…). Do not call its `send`/`recv`/`input`/`update`/`flush` directly: the session
   * schedules around them. A raw-mode `KcpServer` session runs it on the host's clock plus a random
   * u32 offset (so the ts of its segments cannot be guessed), so its `current` is not the host's `now`.
   */
  readonly kcp: Kcp;

  /** @internal its id in the owner's `Host`. */
  id: PeerId = -1;

  private address_: string;
  private state_: KcpSessionState = 'open';
  private readonly shared: SessionShared;
  private readonly opts: ResolvedOptions;
  private parked = false;
  private deadSeen = false;
  private lastRecvAt: number;
  private lastProbeAt = -Infinity;
  private lingerDeadline: number | undefined;
  private lingering = false;
  // Datagrams KCP has output, waiting for the host's pollTransmit (bounded by the shared budget),
  // and events; both dropped when empty, as an idle session has neither (thousands of idle sessions).
  private out: Uint8Array[] | undefined;
  private outHead = 0;
  private events: KcpSessionEvent[] | undefined;
  /**
   * @internal Raw-mode server: the remote address's state, while anti-amplification applies. `clock`
   * is added to the host's `now` for KCP, a random offset that makes the ts of our segments
   * unguessable, so only an address that received one can acknowledge it (see `acknowledgesUs`).
   */
  readonly gate: RawAddress | undefined;
  private readonly clock: number;
  private readonly firstClock: number;
  private readonly firstSn: number;
  // The last `unvalidated` datagrams of `out` did not fit the address's allowance when queued: they
  // wait (counted in the shared `unvalidatedQueued`). `headHeld`: the first of them has been counted.
  private unvalidated = 0;
  private headHeld = false;

  /** @internal created by a host. */
  constructor(shared: SessionShared, conv: number, cookie: number | undefined, address: string, now: number, gate?: RawAddress) {
    this.shared = shared;
    this.opts = shared.opts;
    this.conv = conv;
    this.cookie = cookie;
    this.address_ = address;
    this.lastRecvAt = now;
    this.gate = gate;
    this.clock = gate === undefined ? 0 : randomU32(this.opts.random);
    const prefix = cookie === undefined ? 0 : KCP_COOKIE_PREFIX;
    this.kcp = new Kcp(conv, (d) => this.output(d), { ...this.opts.kcp, arena: shared.arena, mtu: this.opts.mtu - prefix });
    this.kcp.update(now + this.clock);
    this.firstClock = this.kcp.current;
    this.firstSn = this.kcp.sndNxt;
    this.events = [{ type: 'open', session: this }];
  }

  /** Peer address as the host was given it (changes on migration in cookie mode). */
  get address(): string {
    return this.address_;
  }

  /** `'open'`, `'closing'` (lingering) or `'closed'`. */
  get state(): KcpSessionState {
    return this.state_;
  }

  /** Host clock at the last datagram accepted for this session, ms. */
  get lastReceivedAt(): number {
    return this.lastRecvAt;
  }

  /**
   * Queue one message (message mode) or bytes (stream mode); the bytes are copied. Returns true when
   * queued. Once the session is closing or closed nothing is queued: returns false and counts
   * `sendsAfterClose` in the host's counters, so answering a message that arrived together with the
   * end is safe. Throws `message-too-large` beyond 127 fragments (`kcp.maxMessageSize`), `queue-full`
   * when `kcp.maxSendQueueSegments`, this session's `kcp.maxSendBytes` or the host's `maxSendBytes`
   * would be exceeded; nothing is queued then (pace with `kcp.sendBytes` or `kcp.waitSnd()`).
   */
  send(data: Uint8Array): boolean {
    if (this.state_ !== 'open') {
      this.shared.ctr.sendsAfterClose++;
      return false;
    }
    const k = this.kcp;
    const r = k.send(data);
    if (r === -2) throw new GamewireError('message-too-large', `message of ${data.length} bytes exceeds ${k.maxMessageSize}`);
    if (r === -4) {
      throw new GamewireError('queue-full', `send of ${data.length} bytes refused: the session holds ${k.waitSnd()} segments, ` +
        `${k.sendBytes} of its ${k.maxSendBytes} bytes; the host ${this.shared.arena.sendBytes} of ${this.shared.arena.maxSendBytes}`);
    }
    this.parked = false;
    this.shared.touch(this);
    return true;
  }

  /**
   * Close. Default: at once, after one last flush of KCP (pending ACKs and due data leave; cookie
   * mode then sends CLOSE, raw mode nothing more). With `linger`, stop
   * accepting sends and close once everything sent is acknowledged, or after `lingerTimeoutMs`.
   * A `'closed'` event follows either way. No-op when already closing or closed.
   */
  close(options: { linger?: boolean } = {}): void {
    if (this.state_ !== 'open') return;
    if (options.linger === true && this.kcp.waitSnd() > 0) {
      this.state_ = 'closing';
      this.lingering = true;
      this.shared.touch(this);
      return;
    }
    this.finish('local');
  }

  /** Host side (its owner calls it, not the application): a datagram routed here (checked well-formed, cookie prefix included). */
  handleDatagram(now: number, bytes: Uint8Array): void {
    const view = this.cookie === undefined ? bytes : bytes.subarray(KCP_COOKIE_PREFIX);
    this.lastRecvAt = now;
    this.kcp.input(view, now + this.clock);
    this.parked = false;
    if (this.opts.immediateAck && this.kcp.pendingAckCount > 0) this.kcp.flushAcks(now + this.clock);
  }

  /**
   * @internal Raw mode, before `handleDatagram`: 1 when `bytes` (well-formed, this conv) holds an ACK
   * for a segment we sent that echoes its ts, -1 when its ACKs echo none we sent, 0 without ACKs
   * or before we sent anything.
   */
  acknowledgesUs(now: number, bytes: Uint8Array): -1 | 0 | 1 {
    const k = this.kcp;
    const sent = u32(k.sndNxt - this.firstSn);
    if (sent === 0) return 0;
    const age = u32(((now + this.clock) >>> 0) - this.firstClock);
    let r: -1 | 0 | 1 = 0;
    for (let off = 0; off + KCP_OVERHEAD <= bytes.length; off += KCP_OVERHEAD + readU32LE(bytes, off + 20)) {
      if (bytes[off + 4] !== KcpCommand.ACK) continue;
      if (u32(readU32LE(bytes, off + 12) - this.firstSn) < sent && u32(readU32LE(bytes, off + 8) - this.firstClock) <= age) return 1;
      r = -1;
    }
    return r;
  }

  /** Host side: run KCP and the session timers at `now` (ms). */
  handleTimeout(now: number): void {
    const kcp = this.kcp;
    if (!this.parked) {
      kcp.update(now + this.clock);
      this.parked = kcp.waitSnd() === 0 && kcp.rmtWnd !== 0;
    }
    if (kcp.isDeadLink && !this.deadSeen) {
      this.deadSeen = true;
      if (this.opts.deadLinkPolicy === 'close') {
        this.finish('dead-link');
        return;
      }
      this.pushEvent({ type: 'dead-link', session: this });
    }
    const o = this.opts;
    if (this.lingering) {
      if (kcp.waitSnd() === 0) return this.finish('local');
      if (this.lingerDeadline !== undefined && now >= this.lingerDeadline) return this.finish('linger-timeout');
    }
    if (o.idleTimeoutMs > 0 && now >= this.lastRecvAt + o.idleTimeoutMs) return this.finish('idle-timeout');
    if (o.keepAliveMs > 0 && this.state_ === 'open' && now >= Math.max(this.lastRecvAt, this.lastProbeAt) + o.keepAliveMs) {
      this.lastProbeAt = now;
      this.sendKeepAlive();
    }
  }

  /** Host side: the next datagram into `out` (one longer than `out` is dropped and counted). */
  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    for (let b = this.takeDatagram(); b !== undefined; b = this.takeDatagram()) {
      if (b.length > out.length) {
        this.shared.ctr.transmitTooLarge++;
        continue;
      }
      out.set(b);
      return b.length;
    }
    return undefined;
  }

  /**
   * @internal the next datagram itself (ownership passes to the caller), or undefined: nothing queued,
   * or (raw mode) the next one would take what an unvalidated address was sent beyond its allowance.
   */
  takeDatagram(): Uint8Array | undefined {
    const out = this.out;
    if (out === undefined) return undefined;
    const b = out[this.outHead]!;
    const g = this.gate;
    const waited = out.length - this.outHead <= this.unvalidated;
    if (g !== undefined && !g.validated) {
      const allowance = this.shared.amplificationLimit * g.rx - g.tx - g.queued;
      if (waited && b.length > allowance) {
        if (this.state_ === 'closed') {
          this.dropOutbox();
          return undefined;
        }
        g.waiting = true;
        if (!this.headHeld) this.shared.ctr.heldUnvalidated++;
        this.headHeld = true;
        // Every KCP answers a window probe (WASK) with its window (WINS, 24 bytes): it earns three
        // times its size, and it is sent only again once the address has sent something since, so a
        // client that went quiet after its request still gets its answer, and a spoofed one no more.
        if (g.rx > g.probedAt && allowance >= KCP_OVERHEAD) {
          g.probedAt = g.rx;
          g.tx += KCP_OVERHEAD;
          this.shared.ctr.probesUnvalidated++;
          return this.probe();
        }
        return undefined;
      }
      g.tx += b.length;
      if (!waited) g.queued -= b.length;
    }
    out[this.outHead++] = EMPTY;
    if (this.outHead === out.length) {
      this.out = undefined;
      this.outHead = 0;
    }
    this.shared.queued--;
    if (waited && this.unvalidated > 0) {
      this.unvalidated--;
      this.shared.unvalidatedQueued--;
      this.headHeld = false;
    }
    return b;
  }

  /** @internal its address was validated: what it queued no longer counts as waiting for one. */
  validated(): void {
    this.shared.unvalidatedQueued -= this.unvalidated;
    this.unvalidated = 0;
    this.headHeld = false;
  }

  // A closed session whose address was never validated: what still waits for it is dropped, so that
  // its slot is freed.
  private dropOutbox(): void {
    const n = this.out === undefined ? 0 : this.out.length - this.outHead;
    this.out = undefined;
    this.outHead = 0;
    this.shared.queued -= n;
    this.shared.unvalidatedQueued -= this.unvalidated;
    this.unvalidated = 0;
    this.shared.ctr.droppedUnvalidated += n;
  }

  /** Host side: next time (ms) the host must wake this session, or undefined. */
  pollTimeout(): number | undefined {
    if (this.state_ === 'closed') return undefined;
    const now = this.shared.lastNow;
    if (this.lingering && this.lingerDeadline === undefined) this.lingerDeadline = now + this.opts.lingerTimeoutMs;
    let t = this.parked ? Infinity : deadlineOf(this.kcp, now + this.clock) - this.clock;
    const o = this.opts;
    if (o.keepAliveMs > 0 && this.state_ === 'open') {
      const k = Math.max(this.lastRecvAt, this.lastProbeAt) + o.keepAliveMs;
      if (k < t) t = k;
    }
    if (o.idleTimeoutMs > 0 && this.lastRecvAt + o.idleTimeoutMs < t) t = this.lastRecvAt + o.idleTimeoutMs;
    if (this.lingerDeadline !== undefined && this.lingerDeadline < t) t = this.lingerDeadline;
    return t === Infinity ? undefined : t;
  }

  /**
   * Host side: next event. Messages are read from KCP lazily here (one per call), so unread data
   * stays inside KCP's receive window, which throttles the peer.
   */
  pollEvent(): KcpSessionEvent | undefined {
    const evs = this.events;
    if (evs !== undefined) {
      const e = evs.shift()!;
      if (evs.length === 0) this.events = undefined;
      return e;
    }
    if (this.state_ === 'closed') return undefined;
    const data = this.kcp.recvMessage();
    if (data === undefined) return undefined;
    // recv may have reopened our window (WINS due): the host re-reads the deadline after an event.
    this.parked = false;
    return { type: 'message', session: this, data };
  }

  /** @internal */
  finished(): boolean {
    return this.state_ === 'closed';
  }

  /** @internal migration (cookie mode). */
  moveTo(address: string): void {
    const from = this.address_;
    this.address_ = address;
    this.pushEvent({ type: 'migrated', session: this, from });
  }

  /** @internal end the session (idempotent): last flush, CLOSE (cookie mode), what it had received, `'closed'`. */
  finish(reason: KcpCloseReason): void {
    if (this.state_ === 'closed') return;
    // A local close still acknowledges what arrived, so the peer does not retransmit into the void.
    if (reason === 'local' || reason === 'linger-timeout') this.kcp.flush();
    this.state_ = 'closed';
    if (this.cookie !== undefined && reason !== 'peer') {
      for (let i = 0; i < CLOSE_COPIES; i++) {
        const b = new Uint8Array(14);
        encodeClose(b, this.conv, this.cookie);
        this.enqueue(b);
      }
    }
    for (let m = this.kcp.recvMessage(); m !== undefined; m = this.kcp.recvMessage()) {
      this.pushEvent({ type: 'message', session: this, data: m });
    }
    this.pushEvent({ type: 'closed', session: this, reason });
    // Return its buffers to the host's arena (its budget is shared with the live sessions).
    this.kcp.dispose();
    this.shared.closeSession(this);
  }

  /** @internal a keep-alive probe (a KCP WASK-like header) for the peer. */
  sendKeepAlive(): void {
    this.shared.ctr.keepAlivesSent++;
    this.enqueue(this.probe());
  }

  private probe(): Uint8Array {
    const k = this.kcp;
    const p = this.cookie === undefined ? 0 : KCP_COOKIE_PREFIX;
    const b = new Uint8Array(p + KCP_OVERHEAD);
    if (p > 0) writeU32LE(b, 0, this.cookie!);
    writeKeepAlive(b, p, this.conv, Math.max(0, k.rcvWnd - k.rcvQueueLength), k.rcvNxt);
    return b;
  }

  /** KCP's output callback: copy (with the cookie prefix). */
  private output(d: Uint8Array): void {
    if (this.cookie === undefined) {
      this.enqueue(d.slice());
      return;
    }
    const b = new Uint8Array(KCP_COOKIE_PREFIX + d.length);
    writeU32LE(b, 0, this.cookie);
    b.set(d, KCP_COOKIE_PREFIX);
    this.enqueue(b);
  }

  private enqueue(b: Uint8Array): void {
    const shared = this.shared;
    if (shared.queued >= this.opts.maxOutboxDatagrams) {
      shared.ctr.outboxFull++;
      return;
    }
    const g = this.gate;
    if (g !== undefined && !g.validated) {
      if (this.unvalidated === 0 && g.tx + g.queued + b.length <= shared.amplificationLimit * g.rx) g.queued += b.length;
      else {
        // It must wait for the address to send more or be validated. What waits is bounded per
        // session and host-wide, so spoofed sessions cannot fill the outbox that others need.
        if (this.unvalidated >= UNVALIDATED_QUEUE || shared.unvalidatedQueued >= shared.maxUnvalidatedQueued) {
          shared.ctr.droppedUnvalidated++;
          return;
        }
        this.unvalidated++;
        shared.unvalidatedQueued++;
      }
    }
    shared.queued++;
    if (this.out === undefined) this.out = [b];
    else this.out.push(b);
  }

  private pushEvent(e: KcpSessionEvent): void {
    if (this.events === undefined) this.events = [e];
    else this.events.push(e);
  }
}

const EMPTY = new Uint8Array(0);

/** @internal Monotonic deadline (ms) from `kcp.check()`'s u32 answer; never earlier than `now`. */
export function deadlineOf(kcp: Kcp, now: number): number {
  const d = timeDiff32(kcp.check(now), now >>> 0);
  return d > 0 ? now + d : now;
}

/**
 * Shared machinery of `KcpServer` and `KcpClient`: a `Host` of sessions (one deadline heap, round-robin
 * output, events per session, the only address and conv indexes), the counters, the outbox budget.
 * Not exported itself.
 */
abstract class SessionHost implements Endpoint<KcpSessionEvent> {
  /**
   * @internal the live counters of what only the sessions and this owner see (sessions bump them
   * too); users read them with the host's own (datagrams in and out, dropped replies) in `counters()`.
   */
  readonly ctr = newCounters<KcpHostCounter>(COUNTERS);
  /** @internal */
  readonly opts: ResolvedOptions;
  /** The buffers of every session's `Kcp`: one arena, one receive budget (`maxReceiveBytes`). */
  readonly arena: KcpArena;
  /** Sessions by address (raw mode: several convs may share one) and, in cookie mode, by conv (their key). */
  protected readonly host: Host<KcpSession, KcpSessionEvent, number>;
  /** What every session of this host shares (see `SessionShared`). */
  protected readonly shared: SessionShared;
  private waker: (() => void) | undefined;

  constructor(options: KcpSessionOptions, maxSessions: number, group?: (address: string) => string) {
    this.opts = resolveOptions(options);
    this.arena = this.opts.kcp.arena ?? new KcpArena({ maxReceiveBytes: this.opts.maxReceiveBytes, maxSendBytes: this.opts.maxSendBytes });
    this.shared = new SessionShared(this.opts, this.arena, this.ctr, (s) => this.touch(s), (s) => this.closeSession(s));
    this.host = new Host<KcpSession, KcpSessionEvent, number>({
      maxPeers: maxSessions,
      route: (now, from, bytes) => this.route(now, from, bytes),
      maxReplies: this.opts.maxOutboxDatagrams,
      group,
    });
  }

  /**
   * A copy of the counters (drops, handshakes, sessions, keep-alives…; see `KcpHostCounter`). Datagrams
   * in and out are the host's count; `outboxFull` and `transmitTooLarge` include the handshake answers
   * the host's reply queue dropped.
   */
  counters(): Readonly<Record<KcpHostCounter, number>> {
    const h = this.host.counters();
    const c = { ...this.ctr } as Record<KcpHostCounter, number>;
    c.datagramsIn = h.datagramsIn;
    c.datagramsOut = h.datagramsOut;
    c.outboxFull += h.repliesDropped;
    c.transmitTooLarge += h.transmitTooLarge;
    return c;
  }

  /** A driver's wake hook (see `Endpoint.setWaker`): called when a session's `send`/`close` leaves work. */
  setWaker(waker: (() => void) | undefined): void {
    this.waker = waker;
    this.host.setWaker(waker);
  }

  protected wake(): void {
    this.waker?.();
  }

  /** A command left work in `s`. */
  private touch(s: KcpSession): void {
    this.host.touch(s.id);
  }

  /** `s` closed: retire it from the host, which forgets its address and conv (its last datagrams and events still drain). */
  private closeSession(s: KcpSession): void {
    this.forget(s);
    this.ctr.sessionsClosed++;
    this.host.remove(s.id);
  }

  /** Process one datagram from `from` at `now` (ms). Bad or unwanted bytes are dropped and counted. */
  handleDatagram(now: number, from: string, bytes: Uint8Array): void {
    if (now > this.shared.lastNow) this.shared.lastNow = now;
    this.host.handleDatagram(now, from, bytes);
  }

  /** Run every session whose KCP update or timer is due at `now` (ms). */
  handleTimeout(now: number): void {
    checkArg(typeof now === 'number' && !Number.isNaN(now), 'now must be a number of ms');
    if (now > this.shared.lastNow) this.shared.lastNow = now;
    this.hostTimers(now);
    this.host.handleTimeout(now);
  }

  /** Absolute time (ms) at which `handleTimeout` is next due, or `undefined` when nothing is pending. */
  pollTimeout(): number | undefined {
    return this.host.pollTimeout();
  }

  /**
   * Copy the next datagram into `out` and return its length and destination address, or
   * `undefined` when nothing is waiting. Sessions take turns; a datagram longer than `out` is
   * dropped and counted (`transmitTooLarge`).
   */
  pollTransmit(now: number, out: Uint8Array): Transmit | undefined {
    return this.host.pollTransmit(now, out);
  }

  /** Next event, or `undefined` (sessions take turns; a session's messages are read from KCP lazily). */
  pollEvent(): KcpSessionEvent | undefined {
    return this.host.pollPeerEvent();
  }

  /** A datagram outside any session (handshake answers, CONNECT): through the host's bounded reply queue (full: counted as `outboxFull`). */
  protected sendReply(to: string, bytes: Uint8Array): void {
    this.host.sendTo(to, bytes);
  }

  /** A new session, in the host at `address` (and under `conv` in cookie mode, where conv routes). */
  protected newSession(conv: number, cookie: number | undefined, address: string, now: number, gate?: RawAddress): KcpSession {
    const s = new KcpSession(this.shared, conv, cookie, address, now, gate);
    s.id = this.host.add(address, s, cookie === undefined ? undefined : conv);
    this.ctr.sessionsOpened++;
    return s;
  }

  protected hostTimers(_now: number): void {}

  /** Demultiplex a datagram: the id of the live session it is for, or undefined (handled or dropped here). */
  protected abstract route(now: number, from: string, bytes: Uint8Array): PeerId | undefined;

  /** `s` is closing: the owner's own state about it (the host forgets its indexes when it retires it). */
  protected abstract forget(s: KcpSession): void;
}

/** Options of a `KcpServer`. */
export interface KcpServerOptions extends KcpSessionOptions {
  /** Most live sessions (default 4096). At the limit new peers are refused: see docs/kcp-session.md. */
  maxSessions?: number;
  /** Raw mode: accept a new conversation only if this returns true (default: any conv). */
  acceptConv?: (conv: number) => boolean;
  /** Cookie mode: 16-byte SipHash key for cookies (default: drawn from `random`). */
  cookieKey?: Uint8Array;
  /**
   * Most live sessions from one source (default 64), counted per IPv4 address or IPv6 /64: the
   * address string without its port ("1.2.3.4:5" and "[::1]:5" as the Node adapter writes them; other
   * strings as they are, see `addressGroup` in core/address-group.ts). Beyond it a new session is refused and counted (`refusedAddress`); cookie
   * mode answers CONNECT with REFUSE(2) and refuses a migration into that IP.
   */
  maxSessionsPerAddress?: number;
  /**
   * Raw mode: until an address has acknowledged a segment we sent (an ACK echoing its ts), the bytes
   * sent to it are at most this many times the bytes received from it (default 3, QUIC's factor;
   * Infinity = off). Datagrams beyond wait (up to 16 per session) until it sends more or is
   * validated, and are dropped if its session ends first.
   */
  amplificationLimit?: number;
}

/**
 * Many KCP sessions behind one socket, sans-IO: a `Host` of `KcpSession`s. Raw mode demultiplexes
 * by (address, conv): any KCP implementation can connect. Cookie mode demultiplexes by conv after a
 * stateless handshake (conv allocation, SipHash cookie), and lets a session move to a new address.
 *
 * Drive it as any `Endpoint`: `handleDatagram(now, from, bytes)` for each datagram (`from` is any
 * stable string for the sender's address, e.g. "1.2.3.4:5678"), `handleTimeout(now)` when
 * `now ≥ pollTimeout()`, then drain `pollTransmit` and `pollEvent`. One timer serves every session:
 * only due sessions are updated.
 */
export class KcpServer extends SessionHost {
  /** Most live sessions. */
  readonly maxSessions: number;
  /** Most live sessions per address (IP, see `KcpServerOptions.maxSessionsPerAddress`). */
  readonly maxSessionsPerAddress: number;
  private readonly acceptConv: ((conv: number) => boolean) | undefined;
  private readonly cookieKey: CookieKey | undefined;

  constructor(options: KcpServerOptions = {}) {
    const max = options.maxSessions ?? 4096;
    checkConfig(isInt(max, 1), 'maxSessions must be an integer ≥ 1');
    const perAddr = options.maxSessionsPerAddress ?? 64;
    checkConfig(isInt(perAddr, 1), 'maxSessionsPerAddress must be an integer ≥ 1');
    const amp = options.amplificationLimit ?? 3;
    checkConfig(typeof amp === 'number' && amp >= 1, 'amplificationLimit must be a number ≥ 1 (Infinity = off)');
    super(options, max, addressGroup);
    this.maxSessions = max;
    this.maxSessionsPerAddress = perAddr;
    if (this.opts.mode === 'raw') this.shared.amplificationLimit = amp;
    this.opts.kcp.maxSendBytes ??= KCP_SESSION_MAX_SEND_BYTES_DEFAULT;
    this.acceptConv = options.acceptConv;
    if (this.opts.mode === 'cookie') {
      let key = options.cookieKey;
      if (key === undefined) {
        key = new Uint8Array(16);
        this.opts.random(key);
      }
      this.cookieKey = cookieKeyFromBytes(key);
    }
  }

  /** Live sessions. */
  get sessionCount(): number {
    return this.host.liveCount;
  }

  /** Every live session. */
  sessions(): IterableIterator<KcpSession> {
    return this.host.ids().map((id) => this.host.get(id)!).values();
  }

  /** The live session for (`address`, `conv`) in raw mode, or for `conv` in cookie mode. */
  session(conv: number, address?: string): KcpSession | undefined {
    const id = this.opts.mode === 'cookie' ? this.host.peerWithKey(conv) : this.rawSession(address ?? '', conv);
    return id === undefined ? undefined : this.host.get(id);
  }

  /** Full: `maxSessions` live, or closed sessions whose events are not polled yet still hold the host's slots. */
  private full(): boolean {
    return this.host.full;
  }

  /** `address`'s IP holds `maxSessionsPerAddress` sessions (counted as `refusedAddress`). */
  private groupFull(address: string): boolean {
    if (this.host.groupSize(address) < this.maxSessionsPerAddress) return false;
    this.ctr.refusedAddress++;
    return true;
  }

  /** Raw mode: the live session of (`address`, `conv`), among the address's sessions. */
  private rawSession(address: string, conv: number): PeerId | undefined {
    const h = this.host;
    let id = h.firstAt(address);
    while (id !== undefined && h.get(id)!.conv !== conv) id = h.nextAt(id);
    return id;
  }

  protected route(now: number, from: string, bytes: Uint8Array): PeerId | undefined {
    return this.opts.mode === 'raw' ? this.rawRoute(now, from, bytes) : this.cookieRoute(now, from, bytes);
  }

  private rawRoute(now: number, from: string, bytes: Uint8Array): PeerId | undefined {
    if (!isWellFormedKcp(bytes, 0)) {
      this.ctr.droppedMalformed++;
      return undefined;
    }
    const conv = readU32LE(bytes, 0);
    const h = this.host;
    const id = this.rawSession(from, conv);
    let s: KcpSession;
    if (id !== undefined) s = h.get(id)!;
    else {
      if (this.acceptConv !== undefined && !this.acceptConv(conv)) {
        this.ctr.droppedConv++;
        return undefined;
      }
      if (this.full()) {
        this.ctr.refusedFull++;
        return undefined;
      }
      if (this.groupFull(from)) return undefined;
      // The address's sessions share what it has shown (one gate per address).
      const first = h.firstAt(from);
      const gate = this.shared.amplificationLimit === Infinity ? undefined : (first === undefined ? new RawAddress() : h.get(first)!.gate);
      s = this.newSession(conv, undefined, from, now, gate);
    }
    const a = s.gate;
    if (a !== undefined && !a.validated) this.admit(now, a, s, bytes);
    return s.id;
  }

  // Raw mode, an address not yet validated: what it sent raises its allowance, and an ACK echoing
  // one of our ts validates it. Its sessions that were waiting for either may send now.
  private admit(now: number, a: RawAddress, s: KcpSession, bytes: Uint8Array): void {
    a.rx += bytes.length;
    const h = this.host;
    if (a.wrong < MAX_WRONG_PROOFS) {
      const p = s.acknowledgesUs(now, bytes);
      if (p < 0) a.wrong++;
      else if (p > 0) {
        a.validated = true;
        this.ctr.addressesValidated++;
        for (let id = h.firstAt(s.address); id !== undefined; id = h.nextAt(id)) h.get(id)!.validated();
      }
    }
    if (a.waiting || a.validated) {
      a.waiting = false;
      for (let id = h.firstAt(s.address); id !== undefined; id = h.nextAt(id)) if (id !== s.id) h.touch(id);
    }
  }

  private cookieRoute(now: number, from: string, bytes: Uint8Array): PeerId | undefined {
    if (bytes.length < KCP_COOKIE_PREFIX) {
      this.ctr.droppedMalformed++;
      return undefined;
    }
    const prefix = readU32LE(bytes, 0);
    if (prefix === 0) {
      this.control(from, bytes);
      return undefined;
    }
    if (!isWellFormedKcp(bytes, KCP_COOKIE_PREFIX)) {
      this.ctr.droppedMalformed++;
      return undefined;
    }
    const conv = readU32LE(bytes, KCP_COOKIE_PREFIX);
    const id = this.host.peerWithKey(conv);
    let s: KcpSession;
    if (id !== undefined) {
      s = this.host.get(id)!;
      if (s.cookie !== prefix) {
        this.ctr.droppedBadCookie++;
        return undefined;
      }
      if (s.address !== from) {
        if (addressGroup(from) !== addressGroup(s.address) && this.groupFull(from)) return undefined;
        s.moveTo(from);
        this.host.rebind(s.id, from);
        this.ctr.migrations++;
      }
    } else {
      if (deriveCookie(this.cookieKey!, from, conv) !== prefix) {
        this.ctr.droppedBadCookie++;
        return undefined;
      }
      if (this.full()) {
        this.ctr.refusedFull++;
        return undefined;
      }
      if (this.groupFull(from)) return undefined;
      s = this.newSession(conv, prefix, from, now);
    }
    return s.id;
  }

  private control(from: string, bytes: Uint8Array): void {
    const r = decodeControl(bytes);
    if (!r.ok) {
      this.ctr.droppedMalformed++;
      return;
    }
    const c = r.value;
    if (c.type === 'connect') {
      const full = this.full();
      if (full || this.groupFull(from)) {
        if (full) this.ctr.refusedFull++;
        const b = new Uint8Array(11);
        encodeRefuse(b, c.nonce, full ? KcpRefuseReason.SERVER_FULL : KcpRefuseReason.ADDRESS_FULL);
        this.sendReply(from, b);
        return;
      }
      let conv = randomU32(this.opts.random);
      while (this.host.peerWithKey(conv) !== undefined) conv = randomU32(this.opts.random);
      const b = new Uint8Array(18);
      encodeAccept(b, c.nonce, conv, deriveCookie(this.cookieKey!, from, conv));
      this.ctr.handshakes++;
      this.sendReply(from, b);
    } else if (c.type === 'close') {
      const id = this.host.peerWithKey(c.conv);
      const s = id === undefined ? undefined : this.host.get(id)!;
      if (s === undefined || s.cookie !== c.cookie) {
        this.ctr.droppedBadCookie++;
        return;
      }
      s.finish('peer');
    } else {
      this.ctr.droppedUnknown++;
    }
  }

  protected forget(_s: KcpSession): void {}
}

/** Options of a `KcpClient`. */
export interface KcpClientOptions extends KcpSessionOptions {
  /** Raw mode: the conversation id (default: random). Ignored in cookie mode (the server allocates). */
  conv?: number;
  /** Cookie mode: CONNECT is resent this often until ACCEPT, ms (default 250). */
  handshakeRetryMs?: number;
  /** Cookie mode: give up (`'handshake-timeout'`) after this long, ms (default 5000). */
  handshakeTimeoutMs?: number;
  /**
   * The server's address: every datagram goes there, and datagrams from any other address are
   * dropped and counted in `droppedUnknown` (default "server").
   */
  remote?: string;
}

/**
 * One KCP session to a server, as an `Endpoint` whose one remote is `remote` (a `Host` holding the
 * client's session). Raw mode talks plain KCP with `conv`; cookie mode performs gamewire's handshake
 * first. Events: `'open'` (ready to send), `'message'`, `'dead-link'`, `'closed'`.
 */
export class KcpClient extends SessionHost {
  /** The server's address (see `KcpClientOptions.remote`). */
  readonly remote: string;
  private session_: KcpSession | undefined;
  private state_: KcpSessionState;
  private readonly conv_: number | undefined;
  private readonly nonce: number;
  private readonly retryMs: number;
  private readonly timeoutMs: number;
  private startedAt: number | undefined;
  private nextConnectAt = -Infinity;
  private ended = false;
  private endEvent: KcpSessionEvent | undefined;

  constructor(options: KcpClientOptions = {}) {
    super(options, 1);
    this.remote = options.remote ?? 'server';
    checkConfig(typeof this.remote === 'string', 'remote must be a string');
    this.retryMs = ms(options.handshakeRetryMs, 250, 'handshakeRetryMs');
    this.timeoutMs = ms(options.handshakeTimeoutMs, 5000, 'handshakeTimeoutMs');
    checkConfig(this.retryMs > 0, 'handshakeRetryMs must be > 0');
    if (this.opts.mode === 'raw') {
      const conv = options.conv ?? randomU32(this.opts.random);
      checkConfig(isInt(conv, 0, 0xffffffff), 'conv must be a u32');
      this.conv_ = conv;
      this.state_ = 'open';
    } else {
      this.conv_ = undefined;
      this.state_ = 'connecting';
    }
    this.nonce = this.opts.mode === 'cookie' ? randomU32(this.opts.random) : 0;
  }

  /** `'connecting'` (cookie handshake), `'open'`, `'closing'` or `'closed'`. */
  get state(): KcpSessionState {
    if (this.session_ !== undefined) return this.session_.state;
    return this.state_;
  }

  /** The session once it exists (raw mode: after the first `handleTimeout`; cookie mode: after ACCEPT). */
  get session(): KcpSession | undefined {
    return this.session_;
  }

  /** Conversation id: fixed in raw mode, allocated by the server in cookie mode (`undefined` before). */
  get conv(): number | undefined {
    return this.session_?.conv ?? this.conv_;
  }

  /**
   * Send one message, as `KcpSession.send` (false once closing or closed, counted `sendsAfterClose`);
   * throws `invalid-state` before `'open'`.
   */
  send(data: Uint8Array): boolean {
    const s = this.session_;
    if (s === undefined) {
      if (this.state_ !== 'closed') throw new GamewireError('invalid-state', 'send before the session is open (wait for the open event)');
      this.ctr.sendsAfterClose++;
      return false;
    }
    return s.send(data);
  }

  /** Close (see `KcpSession.close`); before the handshake completes it just stops. */
  close(options: { linger?: boolean } = {}): void {
    if (this.session_ !== undefined) this.session_.close(options);
    else if (this.state_ !== 'closed') this.end('local');
  }

  protected route(now: number, from: string, bytes: Uint8Array): PeerId | undefined {
    const s = this.session_;
    if (from !== this.remote) {
      this.ctr.droppedUnknown++;
      return undefined;
    }
    if (this.opts.mode === 'raw') {
      if (s === undefined || s.state === 'closed' || !isWellFormedKcp(bytes, 0, s.conv)) {
        this.ctr[s === undefined ? 'droppedUnknown' : 'droppedMalformed']++;
        return undefined;
      }
      return s.id;
    }
    if (bytes.length < KCP_COOKIE_PREFIX) {
      this.ctr.droppedMalformed++;
      return undefined;
    }
    const prefix = readU32LE(bytes, 0);
    if (prefix !== 0) {
      if (s === undefined || s.state === 'closed' || prefix !== s.cookie) {
        this.ctr.droppedBadCookie++;
        return undefined;
      }
      if (!isWellFormedKcp(bytes, KCP_COOKIE_PREFIX, s.conv)) {
        this.ctr.droppedMalformed++;
        return undefined;
      }
      return s.id;
    }
    const r = decodeControl(bytes);
    if (!r.ok) {
      this.ctr.droppedMalformed++;
      return undefined;
    }
    const c = r.value;
    if (c.type === 'accept' && this.state_ === 'connecting' && c.nonce === this.nonce && s === undefined) {
      this.state_ = 'open';
      this.ctr.handshakes++;
      const ns = this.newSession(c.conv, c.cookie, this.remote, now);
      this.session_ = ns;
      // Announce ourselves at once so the server creates its side even if we have nothing to send.
      ns.sendKeepAlive();
      this.host.touch(ns.id);
    } else if (c.type === 'refuse' && this.state_ === 'connecting' && c.nonce === this.nonce) {
      this.end('refused');
    } else if (c.type === 'close' && s !== undefined && c.conv === s.conv && c.cookie === s.cookie) {
      s.finish('peer');
    } else {
      this.ctr.droppedUnknown++;
    }
    return undefined;
  }

  protected override hostTimers(now: number): void {
    if (this.ended) return;
    if (this.opts.mode === 'raw') {
      if (this.session_ === undefined && this.state_ === 'open') this.session_ = this.newSession(this.conv_!, undefined, this.remote, now);
      return;
    }
    if (this.state_ !== 'connecting') return;
    if (this.startedAt === undefined) this.startedAt = now;
    if (this.timeoutMs > 0 && now - this.startedAt >= this.timeoutMs) {
      this.end('handshake-timeout');
      return;
    }
    if (now >= this.nextConnectAt) {
      this.nextConnectAt = now + this.retryMs;
      const b = new Uint8Array(32);
      encodeConnect(b, this.nonce);
      this.sendReply(this.remote, b);
    }
  }

  override pollTimeout(): number | undefined {
    if (this.ended) return undefined;
    if (this.session_ === undefined) {
      if (this.state_ === 'open') return this.shared.lastNow; // raw: start at the first handleTimeout
      if (this.state_ === 'connecting') {
        if (this.startedAt === undefined) return this.shared.lastNow;
        const t = Math.min(this.nextConnectAt, this.timeoutMs > 0 ? this.startedAt + this.timeoutMs : Infinity);
        const h = super.pollTimeout();
        return h !== undefined && h < t ? h : t;
      }
    }
    return super.pollTimeout();
  }

  override pollEvent(): KcpSessionEvent | undefined {
    const e = this.endEvent;
    if (e !== undefined) {
      this.endEvent = undefined;
      return e;
    }
    return super.pollEvent();
  }

  /** The handshake ended without a session. */
  private end(reason: KcpCloseReason): void {
    this.state_ = 'closed';
    this.ended = true;
    this.endEvent = { type: 'closed', session: undefined, reason };
    this.wake();
  }

  protected forget(_s: KcpSession): void {
    this.state_ = 'closed';
  }
}
