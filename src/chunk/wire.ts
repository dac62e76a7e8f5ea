import { ByteReader, ByteWriter, readU16LE, readU32LE, writeU16LE, writeU32LE } from '../core/bytes.js';
import { crc32Of } from '../core/crc32.js';
import { GamewireError } from '../core/errors.js';
import { type DecodeResult, decoded, decodeErrorOf, DecodeFail, rejected } from '../core/result.js';

/**
 * Wire format of the chunk protocol (large-block transfer). Bytes only: encoders write into a
 * caller's buffer, decoders return a `DecodeResult` and never throw. Byte tables, ranges and hex
 * vectors: docs/chunk.md. All integers little-endian. Every packet's protocol fields end with a
 * CRC-32 of the bytes before it (a slice's CRC covers its header, not its payload).
 */

/** First byte of every chunk datagram: magic + protocol version 1. Anything else is rejected cheaply. */
export const CHUNK_MAGIC = 0xc1;

/** Packet type byte (offset 1). */
export const PacketType = { Slice: 1, Ack: 2, Cancel: 3, Refuse: 4 } as const;

/** CRC-32 field size. */
export const CRC_BYTES = 4;
/** Bytes before a slice's payload (fields + header CRC). */
export const SLICE_HEADER_BYTES = 27;
/** Size of an ack without windows (fields + CRC). */
export const ACK_BASE_BYTES = 26;
/** Bytes of one ack window header (base u32 + length u8), before its bitfield. */
export const ACK_WINDOW_HEADER_BYTES = 5;
/** Size of a cancel packet. */
export const CANCEL_BYTES = 13;
/** Size of a refusal packet. */
export const REFUSE_BYTES = 17;

/** Conservative UDP payload every slice packet fits in by default (IPv6 minimum MTU 1280 − headers). */
export const DEFAULT_DATAGRAM_BYTES = 1200;
/** Default slice payload: a full slice packet is exactly `DEFAULT_DATAGRAM_BYTES`. */
export const DEFAULT_SLICE_BYTES = DEFAULT_DATAGRAM_BYTES - SLICE_HEADER_BYTES;
/** Smallest slice payload the format allows; bounds per-slice bookkeeping at blockBytes/512 bytes. */
export const MIN_SLICE_BYTES = 64;
/** Largest slice payload the format allows (u16 field, packet ≤ 65535 bytes). */
export const MAX_SLICE_BYTES = 0xffff - SLICE_HEADER_BYTES;
/** Largest block the format can describe (u32 `blockBytes`). */
export const MAX_BLOCK_BYTES = 0xffffffff;
/** Most windows one ack may carry. */
export const MAX_ACK_WINDOWS = 2;
/** Largest bitfield of one ack window, in bytes (u8 length; 2040 slices). */
export const MAX_ACK_WINDOW_BYTES = 255;
/** Largest ack packet (546 bytes): fits any 1200-byte datagram. */
export const MAX_ACK_BYTES = ACK_BASE_BYTES + MAX_ACK_WINDOWS * (ACK_WINDOW_HEADER_BYTES + MAX_ACK_WINDOW_BYTES);

const FLAG_PIPELINED = 0x01;
const ACK_STATUS_MASK = 0x03;
const ACK_FLAG_ECHO = 0x04;

/** Number of slices of a block: at least 1 (an empty block travels as one empty slice). */
export function sliceCountOf(blockBytes: number, sliceBytes: number): number {
  return blockBytes === 0 ? 1 : Math.ceil(blockBytes / sliceBytes);
}

/** Payload bytes of slice `sliceId` (every slice is `sliceBytes` long except the last). */
export function sliceLengthOf(blockBytes: number, sliceBytes: number, sliceId: number): number {
  const n = sliceCountOf(blockBytes, sliceBytes);
  return sliceId === n - 1 ? blockBytes - sliceId * sliceBytes : sliceBytes;
}

/** One slice of a block, sender → receiver. */
export interface SlicePacket extends SliceHeader {
  type: 'slice';
  /** Exactly `sliceLengthOf(blockBytes, sliceBytes, sliceId)` bytes (a view, not a copy, when decoded). */
  payload: Uint8Array;
}

/** What an ack says about its block. */
export type AckStatus = 'partial' | 'complete' | 'cancelled';

/** A run of the receiver's slice bitfield: bit i of byte j = slice `base + 8j + i` received. */
export interface AckWindow {
  /** First slice described; a multiple of 8. */
  base: number;
  /** 1..255 bytes of bits, least significant bit first. */
  bits: Uint8Array;
}

