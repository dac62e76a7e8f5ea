import { GamewireError } from './errors.js';

/**
 * Writes unsigned integers of 1..32 bits into a byte buffer, least significant bit first (bit 0 of
 * the first value lands in bit 0 of byte 0). The last byte is zero-padded by `finish`. Writing past
 * the buffer's end sets `overflow` and writes nothing more, so a caller can fill a packet up to a
 * budget and check once.
 */
export class BitWriter {
  private buf: Uint8Array;
  private pos = 0;
  private acc = 0;
  private accBits = 0;
  private end = 0;
  /** True once a write did not fit; what was written before it is intact. */
  overflow = false;

  constructor(buf: Uint8Array = new Uint8Array(0), offset = 0, end = buf.length) {
    this.buf = buf;
    this.reset(buf, offset, end);
  }

  /** Start over on `buf[offset, end)`. */
  reset(buf: Uint8Array, offset = 0, end = buf.length): void {
    this.buf = buf;
    this.pos = offset;
    this.end = end;
    this.acc = 0;
    this.accBits = 0;
    this.overflow = false;
  }

  /** Bits written so far (including those not yet flushed to a byte). */
  get bitLength(): number {
    return this.pos * 8 + this.accBits;
  }

  /** Write the low `n` bits (0..32) of `value`. */
  bits(value: number, n: number): void {
    if (n > 24) {
      this.bits(value & 0xffff, 16);
      this.bits(Math.floor((value >>> 0) / 65536), n - 16);
      return;
    }
    if (n === 0) return;
    this.acc |= (value & ((1 << n) - 1)) << this.accBits;
    this.accBits += n;
    while (this.accBits >= 8) {
      if (this.pos >= this.end) {
        this.overflow = true;
        this.accBits = 0;
        this.acc = 0;
        return;
      }
      this.buf[this.pos++] = this.acc & 0xff;
      this.acc >>>= 8;
      this.accBits -= 8;
    }
  }

  /** Write one bit. */
  bool(v: boolean): void {
    this.bits(v ? 1 : 0, 1);
  }

  /**
   * Write `value` (an unsigned integer below 2^32) in order-`k` Exp-Golomb code: small values take few
   * bits (order 0: 1 bit for 0, 3 bits for 1..2, 5 bits for 3..6…), none is unbounded.
   */
  expGolomb(value: number, k: number): void {
    if (value < 0x400000 && k < 22) {
      const v = value + (1 << k);
      const len = 31 - Math.clz32(v) - k;
      const width = 2 * len + k + 1;
      if (width <= 24) {
        this.bits((1 << len) | ((v - (1 << (len + k))) << (len + 1)), width);
        return;
      }
    }
    const v = value + 2 ** k;
    const len = 31 - Math.clz32(Math.floor(v / 2 ** k));
    this.bits(0, len);
    this.bits(1, 1);
    this.bitsWide(v - 2 ** (len + k), len + k);
  }

  private bitsWide(value: number, n: number): void {
    if (n <= 32) {
      this.bits(value, n);
      return;
    }
    this.bits(value % 2 ** 32, 32);
    this.bits(Math.floor(value / 2 ** 32), n - 32);
  }

  /** Flush the last partial byte (zero-padded). Returns the offset just past the last byte written. */
  finish(): number {
    if (this.accBits > 0) {
      if (this.pos >= this.end) this.overflow = true;
      else this.buf[this.pos++] = this.acc & 0xff;
      this.acc = 0;
      this.accBits = 0;
    }
    return this.pos;
  }
}

/**
 * Reads what `BitWriter` wrote. Reading past the end never throws: it returns zeros and sets
 * `overflow`, so a decoder of network input checks once at the end and drops the packet.
 */
export class BitReader {
  private buf: Uint8Array;
  private pos = 0;
  private end = 0;
  private acc = 0;
  private accBits = 0;
  /** True once a read went past the end. */
  overflow = false;

  constructor(buf: Uint8Array = new Uint8Array(0), offset = 0, end = buf.length) {
    this.buf = buf;
    this.reset(buf, offset, end);
  }

  /** Start over on `buf[offset, end)`. */
  reset(buf: Uint8Array, offset = 0, end = buf.length): void {
    this.buf = buf;
    this.pos = offset;
    this.end = end;
    this.acc = 0;
    this.accBits = 0;
    this.overflow = false;
  }

  /** Read `n` bits (0..32) as an unsigned integer. */
  bits(n: number): number {
    if (n > 24) {
      const lo = this.bits(16);
      return lo + this.bits(n - 16) * 65536;
    }
    while (this.accBits < n) {
      if (this.pos >= this.end) {
        this.overflow = true;
        this.acc = 0;
        this.accBits = 0;
        return 0;
      }
      this.acc |= this.buf[this.pos++]! << this.accBits;
      this.accBits += 8;
    }
    const v = n === 0 ? 0 : this.acc & ((1 << n) - 1);
    this.acc >>>= n;
    this.accBits -= n;
    return v;
  }

  /** Read one bit. */
  bool(): boolean {
    return this.bits(1) === 1;
  }

  /** Read an order-`k` Exp-Golomb code; a prefix longer than 32 zeros is malformed (overflow, 0). */
  expGolomb(k: number): number {
    while (this.accBits < 24 && this.pos < this.end) {
      this.acc |= this.buf[this.pos++]! << this.accBits;
      this.accBits += 8;
    }
    const a = this.acc;
    if (a !== 0) {
      const len = 31 - Math.clz32(a & -a);
      const n = len + k;
      if (len + 1 + n <= this.accBits && n < 24) {
        this.acc >>>= len + 1;
        this.accBits -= len + 1;
        const rest = this.acc & ((1 << n) - 1);
        this.acc >>>= n;
        this.accBits -= n;
        return (1 << n) + rest - (1 << k);
      }
    }
    let len = 0;
    while (this.bits(1) === 0) {
      if (this.overflow || ++len > 32) {
        this.overflow = true;
        return 0;
      }
    }
    const n = len + k;
    const rest = n <= 32 ? this.bits(n) : this.bits(32) + this.bits(n - 32) * 2 ** 32;
    return 2 ** n + rest - 2 ** k;
  }

  /** Position the next read at bit `bit` of `buf[offset…]` (as given to `reset`). */
  seekBit(offset: number, bit: number): void {
    this.pos = offset + (bit >>> 3);
    this.acc = 0;
    this.accBits = 0;
    this.overflow = false;
    const skip = bit & 7;
    if (skip > 0) this.bits(skip);
  }

  /** Bits left unread (whole buffer only; padding included). */
  get bitsLeft(): number {
    return (this.end - this.pos) * 8 + this.accBits;
  }
}

/** Bits needed for an unsigned integer in 0..max. */
export function bitsFor(max: number): number {
  if (!Number.isInteger(max) || max < 0 || max > 0xffffffff) throw new GamewireError('invalid-argument', `bitsFor: ${max} is not an integer in 0..2^32 − 1`);
  return max === 0 ? 0 : 32 - Math.clz32(max);
}

/** Zigzag: 0, −1, 1, −2, 2… → 0, 1, 2, 3, 4… (for |v| < 2^31). */
export function zigzag(v: number): number {
  return v >= 0 ? v * 2 : -v * 2 - 1;
}

/** The inverse of `zigzag`. */
export function unzigzag(u: number): number {
  return u % 2 === 0 ? u / 2 : -(u + 1) / 2;
}
