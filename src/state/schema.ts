import { BitReader, BitWriter, bitsFor, unzigzag, zigzag } from '../core/bits.js';
import { crc32Of } from '../core/crc32.js';
import { checkArg, checkConfig, GamewireError } from '../core/errors.js';
import type { SlotKind } from './lerp.js';

export type { SlotKind };

/** A quantized float in [min, max], carried in steps of `precision` (same units). */
export interface FloatField { readonly kind: 'float'; readonly min: number; readonly max: number; readonly precision: number }
/** An integer in [min, max]. */
export interface IntField { readonly kind: 'int'; readonly min: number; readonly max: number }
/** A boolean (one bit). */
export interface BoolField { readonly kind: 'bool' }
/** One of a fixed list of strings. */
export interface EnumField<V extends string = string> { readonly kind: 'enum'; readonly values: readonly V[] }
/** An angle in radians, any value (wrapped to [−π, π)), carried in `bits` bits over a full turn. */
export interface AngleField { readonly kind: 'angle'; readonly bits: number }
/** A vector `{ x, y }` or `{ x, y, z }` whose components are each a `FloatField`. */
export interface VecField<D extends 2 | 3 = 2 | 3> { readonly kind: 'vec'; readonly dims: D; readonly min: number; readonly max: number; readonly precision: number }
/** A unit quaternion `{ x, y, z, w }` carried as "smallest three": 2 bits of index and three components of `bits` bits. */
export interface QuatField { readonly kind: 'quat'; readonly bits: number }

/** Any field of an entity type or of the inputs. */
export type Field = FloatField | IntField | BoolField | EnumField | AngleField | VecField | QuatField;
/** An entity type's fields, by name. */
export type Fields = Readonly<Record<string, Field>>;

/** The value a field holds in game code. */
export type ValueOf<F extends Field> = F extends BoolField
  ? boolean
  : F extends EnumField<infer V>
    ? V
    : F extends VecField<2>
      ? { x: number; y: number }
      : F extends VecField<3>
        ? { x: number; y: number; z: number }
        : F extends QuatField
          ? { x: number; y: number; z: number; w: number }
          : number;

/** An entity's values as game code sees them: `{ x: number; hp: number; … }`, inferred from its fields. */
export type ValuesOf<F extends Fields> = { -readonly [K in keyof F]: ValueOf<F[K]> };

/** A float in [min, max] carried in steps of `precision`, e.g. `float(-500, 500, 0.01)`: 17 bits. */
export function float(min: number, max: number, precision: number): FloatField {
  return { kind: 'float', min, max, precision };
}
/** An integer in [min, max] (at most 2^31 − 1 values). */
export function int(min: number, max: number): IntField {
  return { kind: 'int', min, max };
}
/** A boolean. */
export function bool(): BoolField {
  return { kind: 'bool' };
}
/** One of the given strings, e.g. `oneOf('idle', 'run', 'jump')`. */
export function oneOf<const V extends string>(...values: V[]): EnumField<V> {
  return { kind: 'enum', values };
}
/** An angle in radians, carried in `bits` (2..24) bits per turn: 16 bits is 0.0055°. */
export function angle(bits = 16): AngleField {
  return { kind: 'angle', bits };
}
/** A 2-vector `{ x, y }`, each component like `float(min, max, precision)`. */
export function vec2(min: number, max: number, precision: number): VecField<2> {
  return { kind: 'vec', dims: 2, min, max, precision };
}
/** A 3-vector `{ x, y, z }`, each component like `float(min, max, precision)`. */
export function vec3(min: number, max: number, precision: number): VecField<3> {
  return { kind: 'vec', dims: 3, min, max, precision };
}
/** A unit quaternion `{ x, y, z, w }` as "smallest three", `bits` (4..20) per component: 2 + 3 × bits in all. */
export function quat(bits = 9): QuatField {
  return { kind: 'quat', bits };
}

const TWO_PI = 2 * Math.PI;
const SQRT1_2 = Math.SQRT1_2;

/** One field's place in an entity's slots, and how it is carried. @internal */
interface FieldPlan {
  name: string;
  field: Field;
  /** First slot. */
  slot: number;
  /** Slots used (vec: dims; quat: 4; else 1). */
  slots: number;
  /** Bits of one slot's raw value (quat: per component). */
  bits: number;
  /** Quantization: value = min + q × step (float, vec, int). */
  min: number;
  step: number;
  /** Largest q of one slot. */
  maxQ: number;
  /** First delta slot (numeric slots written as steps: not booleans, enums or a quaternion's index). */
  dslot: number;
}

