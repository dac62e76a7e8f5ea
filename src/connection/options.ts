import type { AckOptions } from '../ack/index.js';
import { lanesHash, type MessageLanesOptions, type MessageLaneConfig } from '../channels/index.js';
import type { PathOptions } from '../congestion/path.js';
import { MAX_BLOCK_BYTES } from '../chunk/wire.js';
import { writeU32LE } from '../core/bytes.js';
import { crc32Of } from '../core/crc32.js';
import { checkConfig, checkKnownKeys, isNum, isObject, isOptionalFn } from '../core/config.js';
import { cryptoRandom, type RandomSource } from '../core/random.js';

/**
 * A block lane (docs/connection.md §Blocks): each message is one block, sent with the chunk protocol
 * (slices acked by a bitfield, resent no sooner than ~RTT × 1.25) through the connection's path.
 * It is served below every message lane, and gets at least `minShare` of what the connection sends
 * while message lanes have more queued than the path carries. At most one per connection.
 */
export interface BlockLaneConfig {
  mode: 'block';
  /**
   * Largest block sent or received, bytes (0..2^32 − 1; default 16 MiB). Part of the lane list both
   * ends must share. `send` throws `message-too-large` above it. A receiver holds at most two blocks in
   * reassembly: about 2 × (this + this / 512) bytes per connection.
   */
  maxMessageBytes?: number;
  /** Bytes of blocks queued or in transfer at the sender (default the larger of 64 MiB and `maxMessageBytes`); `send` throws `queue-full` beyond. */
  maxQueuedBytes?: number;
  /** Blocks queued or in transfer (1..1 000 000; default 1024); `send` throws `queue-full` beyond. */
  maxQueuedBlocks?: number;
  /** Least share of the connection's sent bytes while message lanes saturate the path (0.01..0.99; default 0.25). */
  minShare?: number;
}

/** A lane of a connection: a message lane (`MessageLanes`) or the block lane. */
export type LaneConfig = MessageLaneConfig | BlockLaneConfig;

/** A block lane with every default filled in. @internal */
export interface ResolvedBlockLane {
  /** The lane's number (its index in the lane list). */
  lane: number;
  maxMessageBytes: number;
  maxQueuedBytes: number;
  maxQueuedBlocks: number;
  minShare: number;
}

/** Options of a `ConnectionHost` (and of every connection it holds). Times in ms, sizes in bytes. */
export interface ConnectionOptions {
  /**
   * The lanes of every connection, in order (lane numbers are indexes here). Both ends must list the
   * same modes in the same order: a server refuses a client whose list differs (`'refused-lanes'`).
   * Default: one reliable-ordered lane. At most one lane may be a block lane.
   */
  lanes?: readonly LaneConfig[];
  /** Accept connections from peers (a server). Default false: only `connect` makes connections. */
  listen?: boolean;
  /** Most connections held at once, live or closing (1..2^21, default 1024); a proven CONNECT beyond is refused (`'refused-full'`). */
  maxConnections?: number;
  /** Largest datagram sent, bytes (256..65 507; default 1200, safe on every path). */
  maxDatagramBytes?: number;
  /** Settings of the lanes beside the lane list (redundancy, receive budgets, reassembly slots). */
  channels?: Omit<MessageLanesOptions, 'lanes'>;
  /** Settings of the packet layer (ack timing, keep-alive, windows). */
  acks?: AckOptions;
  /** Settings of each connection's path (rate controller factory not shared: each connection gets its own). */
  path?: Omit<PathOptions, 'maxDatagramBytes' | 'rateController'>;
  /** Disconnect with `'timeout'` after this long with nothing valid received (100..3 600 000; default 10 000). */
  timeoutMs?: number;
  /**
   * Give up connecting after this long (100..600 000; default 5000). On a server, also how long a cookie
   * it granted stays valid (an older one is answered with a fresh cookie).
   */
  handshakeTimeoutMs?: number;
  /** Resend CONNECT this often while connecting (10..10 000; default 250). */
  handshakeResendMs?: number;
  /** CSPRNG for connection ids and, on a listening host, the 16-byte secret key of its cookies. Default `cryptoRandom`. */
  random?: RandomSource;
}

/** @internal */
export interface ResolvedConnectionOptions {
  listen: boolean;
  maxConnections: number;
  maxDatagramBytes: number;
  laneCount: number;
  lanesHash: number;
  /** Message lanes only: `MessageLanes` lane i is connection lane `channelLanes[i]`. */
  channels: MessageLanesOptions;
  channelLanes: number[];
  /** Connection lane → `MessageLanes` lane, or −1 for the block lane. */
  laneToChannel: Int16Array;
  block: ResolvedBlockLane | undefined;
  acks: AckOptions | undefined;
  path: Omit<PathOptions, 'maxDatagramBytes' | 'rateController'> | undefined;
  timeoutMs: number;
  handshakeTimeoutMs: number;
  handshakeResendMs: number;
  random: RandomSource;
}

const KEYS: ReadonlySet<string> = new Set([
  'lanes', 'listen', 'maxConnections', 'maxDatagramBytes', 'channels', 'acks', 'path', 'timeoutMs', 'handshakeTimeoutMs',
  'handshakeResendMs', 'random',
]);

