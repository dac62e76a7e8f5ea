import { readU32LE, writeU32LE } from '../core/bytes.js';
import { decoded, type DecodeResult, rejected } from '../core/result.js';
import { sipHash24, type SipHashKey } from '../core/siphash.js';

/**
 * The unsecured connection framing (docs/connection.md). Every datagram starts with a kind byte;
 * DATA carries the receiver's connection id, then the packet layer's header and the channel frames.
 * The netcode framing (src/netcode/) is the secure alternative: it replaces this framing and keeps what follows it.
 */
export const FrameKind = {
  Connect: 0x01,
  Accept: 0x02,
  Refuse: 0x03,
  Data: 0x04,
  Disconnect: 0x05,
  /** Kind, receiver id, then one chunk protocol datagram of the block lane (docs/chunk.md). */
  Block: 0x06,
  /** Server → client, stateless: kind, client id, the cookie to echo in the next CONNECT. */
  Cookie: 0x07,
} as const;

/** ASCII "GWCN": first bytes after the kind of a CONNECT, so stray traffic is not mistaken for one. */
export const CONNECT_MAGIC = 0x4e435747;
/** Version of this framing (2: the cookie round trip); a server refuses any other with `'version'`. */
export const CONNECTION_PROTOCOL_VERSION = 2;
/** CONNECT is padded to this many bytes, more than any answer, so the server never amplifies. */
export const CONNECT_BYTES = 32;
/** Bytes of a cookie: the server's time when it made it (u32 ms) and an 8-byte SipHash-2-4 tag. */
export const COOKIE_BYTES = 12;
/** Bytes of a COOKIE frame: kind, client id, cookie. */
export const COOKIE_FRAME_BYTES = 5 + COOKIE_BYTES;
/** Offset of the cookie in a CONNECT (all zero: no cookie). */
const CONNECT_COOKIE_AT = 14;
/** Bytes of ACCEPT: kind, client id, server id. */
export const ACCEPT_BYTES = 9;
/** Bytes of REFUSE: kind, client id, reason. */
export const REFUSE_BYTES = 6;
/** Bytes of DISCONNECT: kind, receiver id, reason. */
export const DISCONNECT_BYTES = 6;
/** Bytes of the DATA framing before the packet header: kind and receiver id. */
export const DATA_PREFIX_BYTES = 5;
/** Bytes of the BLOCK framing before its chunk datagram: kind and receiver id. */
export const BLOCK_PREFIX_BYTES = 5;

/** Why a server refused a CONNECT (the REFUSE reason byte). */
export const RefuseCode = { Full: 1, Lanes: 2, Version: 3 } as const;
/** Why a peer disconnected (the DISCONNECT reason byte). */
export const DisconnectCode = { Local: 1, Timeout: 2, Protocol: 3 } as const;

/** A decoded CONNECT. */
export interface ConnectFrame {
  version: number;
  clientId: number;
  /** Meaningful only when `version` is `CONNECTION_PROTOCOL_VERSION` (other versions are refused on it alone). */
  lanesHash: number;
  /** The cookie echoed from a COOKIE (a view into the decoded bytes), or `undefined` when all zero. */
  cookie: Uint8Array | undefined;
}

/** Write a CONNECT into `out` (≥ 32 bytes), with `cookie` (12 bytes) if the client has one; returns 32. */
export function encodeConnect(out: Uint8Array, clientId: number, lanesHash: number, cookie?: Uint8Array): number {
  out.fill(0, 0, CONNECT_BYTES);
  out[0] = FrameKind.Connect;
  writeU32LE(out, 1, CONNECT_MAGIC);
  out[5] = CONNECTION_PROTOCOL_VERSION;
  writeU32LE(out, 6, clientId);
  writeU32LE(out, 10, lanesHash);
  if (cookie !== undefined) out.set(cookie.subarray(0, COOKIE_BYTES), CONNECT_COOKIE_AT);
  return CONNECT_BYTES;
}

/**
 * Decode a CONNECT: exact length and magic; for this version also zero padding after the cookie.
 * Another version is decoded as far as its client id (to refuse it), whatever follows. An edge
 * decoder: a `DecodeResult` (`bad-length`, `bad-type` for another kind or magic, `bad-field` for
 * padding that is not zero).
 */
