import type { AckConfig } from '../ack/index.js';
import { lanesHash, type ChannelsConfig, type LaneConfig } from '../channels/index.js';
import type { PathConfig } from '../congestion/path.js';
import { checkConfig } from '../core/errors.js';
import { cryptoRandom, type RandomSource } from '../core/random.js';

/** Options of a `ConnectionHost` (and of every connection it holds). Times in ms, sizes in bytes. */
export interface ConnectionOptions {
  /**
   * The lanes of every connection, in order (lane numbers are indexes here). Both ends must list the
   * same modes in the same order: a server refuses a client whose list differs (`'refused-lanes'`).
   * Default: one reliable-ordered lane.
   */
  lanes?: readonly LaneConfig[];
  /** Accept connections from peers (a server). Default false: only `connect` makes connections. */
  listen?: boolean;
  /** Most connections held at once, live or closing (1..2^21, default 1024); a CONNECT beyond is refused (`'refused-full'`). */
  maxConnections?: number;
  /** Largest datagram sent, bytes (256..65 507; default 1200, safe on every path). */
  maxDatagramBytes?: number;
  /** Settings of the lanes beside the lane list (redundancy, receive budgets, reassembly slots). */
  channels?: Omit<ChannelsConfig, 'lanes'>;
  /** Settings of the packet layer (ack timing, keep-alive, windows). */
  acks?: AckConfig;
  /** Settings of each connection's path (rate controller factory not shared: each connection gets its own). */
  path?: Omit<PathConfig, 'maxDatagramBytes' | 'rateController'>;
  /** Disconnect with `'timeout'` after this long with nothing valid received (100..3 600 000; default 10 000). */
  timeoutMs?: number;
  /** Give up connecting after this long (100..600 000; default 5000). */
  handshakeTimeoutMs?: number;
  /** Resend CONNECT this often while connecting (10..10 000; default 250). */
  handshakeResendMs?: number;
  /** CSPRNG for connection ids. Default `cryptoRandom`. */
  random?: RandomSource;
}

/** @internal */
export interface ResolvedConnectionOptions {
  listen: boolean;
  maxConnections: number;
  maxDatagramBytes: number;
  laneCount: number;
  lanesHash: number;
  channels: ChannelsConfig;
  acks: AckConfig | undefined;
  path: Omit<PathConfig, 'maxDatagramBytes' | 'rateController'> | undefined;
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
  checkConfig(typeof x === 'number' && Number.isFinite(x) && x >= lo && x <= hi, `${name} must be a number in ${lo}..${hi}`);
  return x;
}

/** @internal Validate and fill defaults; throws `invalid-config`. */
export function resolveConnectionOptions(o: ConnectionOptions): ResolvedConnectionOptions {
  checkConfig(typeof o === 'object' && o !== null, 'options must be an object');
  for (const k of Object.keys(o)) checkConfig(KEYS.has(k), `unknown connection option '${k}'`);
  const lanes = o.lanes ?? [{ mode: 'reliable-ordered' }];
  checkConfig(Array.isArray(lanes), 'lanes must be an array');
  checkConfig(o.channels === undefined || (typeof o.channels === 'object' && o.channels !== null), 'channels must be an object');
  checkConfig(o.random === undefined || typeof o.random === 'function', 'random must be a function');
  const maxDatagramBytes = num(o.maxDatagramBytes, 1200, 256, 65_507, 'maxDatagramBytes');
  checkConfig(Number.isInteger(maxDatagramBytes), 'maxDatagramBytes must be an integer');
  const maxConnections = num(o.maxConnections, 1024, 1, 2 ** 21, 'maxConnections');
  checkConfig(Number.isInteger(maxConnections), 'maxConnections must be an integer');
  const channels: ChannelsConfig = { ...(o.channels ?? {}), lanes: lanes.map((l) => ({ ...l })) };
  return {
    listen: o.listen ?? false,
    maxConnections,
    maxDatagramBytes,
    laneCount: lanes.length,
    lanesHash: lanesHash(channels),
    channels,
    acks: o.acks,
    path: o.path,
    timeoutMs: num(o.timeoutMs, 10_000, 100, 3_600_000, 'timeoutMs'),
    handshakeTimeoutMs: num(o.handshakeTimeoutMs, 5000, 100, 600_000, 'handshakeTimeoutMs'),
    handshakeResendMs: num(o.handshakeResendMs, 250, 10, 10_000, 'handshakeResendMs'),
    random: o.random ?? cryptoRandom,
  };
}
