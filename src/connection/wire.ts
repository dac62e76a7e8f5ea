import { readU32LE, writeU32LE } from '../core/bytes.js';

/**
 * The unsecured connection framing (docs/connection.md). Every datagram starts with a kind byte;
 * DATA carries the receiver's connection id, then the packet layer's header and the channel frames.
 * Netcode (later) replaces this framing and keeps what follows it.
 */
export const FrameKind = {
  Connect: 0x01,
  Accept: 0x02,
  Refuse: 0x03,
  Data: 0x04,
  Disconnect: 0x05,
  /** Kind, receiver id, then one chunk protocol datagram of the block lane (docs/chunk.md). */
  Block: 0x06,
} as const;

/** ASCII "GWCN": first bytes after the kind of a CONNECT, so stray traffic is not mistaken for one. */
export const CONNECT_MAGIC = 0x4e435747;
/** Version of this framing; a server refuses any other with `'version'`. */
export const CONNECTION_PROTOCOL_VERSION = 1;
/** CONNECT is padded to this many bytes, more than any answer, so the server never amplifies. */
export const CONNECT_BYTES = 32;
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
  lanesHash: number;
}

/** Write a CONNECT into `out` (≥ 32 bytes); returns 32. */
export function encodeConnect(out: Uint8Array, clientId: number, lanesHash: number): number {
  out.fill(0, 0, CONNECT_BYTES);
  out[0] = FrameKind.Connect;
  writeU32LE(out, 1, CONNECT_MAGIC);
  out[5] = CONNECTION_PROTOCOL_VERSION;
  writeU32LE(out, 6, clientId);
  writeU32LE(out, 10, lanesHash);
  return CONNECT_BYTES;
}

/** Decode a CONNECT: exact length, magic and zero padding checked; `undefined` when invalid. */
export function decodeConnect(b: Uint8Array): ConnectFrame | undefined {
  if (b.length !== CONNECT_BYTES || b[0] !== FrameKind.Connect || readU32LE(b, 1) !== CONNECT_MAGIC) return undefined;
  for (let i = 14; i < CONNECT_BYTES; i++) if (b[i] !== 0) return undefined;
  return { version: b[5]!, clientId: readU32LE(b, 6), lanesHash: readU32LE(b, 10) };
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
