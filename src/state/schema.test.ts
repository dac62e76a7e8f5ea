import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BitReader, BitWriter } from '../core/bits.js';
import { GamewireError } from '../core/errors.js';
import { angle, bool, defineSchema, float, int, oneOf, quat, vec2, vec3 } from './schema.js';

const schema = defineSchema(
  {
    player: { x: float(-500, 500, 0.01), y: float(-500, 500, 0.01), angle: angle(10), hp: int(0, 100), alive: bool(), mode: oneOf('idle', 'run', 'jump') },
    cube: { p: vec3(-256, 256, 1 / 512), v: vec2(-10, 10, 0.1), q: quat(9) },
  },
  { dx: int(-1, 1), dy: int(-1, 1), fire: bool() },
);

describe('schema', () => {
  it('lays out slots and kinds per type', () => {
    const p = schema.type('player');
    expect(p.slots).toBe(6);
    expect(p.deltaSlots).toBe(4); // x, y, angle, hp: not the bool or the enum
    expect(schema.type('cube').deltaSlots).toBe(3 + 2 + 3); // a quaternion's index is not a step
    expect(p.kinds).toEqual(['linear', 'linear', 'angle', 'step', 'step', 'step']);
    const c = schema.type('cube');
    expect(c.slots).toBe(3 + 2 + 4);
    expect(c.fullBits).toBe(3 * 19 + 2 * 8 + 2 + 3 * 9); // 512 m × 512 per m = 262,144 steps: 19 bits
    expect(schema.typeBits).toBe(1);
  });

  it('quantizes to the declared precision and back, clamping out-of-range numbers', () => {
    const p = schema.type('player');
    const v = new Float64Array(p.slots);
    p.fromObject({ x: 1.234567, y: 900, angle: Math.PI * 3.5, hp: 42, alive: true, mode: 'jump' }, v);
    const o = p.toObject(v);
    expect(o.x).toBeCloseTo(1.23, 9);
    expect(o.y).toBe(500);
    expect(o.angle).toBeCloseTo(-Math.PI / 2, 2);
    expect(o.hp).toBe(42);
    expect(o.alive).toBe(true);
    expect(o.mode).toBe('jump');
  });

  it('refuses bad values with invalid-argument, and bad fields with invalid-config', () => {
    const p = schema.type('player');
    const q = new Int32Array(p.slots);
    expect(() => p.quantizeObject({ x: Number.NaN, y: 0, angle: 0, hp: 0, alive: false, mode: 'idle' }, q)).toThrow(GamewireError);
    expect(() => p.quantizeObject({ x: 0, y: 0, angle: 0, hp: 0, alive: false, mode: 'fly' as 'idle' }, q)).toThrow(/not one of/);
    expect(() => defineSchema({ a: { x: float(1, 0, 0.1) } })).toThrow(/invalid-config/);
    expect(() => defineSchema({ a: { x: float(0, 1e12, 1e-6) } })).toThrow(/2\^31/);
    expect(() => defineSchema({ a: {} })).toThrow(/1..64 fields/);
    expect(() => schema.type('nope' as 'player')).toThrow(/no entity type nope/);
  });

  it('the hash changes with any range, precision, name or order', () => {
    const base = defineSchema({ a: { x: float(0, 10, 0.1), y: int(0, 3) } }).hash;
    expect(defineSchema({ a: { x: float(0, 10, 0.1), y: int(0, 3) } }).hash).toBe(base);
    expect(defineSchema({ a: { x: float(0, 10, 0.05), y: int(0, 3) } }).hash).not.toBe(base);
    expect(defineSchema({ a: { y: int(0, 3), x: float(0, 10, 0.1) } }).hash).not.toBe(base);
    expect(defineSchema({ b: { x: float(0, 10, 0.1), y: int(0, 3) } }).hash).not.toBe(base);
    expect(defineSchema({ a: { x: float(0, 10, 0.1), y: int(0, 3) } }, { fire: bool() }).hash).not.toBe(base);
  });

  it('smallest-three quaternions come back unit length, within the component step', () => {
    const c = schema.type('cube');
    const v = new Float64Array(c.slots);
    fc.assert(
      fc.property(fc.array(fc.double({ min: -1, max: 1, noNaN: true }), { minLength: 4, maxLength: 4 }), (raw) => {
        const n = Math.hypot(...raw);
        fc.pre(n > 0.1);
        const [x, y, z, w] = raw.map((a) => a / n) as [number, number, number, number];
        c.fromObject({ p: { x: 0, y: 0, z: 0 }, v: { x: 0, y: 0 }, q: { x, y, z, w } }, v);
        const back = [v[5]!, v[6]!, v[7]!, v[8]!];
        expect(Math.hypot(...back)).toBeCloseTo(1, 6);
        const dot = Math.abs(back[0]! * x + back[1]! * y + back[2]! * z + back[3]! * w);
        expect(dot).toBeGreaterThan(0.999);
      }),
    );
  });

  it('full and delta encodings round-trip exactly, for any values and bases', () => {
    const types = [schema.type('player'), schema.type('cube')];
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1 }), fc.array(fc.double({ min: -600, max: 600, noNaN: true }), { minLength: 18, maxLength: 18 }), fc.boolean(), (ti, nums, nearBase) => {
        const t = types[ti]!;
        const a = new Int32Array(t.slots);
        const b = new Int32Array(t.slots);
        t.quantizeValues(nums, 0, a, 0);
        t.quantizeValues(nearBase ? nums.map((x, i) => (i % 2 ? x : x + 0.02)) : nums.slice(9), 0, b, 0);
        const buf = new Uint8Array(128);
        const w = new BitWriter(buf);
        t.writeFull(w, a, 0);
        const ks = Array.from({ length: t.deltaSlots }, (_, i) => (i * 5) % 16);
        t.writeDelta(w, a, 0, b, 0, ks);
        const end = w.finish();
        const r = new BitReader(buf, 0, end);
        const full = new Int32Array(t.slots);
        const delta = new Int32Array(t.slots);
        expect(t.readFull(r, full, 0)).toBe(true);
        expect(t.readDelta(r, b, 0, delta, 0, ks)).toBe(true);
        expect([...full]).toEqual([...a]);
        expect([...delta]).toEqual([...a]);
      }),
    );
  });

  it('a delta of unchanged values costs one bit per field', () => {
    const p = schema.type('player');
    const a = new Int32Array(p.slots);
    p.quantizeObject({ x: 3, y: 4, angle: 1, hp: 50, alive: true, mode: 'run' }, a);
    const w = new BitWriter(new Uint8Array(16));
    p.writeDelta(w, a, 0, a, 0, [0, 0, 0, 0]);
    expect(w.bitLength).toBe(6);
  });

  it('a small move costs few bits: x moved 0.3 m at 0.01 precision (30 steps, zigzag 60) is 1 + 9 bits at order 4, the rest 1 bit each', () => {
    const p = schema.type('player');
    const a = new Int32Array(p.slots);
    const b = new Int32Array(p.slots);
    p.quantizeObject({ x: 3, y: 4, angle: 1, hp: 50, alive: true, mode: 'run' }, b);
    p.quantizeObject({ x: 3.3, y: 4, angle: 1, hp: 50, alive: true, mode: 'run' }, a);
    const w = new BitWriter(new Uint8Array(16));
    const sums = new Float64Array(2 * p.deltaSlots);
    p.writeDelta(w, a, 0, b, 0, [4, 4, 4, 4], sums);
    expect(w.bitLength).toBe(6 + 9);
    expect([...sums]).toEqual([60, 0, 0, 0, 1, 0, 0, 0]);
  });

  it('angles take the short way round in deltas', () => {
    const s = defineSchema({ a: { r: angle(16) } }).type('a');
    const a = new Int32Array(1);
    const b = new Int32Array(1);
    s.quantizeObject({ r: Math.PI - 0.001 }, b);
    s.quantizeObject({ r: -Math.PI + 0.001 }, a);
    const buf = new Uint8Array(16);
    const w = new BitWriter(buf);
    s.writeDelta(w, a, 0, b, 0, [3]);
    expect(w.bitLength).toBeLessThanOrEqual(1 + 10);
    const out = new Int32Array(1);
    expect(s.readDelta(new BitReader(buf, 0, w.finish()), b, 0, out, 0, [3])).toBe(true);
    expect(out[0]).toBe(a[0]);
  });

  it('reading out-of-range values reports malformed instead of throwing', () => {
    const s = defineSchema({ a: { e: oneOf('a', 'b', 'c') } }).type('a');
    const buf = Uint8Array.of(0b11);
    const q = new Int32Array(1);
    expect(s.readFull(new BitReader(buf), q, 0)).toBe(false);
    expect(s.readFull(new BitReader(new Uint8Array(0)), q, 0)).toBe(false);
  });
});
