import { readU16LE, writeU16LE } from '../core/bytes.js';
import { GamewireError } from '../core/errors.js';

/**
 * Wire format of the packet header of the ack layer (docs/ack.md has the byte table and hex
 * vectors). Bytes only: `encodeAckHeader` writes into the caller's buffer, `decodeAckHeader` fills a
 * caller's reused `AckHeader` and returns -1 on any invalid input, never throwing on wire bytes.
 * Little-endian. The encoding is canonical: exactly one byte string per header, checked on decode.
 */

/** Prefix bit: the ack fields follow (0 until the sender has received anything). */
export const ACK_FLAG_ACK = 0x01;
/** Prefix bit: the ack delay is a u16 (else a u8); set exactly when the delay is ≥ 256. */
export const ACK_FLAG_LONG_DELAY = 0x02;
/** Prefix bits 2..5: ack-bits byte Bi is present (i = 0..3); an absent byte means 0xFF. */
export const ACK_FLAG_BITS_SHIFT = 2;
/** Prefix bit: an extended ack history (count + raw bytes) follows the ack bits. */
export const ACK_FLAG_EXT = 0x40;
/** Prefix bit 7: reserved, must be 0. */
export const ACK_FLAG_RESERVED = 0x80;

/** Header bytes without ack fields (prefix + sequence). */
export const ACK_HEADER_MIN_BYTES = 3;
/** Header bytes on a healthy link (prefix, sequence, ack, u8 delay, every ack bit set). */
export const ACK_HEADER_HEALTHY_BYTES = 6;
/** Most extended-history bytes (28: 224 packets before the 33 of `ack` and its bits, 257 in all). */
export const MAX_ACK_EXT_BYTES = 28;
/** Largest header: 1 + 2 + 2 + 2 + 4 + 1 + 28 = 40 bytes. */
export const MAX_ACK_HEADER_BYTES = 40;
/** Unit of the ack delay field: 1/8 ms, so a delay of `d` ms is written as floor(d × 8), saturating. */
export const ACK_DELAY_UNITS_PER_MS = 8;
/** Largest ack delay value (u16, 8191.875 ms): a saturated delay means "held at least this long". */
export const MAX_ACK_DELAY_VALUE = 0xffff;

/**
 * One decoded (or to-be-encoded) header. `decodeAckHeader` overwrites every field, so one object is
 * reused for every packet. When `hasAck` is false, `ack`, `ackDelay`, `ackBits` and `extBytes` are 0.
 */
export interface AckHeader {
  /** This packet's 16-bit sequence number. */
  seq: number;
  /** True when the ack fields are present (the sender has received something). */
  hasAck: boolean;
  /** Newest 16-bit sequence the sender received from us. */
  ack: number;
  /** How long the sender held `ack` before this packet, in 1/8 ms (0..65535, saturating). */
  ackDelay: number;
  /** Bit n (0..31) set ⇔ packet `ack − 1 − n` was received (unsigned 32-bit). */
  ackBits: number;
  /** Extended-history bytes used in `ext` (0..28). */
  extBytes: number;
  /** Bit j of byte i set ⇔ packet `ack − 33 − (8i + j)` was received; only `extBytes` bytes count. */
  ext: Uint8Array;
}

/** A fresh header (all zero, no ack), with its own 28-byte `ext` buffer. */
export function newAckHeader(): AckHeader {
  return { seq: 0, hasAck: false, ack: 0, ackDelay: 0, ackBits: 0, extBytes: 0, ext: new Uint8Array(MAX_ACK_EXT_BYTES) };
}

/** Exact encoded size of `h`, bytes (3..40). */
export function ackHeaderLength(h: AckHeader): number {
  if (!h.hasAck) return ACK_HEADER_MIN_BYTES;
  let n = 5 + (h.ackDelay >= 256 ? 2 : 1);
  for (let i = 0; i < 4; i++) if (((h.ackBits >>> (8 * i)) & 0xff) !== 0xff) n++;
  return h.extBytes > 0 ? n + 1 + h.extBytes : n;
}

function isU(v: number, max: number): boolean {
  return Number.isInteger(v) && v >= 0 && v <= max;
}

/**
 * Write `h` at `out[offset]`; returns the bytes written (`ackHeaderLength(h)`). Throws
 * `invalid-argument` on a field out of range and `buffer-too-small` when `out` lacks room (caller bugs).
 */
