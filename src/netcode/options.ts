import type { AckOptions } from '../ack/index.js';
import type { MessageLanesOptions } from '../channels/index.js';
import { FixedRate } from '../congestion/fixed.js';
import type { RateController } from '../congestion/controller.js';
import type { PathOptions } from '../congestion/path.js';
import { resolveConnectionOptions, type LaneConfig } from '../connection/options.js';
import type { LanesOptions } from '../connection/session.js';
import { checkConfig, isInt } from '../core/config.js';
import { UDP_IPV4_OVERHEAD_BYTES } from '../congestion/path.js';

/**
 * What a netcode connection carries: gamewire's lanes (the default: one reliable-ordered lane), or
 * `raw: true` for the application's own bytes in every payload packet (interoperates with any
 * netcode 1.02 peer). Both ends must agree; netcode itself cannot tell.
 */
export interface NetcodePayloadOptions {
  /** Payload packets carry the application's bytes (1..1200 each) instead of gamewire lanes. Default false. */
  raw?: boolean;
  /** The lanes (as `ConnectionOptions.lanes`; both ends list the same). Not with `raw`. */
  lanes?: readonly LaneConfig[];
  /** Lane settings beside the list (as `ConnectionOptions.channels`). */
  channels?: Omit<MessageLanesOptions, 'lanes'>;
  /** Packet-layer settings (as `ConnectionOptions.acks`). */
  acks?: AckOptions;
  /** Path settings (as `ConnectionOptions.path`). */
  path?: Omit<PathOptions, 'maxDatagramBytes' | 'rateController' | 'overheadBytes'>;
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
export interface ResolvedPayload {
  raw: boolean;
  session: LanesOptions | undefined;
  maxRawQueue: number;
  /** Largest session body in one payload packet, bytes. */
  maxPayloadBytes: number;
  /** The transport's `bulkRateBytesPerSec`. */
  bulkRateBytesPerSec: number | undefined;
}

/**
 * What carries the netcode packets (used by gamewire's own transports): the bytes it adds to each on
 * the wire (counted by the path, so pacing is honest) and the largest session body that keeps a
 * packet in one of its datagrams.
 */
export interface NetcodeTransport {
  overheadBytes: number;
  maxPayloadBytes: number;
  /** Redundancy of the lanes when the options leave `channels.redundancy` unset (default `'auto'`). */
  defaultRedundancy?: number | 'auto';
  /**
   * It delivers every packet, in order (TCP): the lanes send no extra rides whatever the options say,
   * the path declares no loss by timeout (`PathOptions.reliableTransport`), and acks wait up to 25 ms
   * for data to ride on (unless `acks.maxAckDelayMs` says).
   */
  reliable?: boolean;
  /**
   * Pacing ceiling, wire bytes/s, of a block lane that has a transport of this kind to itself (a
   * browser client's second WebSocket, `bindBulk`): below it the transport's own congestion control
   * sets the rate, the adapter holding the lane back while the transport's buffer is full
   * (`holdBulk`). Nothing else waits behind the block there, so the queue it builds delays only the
   * block's own acks. Unset: the path's delay-based default.
   */
  bulkRateBytesPerSec?: number;
}

/** @internal UDP over IPv4: 28 bytes of headers; the standard's 1,200-byte payloads. */
export const UDP_TRANSPORT: NetcodeTransport = { overheadBytes: UDP_IPV4_OVERHEAD_BYTES, maxPayloadBytes: NETCODE_MAX_PAYLOAD_BYTES };

/**
 * @internal A WebRTC data channel: UDP/IPv4 28, DTLS 1.2 record with AES-GCM 37 (13 header, 8
 * explicit nonce, 16 tag), SCTP common and DATA chunk headers 28, padding ≤ 3: 96 bytes. SCTP packets
 * are at most 1,200 bytes (libdatachannel's and Chromium's default), so a message above 1,172 bytes
 * is split in two; a session body of 1,147 bytes keeps a netcode packet (up to 25 bytes more) whole.
 */
export const WEBRTC_TRANSPORT: NetcodeTransport = { overheadBytes: 96, maxPayloadBytes: 1147 };

/**
 * @internal The server's end of a data channel (libdatachannel). Its SCTP (usrsctp) takes up to its
 * whole send buffer (256 KiB or more) without back-pressure, so `bufferedAmount` stays near 0 while
 * datagrams wait behind SCTP's congestion window; at 10 % loss that window shrinks, and `'auto'`'s
 * three rides per message (four times the bytes) queue there for seconds. One ride keeps the bytes
 * within it (docs/browser.md; figures in bench/README.md). The browser's end keeps `'auto'`: its
 * channel reports what waits, and the client holds datagrams back instead.
 */
export const WEBRTC_SERVER_TRANSPORT: NetcodeTransport = { ...WEBRTC_TRANSPORT, defaultRedundancy: 1 };

/**
 * @internal The server's end of a data channel whose SCTP never resends (`BrowserGatewayOptions.webrtcFavor`
 * `'latency'`): nothing waits there for a lost chunk's resend, so two rides per message fit where
 * SCTP's resends left room for one.
 */
export const WEBRTC_LATENCY_SERVER_TRANSPORT: NetcodeTransport = { ...WEBRTC_TRANSPORT, defaultRedundancy: 2 };

/**
 * @internal A WebSocket: IPv4 20, TCP with timestamps 32, the WebSocket frame header 4 (8 from a
 * client, masked): 60 bytes counted per packet (TLS adds 22 to 29 per record, and TCP may put several
 * packets in one segment: the figure is of the order, not exact). Every packet arrives, in order.
 */
export const WEBSOCKET_TRANSPORT: NetcodeTransport = {
  overheadBytes: 60, maxPayloadBytes: NETCODE_MAX_PAYLOAD_BYTES, reliable: true, bulkRateBytesPerSec: 12_500_000,
};

/** How long (ms) an ack may wait for data to ride on over a reliable transport, unless `acks.maxAckDelayMs` says. */
const RELIABLE_ACK_DELAY_MS = 25;

/** A lane's settings without its own redundancy (over a reliable transport every lane has none). */
function withoutRedundancy(l: LaneConfig): LaneConfig {
  if (l === null || typeof l !== 'object' || !('redundancy' in l)) return l;
  const { redundancy: _r, ...rest } = l;
  return rest;
}

/** @internal Validate what a connection carries (over `transport`, default UDP); throws `invalid-config`. */
export function resolvePayload(o: NetcodePayloadOptions, transport: NetcodeTransport = UDP_TRANSPORT): ResolvedPayload {
  const raw = o.raw ?? false;
  checkConfig(typeof raw === 'boolean', 'raw must be a boolean');
  checkConfig(!raw || (o.lanes === undefined && o.channels === undefined && o.acks === undefined),
    'raw mode carries no lanes: give raw or lanes/channels/acks, not both');
  const maxRawQueue = o.maxRawQueue ?? 1024;
  checkConfig(isInt(maxRawQueue, 1, 65_536), 'maxRawQueue must be an integer in 1..65536');
  const bulkRateBytesPerSec = transport.bulkRateBytesPerSec;
  if (raw) return { raw, session: undefined, maxRawQueue, maxPayloadBytes: transport.maxPayloadBytes, bulkRateBytesPerSec };
  const reliable = transport.reliable === true;
  const channels = reliable ? { ...o.channels, redundancy: 0 }
    : transport.defaultRedundancy === undefined ? o.channels : { redundancy: transport.defaultRedundancy, ...o.channels };
  const lanes = reliable && Array.isArray(o.lanes) ? o.lanes.map(withoutRedundancy) : o.lanes;
  // Over TCP an ack-only packet is a segment of its own that a loss can hold up: acks wait to ride on data.
  const acks = reliable ? { maxAckDelayMs: RELIABLE_ACK_DELAY_MS, ...o.acks } : o.acks;
  const c = resolveConnectionOptions({
    ...(lanes === undefined ? {} : { lanes }),
    ...(channels === undefined ? {} : { channels }),
    ...(acks === undefined ? {} : { acks }),
    path: {
      ...(o.path ?? {}),
      overheadBytes: transport.overheadBytes + NETCODE_PACKET_OVERHEAD_BYTES,
      ...(transport.reliable === true ? { reliableTransport: true } : {}),
    },
  });
  return { raw, session: c, maxRawQueue, maxPayloadBytes: transport.maxPayloadBytes, bulkRateBytesPerSec };
}

/** @internal The rate controller of a block lane on a transport of its own that carries `payload` (undefined: the path's default). */
export function bulkRateController(payload: ResolvedPayload): RateController | undefined {
  return payload.bulkRateBytesPerSec === undefined ? undefined : new FixedRate(payload.bulkRateBytesPerSec);
}