export function decodeConnect(b: Uint8Array): DecodeResult<ConnectFrame> {
  if (b.length !== CONNECT_BYTES) return rejected('bad-length');
  if (b[0] !== FrameKind.Connect || readU32LE(b, 1) !== CONNECT_MAGIC) return rejected('bad-type');
  const version = b[5]!;
  let cookie: Uint8Array | undefined;
  if (version === CONNECTION_PROTOCOL_VERSION) {
    for (let i = CONNECT_COOKIE_AT + COOKIE_BYTES; i < CONNECT_BYTES; i++) if (b[i] !== 0) return rejected('bad-field');
    for (let i = CONNECT_COOKIE_AT; i < CONNECT_COOKIE_AT + COOKIE_BYTES; i++) {
      if (b[i] !== 0) {
        cookie = b.subarray(CONNECT_COOKIE_AT, CONNECT_COOKIE_AT + COOKIE_BYTES);
        break;
      }
    }
  }
  return decoded({ version, clientId: readU32LE(b, 6), lanesHash: readU32LE(b, 10), cookie }, CONNECT_BYTES);
}

/** Write a COOKIE (kind, client id, the 12-byte `cookie`); returns 17. */
export function encodeCookie(out: Uint8Array, clientId: number, cookie: Uint8Array): number {
  out[0] = FrameKind.Cookie;
  writeU32LE(out, 1, clientId);
  out.set(cookie.subarray(0, COOKIE_BYTES), 5);
  return COOKIE_FRAME_BYTES;
}

/** Decode a COOKIE (exact length, else `bad-length`; another kind is `bad-type`); the cookie is a view into `b`. */
export function decodeCookie(b: Uint8Array): DecodeResult<{ clientId: number; cookie: Uint8Array }> {
  if (b.length !== COOKIE_FRAME_BYTES) return rejected('bad-length');
  if (b[0] !== FrameKind.Cookie) return rejected('bad-type');
  return decoded({ clientId: readU32LE(b, 1), cookie: b.subarray(5) }, COOKIE_FRAME_BYTES);
}

const encoder = new TextEncoder();

/**
 * Write the cookie a server grants `address` for `clientId` at `issuedAt` (ms, taken mod 2^32) into
 * `out[offset..offset+12)`: `issuedAt` u32 LE, then the 8 bytes of SipHash-2-4(`key`, UTF-8(address) ‖
 * clientId u32 LE ‖ issuedAt u32 LE). Returns 12. Only the server that holds `key` can make one, so a
 * CONNECT echoing it shows its sender receives at `address`.
 */
export function makeCookie(key: SipHashKey, address: string, clientId: number, issuedAt: number, out: Uint8Array, offset: number): number {
  const a = encoder.encode(address);
  const m = new Uint8Array(a.length + 8);
  m.set(a);
  writeU32LE(m, a.length, clientId);
  writeU32LE(m, a.length + 4, issuedAt >>> 0);
  writeU32LE(out, offset, issuedAt >>> 0);
  sipHash24(key, m, out, offset + 4);
  return COOKIE_BYTES;
}

/** Write an ACCEPT; returns 9. */
export function encodeAccept(out: Uint8Array, clientId: number, serverId: number): number {
  out[0] = FrameKind.Accept;
  writeU32LE(out, 1, clientId);
  writeU32LE(out, 5, serverId);
  return ACCEPT_BYTES;
}

/** Write a REFUSE, or a DISCONNECT (same shape: kind, id, reason); returns 6. */
export function encodeIdReason(out: Uint8Array, kind: number, id: number, reason: number): number {
  out[0] = kind;
  writeU32LE(out, 1, id);
  out[5] = reason;
  return REFUSE_BYTES;
}

/** Write the BLOCK framing (kind, receiver id) before a chunk datagram at `out[5..]`; returns 5. */
export function encodeBlockPrefix(out: Uint8Array, receiverId: number): number {
  out[0] = FrameKind.Block;
  writeU32LE(out, 1, receiverId);
  return BLOCK_PREFIX_BYTES;
}
