import type { RateController } from '../congestion/controller.js';
import { AdaptiveRate } from '../congestion/adaptive.js';
import { FixedRate } from '../congestion/fixed.js';
import { Path } from '../congestion/path.js';
import { checkConfig, checkKnownKeys, isInt, isNum, isObject, isOptionalFn } from '../core/config.js';
import { cryptoRandom, type RandomSource, randomU32 } from '../core/random.js';
import { DEFAULT_SLICE_BYTES, MAX_ACK_WINDOW_BYTES, MAX_BLOCK_BYTES, MAX_SLICE_BYTES, MIN_SLICE_BYTES } from './wire.js';

/** Options of a `ChunkSender`; every field is optional (defaults in docs/chunk.md §Limits). */
export interface ChunkSenderOptions {
  /**
   * Fixed-rate mode: pace at this many wire bytes/s (UDP/IPv4 overhead included) with a `FixedRate`
   * instead of the default adaptive controller. Give this or `rateController`, not both.
   */
  rateBytesPerSec?: number;
  /** Injected send-rate controller (pacing); default `new AdaptiveRate()`, or `FixedRate` when `rateBytesPerSec` is given. */
  rateController?: RateController;
  /** Floor of the per-slice resend delay, ms: a slice is never resent sooner than max(RTT × 1.25, this). Default 20. */
  minResendMs?: number;
  /** RTT assumed before the first sample, ms. Default 100. */
  initialRttMs?: number;
  /** Payload bytes per slice (64..65512). Default 1177: a slice datagram is exactly 1200 bytes. */
  sliceBytes?: number;
  /** Send every slice of a new block at once, ignoring the budget, then pace (the seed's initial burst). Default false. */
  burst?: boolean;
  /** Blocks larger than this (bytes) never burst, whatever `burst` says. Default 262 144 (256 KiB). */
  burstMaxBlockBytes?: number;
  /** Most blocks queued or in flight; `sendBlock` beyond it throws `queue-full`. Default 1024. */
  maxQueuedBlocks?: number;
  /** Most bytes of blocks queued or in flight; `sendBlock` beyond it throws `queue-full`. Default 64 MiB. */
  maxQueuedBytes?: number;
  /** Start the next block once every slice of the current one was sent once (≤ 2 in flight). Default true. */
  pipeline?: boolean;
  /**
   * 32-bit id of this sender incarnation (u32), so the receiver ignores stale datagrams of an earlier
   * one. Default: drawn from `random`.
   */
  sessionId?: number;
  /** Source of the default `sessionId` (tests pass a seeded one). Default `cryptoRandom` (`crypto.getRandomValues`). */
  random?: RandomSource;
  /**
   * Wire chunk id of block 1 (u16): block `id` travels as chunk id (firstChunkId + id − 1) mod 2^16.
   * The receiver must be configured with the same value to report the same ids. Default 0.
   */
  firstChunkId?: number;
  /** A `stalled` event fires when an in-flight block makes no ack progress for this long, ms. Default 5000. */
  stallTimeoutMs?: number;
  /** Cap on the saved pacing budget, ms of the pacing rate. Default 10. */
  pacingBurstMs?: number;
  /** Most undrained events kept; beyond it the oldest is dropped and counted. Default 4096. */
  maxEvents?: number;
  /**
   * Unacked-data cap when feedback stops: no fresh slice goes out while the wire bytes of fresh slices sent
   * since the last ack exceed max(this × pacing rate × srtt, `unackedFloorBytes`). 0 disables. Default 2 (BDPs).
   */
  unackedBdpMultiple?: number;
  /** Floor of that cap, wire bytes. Default 65 536 (64 KiB). */
  unackedFloorBytes?: number;
  /**
   * The path to pace on, shared with the other lanes to the same peer (one rate, one RTT estimate).
   * Default: a private `Path` built from `rateBytesPerSec`/`rateController`, `initialRttMs`,
   * `pacingBurstMs`, `unackedBdpMultiple` and `unackedFloorBytes`; those must not be given with `path`.
   */
  path?: Path;
}