function planFields(fields: Fields, where: string): { plans: FieldPlan[]; slots: number; deltaSlots: number } {
  checkConfig(typeof fields === 'object' && fields !== null, `${where}: fields must be an object`);
  const plans: FieldPlan[] = [];
  let slot = 0;
  let dslot = 0;
  for (const [name, field] of Object.entries(fields)) {
    const at = `${where}.${name}`;
    checkConfig(typeof field === 'object' && field !== null && typeof (field as Field).kind === 'string', `${at}: not a field (use float, int, bool, oneOf, angle, vec2, vec3, quat)`);
    let plan: FieldPlan;
    switch (field.kind) {
      case 'float':
      case 'vec': {
        checkConfig(Number.isFinite(field.min) && Number.isFinite(field.max) && field.max > field.min, `${at}: needs finite min < max`);
        checkConfig(Number.isFinite(field.precision) && field.precision > 0, `${at}: precision must be > 0`);
        const maxQ = Math.ceil((field.max - field.min) / field.precision - 1e-9);
        checkConfig(maxQ <= 0x7fffffff, `${at}: (max − min) / precision must be below 2^31`);
        plan = { name, field, slot, slots: field.kind === 'vec' ? field.dims : 1, bits: bitsFor(maxQ), min: field.min, step: field.precision, maxQ, dslot: 0 };
        break;
      }
      case 'int':
        checkConfig(Number.isSafeInteger(field.min) && Number.isSafeInteger(field.max) && field.max >= field.min && field.max - field.min <= 0x7fffffff, `${at}: needs integers min ≤ max with max − min < 2^31`);
        plan = { name, field, slot, slots: 1, bits: bitsFor(field.max - field.min), min: field.min, step: 1, maxQ: field.max - field.min, dslot: 0 };
        break;
      case 'bool':
        plan = { name, field, slot, slots: 1, bits: 1, min: 0, step: 1, maxQ: 1, dslot: 0 };
        break;
      case 'enum':
        checkConfig(Array.isArray(field.values) && field.values.length >= 1 && field.values.length <= 65536 && new Set(field.values).size === field.values.length, `${at}: needs 1..65536 distinct values`);
        plan = { name, field, slot, slots: 1, bits: bitsFor(field.values.length - 1), min: 0, step: 1, maxQ: field.values.length - 1, dslot: 0 };
        break;
      case 'angle':
        checkConfig(Number.isInteger(field.bits) && field.bits >= 2 && field.bits <= 24, `${at}: bits must be 2..24`);
        plan = { name, field, slot, slots: 1, bits: field.bits, min: 0, step: TWO_PI / 2 ** field.bits, maxQ: 2 ** field.bits - 1, dslot: 0 };
        break;
      case 'quat':
        checkConfig(Number.isInteger(field.bits) && field.bits >= 4 && field.bits <= 20, `${at}: bits must be 4..20`);
        plan = { name, field, slot, slots: 4, bits: field.bits, min: -SQRT1_2, step: (2 * SQRT1_2) / (2 ** field.bits - 1), maxQ: 2 ** field.bits - 1, dslot: 0 };
        break;
      default:
        checkConfig(false, `${at}: unknown field kind ${(field as { kind: string }).kind}`);
        throw new Error('unreachable');
    }
    plan.dslot = dslot;
    dslot += plan.field.kind === 'bool' || plan.field.kind === 'enum' ? 0 : plan.field.kind === 'quat' ? 3 : plan.slots;
    plans.push(plan);
    slot += plan.slots;
  }
  checkConfig(plans.length >= 1 && plans.length <= 64, `${where}: needs 1..64 fields`);
  return { plans, slots: slot, deltaSlots: dslot };
}

/**
 * Encodes, decodes and quantizes the values of one entity type (or of the inputs). Values live in
 * two forms: the wire's integers (`Int32Array`, one per slot) and real numbers (`Float64Array`, one
 * per slot: a vector's components, a quaternion's x, y, z, w, an enum's index, a boolean as 0/1,
 * an angle in radians).
 */
