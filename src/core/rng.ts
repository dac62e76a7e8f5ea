/**
 * A seeded, NON-CRYPTOGRAPHIC pseudo-random generator (sfc32 seeded through splitmix32).
 * For the simulator, jitter and tests only: never use it for keys, nonces or tokens.
 * Same seed, same sequence, on every platform.
 */
export class NonCryptoRng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  /** @param seed any integer; only its low 32 bits matter. */
  constructor(seed: number) {
    let s = seed >>> 0;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = next();
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  /** Uniform integer in 0..2^32-1. */
  nextU32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform float in [0, 1). */
  nextFloat(): number {
    return this.nextU32() / 4294967296;
  }

  /** Uniform integer in [0, n), n ≥ 1. */
  nextInt(n: number): number {
    return Math.floor(this.nextFloat() * n);
  }

  /** Uniform integer in [lo, hi] inclusive. */
  nextRange(lo: number, hi: number): number {
    return lo + this.nextInt(hi - lo + 1);
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return p > 0 && this.nextFloat() < p;
  }

  /** Fill `out` with pseudo-random bytes (test payloads; not for secrets). */
  fill(out: Uint8Array): Uint8Array {
    for (let i = 0; i < out.length; i += 4) {
      const v = this.nextU32();
      out[i] = v & 0xff;
      if (i + 1 < out.length) out[i + 1] = (v >>> 8) & 0xff;
      if (i + 2 < out.length) out[i + 2] = (v >>> 16) & 0xff;
      if (i + 3 < out.length) out[i + 3] = v >>> 24;
    }
    return out;
  }
}
