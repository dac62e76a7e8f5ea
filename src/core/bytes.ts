import { GamewireError } from './errors.js';

// Plain little-endian loads and stores for hot paths, without bounds checks (the caller has
// checked the length) and without a DataView: one home for every codec (chunk, KCP, sessions).

/** Read a little-endian u16 at `o` of `b` (the caller guarantees 2 bytes are there). */
export function readU16LE(b: Uint8Array, o: number): number {
  return b[o]! | (b[o + 1]! << 8);
}

/** Read a little-endian u32 at `o` of `b` (the caller guarantees 4 bytes are there). */
export function readU32LE(b: Uint8Array, o: number): number {
  return (b[o]! | (b[o + 1]! << 8) | (b[o + 2]! << 16) | (b[o + 3]! << 24)) >>> 0;
}

/** Write the low 16 bits of `v` little-endian at `o` of `b` (the caller guarantees room). */
export function writeU16LE(b: Uint8Array, o: number, v: number): void {
  b[o] = v;
  b[o + 1] = v >>> 8;
}

/** Write the low 32 bits of `v` little-endian at `o` of `b` (the caller guarantees room). */
export function writeU32LE(b: Uint8Array, o: number, v: number): void {
  b[o] = v;
  b[o + 1] = v >>> 8;
  b[o + 2] = v >>> 16;
  b[o + 3] = v >>> 24;
}

/** Write the low 64 bits of `v` little-endian at `o` of `b` (the caller guarantees 8 bytes of room). */
export function writeU64LE(b: Uint8Array, o: number, v: bigint): void {
  writeU32LE(b, o, Number(v & 0xffffffffn));
  writeU32LE(b, o + 4, Number((v >> 32n) & 0xffffffffn));
}

/** Read a little-endian u64 at `o` of `b` as a bigint (the caller guarantees 8 bytes are there). */
export function readU64LE(b: Uint8Array, o: number): bigint {
  return BigInt(readU32LE(b, o)) | (BigInt(readU32LE(b, o + 4)) << 32n);
}

/**
 * Little-endian writer into a caller-provided `Uint8Array`. Writing past the end throws
 * `buffer-too-small` (a caller bug: encoders size their output before writing).
 */
export class ByteWriter {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  /** Next write position, in bytes from the start of `bytes`. */
  offset: number;

  constructor(bytes: Uint8Array, offset = 0) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.offset = offset;
  }

  private need(n: number): number {
    const at = this.offset;
    if (at + n > this.bytes.length) {
      throw new GamewireError('buffer-too-small', `need ${at + n} bytes, buffer has ${this.bytes.length}`);
    }
    this.offset = at + n;
    return at;
  }

  u8(v: number): this {
    this.view.setUint8(this.need(1), v);
    return this;
  }

  u16(v: number): this {
    this.view.setUint16(this.need(2), v, true);
    return this;
  }

  u32(v: number): this {
    this.view.setUint32(this.need(4), v >>> 0, true);
    return this;
  }

  /** Unsigned LEB128 varint, up to 2^53-1. */
  varint(v: number): this {
    while (v >= 0x80) {
      this.u8((v % 0x80) | 0x80);
      v = Math.floor(v / 0x80);
    }
    return this.u8(v);
  }

  bytesFrom(src: Uint8Array): this {
    this.bytes.set(src, this.need(src.length));
    return this;
  }
}

/** Number of bytes `ByteWriter.varint(v)` writes. */
export function varintLength(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 0x80);
    n++;
  }
  return n;
}

/**
 * Little-endian reader over wire bytes. Reads never throw: once a read runs past the end,
 * `ok` turns false and every later read returns 0, so a decoder checks `ok` once at the end.
 */
export class ByteReader {
  readonly bytes: Uint8Array;
  private readonly view: DataView;
  offset: number;
  /** False once any read ran past the end or a varint was malformed. */
  ok = true;

  constructor(bytes: Uint8Array, offset = 0) {
    this.bytes = bytes;
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    this.offset = offset;
  }

  /** Bytes left to read. */
  get remaining(): number {
    return this.bytes.length - this.offset;
  }

  private take(n: number): number {
    const at = this.offset;
    if (!this.ok || at + n > this.bytes.length) {
      this.ok = false;
      return -1;
    }
    this.offset = at + n;
    return at;
  }

  u8(): number {
    const at = this.take(1);
    return at < 0 ? 0 : this.view.getUint8(at);
  }

  u16(): number {
    const at = this.take(2);
    return at < 0 ? 0 : this.view.getUint16(at, true);
  }

  u32(): number {
    const at = this.take(4);
    return at < 0 ? 0 : this.view.getUint32(at, true);
  }

  /** Unsigned LEB128 varint of at most 8 bytes (values below 2^53); longer or overlong encodings fail. */
  varint(): number {
    let value = 0;
    let scale = 1;
    for (let i = 0; i < 8; i++) {
      const b = this.u8();
      if (!this.ok) return 0;
      value += (b & 0x7f) * scale;
      if ((b & 0x80) === 0) {
        if (b === 0 && i > 0) break;
        return value;
      }
      scale *= 0x80;
    }
    this.ok = false;
    return 0;
  }

  /** A view (no copy) of the next `n` bytes. */
  bytesView(n: number): Uint8Array {
    const at = this.take(n);
    return at < 0 ? new Uint8Array(0) : this.bytes.subarray(at, at + n);
  }
}