export class TypeCodec<F extends Fields = Fields> {
  /** The type's index in its schema (0 for inputs). */
  readonly id: number;
  readonly name: string;
  /** Value slots per entity. */
  readonly slots: number;
  /** How each slot interpolates. */
  readonly kinds: readonly SlotKind[];
  /** Field names in wire order. */
  readonly fieldNames: readonly string[];
  /** Bits of a full (non-delta) encoding. */
  readonly fullBits: number;
  /** Numeric slots a delta writes as steps, each with its own Exp-Golomb order. */
  readonly deltaSlots: number;
  private readonly plans: FieldPlan[];
  private readonly scratchQ: Int32Array;
  private readonly scratchV: Float64Array;

  constructor(id: number, name: string, fields: F) {
    this.id = id;
    this.name = name;
    const { plans, slots, deltaSlots } = planFields(fields, name);
    this.plans = plans;
    this.slots = slots;
    this.deltaSlots = deltaSlots;
    this.fieldNames = plans.map((p) => p.name);
    const kinds: SlotKind[] = [];
    let fullBits = 0;
    for (const p of plans) {
      const k: SlotKind = p.field.kind === 'float' || p.field.kind === 'vec' ? 'linear' : p.field.kind === 'angle' ? 'angle' : p.field.kind === 'quat' ? 'quat' : 'step';
      for (let i = 0; i < p.slots; i++) kinds.push(k);
      fullBits += p.field.kind === 'quat' ? 2 + 3 * p.bits : p.slots * p.bits;
    }
    this.kinds = kinds;
    this.fullBits = fullBits;
    this.scratchQ = new Int32Array(slots);
    this.scratchV = new Float64Array(slots);
  }

  /** Quantize a game object's values into `q[off, off + slots)`. Out-of-range numbers are clamped; a
   * missing field, NaN, or an unknown enum value throws `invalid-argument`. */
  quantizeObject(values: ValuesOf<F>, q: Int32Array, off = 0): void {
    const o = values as Record<string, unknown>;
    for (let i = 0, plans = this.plans; i < plans.length; i++) this.quantizeField(plans[i]!, o, q, off);
  }

  private quantizeField(p: FieldPlan, o: Record<string, unknown>, q: Int32Array, off = 0): void {
    const v = o[p.name];
    const f = p.field;
    switch (f.kind) {
      case 'float':
      case 'int':
        if (typeof v !== 'number' || Number.isNaN(v)) this.bad(p, 'must be a number');
        q[off + p.slot] = this.qLinear(p, v as number);
        break;
      case 'bool':
        if (typeof v !== 'boolean') this.bad(p, 'must be a boolean');
        q[off + p.slot] = v ? 1 : 0;
        break;
      case 'enum': {
        const i = f.values.indexOf(v as string);
        if (i < 0) this.bad(p, `${String(v)} is not one of ${f.values.join(', ')}`);
        q[off + p.slot] = i;
        break;
      }
      case 'angle':
        if (typeof v !== 'number' || !Number.isFinite(v)) this.bad(p, 'must be a finite number');
        q[off + p.slot] = qAngle(p, v as number);
        break;
      case 'vec': {
        const c = v as Record<string, number> | null;
        if (typeof c !== 'object' || c === null) this.bad(p, `must be { x, y${f.dims === 3 ? ', z' : ''} }`);
        const x = c!.x;
        const y = c!.y;
        const z = f.dims === 3 ? c!.z : 0;
        if (typeof x !== 'number' || typeof y !== 'number' || typeof z !== 'number' || Number.isNaN(x + y + z)) this.bad(p, 'components must be numbers');
        q[off + p.slot] = this.qLinear(p, x!);
        q[off + p.slot + 1] = this.qLinear(p, y!);
        if (f.dims === 3) q[off + p.slot + 2] = this.qLinear(p, z!);
        break;
      }
      case 'quat': {
        const c = v as Record<string, number> | null;
        if (typeof c !== 'object' || c === null || !Number.isFinite(c.x! + c.y! + c.z! + c.w!)) this.bad(p, 'must be { x, y, z, w } of finite numbers');
        qQuat(p, c!.x!, c!.y!, c!.z!, c!.w!, q, off + p.slot);
        break;
      }
    }
  }

  private bad(p: FieldPlan, what: string): never {
    throw new GamewireError('invalid-argument', `${this.name}.${p.name} ${what}`);
  }