/** Receiver → sender: which slices of a block arrived. Applied by the sender like a fuse (only ever adds acks). */
export interface AckPacket {
  type: 'ack';
  session: number;
  chunkId: number;
  /** 'complete': every slice arrived (cumAck = slice count, no windows); 'cancelled': dropped on the sender's request. */
  status: AckStatus;
  /** True when echoTimeUs/ackDelayUs describe the slice that prompted this ack. */
  hasEcho: boolean;
  /** `sendTimeUs` of the newest slice that prompted this ack (0 without echo). */
  echoTimeUs: number;
  /** µs the receiver held that slice before sending this ack (0 without echo). */
  ackDelayUs: number;
  /** Every slice below this index arrived (0 for 'cancelled'). */
  cumAck: number;
  /** 0..2 windows (none unless status is 'partial'). */
  windows: AckWindow[];
}

/** Sender → receiver: drop the (partial) block of `chunkId`. Resent until answered by an ack. */
export interface CancelPacket {
  type: 'cancel';
  session: number;
  chunkId: number;
  /** Same meaning as on slices: chunkId − 1 is still in flight. */
  pipelined: boolean;
}

/** Why a receiver refused a block. */
export type RefuseReason = 'too-large';

/** Receiver → sender: the block of `chunkId` will never be accepted. */
export interface RefusePacket {
  type: 'refuse';
  session: number;
  chunkId: number;
  reason: RefuseReason;
  /** The receiver's `maxBlockBytes`. */
  limitBytes: number;
}

/** Any chunk-protocol packet. */
export type ChunkPacket = SlicePacket | AckPacket | CancelPacket | RefusePacket;

/** The type byte of a datagram if it starts with the chunk magic, else undefined (cheap demux). */
export function peekPacketType(bytes: Uint8Array): number | undefined {
  return bytes.length >= 2 && bytes[0] === CHUNK_MAGIC ? bytes[1] : undefined;
}

function writeHead(w: ByteWriter, type: number, session: number, chunkId: number): void {
  w.u8(CHUNK_MAGIC).u8(type).u32(session).u16(chunkId);
}

/** Append the CRC of everything written since `start`. */
function sealCrc(w: ByteWriter, start: number): void {
  w.u32(crc32Of(w.bytes, start, w.offset));
}

/**
 * Hot-path slice encoder: header, header CRC, then the payload copied straight from
 * `block[offset, offset+length)` into `out` at `start` (no intermediate buffer). Returns bytes
 * written. The caller guarantees the fields are valid; throws `buffer-too-small` if `out` lacks room.
 */
export function writeSlice(
  out: Uint8Array, start: number, session: number, chunkId: number, pipelined: boolean, sendTimeUs: number,
  blockBytes: number, sliceBytes: number, sliceId: number, block: Uint8Array, offset: number, length: number,
): number {
  if (start + SLICE_HEADER_BYTES + length > out.length) {
    throw new GamewireError('buffer-too-small',
      `slice needs ${start + SLICE_HEADER_BYTES + length} bytes, buffer has ${out.length}`);
  }
  out[start] = CHUNK_MAGIC;
  out[start + 1] = PacketType.Slice;
  writeU32LE(out, start + 2, session);
  writeU16LE(out, start + 6, chunkId);
  out[start + 8] = pipelined ? FLAG_PIPELINED : 0;
  writeU32LE(out, start + 9, sendTimeUs);
  writeU32LE(out, start + 13, blockBytes);
  writeU16LE(out, start + 17, sliceBytes);
  writeU32LE(out, start + 19, sliceId);
  writeU32LE(out, start + 23, crc32Of(out, start, start + 23));
  out.set(block.subarray(offset, offset + length), start + SLICE_HEADER_BYTES);
  return SLICE_HEADER_BYTES + length;
}

/** Encode a slice packet into `out` at `offset`; returns bytes written. Throws `buffer-too-small` if `out` is short. */
export function encodeSlice(out: Uint8Array, p: Omit<SlicePacket, 'type'>, offset = 0): number {
  return writeSlice(out, offset, p.session, p.chunkId, p.pipelined, p.sendTimeUs, p.blockBytes,
    p.sliceBytes, p.sliceId, p.payload, 0, p.payload.length);
}

/** Size in bytes of an ack with windows of these bitfield lengths. */
export function ackLength(windowByteLengths: readonly number[]): number {
  let n = ACK_BASE_BYTES;
  for (const l of windowByteLengths) n += ACK_WINDOW_HEADER_BYTES + l;
  return n;
}

