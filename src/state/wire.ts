import type { LaneConfig } from '../connection/options.js';
import { BitReader, BitWriter } from '../core/bits.js';

/**
 * The three lanes the state layer uses, in this order, starting at the `lane` option (default 0):
 * control (reliable-ordered: the schema check), snapshots (notify: each snapshot's fate tells the
 * server what the client holds), inputs (unreliable: every unacknowledged input rides in each
 * message). Put them in the connection's lane list on both ends: `lanes: [...STATE_LANES, ...yours]`.
 */
export const STATE_LANES: readonly LaneConfig[] = Object.freeze([
  Object.freeze({ mode: 'reliable-ordered' }),
  Object.freeze({ mode: 'notify' }),
  Object.freeze({ mode: 'unreliable' }),
]) as readonly LaneConfig[];

/** Offsets of the state lanes from the first one. @internal */
export const CONTROL = 0;
/** @internal */
export const SNAPSHOTS = 1;
/** @internal */
export const INPUTS = 2;

/** First byte of each message of the state layer. @internal */
export const Kind = { Hello: 0x48, Welcome: 0x57, Mismatch: 0x4d, Resync: 0x52, Snapshot: 0x53, Input: 0x49 } as const;

/** An update's kind code on the wire. @internal */
export const EntryKind = { Update: 0, Create: 1, Destroy: 2 } as const;

/** Entity ids: slot in the low 16 bits, generation above. @internal */
export function entityId(slot: number, gen: number): number {
  return gen * 65536 + slot;
}

/** Copy `n` bits from `r` to `w`. @internal */
export function copyBits(r: BitReader, w: BitWriter, n: number): void {
  while (n > 24) {
    w.bits(r.bits(24), 24);
    n -= 24;
  }
  w.bits(r.bits(n), n);
}

/** Largest render time carried in an input message, in 1/256 ticks (u32). @internal */
export const RENDER_SCALE = 256;

/**
 * The entries of one snapshot, as the server sent it (to apply its fate) or as a client decoded it
 * (a baseline for later ones): per entry its slot, kind, generation, type and wire values. @internal
 */
export class Entries {
  tick = 0;
  epoch = 0;
  n = 0;
  slots = new Int32Array(64);
  kinds = new Uint8Array(64);
  gens = new Uint16Array(64);
  types = new Uint8Array(64);
  q: Int32Array;

  constructor(readonly stride: number) {
    this.q = new Int32Array(64 * stride);
  }

  /** Room for `n` entries. */
  ensure(n: number): void {
    if (n <= this.slots.length) return;
    let cap = this.slots.length;
    while (cap < n) cap *= 2;
    const slots = new Int32Array(cap);
    slots.set(this.slots);
    this.slots = slots;
    const kinds = new Uint8Array(cap);
    kinds.set(this.kinds);
    this.kinds = kinds;
    const gens = new Uint16Array(cap);
    gens.set(this.gens);
    this.gens = gens;
    const types = new Uint8Array(cap);
    types.set(this.types);
    this.types = types;
    const q = new Int32Array(cap * this.stride);
    q.set(this.q);
    this.q = q;
  }

  /** Add an entry; a CREATE or UPDATE copies its wire values from `src[off…]`. */
  push(slot: number, kind: number, gen: number, type: number, src: Int32Array, off: number): void {
    this.ensure(this.n + 1);
    const i = this.n++;
    this.slots[i] = slot;
    this.kinds[i] = kind;
    this.gens[i] = gen;
    this.types[i] = type;
    if (kind === EntryKind.Destroy) return;
    const q = this.q;
    const at = i * this.stride;
    for (let j = 0; j < this.stride; j++) q[at + j] = src[off + j]!;
  }

  /** The index of `slot`'s entry (entries are in slot order), or −1. */
  find(slot: number): number {
    let lo = 0;
    let hi = this.n - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const s = this.slots[mid]!;
      if (s === slot) return mid;
      if (s < slot) lo = mid + 1;
      else hi = mid - 1;
    }
    return -1;
  }
}
