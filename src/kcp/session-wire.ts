import { GamewireError } from '../core/errors.js';
import { sipHash24Low32, sipHashKey, type SipHashKey } from '../core/siphash.js';
import { decoded, rejected, type DecodeResult } from '../core/result.js';
import { KCP_OVERHEAD, KcpCommand, readU32LE, writeHeader, writeU32LE } from './segment.js';

// Wire of gamewire's optional KCP cookie mode (docs/kcp-session.md). Raw mode adds no bytes at all.

/** Bytes in front of every cookie-mode datagram: the session cookie, or 0 for a control packet. */
export const KCP_COOKIE_PREFIX = 4;
/** Version byte carried by every control packet. */
export const KCP_SESSION_VERSION = 1;
/** Exact size of a CONNECT packet, bytes (zero-padded so that no reply is larger than it). */
export const KCP_CONNECT_SIZE = 32;
/** Size of an ACCEPT packet, bytes. */
export const KCP_ACCEPT_SIZE = 18;
/** Size of a REFUSE packet, bytes. */
export const KCP_REFUSE_SIZE = 11;
/** Size of a CLOSE packet, bytes. */
export const KCP_CLOSE_SIZE = 14;

/** Control packet types (byte 4 of a datagram whose first 4 bytes are zero). */
export const KcpControlType = {
  /** Client → server: ask for a conversation. */
  CONNECT: 1,
  /** Server → client: conv and cookie granted. */
  ACCEPT: 2,
  /** Server → client: no session (see `KcpRefuseReason`). */
  REFUSE: 3,
  /** Either way: the sender has closed the session. */
  CLOSE: 4,
} as const;

/** Reason byte of a REFUSE packet. */
export const KcpRefuseReason = {
  /** The server holds its maximum number of sessions. */
  SERVER_FULL: 1,
  /** The server holds its maximum number of sessions for the client's address (IP). */
  ADDRESS_FULL: 2,
} as const;

/** A decoded control packet. Numbers are u32 unless noted. */
export type KcpControl =
  | { type: 'connect'; nonce: number }
  | { type: 'accept'; nonce: number; conv: number; cookie: number }
  | { type: 'refuse'; nonce: number; reason: number }
  | { type: 'close'; conv: number; cookie: number };

function header(out: Uint8Array, size: number, type: number): void {
  if (out.length < size) throw new GamewireError('buffer-too-small', `control packet needs ${size} bytes`);
  out.fill(0, 0, size);
  out[4] = type;
  out[5] = KCP_SESSION_VERSION;
}

/** Write CONNECT(nonce) into `out`; returns its length (32). */
export function encodeConnect(out: Uint8Array, nonce: number): number {
  header(out, KCP_CONNECT_SIZE, KcpControlType.CONNECT);
  writeU32LE(out, 6, nonce);
  return KCP_CONNECT_SIZE;
}

/** Write ACCEPT(nonce, conv, cookie) into `out`; returns its length (18). */
export function encodeAccept(out: Uint8Array, nonce: number, conv: number, cookie: number): number {
  header(out, KCP_ACCEPT_SIZE, KcpControlType.ACCEPT);
  writeU32LE(out, 6, nonce);
  writeU32LE(out, 10, conv);
  writeU32LE(out, 14, cookie);
  return KCP_ACCEPT_SIZE;
}

/** Write REFUSE(nonce, reason) into `out`; returns its length (11). */
export function encodeRefuse(out: Uint8Array, nonce: number, reason: number): number {
  header(out, KCP_REFUSE_SIZE, KcpControlType.REFUSE);
  writeU32LE(out, 6, nonce);
  out[10] = reason;
  return KCP_REFUSE_SIZE;
}

/** Write CLOSE(conv, cookie) into `out`; returns its length (14). */
export function encodeClose(out: Uint8Array, conv: number, cookie: number): number {
  header(out, KCP_CLOSE_SIZE, KcpControlType.CLOSE);
  writeU32LE(out, 6, conv);
  writeU32LE(out, 10, cookie);
  return KCP_CLOSE_SIZE;
}

/**
 * Decode a cookie-mode control packet (first 4 bytes zero). Fails with `bad-type` if it is not a
 * control packet or the type is unknown, `bad-version`, or `bad-length` unless the size is exact
 * (CONNECT's padding must also be zero: `bad-field`).
 */