/** Encode an ack into `out` at `offset`; returns bytes written. Throws `buffer-too-small` if `out` is short. */
export function encodeAck(out: Uint8Array, p: Omit<AckPacket, 'type'>, offset = 0): number {
  const w = new ByteWriter(out, offset);
  writeHead(w, PacketType.Ack, p.session, p.chunkId);
  const status = p.status === 'partial' ? 0 : p.status === 'complete' ? 1 : 2;
  w.u8(status | (p.hasEcho ? ACK_FLAG_ECHO : 0)).u32(p.echoTimeUs).u32(p.ackDelayUs).u32(p.cumAck);
  w.u8(p.windows.length);
  for (const win of p.windows) w.u32(win.base).u8(win.bits.length).bytesFrom(win.bits);
  sealCrc(w, offset);
  return w.offset - offset;
}

/** Encode a cancel into `out` at `offset`; returns bytes written (always `CANCEL_BYTES`). */
export function encodeCancel(out: Uint8Array, p: Omit<CancelPacket, 'type'>, offset = 0): number {
  const w = new ByteWriter(out, offset);
  writeHead(w, PacketType.Cancel, p.session, p.chunkId);
  w.u8(p.pipelined ? FLAG_PIPELINED : 0);
  sealCrc(w, offset);
  return w.offset - offset;
}

/** Encode a refusal into `out` at `offset`; returns bytes written (always `REFUSE_BYTES`). */
export function encodeRefuse(out: Uint8Array, p: Omit<RefusePacket, 'type'>, offset = 0): number {
  const w = new ByteWriter(out, offset);
  writeHead(w, PacketType.Refuse, p.session, p.chunkId);
  w.u8(p.reason === 'too-large' ? 1 : 0).u32(p.limitBytes);
  sealCrc(w, offset);
  return w.offset - offset;
}

/** Encode any chunk packet (convenience for tests and tools; the sender uses `writeSlice`). */
export function encodeChunkPacket(out: Uint8Array, p: ChunkPacket, offset = 0): number {
  switch (p.type) {
    case 'slice': return encodeSlice(out, p, offset);
    case 'ack': return encodeAck(out, p, offset);
    case 'cancel': return encodeCancel(out, p, offset);
    case 'refuse': return encodeRefuse(out, p, offset);
    default: {
      const never: never = p;
      return never;
    }
  }
}

/** A slice's fields without its payload (which is `bytes[SLICE_HEADER_BYTES..]` of the datagram). */
export interface SliceHeader {
  /** Sender-chosen 32-bit session id (u32). */
  session: number;
  /** The block's id on the wire, (firstChunkId + id − 1) mod 2^16 (u16; docs/chunk.md, Block ids). */
  chunkId: number;
  /** True when the previous chunk (chunkId − 1) was still unacked when this was sent. */
  pipelined: boolean;
  /** Sender clock at transmission, µs modulo 2^32; echoed by acks for RTT. */
  sendTimeUs: number;
  /** Total size of the block in bytes (0..2^32−1). */
  blockBytes: number;
  /** Payload size of every slice but the last, bytes (MIN_SLICE_BYTES..MAX_SLICE_BYTES). */
  sliceBytes: number;
  /** Index of this slice, 0..sliceCount−1. */
  sliceId: number;
}

/**
 * The receiver's hot-path slice decoder: validate a whole slice datagram (magic, type, CRC, fields,
 * exact length) and read its header into `h` (the caller's, overwritten). Returns the bytes read
 * (the datagram's length; the payload is `bytes.subarray(SLICE_HEADER_BYTES)`), or a negative
 * `DecodeFail` code; it accepts exactly what `decodeChunkPacket` accepts as a slice, any other
 * packet type being `badType`. On a rejection `h` may hold part of the input.
 */
export function readSlice(bytes: Uint8Array, h: SliceHeader): number {
  const size = bytes.length;
  if (size < 2) return DecodeFail.truncated;
  if (bytes[0] !== CHUNK_MAGIC) return DecodeFail.badVersion;
  if (bytes[1] !== PacketType.Slice) return DecodeFail.badType;
  if (size < SLICE_HEADER_BYTES) return DecodeFail.truncated;
  if (crc32Of(bytes, 0, SLICE_HEADER_BYTES - CRC_BYTES) !== readU32LE(bytes, SLICE_HEADER_BYTES - CRC_BYTES)) return DecodeFail.badChecksum;
  const flags = bytes[8];
  const blockBytes = readU32LE(bytes, 13);
  const sliceBytes = readU16LE(bytes, 17);
  const sliceId = readU32LE(bytes, 19);
  if ((flags & ~FLAG_PIPELINED) !== 0) return DecodeFail.badField;
  if (sliceBytes < MIN_SLICE_BYTES || sliceBytes > MAX_SLICE_BYTES) return DecodeFail.outOfRange;
  const n = sliceCountOf(blockBytes, sliceBytes);
  if (sliceId >= n) return DecodeFail.outOfRange;
  const len = sliceId === n - 1 ? blockBytes - sliceId * sliceBytes : sliceBytes;
  if (size - SLICE_HEADER_BYTES < len) return DecodeFail.truncated;
  if (size - SLICE_HEADER_BYTES > len) return DecodeFail.trailingBytes;
  h.session = readU32LE(bytes, 2);
  h.chunkId = readU16LE(bytes, 6);
  h.pipelined = flags !== 0;
  h.sendTimeUs = readU32LE(bytes, 9);
  h.blockBytes = blockBytes;
  h.sliceBytes = sliceBytes;
  h.sliceId = sliceId;
  return size;
}

