import { readU32LE, writeU32LE } from '../core/bytes.js';
import { GamewireError } from '../core/errors.js';
import { decoded, DecodeFail, rejected, type DecodeResult } from '../core/result.js';

/** Bytes of one KCP segment header (`IKCP_OVERHEAD`). */
export const KCP_OVERHEAD = 24;

/** Segment commands (the `cmd` byte). */
export const KcpCommand = {
  /** Data. */
  PUSH: 81,
  /** Acknowledgement of one PUSH (echoes its `sn` and `ts`). */
  ACK: 82,
  /** Window probe: "tell me your window" (sent while the peer's window is 0). */
  WASK: 83,
  /** Window size report (reply to WASK, or unsolicited when the receive queue stops being full). */
  WINS: 84,
} as const;

/** One of the four valid `cmd` values. */
export type KcpCommand = (typeof KcpCommand)[keyof typeof KcpCommand];

/** The 24-byte little-endian header in front of every segment. All fields are unsigned. */
export interface KcpSegmentHeader {
  /** Conversation id (u32); must equal the receiver's. */
  conv: number;
  /** Command: PUSH, ACK, WASK or WINS. */
  cmd: number;
  /** Fragments that follow this one in the message (u8); 0 for the last and in stream mode. */
  frg: number;
  /** Sender's free receive window, in segments (u16). */
  wnd: number;
  /** PUSH: sender clock at (re)transmission, ms (u32). ACK: the acknowledged PUSH's `ts`. */
  ts: number;
  /** PUSH: sequence number (u32). ACK: the acknowledged `sn`. */
  sn: number;
  /** Sender's next expected sequence number: everything below is received (u32). */
  una: number;
  /** Payload bytes following the header (u32). */
  len: number;
}

/** True for the four commands KCP knows; any other `cmd` makes `ikcp_input` return -3. */
export function isKcpCommand(cmd: number): cmd is KcpCommand {
  return cmd >= KcpCommand.PUSH && cmd <= KcpCommand.WINS;
}

export { readU32LE, writeU32LE };

/**
 * Write a header at `o` of `b` without bounds checks (the flush path sizes its buffer first).
 * Every field is truncated to its wire width, as C's casts do.
 */
export function writeHeader(
  b: Uint8Array, o: number,
  conv: number, cmd: number, frg: number, wnd: number, ts: number, sn: number, una: number, len: number,
): void {
  writeU32LE(b, o, conv);
  b[o + 4] = cmd;
  b[o + 5] = frg;
  b[o + 6] = wnd;
  b[o + 7] = wnd >>> 8;
  writeU32LE(b, o + 8, ts);
  writeU32LE(b, o + 12, sn);
  writeU32LE(b, o + 16, una);
  writeU32LE(b, o + 20, len);
}

/**
 * Encode `h` into `out` at `offset`; returns the bytes written (always 24). Throws
 * `GamewireError('buffer-too-small')` if `out` has no room. The payload is not written.
 */
export function encodeKcpHeader(out: Uint8Array, offset: number, h: KcpSegmentHeader): number {
  if (offset < 0 || offset + KCP_OVERHEAD > out.length) {
    throw new GamewireError('buffer-too-small', `KCP header needs ${KCP_OVERHEAD} bytes at offset ${offset}`);
  }
  writeHeader(out, offset, h.conv, h.cmd, h.frg, h.wnd, h.ts, h.sn, h.una, h.len);
  return KCP_OVERHEAD;
}

/**
 * Decode the header at `offset` (no copy, payload not checked). Fails with `truncated` when fewer
 * than 24 bytes remain, `bad-type` for an unknown `cmd`; `bytesRead` is 24.
 */
export function decodeKcpHeader(bytes: Uint8Array, offset = 0): DecodeResult<KcpSegmentHeader> {
  if (offset < 0 || bytes.length - offset < KCP_OVERHEAD) return rejected('truncated');
  const cmd = bytes[offset + 4]!;
  if (!isKcpCommand(cmd)) return rejected('bad-type');
  return decoded(
    {
      conv: readU32LE(bytes, offset),
      cmd,
      frg: bytes[offset + 5]!,
      wnd: bytes[offset + 6]! | (bytes[offset + 7]! << 8),
      ts: readU32LE(bytes, offset + 8),
      sn: readU32LE(bytes, offset + 12),
      una: readU32LE(bytes, offset + 16),
      len: readU32LE(bytes, offset + 20),
    },
    KCP_OVERHEAD,
  );
}

/**
 * The conversation id of a datagram (`ikcp_getconv`): its first 4 bytes, little-endian (a u32), or
 * `DecodeFail.truncated` (negative) when it is shorter than a KCP header (such a datagram is never
 * valid KCP). A hot-path decoder (core/result.ts).
 */
export function readKcpConv(datagram: Uint8Array): number {
  return datagram.length < KCP_OVERHEAD ? DecodeFail.truncated : readU32LE(datagram, 0);
}