  /**
   * Quantize a game object's values into `q[off…]` and snap the object in place to what the wire
   * carries, in one pass. Returns true if any wire value differs from what `q` held before.
   */
  absorb(values: ValuesOf<F>, q: Int32Array, off: number): boolean {
    const o = values as Record<string, unknown>;
    let changed = false;
    for (let pi = 0, plans = this.plans; pi < plans.length; pi++) {
      const p = plans[pi]!;
      const f = p.field;
      const at = off + p.slot;
      if (f.kind === 'float' || f.kind === 'int') {
        const v = o[p.name];
        if (typeof v !== 'number' || Number.isNaN(v)) this.bad(p, 'must be a number');
        const x = this.qLinear(p, v as number);
        if (x !== q[at]) {
          q[at] = x;
          changed = true;
        }
        const snapped = p.min + x * p.step;
        if (snapped !== v) o[p.name] = snapped;
      } else if (f.kind === 'angle') {
        const v = o[p.name];
        if (typeof v !== 'number' || !Number.isFinite(v)) this.bad(p, 'must be a finite number');
        const x = qAngle(p, v as number);
        if (x !== q[at]) {
          q[at] = x;
          changed = true;
        }
        const a = x * p.step;
        const snapped = a >= Math.PI ? a - TWO_PI : a;
        if (snapped !== v) o[p.name] = snapped;
      } else {
        // What the wire holds, if the game left the field alone: re-quantizing a snapped quaternion
        // may pick another largest component when two are nearly equal, and must not count as a change.
        if (f.kind === 'quat' && this.holds(p, o, q, at)) continue;
        const tmp = this.scratchQ;
        this.quantizeField(p, o, tmp);
        for (let i = 0; i < p.slots; i++) {
          if (tmp[p.slot + i] !== q[at + i]) {
            q[at + i] = tmp[p.slot + i]!;
            changed = true;
          }
        }
        dequantizeField(p, tmp, 0, this.scratchV, 0);
        this.assignField(p, o, this.scratchV, 0);
      }
    }
    return changed;
  }

  private holds(p: FieldPlan, o: Record<string, unknown>, q: Int32Array, at: number): boolean {
    const c = o[p.name] as Record<string, number> | null;
    if (typeof c !== 'object' || c === null) return false;
    const v = this.scratchV;
    dequantizeField(p, q, at - p.slot, v, 0);
    return c.x === v[p.slot] && c.y === v[p.slot + 1] && c.z === v[p.slot + 2] && c.w === v[p.slot + 3];
  }

  /** Quantize real slot values (`values[voff…]`) into `q[off…]`. */
  quantizeValues(values: ArrayLike<number>, voff: number, q: Int32Array, off = 0): void {
    for (let pi = 0, plans = this.plans; pi < plans.length; pi++) {
      const p = plans[pi]!;
      const s = voff + p.slot;
      switch (p.field.kind) {
        case 'angle':
          q[off + p.slot] = qAngle(p, values[s]!);
          break;
        case 'quat':
          qQuat(p, values[s]!, values[s + 1]!, values[s + 2]!, values[s + 3]!, q, off + p.slot);
          break;
        default:
          for (let i = 0; i < p.slots; i++) q[off + p.slot + i] = this.qLinear(p, values[s + i]!);
      }
    }
  }

  /** Real values of `q[off…]` into `out[ooff…]`. */
  dequantize(q: Int32Array, off: number, out: Float64Array, ooff = 0): void {
    for (let i = 0, plans = this.plans; i < plans.length; i++) dequantizeField(plans[i]!, q, off, out, ooff);
  }

  /** Snap real values in place to what the wire carries (what the other end will see). */
  snapValues(values: Float64Array, off = 0): void {
    this.quantizeValues(values, off, this.scratchQ, 0);
    this.dequantize(this.scratchQ, 0, values, off);
  }

  /** Snap a game object's values in place to what the wire carries. */
  snap(values: ValuesOf<F>): void {
    this.quantizeObject(values, this.scratchQ, 0);
    this.dequantize(this.scratchQ, 0, this.scratchV, 0);
    this.assignObject(values, this.scratchV, 0);
  }

