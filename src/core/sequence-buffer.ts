import { checkConfig } from './errors.js';
import { seqDiff16, seqGreaterThan16, seqAdd16 } from './wrap.js';

/**
 * Fixed-size ring of entries keyed by 16-bit sequence number (reliable's `sequence_buffer`).
 * Inserting a sequence newer than any seen clears the slots skipped over, so a stale entry is never
 * mistaken for a new one after wrap-around. Sequences older than `size` behind the newest are refused.
 */
export class SequenceBuffer<T> {
  /** Capacity in entries. */
  readonly size: number;
  private readonly seqs: Int32Array;
  private readonly entries: (T | undefined)[];
  private newest = 0xffff;
  private started = false;

  constructor(size: number) {
    checkConfig(Number.isInteger(size) && size > 0 && size <= 32768, 'sequence buffer size must be 1..32768');
    this.size = size;
    this.seqs = new Int32Array(size).fill(-1);
    this.entries = new Array<T | undefined>(size).fill(undefined);
  }

  /** The newest sequence inserted so far (meaningless before the first insert). */
  get newestSequence(): number {
    return this.newest;
  }

  /** Store `value` under `seq`. Returns false (and stores nothing) if `seq` is too old. */
  insert(seq: number, value: T): boolean {
    if (!this.started) {
      this.started = true;
      this.newest = seqAdd16(seq, -1);
    }
    if (seqGreaterThan16(seq, this.newest)) {
      const gap = seqDiff16(seq, this.newest);
      const clear = Math.min(gap, this.size);
      for (let i = 1; i <= clear; i++) {
        const s = seqAdd16(this.newest, i);
        const idx = s % this.size;
        this.seqs[idx] = -1;
        this.entries[idx] = undefined;
      }
      this.newest = seq;
    } else if (-seqDiff16(seq, this.newest) >= this.size) {
      return false;
    }
    const idx = seq % this.size;
    this.seqs[idx] = seq;
    this.entries[idx] = value;
    return true;
  }

  /** The entry stored under `seq`, or undefined. */
  get(seq: number): T | undefined {
    const idx = seq % this.size;
    return this.seqs[idx] === seq ? this.entries[idx] : undefined;
  }

  /** True if an entry is stored under `seq`. */
  has(seq: number): boolean {
    return this.seqs[seq % this.size] === seq;
  }

  /** Forget the entry under `seq`, if any. */
  remove(seq: number): void {
    const idx = seq % this.size;
    if (this.seqs[idx] === seq) {
      this.seqs[idx] = -1;
      this.entries[idx] = undefined;
    }
  }
}