function num(v: number | undefined, def: number, lo: number, hi: number, name: string): number {
  const x = v ?? def;
  checkConfig(isNum(x, lo, hi), `${name} must be a number in ${lo}..${hi}`);
  return x;
}

/** @internal Validate and fill defaults; throws `invalid-config`. */
export function resolveConnectionOptions(o: ConnectionOptions): ResolvedConnectionOptions {
  checkConfig(isObject(o), 'options must be an object');
  checkKnownKeys(o, KEYS, (k) => `unknown connection option '${k}'`);
  const lanes = o.lanes ?? [{ mode: 'reliable-ordered' }];
  checkConfig(Array.isArray(lanes), 'lanes must be an array');
  checkConfig(o.channels === undefined || isObject(o.channels), 'channels must be an object');
  checkConfig(isOptionalFn(o.random), 'random must be a function');
  const maxDatagramBytes = num(o.maxDatagramBytes, 1200, 256, 65_507, 'maxDatagramBytes');
  checkConfig(Number.isInteger(maxDatagramBytes), 'maxDatagramBytes must be an integer');
  const maxConnections = num(o.maxConnections, 1024, 1, 2 ** 21, 'maxConnections');
  checkConfig(Number.isInteger(maxConnections), 'maxConnections must be an integer');
  checkConfig(lanes.length >= 1 && lanes.length <= 32, 'lanes must list 1..32 lanes');
  const messageLanes: MessageLaneConfig[] = [];
  const channelLanes: number[] = [];
  const laneToChannel = new Int16Array(lanes.length);
  let block: ResolvedBlockLane | undefined;
  lanes.forEach((l, i) => {
    if (l !== null && typeof l === 'object' && l.mode === 'block') {
      checkConfig(block === undefined, 'at most one lane may be a block lane');
      block = resolveBlockLane(l, i);
      laneToChannel[i] = -1;
    } else {
      laneToChannel[i] = messageLanes.length;
      channelLanes.push(i);
      messageLanes.push({ ...(l as MessageLaneConfig) });
    }
  });
  // A connection with only a block lane still runs the packet layer (acks, keep-alives): give MessageLanes
  // one unused lane rather than a second code path.
  const channels: MessageLanesOptions = { ...(o.channels ?? {}), lanes: messageLanes.length > 0 ? messageLanes : [{ mode: 'unreliable' }] };
  return {
    listen: o.listen ?? false,
    maxConnections,
    maxDatagramBytes,
    laneCount: lanes.length,
    lanesHash: connectionLanesHash(channels, block),
    channels,
    channelLanes,
    laneToChannel,
    block,
    acks: o.acks,
    path: o.path,
    timeoutMs: num(o.timeoutMs, 10_000, 100, 3_600_000, 'timeoutMs'),
    handshakeTimeoutMs: num(o.handshakeTimeoutMs, 5000, 100, 600_000, 'handshakeTimeoutMs'),
    handshakeResendMs: num(o.handshakeResendMs, 250, 10, 10_000, 'handshakeResendMs'),
    random: o.random ?? cryptoRandom,
  };
}

const BLOCK_KEYS: ReadonlySet<string> = new Set(['mode', 'maxMessageBytes', 'maxQueuedBytes', 'maxQueuedBlocks', 'minShare']);

function resolveBlockLane(l: BlockLaneConfig, lane: number): ResolvedBlockLane {
  checkKnownKeys(l, BLOCK_KEYS, (k) => `lane ${lane}: unknown block lane option '${k}'`);
  const maxMessageBytes = num(l.maxMessageBytes, 16 * 1024 * 1024, 0, MAX_BLOCK_BYTES, `lane ${lane}: maxMessageBytes`);
  const maxQueuedBytes = num(l.maxQueuedBytes, Math.max(64 * 1024 * 1024, maxMessageBytes), 1, Number.MAX_SAFE_INTEGER,
    `lane ${lane}: maxQueuedBytes`);
  const maxQueuedBlocks = num(l.maxQueuedBlocks, 1024, 1, 1_000_000, `lane ${lane}: maxQueuedBlocks`);
  checkConfig(Number.isInteger(maxMessageBytes) && Number.isInteger(maxQueuedBytes) && Number.isInteger(maxQueuedBlocks),
    `lane ${lane}: block lane sizes and counts must be integers`);
  checkConfig(maxQueuedBytes >= maxMessageBytes, `lane ${lane}: maxQueuedBytes must be at least maxMessageBytes`);
  return { lane, maxMessageBytes, maxQueuedBytes, maxQueuedBlocks, minShare: num(l.minShare, 0.25, 0.01, 0.99, `lane ${lane}: minShare`) };
}

/**
 * What both ends must agree on: the message lanes' hash (`lanesHash`), and with a block lane its
 * number and `maxMessageBytes` folded in (so a block is never refused for its size by a peer built
 * with the same list). Without a block lane it is `lanesHash` unchanged.
 */
function connectionLanesHash(channels: MessageLanesOptions, block: ResolvedBlockLane | undefined): number {
  const h = lanesHash(channels);
  if (block === undefined) return h;
  const b = new Uint8Array(9);
  writeU32LE(b, 0, h);
  b[4] = block.lane;
  writeU32LE(b, 5, block.maxMessageBytes);
  return crc32Of(b);
}
