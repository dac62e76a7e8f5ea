import { crc32Of } from '../core/crc32.js';
import { checkConfig, isInt, isObject, isOneOf } from '../core/config.js';
import { MAX_UNRELIABLE_PIECES } from './wire.js';

/**
 * How a lane delivers its messages:
 * - `reliable-ordered`: every message exactly once, in send order.
 * - `reliable-unordered`: every message exactly once, each as soon as all its pieces are in.
 * - `unreliable`: at most once, any order.
 * - `unreliable-sequenced`: at most once; never a message older than one already delivered.
 * - `notify`: at most once, any order, and the sender gets exactly one `delivery` event per message.
 */
export type DeliveryMode = 'reliable-ordered' | 'reliable-unordered' | 'unreliable' | 'unreliable-sequenced' | 'notify';

/** One lane of messages. Both ends must be built with the same lane list (see `lanesHash`). */
export interface MessageLaneConfig {
  mode: DeliveryMode;
  /** 0..7, 0 first; a level is served only when every lower level has nothing that fits. Default 0. */
  priority?: number;
  /** 1..1000: share of the bytes within a priority level. Default 1. */
  weight?: number;
  /**
   * Sender bytes queued + sent and not yet acknowledged (each message counts its length + 16 bytes).
   * Default 4 MiB reliable, 256 KiB unreliable. At the limit: reliable `send` throws `queue-full`;
   * unreliable lanes drop their oldest queued messages.
   */
  maxQueuedBytes?: number;
  /**
   * Largest message, bytes; `send` throws `message-too-large` above it. Default 1 MiB reliable
   * (capped at `maxReceiveBytes`), 256 × `fragmentBytes` unreliable (the most an unreliable message
   * may be: 256 pieces); either capped at `maxQueuedBytes` - 16.
   */
  maxMessageBytes?: number;
  /**
   * Reliable lanes: extra rides of an unacknowledged piece, 0..8 or `'auto'` (default: the
   * `MessageLanesOptions` value). Riders go at the lane's priority, before lower levels' new data: 0 suits
   * a bulk lane.
   */
  redundancy?: number | 'auto';
}

/** Configuration of a `MessageLanes`. Only `lanes` is required. */
export interface MessageLanesOptions {
  /** 1..32 lanes; the lane number is the index. */
  lanes: MessageLaneConfig[];
  /**
   * Extra rides of an unacknowledged reliable piece in later packets, 0..8, or `'auto'` (default):
   * none while the connection has seen no loss (none yet, or none in its last `AUTO_CLEAN_OUTCOMES`
   * packet outcomes), else as many as make losing every copy rarer than `AUTO_REDUNDANCY_TARGET` at
   * the packet loss rate it measures (`setLossRate`), 1 at ≤ 1 % loss, 2 at 5 %, 3 at 10 %, 5 at 20
   * %, at most 8. A lane may set its own.
   */
  redundancy?: number | 'auto';
  /**
   * Per-lane receive budget, bytes: pieces held out of order (reliable) or in reassembly
   * (unreliable). Default 4 MiB (raised to a reliable lane's `maxMessageBytes` if larger). Both ends
   * use it: a sender never has more than this many bytes of a reliable lane outstanding past the
   * first message not yet acknowledged, so a conforming peer never exceeds it.
   */
  maxReceiveBytes?: number;
  /** Messages being reassembled per unreliable lane, 1..256. Default 16; at the limit the oldest is evicted. */
  maxReassemblySlots?: number;
  /** Reliable id window (pieces), a power of two 16..32768. Default 8192. */
  reliableWindow?: number;
  /** Payload bytes of one piece of a split unreliable message, 16..65000. Default 1024. */
  fragmentBytes?: number;
}

/** A lane with every default filled in. */
export interface ResolvedLane {
  readonly mode: DeliveryMode;
  readonly reliable: boolean;
  readonly ordered: boolean;
  readonly priority: number;
  readonly weight: number;
  readonly maxQueuedBytes: number;
  readonly maxMessageBytes: number;
  readonly maxReceiveBytes: number;
  /** Fixed extra rides, or -1 for `'auto'`. */
  readonly redundancy: number;
}

/** A `MessageLanesOptions` with every default filled in. */
export interface ResolvedMessageLanesOptions {
  readonly lanes: readonly ResolvedLane[];
  readonly redundancy: number;
  readonly maxReassemblySlots: number;
  readonly reliableWindow: number;
  readonly fragmentBytes: number;
}

/** Bytes each queued message is charged on top of its length (so empty messages are bounded too). */
export const MESSAGE_CHARGE_BYTES = 16;
/** Most lanes of one `MessageLanes`. */
export const MAX_LANES = 32;

const MODES: readonly DeliveryMode[] = ['reliable-ordered', 'reliable-unordered', 'unreliable', 'unreliable-sequenced', 'notify'];
const MiB = 1024 * 1024;

/** A redundancy setting as resolved: the fixed number of rides, or -1 for `'auto'`. */
function redundancyOf(v: number | 'auto', name: string): number {
  if (v === 'auto') return -1;
  checkConfig(isInt(v, 0, 8), `${name} must be an integer 0..8 or 'auto'`);
  return v;
}

