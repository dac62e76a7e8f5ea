import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { Playback, Track, type PlaybackOptions, type SampleOutcome, type SlotKind } from './interpolation.js';

const TICK_MS = 50;
const FRAME_MS = 1000 / 60;

interface Phase {
  /** Length of the phase (ms). */
  ms: number;
  /** Half-width of the uniform one-way jitter (ms). */
  jitterMs: number;
  /** I.i.d. loss per snapshot. */
  loss: number;
  /** No snapshot sent in this phase arrives. */
  outage?: boolean;
}

/** Snapshots of a 20 Hz server over a 50 ms ± jitter path, as (arrival time, tick), in arrival order. */
function arrivals(seed: number, phases: readonly Phase[]): [number, number][] {
  const rng = new NonCryptoRng(seed);
  const out: [number, number][] = [];
  let t0 = 0;
  let tick = 0;
  for (const p of phases) {
    for (; tick * TICK_MS < t0 + p.ms; tick++) {
      const lost = rng.chance(p.loss);
      const j = (rng.nextFloat() * 2 - 1) * p.jitterMs;
      if (!lost && !p.outage) out.push([tick * TICK_MS + 50 + j, tick]);
    }
    t0 += p.ms;
  }
  return out.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
}

interface Frame {
  now: number;
  render: number;
  /** now − render time: the display delay (ms), with this path's clocks in step. */
  display: number;
  scale: number;
  delay: number;
  target: number;
  /** The target as a display delay: clock offset + target (ms). */
  absTarget: number;
}

/** Runs a Playback at 60 fps over the arrivals, calling `onFrame` after each advance. */
function play(ev: [number, number][], endMs: number, options: Partial<PlaybackOptions> = {}, onFrame?: (pb: Playback, f: Frame) => void): { pb: Playback; frames: Frame[] } {
  const pb = new Playback({ tickMs: TICK_MS, ...options });
  const frames: Frame[] = [];
  let e = 0;
  for (let f = 0; f * FRAME_MS < endMs; f++) {
    const now = f * FRAME_MS;
    while (e < ev.length && ev[e]![0] <= now) {
      pb.received(ev[e]![0], ev[e]![1]);
      e++;
    }
    const render = pb.advance(now);
    const s = pb.stats();
    const fr = { now, render, display: now - render * TICK_MS, scale: s.timeScale, delay: s.delayMs, target: s.targetDelayMs, absTarget: s.clockOffsetMs + s.targetDelayMs };
    frames.push(fr);
    onFrame?.(pb, fr);
  }
  return { pb, frames };
}

const JITTERY: Phase = { ms: 60_000, jitterMs: 40, loss: 0.1 };

