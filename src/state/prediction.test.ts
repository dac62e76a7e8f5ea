import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { type SlotKind, angleDelta } from './lerp.js';
import { Predictor, type PredictorOptions } from './prediction.js';

// A player: x, y (m, wire precision 0.01), facing (rad, 1/1024 turn), moving (0/1).
interface Move { dx: number; dy: number }
const TICK_MS = 1000 / 60;
const SPEED = 5; // m/s
const KINDS: readonly SlotKind[] = ['linear', 'linear', 'angle', 'step'];
const ANGLE_STEP = (2 * Math.PI) / 1024;

function step(s: Float64Array, m: Move): void {
  s[0] += (m.dx * SPEED * TICK_MS) / 1000;
  s[1] += (m.dy * SPEED * TICK_MS) / 1000;
  const moving = m.dx !== 0 || m.dy !== 0;
  if (moving) s[2] = Math.atan2(m.dy, m.dx);
  s[3] = moving ? 1 : 0;
}

function quantize(s: Float64Array): void {
  s[0] = Math.round(s[0] * 100) / 100;
  s[1] = Math.round(s[1] * 100) / 100;
  s[2] = Math.round(s[2] / ANGLE_STEP) * ANGLE_STEP;
}

function options(extra: Partial<PredictorOptions<Move>> = {}): PredictorOptions<Move> {
  return { slots: 4, step, quantize, kinds: KINDS, ...extra };
}

interface WorldOptions {
  seed: number;
  inputs: number;
  /** Server time (ms) at which the server pushes the entity 1 m along x once, outside any input. */
  pushAtMs?: number;
  /** Snapshots sent in [from, to) ms are all lost. */
  ackOutage?: [number, number];
  /** Input messages sent in [from, to) ms are all lost. */
  inputOutage?: [number, number];
  predictor?: Partial<PredictorOptions<Move>>;
  /** Called after every client frame with the drawn and the predicted present. */
  onFrame?(now: number, drawn: Float64Array, present: Float64Array, p: Predictor<Move>): void;
  /** Called around every reconcile with what was drawn just before and just after it, at the same `now`. */
  onReconcile?(now: number, before: Float64Array, after: Float64Array, error: number): void;
}

interface Event { at: number; order: number; kind: 'input' | 'snapshot'; inputs?: { tick: number; m: Move }[]; ack?: number; state?: Float64Array }

/**
 * One client predicting its player against a fake server, on a virtual clock: 60 Hz client ticks, one input message
 * per tick carrying every unacknowledged input; the server applies each input once in tick order as messages arrive and
 * sends a snapshot (last applied tick + state) every 50 ms. One way 50 ms ± 15 ms (seeded, so messages reorder), 10 %
 * of input messages and of snapshots lost.
 */
function runWorld(o: WorldOptions) {
  const rng = new NonCryptoRng(o.seed);
  const p = new Predictor<Move>(new Float64Array(4), options(o.predictor));
  const server = new Float64Array(4);
  let serverApplied = -1;
  const queue: Event[] = [];
  let order = 0;
  const push = (e: Omit<Event, 'order'>): void => {
    const ev = { ...e, order: order++ };
    let i = queue.length;
    while (i > 0 && (queue[i - 1].at > ev.at || (queue[i - 1].at === ev.at && queue[i - 1].order > ev.order))) i--;
    queue.splice(i, 0, ev);
  };
  const delay = (): number => 50 + (rng.nextFloat() * 2 - 1) * 15;
  const drawn = new Float64Array(4);
  const before = new Float64Array(4);
  let maxUnacked = 0;
  let reconciles = 0;
  let snapshotsSent = 0;
  let pushed = false;
  let move: Move = { dx: 0, dy: 0 };

  let tick = 0;
  let nextSnapshot = 50;
  const end = o.inputs * TICK_MS;
  for (;;) {
    const tickAt = tick < o.inputs ? tick * TICK_MS : Infinity;
    const evAt = queue.length > 0 ? queue[0].at : Infinity;
    const snapAt = nextSnapshot <= end + 500 ? nextSnapshot : Infinity;
    const now = Math.min(tickAt, evAt, snapAt);
    if (now === Infinity) break;
    if (now === snapAt) {
      if (o.pushAtMs !== undefined && !pushed && now >= o.pushAtMs) {
        server[0] += 1;
        quantize(server);
        pushed = true;
      }
      nextSnapshot += 50;
      const lost = rng.chance(0.1) || (o.ackOutage !== undefined && now >= o.ackOutage[0] && now < o.ackOutage[1]);
      if (serverApplied >= 0 && !lost) {
        snapshotsSent++;
        push({ at: now + delay(), kind: 'snapshot', ack: serverApplied, state: Float64Array.from(server) });
      }
    } else if (now === evAt) {
      const e = queue.shift() as Event;
      if (e.kind === 'input') {
        for (const { tick: t, m } of e.inputs ?? []) {
          if (t <= serverApplied) continue;
          step(server, m);
          quantize(server);
          serverApplied = t;
        }
      } else {
        p.render(now, before);
        const err = p.reconcile(now, e.ack as number, e.state as Float64Array);
        if (err >= 0) reconciles++;
        p.render(now, drawn);
        o.onReconcile?.(now, before, drawn, err);
      }
    } else {
      if (rng.chance(0.05)) move = { dx: rng.nextRange(-1, 1), dy: rng.nextRange(-1, 1) };
      p.apply(tick, move);
      maxUnacked = Math.max(maxUnacked, p.stats().inputsUnacked);
      const msg: { tick: number; m: Move }[] = [];
      p.forEachUnacked((m, t) => msg.push({ tick: t, m }));
      const lost = rng.chance(0.1) || (o.inputOutage !== undefined && now >= o.inputOutage[0] && now < o.inputOutage[1]);
      if (!lost) push({ at: now + delay(), kind: 'input', inputs: msg });
      p.render(now, drawn);
      o.onFrame?.(now, drawn, p.state, p);
      tick++;
    }
  }
  return { p, server, serverApplied, maxUnacked, reconciles, snapshotsSent };
}