/** Check `config` and fill in the defaults; throws `invalid-config`. */
export function resolveMessageLanesOptions(config: MessageLanesOptions): ResolvedMessageLanesOptions {
  checkConfig(isObject(config) && Array.isArray(config.lanes), 'channels config needs a lanes array');
  checkConfig(config.lanes.length >= 1 && config.lanes.length <= MAX_LANES, `lanes must be 1..${MAX_LANES}`);
  const redundancy = redundancyOf(config.redundancy ?? 'auto', 'redundancy');
  const slots = config.maxReassemblySlots ?? 16;
  checkConfig(isInt(slots, 1, 256), 'maxReassemblySlots must be an integer 1..256');
  const window = config.reliableWindow ?? 8192;
  checkConfig(isInt(window, 16, 32768) && (window & (window - 1)) === 0, 'reliableWindow must be a power of two 16..32768');
  const fragmentBytes = config.fragmentBytes ?? 1024;
  checkConfig(isInt(fragmentBytes, 16, 65000), 'fragmentBytes must be an integer 16..65000');
  const receiveSet = config.maxReceiveBytes !== undefined;
  const receive = config.maxReceiveBytes ?? 4 * MiB;
  checkConfig(isInt(receive, 1024, 2 ** 31), 'maxReceiveBytes must be an integer 1024..2^31');
  const lanes = config.lanes.map((l, i): ResolvedLane => {
    checkConfig(isObject(l) && isOneOf(l.mode, MODES), `lane ${i}: mode must be one of ${MODES.join(', ')}`);
    const reliable = l.mode === 'reliable-ordered' || l.mode === 'reliable-unordered';
    const priority = l.priority ?? 0;
    const weight = l.weight ?? 1;
    const laneRedundancy = l.redundancy === undefined ? redundancy : redundancyOf(l.redundancy, `lane ${i}: redundancy`);
    checkConfig(reliable || l.redundancy === undefined, `lane ${i}: redundancy is for reliable lanes`);
    checkConfig(isInt(priority, 0, 7), `lane ${i}: priority must be an integer 0..7`);
    checkConfig(isInt(weight, 1, 1000), `lane ${i}: weight must be an integer 1..1000`);
    const maxQueuedBytes = l.maxQueuedBytes ?? (reliable ? 4 * MiB : 256 * 1024);
    checkConfig(isInt(maxQueuedBytes, 64, 2 ** 31), `lane ${i}: maxQueuedBytes must be an integer 64..2^31`);
    const maxUnreliable = MAX_UNRELIABLE_PIECES * fragmentBytes;
    const maxMessageBytes = l.maxMessageBytes
      ?? Math.min(reliable ? Math.min(MiB, receive) : maxUnreliable, maxQueuedBytes - MESSAGE_CHARGE_BYTES);
    checkConfig(isInt(maxMessageBytes, 0, 2 ** 31), `lane ${i}: maxMessageBytes must be an integer ≥ 0`);
    checkConfig(maxMessageBytes + MESSAGE_CHARGE_BYTES <= maxQueuedBytes, `lane ${i}: maxMessageBytes + ${MESSAGE_CHARGE_BYTES} must be ≤ maxQueuedBytes`);
    checkConfig(reliable || maxMessageBytes <= maxUnreliable, `lane ${i}: an unreliable message is at most 256 × fragmentBytes = ${maxUnreliable} bytes`);
    let maxReceiveBytes = receive;
    if (reliable && maxMessageBytes > receive) {
      checkConfig(!receiveSet, `lane ${i}: maxReceiveBytes must be ≥ the lane's maxMessageBytes`);
      maxReceiveBytes = maxMessageBytes;
    }
    return { mode: l.mode, reliable, ordered: l.mode === 'reliable-ordered', priority, weight, maxQueuedBytes, maxMessageBytes, maxReceiveBytes, redundancy: laneRedundancy };
  });
  return { lanes, redundancy, maxReassemblySlots: slots, reliableWindow: window, fragmentBytes };
}

/**
 * CRC-32 of the canonical encoding of what both ends must agree on: per lane its mode (one byte,
 * the index in the `DeliveryMode` list) and its receive budget (u32 LE), then the reliable window
 * (u16 LE, window - 1). Priorities, weights and sender limits are local and not included.
 * The connection compares it in its handshake. Throws `invalid-config` like `new MessageLanes`.
 */
export function lanesHash(config: MessageLanesOptions): number {
  const r = resolveMessageLanesOptions(config);
  const b = new Uint8Array(r.lanes.length * 5 + 2);
  let o = 0;
  for (const l of r.lanes) {
    b[o++] = MODES.indexOf(l.mode);
    b[o++] = l.maxReceiveBytes & 0xff;
    b[o++] = (l.maxReceiveBytes >>> 8) & 0xff;
    b[o++] = (l.maxReceiveBytes >>> 16) & 0xff;
    b[o++] = l.maxReceiveBytes >>> 24;
  }
  b[o++] = (r.reliableWindow - 1) & 0xff;
  b[o] = (r.reliableWindow - 1) >>> 8;
  return crc32Of(b);
}
