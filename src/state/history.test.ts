import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../core/rng.js';
import { StateHistory, clampRewind } from './history.js';
import { type SlotKind, angleDelta, blendSlots, lerpAngle, nlerpQuat } from './lerp.js';

const TICK_MS = 50;
const q = (v: number, step: number): number => Math.round(v / step) * step;
const KINDS: readonly SlotKind[] = ['linear', 'linear', 'angle', 'step'];

/** Entity `e`'s quantized state at `tick`: wandering x, y (0.01 m), an angle spinning through ±π, an int. */
function stateAt(e: number, tick: number): Float64Array {
  const a = ((tick * 0.7 + e) % (2 * Math.PI)) - Math.PI;
  return Float64Array.of(q(Math.sin(tick * 0.1 + e) * 40, 0.01), q(e * 3 + tick * 0.25, 0.01), q(a, (2 * Math.PI) / 1024), (tick >> 3) & 3);
}

describe('StateHistory', () => {
  it('returns exactly the recorded state at a whole tick, for every tick kept and no older', () => {
    const h = new StateHistory({ slots: 4, tickMs: TICK_MS, maxEntities: 8 });
    expect(h.frames).toBe(21);
    const out = new Float64Array(4);
    for (let t = 0; t < 200; t++) for (let e = 0; e < 8; e++) h.record(t, e, stateAt(e, t));
    expect(h.newestTick).toBe(199);
    expect(h.oldestTick).toBe(179);
    for (let e = 0; e < 8; e++) {
      for (let t = 179; t <= 199; t++) {
        expect(h.sample(e, t, KINDS, out)).toBe(true);
        expect([...out]).toEqual([...stateAt(e, t)]);
      }
      expect(h.sample(e, 178, KINDS, out)).toBe(false);
      expect(h.sample(e, 178.9, KINDS, out)).toBe(false);
    }
  });

  it('interpolates between recorded ticks with the client\'s maths (linear, short-way angle, step)', () => {
    const h = new StateHistory({ slots: 4, tickMs: TICK_MS, maxEntities: 1 });
    h.record(10, 0, [1, -2, 3.1, 5]);
    h.record(11, 0, [2, -4, -3.1, 6]);
    const out = new Float64Array(4);
    expect(h.sample(0, 10.25, KINDS, out)).toBe(true);
    expect(out[0]).toBeCloseTo(1.25, 12);
    expect(out[1]).toBeCloseTo(-2.5, 12);
    // 3.1 → −3.1 the short way: across π, not back through 0.
    expect(out[2]).toBeCloseTo(3.1 + (2 * Math.PI - 6.2) * 0.25, 12);
    expect(out[3]).toBe(5);
    const viaLerp = new Float64Array(4);
    blendSlots([1, -2, 3.1, 5], 0, [2, -4, -3.1, 6], 0, 0.25, KINDS, viaLerp);
    expect([...out]).toEqual([...viaLerp]);
  });

  it('interpolates a quaternion along the shorter arc, unit length', () => {
    const h = new StateHistory({ slots: 4, tickMs: TICK_MS, maxEntities: 1 });
    const s = Math.SQRT1_2;
    h.record(0, 0, [0, 0, 0, 1]);
    h.record(1, 0, [0, 0, -s, -s]); // +90° about z, written in the other hemisphere
    const out = new Float64Array(4);
    expect(h.sample(0, 0.5, ['quat', 'quat', 'quat', 'quat'], out)).toBe(true);
    expect(Math.hypot(...out)).toBeCloseTo(1, 12);
    // Halfway is +45° about z (w > 0), not the long way round through w = 0.
    expect(out[2]).toBeCloseTo(Math.sin(Math.PI / 8), 12);
    expect(out[3]).toBeCloseTo(Math.cos(Math.PI / 8), 12);
  });

  it('returns false outside the kept range, across gaps, for unknown entities and for non-numbers', () => {
    const h = new StateHistory({ slots: 4, tickMs: TICK_MS, historyMs: 200, maxEntities: 3 });
    const out = new Float64Array(4).fill(7);
    expect(h.sample(0, 0, KINDS, out)).toBe(false);
    for (let t = 0; t < 10; t++) h.record(t, 0, stateAt(0, t));
    h.record(9, 1, stateAt(1, 9));
    h.record(7, 1, stateAt(1, 7));
    expect(h.oldestTick).toBe(5);
    expect(h.sample(0, 4.5, KINDS, out)).toBe(false);
    expect(h.sample(0, 9.01, KINDS, out)).toBe(false);
    expect(h.sample(0, Number.NaN, KINDS, out)).toBe(false);
    expect(h.sample(0, Infinity, KINDS, out)).toBe(false);
    expect(h.sample(0, -0.5, KINDS, out)).toBe(false);
    expect(h.sample(2, 8, KINDS, out)).toBe(false);
    expect(h.sample(1, 8, KINDS, out)).toBe(false);
    expect(h.sample(1, 7.5, KINDS, out)).toBe(false);
    expect([...out]).toEqual([7, 7, 7, 7]);
    expect(h.sample(1, 7, KINDS, out)).toBe(true);
    expect(h.sample(0, 5, KINDS, out)).toBe(true);
    expect(h.sample(0, 8.5, KINDS, out)).toBe(true);
    // Entity 1 is not recorded again: once the history moves on, its last records are out of range too.
    for (let t = 10; t < 20; t++) h.record(t, 0, stateAt(0, t));
    expect(h.sample(1, 9, KINDS, out)).toBe(false);
    expect(h.sample(0, 19, KINDS, out)).toBe(true);
  });

  it('never returns a forgotten entity\'s past once its slot is reused', () => {
    const h = new StateHistory({ slots: 4, tickMs: TICK_MS, maxEntities: 4 });
    const out = new Float64Array(4);
    for (let t = 0; t <= 10; t++) h.record(t, 3, stateAt(3, t));
    h.forget(3);
    for (let t = 11; t <= 15; t++) h.record(t, 3, stateAt(99, t));
    expect(h.sample(3, 5, KINDS, out)).toBe(false);
    expect(h.sample(3, 10, KINDS, out)).toBe(false);
    expect(h.sample(3, 10.5, KINDS, out)).toBe(false);
    expect(h.sample(3, 12, KINDS, out)).toBe(true);
    expect([...out]).toEqual([...stateAt(99, 12)]);
  });

  it('gives back exactly what a client rendered from the same snapshots', () => {
    // A client receives every tick's snapshot and draws at fractional render ticks with blendSlots (the client's
    // interpolation maths); the server samples its history at the render tick the client reports.
    const rng = new NonCryptoRng(7);
    const h = new StateHistory({ slots: 4, tickMs: TICK_MS, maxEntities: 16 });
    const drawn = new Float64Array(4);
    const rewound = new Float64Array(4);
    let checked = 0;
    for (let t = 0; t < 400; t++) {
      for (let e = 0; e < 16; e++) h.record(t, e, stateAt(e, t));
      if (t < 5) continue;
      const render = t - 3 + rng.nextFloat() * 2; // 100–150 ms behind
      const e = rng.nextInt(16);
      const t0 = Math.floor(render);
      blendSlots(stateAt(e, t0), 0, stateAt(e, t0 + 1), 0, render - t0, KINDS, drawn);
      expect(h.sample(e, clampRewind(render, t, TICK_MS, 1000), KINDS, rewound)).toBe(true);
      expect([...rewound]).toEqual([...drawn]);
      checked++;
    }
    expect(checked).toBe(395);
  });

  it('allocates its whole budget up front and refuses what breaks it', () => {
    const h = new StateHistory({ slots: 3, tickMs: TICK_MS, maxEntities: 900 });
    expect(h.bytes).toBe(900 * 21 * (3 + 1) * 8);
    expect(() => new StateHistory({ slots: 16, tickMs: 1, historyMs: 60_000, maxEntities: 1 << 20 })).toThrowError(/invalid-config/);
    expect(() => new StateHistory({ slots: 3, tickMs: 0, maxEntities: 1 })).toThrowError(/invalid-config/);
    expect(() => new StateHistory({ slots: 3, tickMs: 50, maxEntities: 1, histroyMs: 5 } as never)).toThrowError(/invalid-config/);
    for (let t = 0; t < 30; t++) h.record(t, 0, [1, 2, 3]);
    expect(() => h.record(8, 0, [1, 2, 3])).toThrowError(/invalid-argument/);
    expect(() => h.record(30, 900, [1, 2, 3])).toThrowError(/invalid-argument/);
    expect(() => h.record(30, 0, [1, 2])).toThrowError(/invalid-argument/);
    expect(() => h.sample(0, 20, ['linear'], new Float64Array(3))).toThrowError(/invalid-config/);
    h.record(30, 1, [0, 9, 8, 7, 6], 2);
    const out = new Float64Array(3);
    expect(h.sample(1, 30, ['linear', 'linear', 'linear'], out)).toBe(true);
    expect([...out]).toEqual([8, 7, 6]);
  });
});