describe('Predictor on a lossy 100 ms path', () => {
  it('makes no correction over 10,000 inputs when the server agrees', () => {
    const w = runWorld({ seed: 1, inputs: 10_000 });
    const s = w.p.stats();
    expect(s.inputsApplied).toBe(10_000);
    // Most snapshots reached the client and each one rewound and replayed: the check below had work to do.
    expect(w.reconciles).toBeGreaterThan(2500);
    expect(s.replayedSteps).toBeGreaterThan(10_000);
    expect(s.corrections).toBe(0);
    expect(s.largestCorrection).toBe(0);
    expect(s.inputsDropped).toBe(0);
    expect(s.resyncs).toBe(0);
    // The last snapshot acknowledged every input and matched the server exactly.
    expect(s.lastAckTick).toBe(9_999);
    expect(w.serverApplied).toBe(9_999);
    expect([...w.p.state]).toEqual([...w.server]);
    // Redundancy was exercised (RTT plus a snapshot interval at 60 Hz) yet stayed far below the bound.
    expect(w.maxUnacked).toBeGreaterThanOrEqual(8);
    expect(w.maxUnacked).toBeLessThan(64);
  });

  it('smooths one injected 1 m disagreement without a jump, gone within smoothMs', () => {
    let correctedAt = -1;
    let maxFrameStep = 0;
    let lastDrawnX: number | undefined;
    let offsetAfterSmooth = 0;
    let largestVisibleOffset = 0;
    let continuityGap = 0;
    const w = runWorld({
      seed: 2,
      inputs: 3000,
      pushAtMs: 20_000,
      onReconcile: (now, before, after, err) => {
        continuityGap = Math.max(continuityGap, ...before.map((v, i) => Math.abs(KINDS[i] === 'angle' ? angleDelta(v, after[i]) : v - after[i])));
        if (err > 0.001) correctedAt = now;
      },
      onFrame: (now, drawn, present) => {
        if (lastDrawnX !== undefined) maxFrameStep = Math.max(maxFrameStep, Math.abs(drawn[0] - lastDrawnX));
        lastDrawnX = drawn[0];
        if (correctedAt < 0) return;
        const off = Math.abs(drawn[0] - present[0]);
        if (now - correctedAt < 100) largestVisibleOffset = Math.max(largestVisibleOffset, off);
        else offsetAfterSmooth = Math.max(offsetAfterSmooth, off);
      },
    });
    const s = w.p.stats();
    expect(s.corrections).toBe(1);
    expect(s.largestCorrection).toBeCloseTo(1, 6);
    expect(correctedAt).toBeGreaterThan(20_000);
    expect([...w.p.state]).toEqual([...w.server]);
    // Drawn just before and just after each reconcile, at the same instant: identical.
    expect(continuityGap).toBeLessThan(1e-9);
    // The offset was visible at first (not snapped), and below 1 mm from smoothMs on.
    expect(largestVisibleOffset).toBeGreaterThan(0.5);
    expect(offsetAfterSmooth).toBeLessThan(0.001);
    // Per frame: walking (5 m/s ≈ 0.083 m) plus the eased offset's fastest (1.5 × 1 m / 100 ms ≈ 0.25 m); a pop is 1 m.
    expect(maxFrameStep).toBeLessThan(0.35);
  });

  it('keeps at most maxUnacked inputs through a 2 s ack outage and agrees after it', () => {
    let maxSeen = 0;
    const w = runWorld({
      seed: 3,
      inputs: 600,
      ackOutage: [2000, 4000],
      onFrame: (_now, _drawn, _present, p) => {
        maxSeen = Math.max(maxSeen, p.stats().inputsUnacked);
      },
    });
    const s = w.p.stats();
    expect(maxSeen).toBe(64);
    // About 2 s of 60 Hz inputs went unacknowledged; all but the newest 64 were dropped from redundancy and replay.
    expect(s.inputsDropped).toBeGreaterThan(120 - 64);
    // The server kept receiving inputs, so its first ack after the outage covered the dropped ones: no gap to resync.
    expect(s.resyncs).toBe(0);
    expect(s.corrections).toBe(0);
    expect([...w.p.state]).toEqual([...w.server]);
    expect(s.inputsUnacked).toBe(0);
  });

  it('corrects (smoothly) what the server never received after a 2 s outage both ways', () => {
    let maxFrameStep = 0;
    let last: number[] | undefined;
    const w = runWorld({
      seed: 4,
      inputs: 600,
      ackOutage: [2000, 4000],
      inputOutage: [2000, 4000],
      predictor: { snapAbove: 5 },
      onFrame: (_now, drawn) => {
        if (last !== undefined) maxFrameStep = Math.max(maxFrameStep, Math.hypot(drawn[0] - last[0], drawn[1] - last[1]));
        last = [drawn[0], drawn[1]];
      },
    });
    const s = w.p.stats();
    expect(s.inputsDropped).toBeGreaterThan(120 - 64);
    // The inputs dropped at the bound never reached the server: it skipped them, the prediction had them.
    expect(s.corrections).toBeGreaterThanOrEqual(1);
    expect(s.largestCorrection).toBeGreaterThan(0.1);
    expect([...w.p.state]).toEqual([...w.server]);
    expect(maxFrameStep).toBeLessThan(s.largestCorrection);
  });
});

