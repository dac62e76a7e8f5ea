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
