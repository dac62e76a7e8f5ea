import { readU16LE, writeU16LE } from '../core/bytes.js';
import { decoded, type DecodeResult, rejected } from '../core/result.js';

// Frames of a data packet's payload (docs/channels.md, "Wire format"). Each frame starts with a kind
// byte; frames follow each other to the end of the payload. Decoders never throw: -1 means invalid.

/** Kind of a reliable piece: `RELIABLE_KIND | FLAG_FIRST? | FLAG_LAST?` (0x10..0x13). */
export const RELIABLE_KIND = 0x10;
/** Kind of an unreliable message sent whole (0x20). */
export const UNRELIABLE_KIND = 0x20;
/** Kind of one piece of a split unreliable message (0x21): `index u8, count-1 u8` follow the seq. */
export const UNRELIABLE_SPLIT_KIND = 0x21;
/** Reliable flag: first piece of a message. */
export const FLAG_FIRST = 0x01;
/** Reliable flag: last piece of a message. */
export const FLAG_LAST = 0x02;
/** Largest payload length of one frame: the length varint has at most 3 bytes (2^21 - 1 bytes). */
export const MAX_FRAME_PAYLOAD = 0x1fffff;
/** Most pieces of a split unreliable message (count is sent as count - 1 in a u8). */
export const MAX_UNRELIABLE_PIECES = 256;

/** One decoded frame. Byte fields are views into the decoded buffer (no copy). */
export type Frame =
  | { type: 'reliable'; lane: number; id: number; first: boolean; last: boolean; bytes: Uint8Array }
  | { type: 'unreliable'; lane: number; seq: number; index: number; count: number; bytes: Uint8Array };

/**
 * A decoded frame without allocation: `readFrame` fills it. `payloadStart`/`payloadEnd` are offsets
 * into the decoded buffer. `count` is 1 for a whole unreliable message; `id` holds the seq for one.
 */
export interface FrameView {
  reliable: boolean;
  lane: number;
  /** Reliable piece id or unreliable message seq (u16). */
  id: number;
  first: boolean;
  last: boolean;
  /** Unreliable piece index (0 when whole). */
  index: number;
  /** Unreliable piece count (1 when whole). */
  count: number;
  payloadStart: number;
  payloadEnd: number;
}

/** A fresh `FrameView` to pass to `readFrame`. */
export function newFrameView(): FrameView {
  return { reliable: false, lane: 0, id: 0, first: false, last: false, index: 0, count: 1, payloadStart: 0, payloadEnd: 0 };
}

/** Bytes of the length varint for `n` (1..3; n ≤ MAX_FRAME_PAYLOAD). */
export function lengthVarintBytes(n: number): number {
  return n < 0x80 ? 1 : n < 0x4000 ? 2 : 3;
}

/** Header bytes of a reliable piece carrying `n` payload bytes (5..7). */
export function reliableHeaderBytes(n: number): number {
  return 4 + lengthVarintBytes(n);
}

/** Header bytes of an unreliable frame carrying `n` payload bytes: 5..7 whole, 7..9 split. */
export function unreliableHeaderBytes(n: number, split: boolean): number {
  return (split ? 6 : 4) + lengthVarintBytes(n);
}

/**
 * Largest payload that fits in `room` bytes after a fixed header of `fixed` bytes and the length
 * varint, or -1 if not even an empty payload fits.
 */
export function payloadThatFits(room: number, fixed: number): number {
  for (let v = 1; v <= 3; v++) {
    const p = Math.min(room - fixed - v, MAX_FRAME_PAYLOAD);
    if (p < 0) return -1;
    if (lengthVarintBytes(p) <= v) return p;
  }
  return Math.min(room - fixed - 3, MAX_FRAME_PAYLOAD);
}

/** Write the length varint (LEB128, minimal, ≤ 3 bytes) of `n` at `out[o]`; returns bytes written. */
export function writeLength(out: Uint8Array, o: number, n: number): number {
  if (n < 0x80) {
    out[o] = n;
    return 1;
  }
  if (n < 0x4000) {
    out[o] = (n & 0x7f) | 0x80;
    out[o + 1] = n >>> 7;
    return 2;
  }
  out[o] = (n & 0x7f) | 0x80;
  out[o + 1] = ((n >>> 7) & 0x7f) | 0x80;
  out[o + 2] = n >>> 14;
  return 3;
}

/**
 * Read a length varint at `b[o]`, not past `end`: returns `value * 4 + bytesRead`, or -1 if
 * truncated, longer than 3 bytes or not minimal (a last byte of 0 after the first).
 */
export function readLength(b: Uint8Array, o: number, end: number): number {
  let value = 0;
  for (let i = 0; i < 3; i++) {
    if (o + i >= end) return -1;
    const x = b[o + i]!;
    value |= (x & 0x7f) << (7 * i);
    if ((x & 0x80) === 0) {
      if (x === 0 && i > 0) return -1;
      return value * 4 + i + 1;
    }
  }
  return -1;
}