  /** A new game object from real values. */
  toObject(values: ArrayLike<number>, off = 0): ValuesOf<F> {
    const o: Record<string, unknown> = {};
    for (let pi = 0, plans = this.plans; pi < plans.length; pi++) {
      const p = plans[pi]!;
      if (p.field.kind === 'vec' || p.field.kind === 'quat') o[p.name] = {};
      this.assignField(p, o, values, off);
    }
    return o as ValuesOf<F>;
  }

  /** Write real values into an existing game object, in place (vectors and quaternions too). */
  assignObject(o: ValuesOf<F>, values: ArrayLike<number>, off = 0): void {
    for (let i = 0, plans = this.plans; i < plans.length; i++) this.assignField(plans[i]!, o as Record<string, unknown>, values, off);
  }

  private assignField(p: FieldPlan, t: Record<string, unknown>, values: ArrayLike<number>, off: number): void {
    const s = off + p.slot;
    const f = p.field;
    switch (f.kind) {
      case 'bool':
        t[p.name] = values[s] !== 0;
        break;
      case 'enum':
        t[p.name] = f.values[values[s]!] ?? f.values[0];
        break;
      case 'vec':
      case 'quat': {
        const c = t[p.name] as Record<string, number>;
        for (let i = 0; i < p.slots; i++) c['xyzw'[i]!] = values[s + i]!;
        break;
      }
      default:
        t[p.name] = values[s]!;
    }
  }

  /** Real values from a game object (quantized and back, so exactly what the wire carries). */
  fromObject(values: ValuesOf<F>, out: Float64Array, off = 0): void {
    this.quantizeObject(values, this.scratchQ, 0);
    this.dequantize(this.scratchQ, 0, out, off);
  }

  /** Write `q[off…]` in full. */
  writeFull(w: BitWriter, q: Int32Array, off: number): void {
    for (let pi = 0, plans = this.plans; pi < plans.length; pi++) {
      const p = plans[pi]!;
      if (p.field.kind === 'quat') {
        w.bits(q[off + p.slot]!, 2);
        for (let i = 1; i < 4; i++) w.bits(q[off + p.slot + i]!, p.bits);
      } else {
        for (let i = 0; i < p.slots; i++) w.bits(q[off + p.slot + i]!, p.bits);
      }
    }
  }

  /** Read a full encoding into `q[off…]`; false if a value is out of its range (malformed). */
  readFull(r: BitReader, q: Int32Array, off: number): boolean {
    let ok = true;
    for (let pi = 0, plans = this.plans; pi < plans.length; pi++) {
      const p = plans[pi]!;
      if (p.field.kind === 'quat') {
        q[off + p.slot] = r.bits(2);
        for (let i = 1; i < 4; i++) q[off + p.slot + i] = r.bits(p.bits);
      } else {
        for (let i = 0; i < p.slots; i++) {
          const v = r.bits(p.bits);
          if (v > p.maxQ) ok = false;
          q[off + p.slot + i] = v;
        }
      }
    }
    return ok && !r.overflow;
  }

  /** True if `q[off…]` and `base[boff…]` differ in any slot. */
  differs(q: Int32Array, off: number, base: Int32Array, boff: number): boolean {
    for (let i = 0; i < this.slots; i++) if (q[off + i] !== base[boff + i]) return true;
    return false;
  }

  /**
   * Write `q[off…]` as a delta against `base[boff…]`: per field one bit (changed); a changed field's
   * numeric slots as signed step counts in order-k Exp-Golomb codes, `k` per delta slot from `ks`
   * (docs/state.md, "Field deltas"). `sums`, if given, gains each written slot's zigzag value (per
   * delta slot; its second half counts them), for the caller to pick the next `ks`.
   */
  writeDelta(w: BitWriter, q: Int32Array, off: number, base: Int32Array, boff: number, ks: ArrayLike<number>, sums?: Float64Array): void {
    for (let pi = 0, plans = this.plans; pi < plans.length; pi++) {
      const p = plans[pi]!;
      const a = off + p.slot;
      const b = boff + p.slot;
      let changed = false;
      for (let i = 0; i < p.slots; i++) if (q[a + i] !== base[b + i]) changed = true;
      w.bool(changed);
      if (!changed) continue;
      const f = p.field;
      if (f.kind === 'bool') continue;
      if (f.kind === 'enum') {
        w.bits(q[a]!, p.bits);
      } else if (f.kind === 'quat') {
        if (q[a] !== base[b]) {
          w.bits(1, 1);
          w.bits(q[a]!, 2);
          for (let i = 1; i < 4; i++) w.bits(q[a + i]!, p.bits);
        } else {
          w.bits(0, 1);
          for (let i = 1; i < 4; i++) writeStep(w, q[a + i]! - base[b + i]!, ks[p.dslot + i - 1]!, sums, p.dslot + i - 1);
        }
      } else if (f.kind === 'angle') {
        writeStep(w, wrapDelta(q[a]! - base[b]!, p.bits), ks[p.dslot]!, sums, p.dslot);
      } else {
        for (let i = 0; i < p.slots; i++) writeStep(w, q[a + i]! - base[b + i]!, ks[p.dslot + i]!, sums, p.dslot + i);
      }
    }
  }