export function encodeAckHeader(h: AckHeader, out: Uint8Array, offset: number): number {
  const ok = isU(h.seq, 0xffff) && (!h.hasAck || (isU(h.ack, 0xffff) && isU(h.ackDelay, MAX_ACK_DELAY_VALUE)
    && isU(h.ackBits, 0xffffffff) && isU(h.extBytes, MAX_ACK_EXT_BYTES) && h.ext.length >= h.extBytes));
  if (!ok) throw new GamewireError('invalid-argument', 'ack header field out of range');
  const len = ackHeaderLength(h);
  if (!isU(offset, out.length) || offset + len > out.length) {
    throw new GamewireError('buffer-too-small', `ack header needs ${len} bytes at ${offset}, buffer has ${out.length}`);
  }
  let o = offset + 3;
  let prefix = 0;
  if (h.hasAck) {
    prefix = ACK_FLAG_ACK;
    writeU16LE(out, o, h.ack);
    o += 2;
    if (h.ackDelay >= 256) {
      prefix |= ACK_FLAG_LONG_DELAY;
      writeU16LE(out, o, h.ackDelay);
      o += 2;
    } else {
      out[o++] = h.ackDelay;
    }
    for (let i = 0; i < 4; i++) {
      const b = (h.ackBits >>> (8 * i)) & 0xff;
      if (b !== 0xff) {
        prefix |= 1 << (ACK_FLAG_BITS_SHIFT + i);
        out[o++] = b;
      }
    }
    if (h.extBytes > 0) {
      prefix |= ACK_FLAG_EXT;
      out[o++] = h.extBytes;
      out.set(h.ext.subarray(0, h.extBytes), o);
      o += h.extBytes;
    }
  }
  out[offset] = prefix;
  writeU16LE(out, offset + 1, h.seq);
  return o - offset;
}

/**
 * Read a header at `bytes[offset]` into `into` (every field overwritten; `into.ext` must hold 28
 * bytes). Returns the bytes read, or -1 when the input is truncated or not the canonical encoding
 * (reserved bit set, ack-field flags without ACK, LONG_DELAY with a delay < 256, a present ack-bits
 * byte equal to 0xFF, an extended count of 0 or > 28). Never throws on wire bytes. On -1, `into`
 * holds garbage.
 */
export function decodeAckHeader(bytes: Uint8Array, offset: number, into: AckHeader): number {
  const end = bytes.length;
  if (!(offset >= 0) || offset + 3 > end) return -1;
  const prefix = bytes[offset]!;
  if ((prefix & ACK_FLAG_RESERVED) !== 0) return -1;
  into.seq = readU16LE(bytes, offset + 1);
  let o = offset + 3;
  if ((prefix & ACK_FLAG_ACK) === 0) {
    if (prefix !== 0) return -1;
    into.hasAck = false;
    into.ack = 0;
    into.ackDelay = 0;
    into.ackBits = 0;
    into.extBytes = 0;
    return 3;
  }
  into.hasAck = true;
  if (o + 3 > end) return -1;
  into.ack = readU16LE(bytes, o);
  o += 2;
  if ((prefix & ACK_FLAG_LONG_DELAY) !== 0) {
    if (o + 2 > end) return -1;
    const d = readU16LE(bytes, o);
    if (d < 256) return -1;
    into.ackDelay = d;
    o += 2;
  } else {
    into.ackDelay = bytes[o++]!;
  }
  let bits = 0;
  for (let i = 0; i < 4; i++) {
    let b = 0xff;
    if ((prefix & (1 << (ACK_FLAG_BITS_SHIFT + i))) !== 0) {
      if (o >= end) return -1;
      b = bytes[o++]!;
      if (b === 0xff) return -1;
    }
    bits |= b << (8 * i);
  }
  into.ackBits = bits >>> 0;
  into.extBytes = 0;
  if ((prefix & ACK_FLAG_EXT) !== 0) {
    if (o >= end) return -1;
    const k = bytes[o++]!;
    if (k === 0 || k > MAX_ACK_EXT_BYTES || o + k > end) return -1;
    into.ext.set(bytes.subarray(o, o + k));
    into.extBytes = k;
    o += k;
  }
  return o - offset;
}