describe('Playback on a seeded path (20 Hz, 60 fps, 50 ± 40 ms, 10 % loss)', () => {
  it('render time never decreases, and advances at 1 ± maxTimeScale of real time', () => {
    for (let seed = 1; seed <= 5; seed++) {
      const { pb, frames } = play(arrivals(seed, [JITTERY]), 60_000);
      const started = frames.filter((f) => f.render > -Infinity);
      expect(started.length).toBeGreaterThan(3000);
      for (let i = 1; i < started.length; i++) {
        const a = started[i - 1]!;
        const b = started[i]!;
        const step = ((b.render - a.render) * TICK_MS) / (b.now - a.now);
        expect(step, `seed ${seed} frame ${i}`).toBeGreaterThanOrEqual(0.9 - 1e-9);
        expect(step, `seed ${seed} frame ${i}`).toBeLessThanOrEqual(1.1 + 1e-9);
        expect(b.scale).toBeGreaterThanOrEqual(0.9 - 1e-9);
        expect(b.scale).toBeLessThanOrEqual(1.1 + 1e-9);
      }
      const s = pb.stats();
      expect(s.forwardJumps).toBe(0);
      expect(s.late).toBeGreaterThan(0);
      // A 100 ms path with this jitter and loss: enough delay for few stalls, not a lag.
      expect(s.framesHeld / s.frames).toBeLessThan(0.003);
      expect(s.delayMs).toBeGreaterThan(80);
      expect(s.delayMs).toBeLessThan(160);
    }
  });

  it('a narrower time scale bound is kept too, also when the delay must grow by a lot', () => {
    const phases: Phase[] = [{ ms: 20_000, jitterMs: 40, loss: 0.1 }, { ms: 500, jitterMs: 0, loss: 0, outage: true }, { ms: 20_000, jitterMs: 40, loss: 0.1 }];
    const { frames } = play(arrivals(9, phases), 40_000, { maxTimeScale: 0.02 });
    const started = frames.filter((f) => f.render > -Infinity);
    let widest = 0;
    for (let i = 1; i < started.length; i++) {
      const step = ((started[i]!.render - started[i - 1]!.render) * TICK_MS) / FRAME_MS;
      expect(Math.abs(step - 1)).toBeLessThanOrEqual(0.02 + 1e-9);
      widest = Math.max(widest, Math.abs(step - 1));
    }
    expect(widest).toBeGreaterThan(0.019);
  });

  it('starts 1 s after the first snapshot, at the measured delay, and before that returns -Infinity', () => {
    const ev = arrivals(3, [JITTERY]);
    const { frames } = play(ev, 3000);
    const first = frames.find((f) => f.render > -Infinity)!;
    expect(first.now).toBeGreaterThanOrEqual(ev[0]![0] + 1000);
    expect(first.now).toBeLessThan(ev[0]![0] + 1000 + FRAME_MS);
    // The delay measured over that second is what it plays at from the start.
    expect(first.delay).toBeCloseTo(first.target, 6);
    expect(first.target).toBeGreaterThan(90);
  });

  it('the delay grows after a 500 ms outage, then comes back down slowly on a clean path', () => {
    const phases: Phase[] = [JITTERY, { ms: 500, jitterMs: 40, loss: 0, outage: true }, { ms: 60_000, jitterMs: 0, loss: 0 }];
    const ev = arrivals(4, phases);
    const outageEnd = 60_500;
    let before: Frame | undefined;
    let incBefore = 0;
    const after: Frame[] = [];
    const { pb } = play(ev, 120_500, {}, (p, f) => {
      if (f.now < 60_000) {
        before = f;
        incBefore = p.stats().delayIncreases;
      } else if (f.now >= outageEnd) after.push(f);
    });
    const peak = Math.max(...after.slice(0, 60).map((f) => f.absTarget));
    expect(peak).toBeGreaterThanOrEqual(before!.absTarget + 50);
    expect(pb.stats().delayIncreases).toBeGreaterThan(incBefore);
    // Slowly: the target shrinks by at most 1 % of real time, the display delay by at most maxTimeScale.
    for (let i = 1; i < after.length; i++) {
      const dt = after[i]!.now - after[i - 1]!.now;
      expect(after[i]!.absTarget).toBeGreaterThanOrEqual(after[i - 1]!.absTarget - 0.01 * dt - 1e-6);
      expect(after[i]!.display).toBeGreaterThanOrEqual(after[i - 1]!.display - 0.1 * dt - 1e-6);
    }
    const at5s = after.find((f) => f.now >= outageEnd + 5000)!;
    expect(at5s.display).toBeGreaterThan(before!.display + 20);
    // Back down after a minute of clean path, below where it was on the jittery path.
    const last = after[after.length - 1]!;
    expect(last.display).toBeLessThan(before!.display);
  });

  it('a clean path gets a small delay: one interval, no extrapolation', () => {
    const { pb } = play(arrivals(5, [{ ms: 30_000, jitterMs: 0, loss: 0 }]), 30_000);
    const s = pb.stats();
    expect(s.delayMs).toBeGreaterThanOrEqual(TICK_MS);
    expect(s.delayMs).toBeLessThan(TICK_MS * 1.1);
    expect(s.framesStarved).toBe(0);
    expect(s.delayIncreases).toBe(0);
  });

  it('one very late snapshot does not move the clock offset or the render time', () => {
    const ev = arrivals(6, [{ ms: 20_000, jitterMs: 5, loss: 0 }]);
    const late = ev.findIndex(([, k]) => k === 200);
    ev[late]![0] += 3000;
    ev.sort((a, b) => a[0] - b[0]);
    const offsets: number[] = [];
    const { pb, frames } = play(ev, 20_000, {}, (p) => offsets.push(p.stats().clockOffsetMs));
    const settled = offsets.slice(120).filter(Number.isFinite);
    expect(Math.max(...settled) - Math.min(...settled)).toBeLessThan(10);
    expect(pb.stats().late).toBe(1);
    const i = frames.findIndex((f) => f.now >= ev.find(([, k]) => k === 200)![0]);
    expect(Math.abs(frames[i + 1]!.delay - frames[i - 1]!.delay)).toBeLessThan(1);
  });

  it('bad arrivals are ignored and counted, never thrown', () => {
    const pb = new Playback({ tickMs: TICK_MS });
    pb.received(Number.NaN, 1);
    pb.received(10, -1);
    pb.received(10, 1.5);
    pb.received(10, Number.POSITIVE_INFINITY);
    expect(pb.stats().ignored).toBe(4);
    expect(pb.newestTick).toBe(-1);
    expect(pb.advance(2000)).toBe(-Infinity);
  });

  it('bad options throw invalid-config', () => {
    const bad: unknown[] = [
      undefined,
      {},
      { tickMs: 0 },
      { tickMs: 50, maxDelayMs: 10, minDelayMs: 20 },
      { tickMs: 50, lateFraction: 0.9 },
      { tickMs: 50, maxTimeScale: -0.1 },
      { tickMs: 50, memoryMs: 10 },
      { tickMs: 50, colour: 'red' },
    ];
    for (const o of bad) {
      expect(() => new Playback(o as PlaybackOptions), JSON.stringify(o)).toThrowError(GamewireError);
      try {
        new Playback(o as PlaybackOptions);
      } catch (e) {
        expect((e as GamewireError).code).toBe('invalid-config');
      }
    }
  });
});

