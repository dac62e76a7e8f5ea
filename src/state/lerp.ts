import { checkConfig } from '../core/config.js';

/**
 * How one value slot of an entity interpolates and smooths.
 * - `'linear'`: a plain number (metres, metres per second, …).
 * - `'angle'`: radians, along the shorter way round.
 * - `'step'`: does not blend (integers, booleans 0/1, enum indexes): the older sample's value until the newer one.
 * - `'quat'`: this slot and the next three are x, y, z, w of a unit quaternion (normalized lerp along the shorter
 *   arc); the kinds listed for those three slots are not read.
 */
export type SlotKind = 'linear' | 'angle' | 'step' | 'quat';

const KINDS: readonly SlotKind[] = ['linear', 'angle', 'step', 'quat'];
const TAU = 2 * Math.PI;

/**
 * Throw `invalid-config` unless `kinds` names one kind per slot of a `slots`-slot layout and every `'quat'` has its
 * three further slots inside the layout.
 */
export function checkKinds(kinds: readonly SlotKind[], slots: number): void {
  checkConfig(Array.isArray(kinds) && kinds.length === slots, `kinds must list one kind per slot (${slots})`);
  for (let i = 0; i < slots; i++) {
    checkConfig(KINDS.includes(kinds[i]), `kinds[${i}] must be one of ${KINDS.join(', ')}`);
    if (kinds[i] === 'quat') {
      checkConfig(i + 3 < slots, `kinds[${i}] is 'quat' but fewer than 4 slots remain`);
      i += 3;
    }
  }
}

/** `a` at `t` = 0, `b` at `t` = 1, exactly at both ends; `t` is a fraction (unitless). */
export function lerp(a: number, b: number, t: number): number {
  return (1 - t) * a + t * b;
}

/** `b − a` in radians, wrapped into [−π, π): the signed short way round from `a` to `b`. */
export function angleDelta(a: number, b: number): number {
  let d = (b - a) % TAU;
  if (d >= Math.PI) d -= TAU;
  else if (d < -Math.PI) d += TAU;
  return d;
}

/**
 * From angle `a` towards angle `b` (radians) the short way round, by fraction `t`. Exactly `a` at `t` = 0; the result
 * is not wrapped, so it may leave the range `a` and `b` lie in by less than π (equal to `b` modulo 2π at `t` = 1).
 */
export function lerpAngle(a: number, b: number, t: number): number {
  return a + angleDelta(a, b) * t;
}

/**
 * Normalized lerp of the quaternions at `a[ai..ai+3]` and `b[bi..bi+3]` (x, y, z, w) by fraction `t`, along the shorter
 * arc (`b` negated when the two lie in opposite hemispheres), written unit-length into `out[oi..oi+3]`. A degenerate
 * blend (zero length) writes `a`.
 */
export function nlerpQuat(
  a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number, t: number, out: Float64Array, oi: number,
): void {
  const ax = a[ai], ay = a[ai + 1], az = a[ai + 2], aw = a[ai + 3];
  let bx = b[bi], by = b[bi + 1], bz = b[bi + 2], bw = b[bi + 3];
  if (ax * bx + ay * by + az * bz + aw * bw < 0) {
    bx = -bx; by = -by; bz = -bz; bw = -bw;
  }
  const u = 1 - t;
  const x = u * ax + t * bx, y = u * ay + t * by, z = u * az + t * bz, w = u * aw + t * bw;
  const len = Math.sqrt(x * x + y * y + z * z + w * w);
  if (len === 0) {
    out[oi] = ax; out[oi + 1] = ay; out[oi + 2] = az; out[oi + 3] = aw;
    return;
  }
  out[oi] = x / len; out[oi + 1] = y / len; out[oi + 2] = z / len; out[oi + 3] = w / len;
}

/**
 * Blend two states of one layout slot by slot: `out[oi..oi + n)` = `a[ai..]` at `t` = 0 towards `b[bi..]` at
 * `t` = 1, each slot by its kind (see {@link SlotKind}; a slot past the end of `kinds` is `'linear'`). `t` above 1
 * extrapolates (a `'step'` slot takes `b`). The client's interpolation and the server's history both blend with this,
 * so a rewind reproduces what a client drew. Allocates nothing; `out` must not overlap `a` or `b`.
 */
export function blendSlots(
  a: ArrayLike<number>, ai: number, b: ArrayLike<number>, bi: number, t: number,
  kinds: readonly SlotKind[], out: Float64Array, oi = 0, n = kinds.length,
): void {
  for (let i = 0; i < n; i++) {
    const k = kinds[i];
    if (k === undefined || k === 'linear') out[oi + i] = lerp(a[ai + i]!, b[bi + i]!, t);
    else if (k === 'angle') out[oi + i] = lerpAngle(a[ai + i]!, b[bi + i]!, t);
    else if (k === 'quat' && i + 3 < n) {
      nlerpQuat(a, ai + i, b, bi + i, t, out, oi + i);
      i += 3;
    } else out[oi + i] = t < 1 ? a[ai + i]! : b[bi + i]!;
  }
}