/** A `ChunkSenderOptions` with every default filled in. */
export interface ResolvedChunkSenderOptions {
  rateController: RateController;
  minResendMs: number;
  initialRttMs: number;
  sliceBytes: number;
  burst: boolean;
  burstMaxBlockBytes: number;
  maxQueuedBlocks: number;
  maxQueuedBytes: number;
  pipeline: boolean;
  sessionId: number;
  firstChunkId: number;
  stallTimeoutMs: number;
  pacingBurstMs: number;
  maxEvents: number;
  unackedBdpMultiple: number;
  unackedFloorBytes: number;
  /** The shared path given, or undefined (the sender builds its own). */
  path: Path | undefined;
}

/** Options of a `ChunkReceiver`; every field is optional. */
export interface ChunkReceiverOptions {
  /** Largest block accepted, bytes; a sender announcing more is refused (refusal packet). Default 16 MiB. */
  maxBlockBytes?: number;
  /**
   * Cap on reassembly memory, bytes: buffers of the current and next block, their slice bitfields,
   * and delivered blocks not yet polled. Default 2 × (maxBlockBytes + maxBlockBytes / 512 + 1). In a
   * `ChunkHost` it is this sender's share of the host's budget.
   */
  maxMemoryBytes?: number;
  /** Ack after this many new slices (1..64). Default 2. */
  ackEveryNew?: number;
  /** …or this long after the first unacked new slice, ms (0..25). Default 5. */
  ackDelayMs?: number;
  /** Bitfield bytes per ack window (1..255; 8 slices per byte). Default 32. */
  ackWindowBytes?: number;
  /** Accept only this session id (u32). Default: bind to the first sender seen. */
  sessionId?: number;
  /** The sender's `firstChunkId` (u16), so the block ids in events match the sender's. Default 0. */
  firstChunkId?: number;
  /** A different session is adopted only after the bound one sent nothing valid for this long, ms. Default 2000. */
  sessionIdleMs?: number;
  /** Most undrained non-block events kept (blocks are bounded by memory). Default 1024. */
  maxEvents?: number;
}

/** A `ChunkReceiverOptions` with every default filled in. */
export interface ResolvedChunkReceiverOptions {
  maxBlockBytes: number;
  maxMemoryBytes: number;
  ackEveryNew: number;
  ackDelayMs: number;
  ackWindowBytes: number;
  sessionId: number | undefined;
  firstChunkId: number;
  sessionIdleMs: number;
  maxEvents: number;
}

const SENDER_KEYS: ReadonlySet<string> = new Set([
  'rateBytesPerSec', 'rateController', 'minResendMs', 'initialRttMs', 'sliceBytes', 'burst', 'burstMaxBlockBytes',
  'maxQueuedBlocks', 'maxQueuedBytes', 'pipeline', 'sessionId', 'random', 'firstChunkId', 'stallTimeoutMs', 'pacingBurstMs',
  'maxEvents', 'unackedBdpMultiple', 'unackedFloorBytes', 'path',
]);

/** Sender options that configure its private path: rejected together with a shared `path`. */
const PATH_KEYS = ['rateBytesPerSec', 'rateController', 'initialRttMs', 'pacingBurstMs', 'unackedBdpMultiple', 'unackedFloorBytes'] as const;

const RECEIVER_KEYS: ReadonlySet<string> = new Set([
  'maxBlockBytes', 'maxMemoryBytes', 'ackEveryNew', 'ackDelayMs', 'ackWindowBytes', 'sessionId', 'firstChunkId',
  'sessionIdleMs', 'maxEvents',
]);

function checkKeys(c: object, known: ReadonlySet<string>, what: string): void {
  checkConfig(isObject(c), `${what} config must be an object`);
  checkKnownKeys(c, known, (k) => `unknown ${what} config key '${k}'`);
}

/** Memory a block of `blockBytes` takes at the receiver with the smallest legal slices: data + bitfield. */
export function worstBlockFootprint(blockBytes: number): number {
  return blockBytes + Math.ceil(blockBytes / (8 * MIN_SLICE_BYTES)) + 1;
}