/**
 * Write a reliable piece at `out[o]` (the caller checked the room: `reliableHeaderBytes(n) + n`).
 * Payload is `src[start, end)`. Returns bytes written.
 */
export function writeReliablePiece(
  out: Uint8Array, o: number, lane: number, id: number, first: boolean, last: boolean,
  src: Uint8Array, start: number, end: number,
): number {
  const n = end - start;
  out[o] = RELIABLE_KIND | (first ? FLAG_FIRST : 0) | (last ? FLAG_LAST : 0);
  out[o + 1] = lane;
  writeU16LE(out, o + 2, id);
  const at = o + 4 + writeLength(out, o + 4, n);
  out.set(src.subarray(start, end), at);
  return at + n - o;
}

/**
 * Write an unreliable frame at `out[o]` (the caller checked the room): whole when `count` is 1,
 * else piece `index` of `count` (2..256). Payload is `src[start, end)`. Returns bytes written.
 */
export function writeUnreliablePiece(
  out: Uint8Array, o: number, lane: number, seq: number, index: number, count: number,
  src: Uint8Array, start: number, end: number,
): number {
  const n = end - start;
  let at = o + 4;
  out[o] = count === 1 ? UNRELIABLE_KIND : UNRELIABLE_SPLIT_KIND;
  out[o + 1] = lane;
  writeU16LE(out, o + 2, seq);
  if (count !== 1) {
    out[at] = index;
    out[at + 1] = count - 1;
    at += 2;
  }
  at += writeLength(out, at, n);
  out.set(src.subarray(start, end), at);
  return at + n - o;
}

/**
 * Read the frame at `b[o]`, not past `end`, into `into`. Returns bytes read, or -1 if the bytes are
 * not one canonical frame (unknown kind, truncated, non-minimal varint, a split with count 1, an
 * index ≥ count). Never throws. Lane numbers are not checked here (the receiver knows its lanes).
 */
export function readFrame(b: Uint8Array, o: number, end: number, into: FrameView): number {
  if (end > b.length || o + 4 > end) return -1;
  const kind = b[o]!;
  let at = o + 4;
  into.lane = b[o + 1]!;
  into.id = readU16LE(b, o + 2);
  if ((kind & 0xfc) === RELIABLE_KIND) {
    into.reliable = true;
    into.first = (kind & FLAG_FIRST) !== 0;
    into.last = (kind & FLAG_LAST) !== 0;
    into.index = 0;
    into.count = 1;
  } else if (kind === UNRELIABLE_KIND || kind === UNRELIABLE_SPLIT_KIND) {
    into.reliable = false;
    if (kind === UNRELIABLE_KIND) {
      into.index = 0;
      into.count = 1;
    } else {
      if (at + 2 > end) return -1;
      into.index = b[at]!;
      into.count = b[at + 1]! + 1;
      if (into.count < 2 || into.index >= into.count) return -1;
      at += 2;
    }
    into.first = into.index === 0;
    into.last = into.index === into.count - 1;
  } else {
    return -1;
  }
  const len = readLength(b, at, end);
  if (len < 0) return -1;
  at += len & 3;
  const n = (len - (len & 3)) / 4;
  if (at + n > end) return -1;
  into.payloadStart = at;
  into.payloadEnd = at + n;
  return at + n - o;
}

/** Encode `f` at `out[o]`; returns bytes written (the caller sized `out`: `frameBytes(f)`). */
export function encodeFrame(f: Frame, out: Uint8Array, o: number): number {
  return f.type === 'reliable'
    ? writeReliablePiece(out, o, f.lane, f.id, f.first, f.last, f.bytes, 0, f.bytes.length)
    : writeUnreliablePiece(out, o, f.lane, f.seq, f.index, f.count, f.bytes, 0, f.bytes.length);
}

/** Encoded length of `f` in bytes. */
export function frameBytes(f: Frame): number {
  const n = f.bytes.length;
  return (f.type === 'reliable' ? reliableHeaderBytes(n) : unreliableHeaderBytes(n, f.count !== 1)) + n;
}

/** Decode one frame at `b[o]` (not past `end`, default `b.length`): the object form of `readFrame`. */
export function decodeFrame(b: Uint8Array, o = 0, end = b.length): DecodeResult<Frame> {
  const v = newFrameView();
  const n = readFrame(b, o, end, v);
  if (n < 0) return rejected('bad-field');
  const bytes = b.subarray(v.payloadStart, v.payloadEnd);
  const frame: Frame = v.reliable
    ? { type: 'reliable', lane: v.lane, id: v.id, first: v.first, last: v.last, bytes }
    : { type: 'unreliable', lane: v.lane, seq: v.id, index: v.index, count: v.count, bytes };
  return decoded(frame, n);
}