  /** Read a delta against `base[boff…]` into `q[off…]`, with the writer's `ks`; false if malformed. */
  readDelta(r: BitReader, base: Int32Array, boff: number, q: Int32Array, off: number, ks: ArrayLike<number>): boolean {
    let ok = true;
    for (let pi = 0, plans = this.plans; pi < plans.length; pi++) {
      const p = plans[pi]!;
      const a = off + p.slot;
      const b = boff + p.slot;
      for (let i = 0; i < p.slots; i++) q[a + i] = base[b + i]!;
      if (!r.bool()) continue;
      const f = p.field;
      if (f.kind === 'bool') {
        q[a] = base[b] === 0 ? 1 : 0;
      } else if (f.kind === 'enum') {
        q[a] = r.bits(p.bits);
        if (q[a]! > p.maxQ) ok = false;
      } else if (f.kind === 'quat') {
        if (r.bits(1) === 1) {
          q[a] = r.bits(2);
          for (let i = 1; i < 4; i++) q[a + i] = r.bits(p.bits);
        } else {
          for (let i = 1; i < 4; i++) {
            const v = base[b + i]! + unzigzag(r.expGolomb(ks[p.dslot + i - 1]!));
            if (v < 0 || v > p.maxQ) ok = false;
            q[a + i] = v;
          }
        }
      } else if (f.kind === 'angle') {
        const m = p.maxQ + 1;
        q[a] = (((base[b]! + unzigzag(r.expGolomb(ks[p.dslot]!))) % m) + m) % m;
      } else {
        for (let i = 0; i < p.slots; i++) {
          const v = base[b + i]! + unzigzag(r.expGolomb(ks[p.dslot + i]!));
          if (v < 0 || v > p.maxQ) ok = false;
          q[a + i] = v;
        }
      }
    }
    return ok && !r.overflow;
  }

  /** A canonical description (what the schema hash covers). */
  describe(): string {
    return JSON.stringify([this.name, this.plans.map((p) => [p.name, p.field])]);
  }

  private qLinear(p: FieldPlan, v: number): number {
    const q = Math.round((v - p.min) / p.step);
    return q < 0 ? 0 : q > p.maxQ ? p.maxQ : q;
  }
}

function dequantizeField(p: FieldPlan, q: Int32Array, off: number, out: Float64Array, ooff: number): void {
  const s = off + p.slot;
  const d = ooff + p.slot;
  switch (p.field.kind) {
    case 'angle': {
      const a = q[s]! * p.step;
      out[d] = a >= Math.PI ? a - TWO_PI : a;
      break;
    }
    case 'quat':
      dqQuat(p, q, s, out, d);
      break;
    default:
      for (let i = 0; i < p.slots; i++) out[d + i] = p.min + q[s + i]! * p.step;
  }
}

function qAngle(p: FieldPlan, v: number): number {
  const turns = v / TWO_PI;
  const q = Math.round((turns - Math.floor(turns)) * (p.maxQ + 1));
  return q > p.maxQ ? 0 : q;
}

function qQuat(p: FieldPlan, x: number, y: number, z: number, w: number, q: Int32Array, at: number): void {
  const n = Math.hypot(x, y, z, w) || 1;
  const ax = Math.abs(x);
  const ay = Math.abs(y);
  const az = Math.abs(z);
  const aw = Math.abs(w);
  let largest = 0;
  let big = ax;
  if (ay > big) (largest = 1), (big = ay);
  if (az > big) (largest = 2), (big = az);
  if (aw > big) largest = 3;
  const sign = (largest === 0 ? x : largest === 1 ? y : largest === 2 ? z : w) < 0 ? -1 : 1;
  const k = sign / n;
  q[at] = largest;
  let i = 1;
  if (largest !== 0) q[at + i++] = qComponent(p, x * k);
  if (largest !== 1) q[at + i++] = qComponent(p, y * k);
  if (largest !== 2) q[at + i++] = qComponent(p, z * k);
  if (largest !== 3) q[at + i] = qComponent(p, w * k);
}