/**
 * A `ChunkHost`'s receivers store a block in pieces of whole slices, each the fewest slices that make at
 * least this many bytes, allocated when the first slice in it arrives.
 */
export const PIECE_BYTES = 16 * 1024;

/** Bytes counted per piece of a block for its entry in the block's piece table. */
export const PIECE_ENTRY_BYTES = 8;

/** Slices per piece for slices of `sliceBytes` bytes. */
export function pieceSlicesOf(sliceBytes: number): number {
  return Math.ceil(PIECE_BYTES / sliceBytes);
}

/**
 * Most a block of `blockBytes` holds at once at a `ChunkHost`'s receiver, whatever its slice size: its
 * pieces, bitfield and piece table and, while it is assembled into one buffer, the whole block once more
 * (a block of one piece is received in place, as by a lone receiver).
 */
export function hostedBlockPeak(blockBytes: number): number {
  if (blockBytes <= PIECE_BYTES) return worstBlockFootprint(blockBytes);
  return 2 * blockBytes + Math.ceil(blockBytes / (8 * MIN_SLICE_BYTES)) + PIECE_ENTRY_BYTES * Math.ceil(blockBytes / PIECE_BYTES);
}

/** Validate and fill in defaults; throws `GamewireError('invalid-config')`. */
export function resolveSenderOptions(c: ChunkSenderOptions = {}): ResolvedChunkSenderOptions {
  checkKeys(c, SENDER_KEYS, 'sender');
  checkConfig(c.rateBytesPerSec === undefined || c.rateController === undefined,
    'give rateBytesPerSec or rateController, not both');
  if (c.path !== undefined) {
    checkConfig(c.path instanceof Path, 'path must be a Path');
    for (const k of PATH_KEYS) checkConfig(c[k] === undefined, `give path or ${k}, not both (the path holds it)`);
  }
  const rc = c.rateController ?? c.path?.controller;
  if (rc !== undefined) {
    checkConfig(typeof rc === 'object' && rc !== null && typeof rc.pacingRate === 'function' &&
      typeof rc.onSent === 'function' && typeof rc.onAck === 'function' && typeof rc.onLoss === 'function',
    'rateController must implement RateController');
  }
  checkConfig(isOptionalFn(c.random), 'random must be a function');
  const r: ResolvedChunkSenderOptions = {
    rateController: rc ?? (c.rateBytesPerSec !== undefined ? new FixedRate(c.rateBytesPerSec) : new AdaptiveRate()),
    minResendMs: c.minResendMs ?? 20,
    initialRttMs: c.initialRttMs ?? 100,
    sliceBytes: c.sliceBytes ?? DEFAULT_SLICE_BYTES,
    burst: c.burst ?? false,
    burstMaxBlockBytes: c.burstMaxBlockBytes ?? 256 * 1024,
    maxQueuedBlocks: c.maxQueuedBlocks ?? 1024,
    maxQueuedBytes: c.maxQueuedBytes ?? 64 * 1024 * 1024,
    pipeline: c.pipeline ?? true,
    sessionId: c.sessionId ?? randomU32(c.random ?? cryptoRandom),
    firstChunkId: c.firstChunkId ?? 0,
    stallTimeoutMs: c.stallTimeoutMs ?? 5000,
    pacingBurstMs: c.pacingBurstMs ?? 10,
    unackedBdpMultiple: c.unackedBdpMultiple ?? 2,
    unackedFloorBytes: c.unackedFloorBytes ?? 64 * 1024,
    maxEvents: c.maxEvents ?? 4096,
    path: c.path,
  };
  checkConfig(isNum(r.minResendMs, 0, 600_000), 'minResendMs must be a number in 0..600000');
  checkConfig(isNum(r.initialRttMs, Number.MIN_VALUE, 60_000), 'initialRttMs must be a number in (0, 60000]');
  checkConfig(isInt(r.sliceBytes, MIN_SLICE_BYTES, MAX_SLICE_BYTES), `sliceBytes must be an integer in ${MIN_SLICE_BYTES}..${MAX_SLICE_BYTES}`);
  checkConfig(typeof r.burst === 'boolean', 'burst must be a boolean');
  checkConfig(isInt(r.burstMaxBlockBytes, 0, MAX_BLOCK_BYTES), 'burstMaxBlockBytes must be an integer in 0..2^32-1');
  checkConfig(isInt(r.maxQueuedBlocks, 1, 1_000_000), 'maxQueuedBlocks must be an integer in 1..1000000');
  checkConfig(isInt(r.maxQueuedBytes, 1, Number.MAX_SAFE_INTEGER), 'maxQueuedBytes must be an integer ≥ 1');
  checkConfig(typeof r.pipeline === 'boolean', 'pipeline must be a boolean');
  checkConfig(isInt(r.sessionId, 0, 0xffffffff), 'sessionId must be an integer in 0..2^32-1');
  checkConfig(isInt(r.firstChunkId, 0, 0xffff), 'firstChunkId must be an integer in 0..65535');
  checkConfig(isNum(r.stallTimeoutMs, 1, Number.MAX_SAFE_INTEGER), 'stallTimeoutMs must be a number ≥ 1');
  checkConfig(isNum(r.pacingBurstMs, 0, 10_000), 'pacingBurstMs must be a number in 0..10000');
  checkConfig(isNum(r.unackedBdpMultiple, 0, 1000), 'unackedBdpMultiple must be a number in 0..1000');
  checkConfig(isInt(r.unackedFloorBytes, 0, Number.MAX_SAFE_INTEGER), 'unackedFloorBytes must be an integer ≥ 0');
  checkConfig(isInt(r.maxEvents, 1, 1_000_000), 'maxEvents must be an integer in 1..1000000');
  return r;
}