describe('clampRewind', () => {
  it('keeps a render tick between now − maxRewindMs and now', () => {
    expect(clampRewind(95.5, 100, TICK_MS, 300)).toBe(95.5);
    expect(clampRewind(90, 100, TICK_MS, 300)).toBe(94);
    expect(clampRewind(101, 100, TICK_MS, 300)).toBe(100);
    expect(clampRewind(100, 100, TICK_MS, 0)).toBe(100);
    expect(clampRewind(Number.NaN, 100, TICK_MS, 300)).toBe(100);
    expect(clampRewind(-Infinity, 100, TICK_MS, 300)).toBe(100);
    expect(() => clampRewind(1, 2, 0, 300)).toThrowError(/invalid-argument/);
    expect(() => clampRewind(1, 2, 50, -1)).toThrowError(/invalid-argument/);
  });

  it('lands inside the history when maxRewindMs ≤ historyMs', () => {
    const h = new StateHistory({ slots: 1, tickMs: 1000 / 60, historyMs: 250, maxEntities: 1 });
    for (let t = 0; t < 100; t++) h.record(t, 0, [t]);
    const out = new Float64Array(1);
    for (const now of [99, 100]) {
      const at = clampRewind(0, now, 1000 / 60, 250);
      expect(h.sample(0, Math.min(at, h.newestTick), ['linear'], out)).toBe(true);
      expect(out[0]).toBeCloseTo(Math.min(at, 99), 9);
    }
  });
});

describe('lerp helpers', () => {
  it('wrap angle differences into [−π, π) and stay exact at t = 0', () => {
    expect(angleDelta(3.1, -3.1)).toBeCloseTo(2 * Math.PI - 6.2, 12);
    expect(angleDelta(-3.1, 3.1)).toBeCloseTo(6.2 - 2 * Math.PI, 12);
    expect(angleDelta(0, 7 * Math.PI)).toBeCloseTo(-Math.PI, 12);
    expect(lerpAngle(0.3, 2, 0)).toBe(0.3);
    const o = new Float64Array(4);
    nlerpQuat([0, 0, 0, 0], 0, [0, 0, 0, 0], 0, 0.5, o, 0);
    expect([...o]).toEqual([0, 0, 0, 0]);
  });
});