/**
 * Decode one whole datagram. The CRC, every field's range and the exact length are checked (a
 * slice's payload length must match its position in the block), so an accepted packet is self-consistent.
 */
export function decodeChunkPacket(bytes: Uint8Array): DecodeResult<ChunkPacket> {
  if (bytes.length < 2) return rejected('truncated');
  if (bytes[0] !== CHUNK_MAGIC) return rejected('bad-version');
  const type = bytes[1];
  let minLen: number;
  switch (type) {
    case PacketType.Slice: {
      const h: SliceHeader = {
        session: 0, chunkId: 0, pipelined: false, sendTimeUs: 0, blockBytes: 0, sliceBytes: 0, sliceId: 0,
      };
      const n = readSlice(bytes, h);
      if (n < 0) return rejected(decodeErrorOf(n));
      return decoded({ type: 'slice', ...h, payload: bytes.subarray(SLICE_HEADER_BYTES) }, bytes.length);
    }
    case PacketType.Ack: minLen = ACK_BASE_BYTES; break;
    case PacketType.Cancel: minLen = CANCEL_BYTES; break;
    case PacketType.Refuse: minLen = REFUSE_BYTES; break;
    default: return rejected('bad-type');
  }
  if (bytes.length < minLen) return rejected('truncated');
  const covered = bytes.length - CRC_BYTES;
  if (crc32Of(bytes, 0, covered) !== readU32LE(bytes, covered)) return rejected('bad-checksum');
  const r = new ByteReader(bytes, 2);
  const session = r.u32();
  const chunkId = r.u16();
  switch (type) {
    case PacketType.Ack: return decodeAck(r, session, chunkId);
    case PacketType.Cancel: {
      if (bytes.length > CANCEL_BYTES) return rejected('trailing-bytes');
      const flags = r.u8();
      if ((flags & ~FLAG_PIPELINED) !== 0) return rejected('bad-field');
      return decoded({ type: 'cancel', session, chunkId, pipelined: flags !== 0 }, CANCEL_BYTES);
    }
    default: {
      if (bytes.length > REFUSE_BYTES) return rejected('trailing-bytes');
      const reason = r.u8();
      const limitBytes = r.u32();
      if (reason !== 1) return rejected('bad-field');
      return decoded({ type: 'refuse', session, chunkId, reason: 'too-large', limitBytes }, REFUSE_BYTES);
    }
  }
}

function decodeAck(r: ByteReader, session: number, chunkId: number): DecodeResult<ChunkPacket> {
  const flags = r.u8();
  const echoTimeUs = r.u32();
  const ackDelayUs = r.u32();
  const cumAck = r.u32();
  const count = r.u8();
  if ((flags & ~(ACK_STATUS_MASK | ACK_FLAG_ECHO)) !== 0) return rejected('bad-field');
  const code = flags & ACK_STATUS_MASK;
  if (code === 3) return rejected('bad-field');
  const status: AckStatus = code === 0 ? 'partial' : code === 1 ? 'complete' : 'cancelled';
  const hasEcho = (flags & ACK_FLAG_ECHO) !== 0;
  if (!hasEcho && (echoTimeUs !== 0 || ackDelayUs !== 0)) return rejected('bad-field');
  if (count > MAX_ACK_WINDOWS) return rejected('out-of-range');
  if (status !== 'partial' && count !== 0) return rejected('bad-field');
  if (status === 'cancelled' && cumAck !== 0) return rejected('bad-field');
  const end = r.bytes.length - CRC_BYTES;
  const windows: AckWindow[] = [];
  for (let i = 0; i < count; i++) {
    if (end - r.offset < ACK_WINDOW_HEADER_BYTES) return rejected('truncated');
    const base = r.u32();
    const len = r.u8();
    if (base % 8 !== 0 || len === 0) return rejected('bad-field');
    if (base + len * 8 > 0x100000000) return rejected('out-of-range');
    if (end - r.offset < len) return rejected('truncated');
    windows.push({ base, bits: r.bytesView(len) });
  }
  if (r.offset < end) return rejected('trailing-bytes');
  return decoded({ type: 'ack', session, chunkId, status, hasEcho, echoTimeUs, ackDelayUs, cumAck, windows },
    r.bytes.length);
}