/** Validate and fill in defaults; throws `GamewireError('invalid-config')`. */
export function resolveReceiverOptions(c: ChunkReceiverOptions = {}): ResolvedChunkReceiverOptions {
  checkKeys(c, RECEIVER_KEYS, 'receiver');
  const maxBlockBytes = c.maxBlockBytes ?? 16 * 1024 * 1024;
  checkConfig(isInt(maxBlockBytes, 0, MAX_BLOCK_BYTES), 'maxBlockBytes must be an integer in 0..2^32-1');
  const r: ResolvedChunkReceiverOptions = {
    maxBlockBytes,
    maxMemoryBytes: c.maxMemoryBytes ?? 2 * worstBlockFootprint(maxBlockBytes),
    ackEveryNew: c.ackEveryNew ?? 2,
    ackDelayMs: c.ackDelayMs ?? 5,
    ackWindowBytes: c.ackWindowBytes ?? 32,
    sessionId: c.sessionId,
    firstChunkId: c.firstChunkId ?? 0,
    sessionIdleMs: c.sessionIdleMs ?? 2000,
    maxEvents: c.maxEvents ?? 1024,
  };
  checkConfig(isInt(r.maxMemoryBytes, worstBlockFootprint(maxBlockBytes), Number.MAX_SAFE_INTEGER),
    'maxMemoryBytes must be an integer ≥ maxBlockBytes + maxBlockBytes/512 + 1 (one largest block must fit)');
  checkConfig(isInt(r.ackEveryNew, 1, 64), 'ackEveryNew must be an integer in 1..64');
  checkConfig(isNum(r.ackDelayMs, 0, 25), 'ackDelayMs must be a number in 0..25');
  checkConfig(isInt(r.ackWindowBytes, 1, MAX_ACK_WINDOW_BYTES), `ackWindowBytes must be an integer in 1..${MAX_ACK_WINDOW_BYTES}`);
  checkConfig(r.sessionId === undefined || isInt(r.sessionId, 0, 0xffffffff), 'sessionId must be an integer in 0..2^32-1');
  checkConfig(isInt(r.firstChunkId, 0, 0xffff), 'firstChunkId must be an integer in 0..65535');
  checkConfig(isNum(r.sessionIdleMs, 0, Number.MAX_SAFE_INTEGER), 'sessionIdleMs must be a number ≥ 0');
  checkConfig(isInt(r.maxEvents, 1, 1_000_000), 'maxEvents must be an integer in 1..1000000');
  return r;
}