const LIN: readonly SlotKind[] = ['linear'];

describe('Track', () => {
  it('interpolation is exact for linear motion, with gaps and samples pushed out of order', () => {
    const t = new Track(2);
    const ticks = [10, 11, 13, 12, 17, 14, 20];
    for (const k of ticks) t.push(k, [3 * k + 1, -2 * k]);
    const out = new Float64Array(2);
    for (let r = 10; r <= 20; r += 0.125) {
      expect(t.sample(r, 20, ['linear', 'linear'], 2, out)).toBe('interpolated');
      expect(out[0]).toBeCloseTo(3 * r + 1, 10);
      expect(out[1]).toBeCloseTo(-2 * r, 10);
    }
    // Curved values show that the samples are used in tick order, whatever order they came in.
    const c = new Track(1);
    for (const k of ticks) c.push(k, [k * k]);
    const one = new Float64Array(1);
    c.sample(12.5, 20, LIN, 2, one);
    expect(one[0]).toBeCloseTo((144 + 169) / 2, 12);
    c.sample(15.5, 20, LIN, 2, one);
    expect(one[0]).toBeCloseTo(196 + (289 - 196) * (1.5 / 3), 12);
  });

  it('linear motion is exact every frame over the seeded jittery path (interpolated and extrapolated)', () => {
    const ev = arrivals(7, [JITTERY]);
    const pb = new Playback({ tickMs: TICK_MS });
    const t = pb.track(1);
    const out = new Float64Array(1);
    const counts: Record<SampleOutcome, number> = { interpolated: 0, extrapolated: 0, held: 0, early: 0, empty: 0 };
    let skipUntil = -Infinity;
    let checked = 0;
    let e = 0;
    for (let f = 0; f * FRAME_MS < 60_000; f++) {
      const now = f * FRAME_MS;
      while (e < ev.length && ev[e]![0] <= now) {
        pb.received(ev[e]![0], ev[e]![1]);
        t.push(ev[e]![1], [0.35 * ev[e]![1]]);
        e++;
      }
      const r = pb.advance(now);
      const o = t.sample(r, pb.newestTick, LIN, pb.maxExtrapolationTicks, out);
      counts[o]++;
      // A hold is off the line, and the track blends back by the next sample's tick: skip those frames.
      if (o === 'held') skipUntil = r + 5;
      if (r > skipUntil && (o === 'interpolated' || o === 'extrapolated')) {
        expect(out[0]).toBeCloseTo(0.35 * r, 9);
        checked++;
      }
    }
    expect(counts.extrapolated).toBeGreaterThan(50);
    expect(counts.held).toBeGreaterThan(0);
    expect(checked).toBeGreaterThan(3000);
  });

  it('an angle interpolates and extrapolates the short way round', () => {
    const t = new Track(1);
    t.push(0, [3.0]);
    t.push(1, [-3.0]);
    const out = new Float64Array(1);
    const step = 2 * Math.PI - 6;
    t.sample(0.5, 1, ['angle'], 2, out);
    expect(out[0]).toBeCloseTo(3.0 + step / 2, 12);
    const t2 = new Track(1);
    t2.push(0, [3.0]);
    t2.push(1, [-3.0]);
    expect(t2.sample(2, 1, ['angle'], 2, out)).toBe('extrapolated');
    expect(Math.cos(out[0]!)).toBeCloseTo(Math.cos(-3.0 + step), 12);
    expect(Math.sin(out[0]!)).toBeCloseTo(Math.sin(-3.0 + step), 12);
    // The other way round too.
    const t3 = new Track(1);
    t3.push(0, [-3.1]);
    t3.push(4, [3.1]);
    t3.sample(1, 4, ['angle'], 0, out);
    expect(out[0]).toBeCloseTo(-3.1 - (2 * Math.PI - 6.2) / 4, 12);
  });

  it('a quaternion stays unit length and takes the shorter arc', () => {
    const rng = new NonCryptoRng(11);
    const q = (): number[] => {
      const v = [rng.nextFloat() - 0.5, rng.nextFloat() - 0.5, rng.nextFloat() - 0.5, rng.nextFloat() - 0.5];
      const n = Math.hypot(...v);
      return v.map((x) => x / n);
    };
    const kinds: SlotKind[] = ['linear', 'quat'];
    const out = new Float64Array(5);
    for (let i = 0; i < 200; i++) {
      const a = q();
      const b = q();
      const t = new Track(5);
      t.push(0, [0, ...a]);
      t.push(1, [1, ...b]);
      const dot = a[0]! * b[0]! + a[1]! * b[1]! + a[2]! * b[2]! + a[3]! * b[3]!;
      const near = dot < 0 ? b.map((x) => -x) : b;
      let prevAngle = 0;
      for (let s = 0; s <= 1; s += 0.1) {
        t.sample(s, 1, kinds, 0, out);
        expect(Math.hypot(out[1]!, out[2]!, out[3]!, out[4]!)).toBeCloseTo(1, 12);
        // On the shorter arc the angle from a grows monotonically up to the angle a→b, at most π/2 in q space.
        const d = Math.abs(a[0]! * out[1]! + a[1]! * out[2]! + a[2]! * out[3]! + a[3]! * out[4]!);
        const ang = Math.acos(Math.min(1, d));
        expect(ang).toBeGreaterThanOrEqual(prevAngle - 1e-12);
        prevAngle = ang;
      }
      expect(Math.abs(near[0]! * out[1]! + near[1]! * out[2]! + near[2]! * out[3]! + near[3]! * out[4]!)).toBeCloseTo(1, 9);
    }
    // 60° about z given as its negative: halfway is 30° about z, not 150°.
    const t = new Track(4);
    const h = Math.PI / 6;
    t.push(0, [0, 0, 0, 1]);
    t.push(1, [0, 0, -Math.sin(h), -Math.cos(h)]);
    t.sample(0.5, 1, ['quat'], 0, out);
    expect(out[2]).toBeCloseTo(Math.sin(h / 2), 12);
    expect(out[3]).toBeCloseTo(Math.cos(h / 2), 12);
  });

  it('step slots take the older sample', () => {
    const t = new Track(2);
    t.push(0, [0, 7]);
    t.push(2, [2, 9]);
    const out = new Float64Array(2);
    t.sample(1.99, 2, ['linear', 'step'], 0, out);
    expect(out[1]).toBe(7);
    t.sample(2, 2, ['linear', 'step'], 0, out);
    expect(out[1]).toBe(9);
  });

  it('extrapolation stops at its bound, then holds', () => {
    const t = new Track(1);
    for (let k = 0; k <= 10; k++) t.push(k, [2 * k]);
    const out = new Float64Array(1);
    expect(t.sample(10, 10, LIN, 2, out)).toBe('interpolated');
    expect(t.sample(11, 10, LIN, 2, out)).toBe('extrapolated');
    expect(out[0]).toBeCloseTo(22, 12);
    expect(t.sample(12, 10, LIN, 2, out)).toBe('extrapolated');
    expect(out[0]).toBeCloseTo(24, 12);
    expect(t.sample(12.5, 10, LIN, 2, out)).toBe('held');
    expect(out[0]).toBeCloseTo(24, 12);
    expect(t.sample(30, 10, LIN, 2, out)).toBe('held');
    expect(out[0]).toBeCloseTo(24, 12);
  });

  it('between its last sample and the known tick an entity holds (known unchanged), and rests when extrapolated', () => {
    const t = new Track(1);
    t.push(4, [1]);
    t.push(5, [2]);
    const out = new Float64Array(1);
    expect(t.sample(7, 8, LIN, 2, out)).toBe('interpolated');
    expect(out[0]).toBe(2);
    expect(t.sample(9, 8, LIN, 2, out)).toBe('extrapolated');
    expect(out[0]).toBe(2);
  });

  it('restUntil holds the previous values until the baseline, then moves', () => {
    const t = new Track(1);
    t.push(10, [0]);
    t.push(20, [10], 19);
    const out = new Float64Array(1);
    t.sample(15, 20, LIN, 0, out);
    expect(out[0]).toBe(0);
    t.sample(19.5, 20, LIN, 0, out);
    expect(out[0]).toBeCloseTo(5, 12);
  });

  it('a held entity resumes from where it was shown, without a backwards step', () => {
    const v = 0.5;
    const t = new Track(1);
    for (let k = 0; k <= 10; k++) t.push(k, [v * k]);
    const out = new Float64Array(1);
    const shown: number[] = [];
    let r = 8;
    for (; r < 15; r += 0.2) {
      t.sample(r, 10, LIN, 2, out);
      shown.push(out[0]!);
    }
    const held = out[0]!;
    const resumeAt = shown.length;
    expect(held).toBeCloseTo(v * 12, 12);
    // Snapshots resume: the entity kept moving, so its true position is far ahead of the held one.
    for (let k = 11; k <= 30; k++) t.push(k, [v * k]);
    for (; r < 25; r += 0.2) {
      t.sample(r, 30, LIN, 2, out);
      shown.push(out[0]!);
    }
    const firstAfter = shown[resumeAt]!;
    expect(firstAfter - held).toBeLessThan(0.25 * (v * 15 - held));
    for (let i = 1; i < shown.length; i++) expect(shown[i]!, `frame ${i}`).toBeGreaterThanOrEqual(shown[i - 1]! - 1e-12);
    // And it has caught up with the samples by the next sample's tick.
    expect(out[0]).toBeCloseTo(v * (r - 0.2), 9);
  });

  it('a late sample after an extrapolation is blended in, not popped', () => {
    const t = new Track(1);
    t.push(0, [0]);
    t.push(1, [1]);
    const out = new Float64Array(1);
    t.sample(1.6, 1, LIN, 2, out);
    expect(out[0]).toBeCloseTo(1.6, 12);
    // Ticks 2..5 arrive: the entity had stopped at 1.2. The estimate jumps back; the output must not.
    for (let k = 2; k <= 5; k++) t.push(k, [1.2]);
    const first = t.sample(1.65, 5, LIN, 2, out);
    expect(first).toBe('interpolated');
    expect(Math.abs(out[0]! - 1.6)).toBeLessThan(0.1);
    let prev = out[0]!;
    for (let r = 1.7; r < 3.6; r += 0.05) {
      t.sample(r, 5, LIN, 2, out);
      expect(Math.abs(out[0]! - prev)).toBeLessThan(0.03);
      prev = out[0]!;
    }
    // The blend lasts at least minBlendTicks (2) and then the samples rule.
    t.sample(3.7, 5, LIN, 2, out);
    expect(out[0]).toBe(1.2);
  });

  it('a blend keeps angles and quaternions continuous, unit length and on the short way across ±π', () => {
    const h = (a: number): number[] => [0, 0, Math.sin(a / 2), Math.cos(a / 2)];
    const wrap = (d: number): number => d - 2 * Math.PI * Math.round(d / (2 * Math.PI));
    const kinds: SlotKind[] = ['angle', 'quat'];
    const t = new Track(5);
    // Turning at 0.1 rad per tick towards π, the same turn as an angle (kept in −π..π) and a quaternion about z.
    const heading = (k: number): number => 1.9 + 0.1 * k;
    for (let k = 0; k <= 10; k++) t.push(k, [wrap(heading(k)), ...h(heading(k))]);
    const out = new Float64Array(5);
    const yaw = (): number => 2 * Math.atan2(out[3]!, out[4]!);
    let prevA = Number.NaN;
    let maxStep = 0;
    const check = (): void => {
      expect(Math.hypot(out[1]!, out[2]!, out[3]!, out[4]!)).toBeCloseTo(1, 12);
      // The quaternion turns as the angle does (nlerp is not constant speed: within 0.05 rad).
      expect(Math.abs(wrap(yaw() - out[0]!))).toBeLessThan(0.05);
      if (!Number.isNaN(prevA)) maxStep = Math.max(maxStep, Math.abs(wrap(out[0]! - prevA)));
      prevA = out[0]!;
    };
    let r = 9;
    for (; r < 13.5; r += 0.25) {
      t.sample(r, 10, kinds, 2, out);
      check();
    }
    // Held at heading(12) = 3.1; it kept turning, across π: the new samples are on the other side.
    expect(out[0]).toBeCloseTo(3.1, 9);
    for (let k = 11; k <= 20; k++) t.push(k, [wrap(heading(k)), ...h(heading(k))]);
    const gap = Math.abs(wrap(3.1 - heading(r)));
    for (; r <= 20; r += 0.25) {
      t.sample(r, 20, kinds, 2, out);
      check();
    }
    // Turning 0.025 rad a frame, with the gap spread over the blend (at least 8 frames): no step near 2π,
    // nor the whole gap at once.
    expect(maxStep).toBeLessThan(0.025 + gap / 4);
    expect(Math.abs(wrap(out[0]! - heading(20)))).toBeLessThan(1e-9);
    expect(Math.abs(wrap(yaw() - heading(20)))).toBeLessThan(1e-9);
  });

  it('is bounded: the oldest sample goes, an older one is ignored when full', () => {
    const t = new Track(1, 4);
    for (let k = 0; k < 100; k++) t.push(2 * k, [2 * k]);
    expect(t.size).toBe(4);
    expect(t.lastTick).toBe(198);
    const out = new Float64Array(1);
    expect(t.sample(180, 198, LIN, 0, out)).toBe('early');
    expect(out[0]).toBe(192);
    // Older than the oldest kept: ignored. Between the oldest two: kept, the oldest goes.
    t.push(10, [-5]);
    t.push(193, [-1]);
    expect(t.size).toBe(4);
    t.sample(180, 198, LIN, 0, out);
    expect(out[0]).toBe(-1);
    // A duplicate tick replaces.
    t.push(196, [7]);
    expect(t.size).toBe(4);
    t.sample(196, 198, LIN, 0, out);
    expect(out[0]).toBe(7);
  });

  it('misuse throws invalid-argument', () => {
    expect(() => new Track(0)).toThrowError(GamewireError);
    expect(() => new Track(2, 1)).toThrowError(GamewireError);
    const t = new Track(2);
    expect(() => t.push(1.5, [0, 0])).toThrowError(GamewireError);
    expect(() => t.push(1, [0])).toThrowError(GamewireError);
    expect(() => t.sample(Number.NaN, 0, LIN, 0, new Float64Array(2))).toThrowError(GamewireError);
    expect(t.sample(1, 0, LIN, 0, new Float64Array(2))).toBe('empty');
  });
});