describe('Predictor', () => {
  const move: Move = { dx: 1, dy: 0 };

  it('replays the unacknowledged inputs from the server state and returns the error', () => {
    const p = new Predictor<Move>(new Float64Array(4), options());
    for (let t = 0; t < 10; t++) p.apply(t, move);
    expect(p.state[0]).toBeCloseTo(0.8, 9);
    const server = Float64Array.of(0.5, 0, 0, 1); // after ticks 0..5 the server has x 0.5, not 0.48
    const err = p.reconcile(0, 5, server);
    expect(err).toBeCloseTo(0.02, 9);
    expect(p.state[0]).toBeCloseTo(0.82, 9);
    const s = p.stats();
    expect(s.lastAckTick).toBe(5);
    expect(s.inputsUnacked).toBe(4);
    expect(s.replayedSteps).toBe(4);
    expect(s.corrections).toBe(1);
    const ticks: number[] = [];
    expect(p.forEachUnacked((_m, t) => ticks.push(t))).toBe(4);
    expect(ticks).toEqual([6, 7, 8, 9]);
  });

  it('a later snapshot with the same ack reconciles too: the server moved the entity without an input', () => {
    const p = new Predictor<Move>(new Float64Array(4), options());
    for (let t = 0; t < 10; t++) p.apply(t, move);
    expect(p.reconcile(0, 5, Float64Array.of(0.48, 0, 0, 1), 100)).toBeCloseTo(0, 9);
    // Snapshot 101: no new input applied, but the server pushed the entity 1 m along y.
    expect(p.reconcile(0, 5, Float64Array.of(0.48, 1, 0, 1), 101)).toBeCloseTo(1, 9);
    expect(p.state[1]).toBeCloseTo(1, 9);
    // The same snapshot again, or an older one with that ack, changes nothing.
    expect(p.reconcile(0, 5, Float64Array.of(0.48, 0, 0, 1), 101)).toBe(-1);
    expect(p.reconcile(0, 5, Float64Array.of(0.48, 0, 0, 1), 99)).toBe(-1);
    expect(p.state[1]).toBeCloseTo(1, 9);
    expect(p.stats().staleAcks).toBe(2);
  });

  it('ignores stale, duplicate, future and malformed acks, counted, without touching the state', () => {
    const p = new Predictor<Move>(new Float64Array(4), options());
    for (let t = 0; t < 10; t++) p.apply(t, move);
    p.reconcile(0, 5, Float64Array.of(0.4, 0, 0, 1));
    const after = [...p.state];
    expect(p.reconcile(1, 3, Float64Array.of(9, 9, 9, 9))).toBe(-1);
    expect(p.reconcile(1, 5, Float64Array.of(9, 9, 9, 9))).toBe(-1);
    expect(p.reconcile(1, 10, Float64Array.of(9, 9, 9, 9))).toBe(-1);
    expect(p.reconcile(1, Number.NaN, Float64Array.of(9, 9, 9, 9))).toBe(-1);
    expect(p.reconcile(1, 6.5, Float64Array.of(9, 9, 9, 9))).toBe(-1);
    expect([...p.state]).toEqual(after);
    const s = p.stats();
    expect(s.staleAcks).toBe(2);
    expect(s.invalidAcks).toBe(3);
    expect(s.lastAckTick).toBe(5);
    expect(s.inputsUnacked).toBe(4);
  });

  it('snaps (no smoothing) when acked inputs were dropped at maxUnacked, and counts a resync', () => {
    const p = new Predictor<Move>(new Float64Array(4), options({ maxUnacked: 8 }));
    for (let t = 0; t < 100; t++) p.apply(t, move);
    expect(p.stats().inputsDropped).toBe(92);
    const ticks: number[] = [];
    p.forEachUnacked((_m, t) => ticks.push(t));
    expect(ticks).toEqual([92, 93, 94, 95, 96, 97, 98, 99]);
    // The server is at tick 50; inputs 51..91 are gone, so the present is the server's plus the 8 kept.
    p.reconcile(1000, 50, Float64Array.of(4.2, 0, 0, 1));
    expect(p.state[0]).toBeCloseTo(4.2 + 8 * 0.08, 9);
    const drawn = new Float64Array(4);
    p.render(1000, drawn);
    expect([...drawn]).toEqual([...p.state]);
    const s = p.stats();
    expect(s.resyncs).toBe(1);
    expect(s.corrections).toBe(1);
    // The drop was dealt with: the next reconcile is an ordinary one.
    p.reconcile(1010, 60, Float64Array.of(5, 0, 0, 1));
    expect(p.stats().resyncs).toBe(1);
  });

  it('adopts server states before the first input, then predicts from the newest', () => {
    const p = new Predictor<Move>(new Float64Array(4), options());
    expect(p.reconcile(0, 100, Float64Array.of(1, 2, 0, 0))).toBe(0);
    expect(p.reconcile(50, 103, Float64Array.of(1, 3, 0, 0))).toBe(0);
    expect(p.tick).toBe(103);
    expect(() => p.apply(103, move)).toThrowError(GamewireError);
    p.apply(110, move);
    expect([...p.state]).toEqual([1.08, 3, 0, 1]);
    expect(() => p.apply(112, move)).toThrowError(/must follow 110/);
  });

  it('eases an offset from full to zero with no jump at either end, and snaps above snapAbove', () => {
    const p = new Predictor<Move>(new Float64Array(4), options({ snapAbove: 2 }));
    p.apply(0, { dx: 0, dy: 0 });
    p.reconcile(1000, 0, Float64Array.of(1, 0, 0, 0));
    const d = new Float64Array(4);
    const xs: number[] = [];
    for (let t = 1000; t <= 1100; t += 10) {
      p.render(t, d);
      xs.push(d[0]);
    }
    expect(xs[0]).toBe(0);
    expect(xs[10]).toBe(1);
    for (let i = 1; i < xs.length; i++) expect(xs[i]).toBeGreaterThanOrEqual(xs[i - 1]);
    // Smoothstep: slow at both ends, fastest in the middle.
    expect(xs[1] - xs[0]).toBeLessThan(xs[5] - xs[4]);
    expect(xs[10] - xs[9]).toBeLessThan(xs[5] - xs[4]);
    p.apply(1, { dx: 0, dy: 0 });
    p.reconcile(2000, 1, Float64Array.of(10, 0, 0, 0));
    p.render(2000, d);
    expect(d[0]).toBe(10);
    expect(p.stats().snaps).toBe(1);
  });

  it('does not count an error at or below correctionThreshold, yet still eases it out', () => {
    const p = new Predictor<Move>(new Float64Array(4), options({ quantize: () => {} }));
    p.apply(0, { dx: 0, dy: 0 });
    expect(p.reconcile(0, 0, Float64Array.of(0.0005, 0, 0, 0))).toBeCloseTo(0.0005, 12);
    p.apply(1, { dx: 0, dy: 0 });
    expect(p.reconcile(10, 1, Float64Array.of(0.0014, 0, 0, 0))).toBeCloseTo(0.0009, 12);
    const s = p.stats();
    expect(s.corrections).toBe(0);
    expect(s.largestCorrection).toBe(0);
    const d = new Float64Array(4);
    p.render(10, d);
    expect(d[0]).toBeLessThan(0.0005);
    p.apply(2, { dx: 0, dy: 0 });
    p.reconcile(20, 2, Float64Array.of(0.003, 0, 0, 0));
    expect(p.stats().corrections).toBe(1);
  });

  it('starts a correction from what was drawn, even while an earlier one is still fading', () => {
    const p = new Predictor<Move>(new Float64Array(4), options());
    p.apply(0, { dx: 0, dy: 0 });
    p.reconcile(0, 0, Float64Array.of(1, 0, 0, 0));
    p.apply(1, { dx: 0, dy: 0 });
    const before = new Float64Array(4);
    const after = new Float64Array(4);
    p.render(30, before);
    expect(before[0]).toBeGreaterThan(0.1);
    expect(before[0]).toBeLessThan(0.9);
    p.reconcile(30, 1, Float64Array.of(-2, 0.5, 0, 0));
    p.render(30, after);
    expect(after[0]).toBeCloseTo(before[0], 12);
    expect(after[1]).toBeCloseTo(before[1], 12);
    p.render(130, after);
    expect([...after]).toEqual([-2, 0.5, 0, 0]);
  });

  it('smooths an angle the short way round and a quaternion along the shorter arc, unit length', () => {
    const kinds: readonly SlotKind[] = ['angle', 'quat', 'quat', 'quat', 'quat'];
    const noop = (): void => {};
    const p = new Predictor<number>(Float64Array.of(3.1, 0, 0, 0, 1), { slots: 5, step: noop, quantize: noop, kinds });
    p.apply(0, 0);
    const h = Math.SQRT1_2;
    // The server has the angle across ±π and the orientation turned 90° about z.
    const err = p.reconcile(0, 0, Float64Array.of(-3.1, 0, 0, h, h));
    expect(err).toBeCloseTo(h, 9); // the largest component difference (z); the angle differs by only 2π − 6.2
    const d = new Float64Array(5);
    p.render(0, d);
    // What was drawn before: 3.1 rad, given as −3.1 − 0.083 (the same angle, within π of the new present).
    expect(angleDelta(d[0], 3.1)).toBeCloseTo(0, 9);
    expect(d[0]).toBeCloseTo(-3.1 - (2 * Math.PI - 6.2), 9);
    expect([...d.subarray(1)].map((v) => Math.abs(v))).toEqual([0, 0, expect.closeTo(0, 9), expect.closeTo(1, 9)]);
    p.render(50, d);
    // Halfway the angle sits near π (the short way), not near 0 (the long way).
    expect(Math.abs(Math.abs(d[0]) - Math.PI)).toBeLessThan(0.05);
    expect(Math.hypot(d[1], d[2], d[3], d[4])).toBeCloseTo(1, 12);
    // Halfway through a 90° turn is 45°: z = sin(22.5°).
    expect(Math.abs(d[3])).toBeCloseTo(Math.sin(Math.PI / 8), 9);
    p.render(100, d);
    expect(d[0]).toBe(-3.1);
    expect([...d.subarray(1)]).toEqual([0, 0, h, h]);
  });

  it('rejects bad options and misuse with typed errors', () => {
    const bad: Partial<PredictorOptions<Move>>[] = [
      { slots: 0 }, { maxUnacked: 0 }, { smoothMs: -1 }, { correctionThreshold: Number.NaN }, { snapAbove: -1 },
      { kinds: ['linear'] }, { kinds: ['linear', 'linear', 'quat', 'linear'] }, { kinds: ['linear', 'x' as SlotKind, 'linear', 'linear'] },
      { smothMs: 10 } as Partial<PredictorOptions<Move>>,
    ];
    for (const b of bad) expect(() => new Predictor(new Float64Array(4), options(b))).toThrowError(/invalid-config/);
    expect(() => new Predictor(new Float64Array(3), options())).toThrowError(/invalid-config/);
    const p = new Predictor<Move>(new Float64Array(4), options());
    expect(() => p.apply(-1, move)).toThrowError(/invalid-argument/);
    expect(() => p.apply(1.5, move)).toThrowError(/invalid-argument/);
    expect(() => p.reconcile(0, 0, new Float64Array(3))).toThrowError(/invalid-argument/);
    expect(() => p.render(0, new Float64Array(3))).toThrowError(/buffer-too-small/);
  });
});