export function decodeControl(b: Uint8Array): DecodeResult<KcpControl> {
  if (b.length < 6) return rejected('truncated');
  if (readU32LE(b, 0) !== 0) return rejected('bad-type');
  if (b[5] !== KCP_SESSION_VERSION) return rejected('bad-version');
  switch (b[4]) {
    case KcpControlType.CONNECT:
      if (b.length !== KCP_CONNECT_SIZE) return rejected('bad-length');
      for (let i = 10; i < KCP_CONNECT_SIZE; i++) if (b[i] !== 0) return rejected('bad-field');
      return decoded({ type: 'connect', nonce: readU32LE(b, 6) }, b.length);
    case KcpControlType.ACCEPT:
      if (b.length !== KCP_ACCEPT_SIZE) return rejected('bad-length');
      return decoded({ type: 'accept', nonce: readU32LE(b, 6), conv: readU32LE(b, 10), cookie: readU32LE(b, 14) }, b.length);
    case KcpControlType.REFUSE:
      if (b.length !== KCP_REFUSE_SIZE) return rejected('bad-length');
      return decoded({ type: 'refuse', nonce: readU32LE(b, 6), reason: b[10]! }, b.length);
    case KcpControlType.CLOSE:
      if (b.length !== KCP_CLOSE_SIZE) return rejected('bad-length');
      return decoded({ type: 'close', conv: readU32LE(b, 6), cookie: readU32LE(b, 10) }, b.length);
    default:
      return rejected('bad-type');
  }
}

/**
 * True if `b[offset..]` is a well-formed raw KCP datagram for `conv` (any conv when undefined):
 * at least one 24-byte header, every segment with that conv, a known cmd and a length inside the
 * datagram. Trailing bytes shorter than a header are allowed, as in ikcp_input.
 */
export function isWellFormedKcp(b: Uint8Array, offset: number, conv?: number): boolean {
  const size = b.length;
  if (size - offset < KCP_OVERHEAD) return false;
  const c = conv ?? readU32LE(b, offset);
  let off = offset;
  while (size - off >= KCP_OVERHEAD) {
    if (readU32LE(b, off) !== c) return false;
    const cmd = b[off + 4]!;
    if (cmd < KcpCommand.PUSH || cmd > KcpCommand.WINS) return false;
    const len = readU32LE(b, off + 20);
    off += KCP_OVERHEAD;
    if (len > size - off) return false;
    off += len;
  }
  return true;
}

/**
 * Write the keep-alive probe at `offset`: a standard KCP WASK segment (cmd 83, ts 0, sn 0, len 0)
 * carrying our free window and `una`, exactly what ikcp would send. Any KCP peer answers it with a
 * WINS at its next flush. Returns 24.
 */
export function writeKeepAlive(out: Uint8Array, offset: number, conv: number, wnd: number, una: number): number {
  if (out.length - offset < KCP_OVERHEAD) throw new GamewireError('buffer-too-small', 'keep-alive needs 24 bytes');
  writeHeader(out, offset, conv, KcpCommand.WASK, 0, wnd, 0, 0, una, 0);
  return KCP_OVERHEAD;
}

const encoder = new TextEncoder();

/** A 128-bit SipHash key as four u32 words (see `SipHashKey` in core/siphash). */
export type CookieKey = SipHashKey;

/** Build a cookie key from 16 bytes (e.g. from a CSPRNG). */
export function cookieKeyFromBytes(bytes: Uint8Array): CookieKey {
  if (bytes.length !== 16) throw new GamewireError('invalid-argument', 'cookie key must be 16 bytes');
  return sipHashKey(bytes);
}

/** Low 32 bits of SipHash-2-4(key, message), the 64-bit result read as in the SipHash paper's vectors. */
export function sipHashLow32(key: CookieKey, message: Uint8Array): number {
  return sipHash24Low32(key, message);
}

/**
 * The cookie the server grants to `address` for `conv`: `sipHashLow32(key, UTF-8(address) ‖ conv
 * as u32 LE)`, or 1 when that is 0 (0 marks control packets).
 */
export function deriveCookie(key: CookieKey, address: string, conv: number): number {
  const a = encoder.encode(address);
  const m = new Uint8Array(a.length + 4);
  m.set(a);
  writeU32LE(m, a.length, conv);
  return sipHashLow32(key, m) || 1;
}
