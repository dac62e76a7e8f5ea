import type { AckConfig } from '../ack/index.js';
import type { ChannelsConfig } from '../channels/index.js';
import type { PathConfig } from '../congestion/path.js';
import { resolveConnectionOptions, type ConnectionLaneConfig } from '../connection/options.js';
import type { SessionOptions } from '../connection/session.js';
import { checkConfig } from '../core/errors.js';
import { UDP_IPV4_OVERHEAD_BYTES } from '../congestion/path.js';

/**
 * What a netcode connection carries: gamewire's lanes (the default: one reliable-ordered lane), or
 * `raw: true` for the application's own bytes in every payload packet (interoperates with any
 * netcode 1.02 peer). Both ends must agree; netcode itself cannot tell.
 */
export interface NetcodeCarryOptions {
  /** Payload packets carry the application's bytes (1..1200 each) instead of gamewire lanes. Default false. */
  raw?: boolean;
  /** The lanes (as `ConnectionOptions.lanes`; both ends list the same). Not with `raw`. */
  lanes?: readonly ConnectionLaneConfig[];
  /** Lane settings beside the list (as `ConnectionOptions.channels`). */
  channels?: Omit<ChannelsConfig, 'lanes'>;
  /** Packet-layer settings (as `ConnectionOptions.acks`). */
  acks?: AckConfig;
  /** Path settings (as `ConnectionOptions.path`). */
  path?: Omit<PathConfig, 'maxDatagramBytes' | 'rateController' | 'overheadBytes'>;
  /** Raw mode: payloads queued to send per connection before `send` throws `queue-full` (1..65 536; default 1024). */
  maxRawQueue?: number;
}

/** Largest payload a netcode packet carries, bytes (the standard's limit). */
export const NETCODE_MAX_PAYLOAD_BYTES = 1200;

/**
 * Bytes netcode adds around a payload at most: prefix byte, up to 8 sequence bytes, 16-byte MAC. The
 * path counts these and UDP/IPv4's 28 on every datagram (a sequence rarely needs more than 3 bytes:
 * the figure errs on the safe side).
 */
export const NETCODE_PACKET_OVERHEAD_BYTES = 1 + 8 + 16;

/** @internal */
export interface ResolvedCarry {
  raw: boolean;
  session: SessionOptions | undefined;
  maxRawQueue: number;
}

/** @internal Validate what a connection carries; throws `invalid-config`. */
export function resolveCarry(o: NetcodeCarryOptions): ResolvedCarry {
  const raw = o.raw ?? false;
  checkConfig(typeof raw === 'boolean', 'raw must be a boolean');
  checkConfig(!raw || (o.lanes === undefined && o.channels === undefined && o.acks === undefined),
    'raw mode carries no lanes: give raw or lanes/channels/acks, not both');
  const maxRawQueue = o.maxRawQueue ?? 1024;
  checkConfig(Number.isInteger(maxRawQueue) && maxRawQueue >= 1 && maxRawQueue <= 65_536, 'maxRawQueue must be an integer in 1..65536');
  if (raw) return { raw, session: undefined, maxRawQueue };
  const c = resolveConnectionOptions({
    ...(o.lanes === undefined ? {} : { lanes: o.lanes }),
    ...(o.channels === undefined ? {} : { channels: o.channels }),
    ...(o.acks === undefined ? {} : { acks: o.acks }),
    path: { ...(o.path ?? {}), overheadBytes: UDP_IPV4_OVERHEAD_BYTES + NETCODE_PACKET_OVERHEAD_BYTES },
  });
  return { raw, session: c, maxRawQueue };
}