function qComponent(p: FieldPlan, c: number): number {
  const v = Math.round((c - p.min) / p.step);
  return v < 0 ? 0 : v > p.maxQ ? p.maxQ : v;
}

function dqQuat(p: FieldPlan, q: Int32Array, at: number, out: Float64Array, d: number): void {
  const largest = q[at]! & 3;
  let sum = 0;
  let k = 1;
  for (let i = 0; i < 4; i++) {
    if (i === largest) continue;
    const v = p.min + q[at + k++]! * p.step;
    out[d + i] = v;
    sum += v * v;
  }
  out[d + largest] = Math.sqrt(Math.max(0, 1 - sum));
}

function wrapDelta(d: number, bits: number): number {
  const m = 1 << bits;
  const x = d & (m - 1);
  return x >= m >>> 1 ? x - m : x;
}

/** Largest Exp-Golomb order of a delta slot (4 bits in the snapshot header). */
export const MAX_DELTA_K = 15;

function writeStep(w: BitWriter, d: number, k: number, sums: Float64Array | undefined, j: number): void {
  const z = zigzag(d);
  w.expGolomb(z, k);
  if (sums !== undefined) {
    sums[j] += z;
    sums[sums.length / 2 + j]++;
  }
}

/** The Exp-Golomb order that suits a mean zigzag step of `mean`. */
export function orderFor(mean: number): number {
  const k = Math.floor(Math.log2(mean + 1));
  return k < 0 ? 0 : k > MAX_DELTA_K ? MAX_DELTA_K : k;
}

/** Entity types by name: what `defineSchema` takes. */
export type SchemaTypes = Readonly<Record<string, Fields>>;

/**
 * The game's state, declared once and shared by server and client: entity types (up to 256) and
 * the inputs a client sends. Its `hash` covers every type, field and range in order; both ends
 * compare it before any snapshot is applied.
 */
export class Schema<T extends SchemaTypes = SchemaTypes, I extends Fields = Fields> {
  /** Codecs by type index (the wire's type id). */
  readonly types: readonly TypeCodec[];
  /** The inputs' codec. */
  readonly inputs: TypeCodec<I>;
  /** CRC-32 of the canonical description of every type and of the inputs. */
  readonly hash: number;
  /** Bits of a type id on the wire. */
  readonly typeBits: number;
  private readonly byName = new Map<string, TypeCodec>();

  constructor(types: T, inputs: I) {
    checkConfig(typeof types === 'object' && types !== null, 'defineSchema: types must be an object of entity types');
    const names = Object.keys(types);
    checkConfig(names.length >= 1 && names.length <= 256, 'defineSchema: needs 1..256 entity types');
    this.types = names.map((n, i) => new TypeCodec(i, n, types[n]!));
    for (const t of this.types) this.byName.set(t.name, t);
    this.inputs = new TypeCodec(0, 'inputs', inputs);
    this.typeBits = bitsFor(names.length - 1);
    const text = JSON.stringify(['gamewire-state-1', this.types.map((t) => t.describe()), this.inputs.describe()]);
    this.hash = crc32Of(new TextEncoder().encode(text));
  }

  /** The codec of entity type `name`; throws `invalid-argument` if there is none. */
  type<K extends keyof T & string>(name: K): TypeCodec<T[K]> {
    const t = this.byName.get(name);
    checkArg(t !== undefined, `no entity type ${name} in the schema (types: ${[...this.byName.keys()].join(', ')})`);
    return t as unknown as TypeCodec<T[K]>;
  }
}

/**
 * Declare the game's state once, shared by server and client:
 * `defineSchema({ player: { x: float(-500, 500, 0.01), … } }, { dx: int(-1, 1), fire: bool() })`.
 * Throws `invalid-config` on a bad field.
 */
export function defineSchema<const T extends SchemaTypes, const I extends Fields = { none: BoolField }>(types: T, inputs?: I): Schema<T, I> {
  return new Schema(types, (inputs ?? { none: bool() }) as I);
}
