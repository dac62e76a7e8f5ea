import { describe, expect, it } from 'vitest';
import { splitTick, tickMicros } from '../../bench/state/encode.js';
import { gamewireSystem } from '../../bench/state/gamewire.js';
import { EntityLag, rateStep, runHarness } from '../../bench/state/harness.js';
import { runLagComp, TARGET_STEP_M } from '../../bench/state/lagcomp.js';
import { inputsInMessage, type PredictionFrame, runPrediction, settle } from '../../bench/state/prediction.js';
import { runPriority, typeRates } from '../../bench/state/priority.js';
import { s1Trace, type Trace } from '../../bench/state/trace.js';
import { StateClient } from '../../src/state/client.js';
import { defineSchema, float, int } from '../../src/state/schema.js';
import { INPUTS, Kind } from '../../src/state/wire.js';

// The pieces parts 1 (encode), 3, 4 and 5 of bench:state are measured with: that each figure means
// what the bench says. The bench's own figures are not asserted here.

describe('encode split', () => {
  it('per client = (Tn − T1) / (n − 1), shared = T1 − per client', () => {
    expect(splitTick(110, 910, 17)).toEqual({ perClient: 50, shared: 60 });
  });

  it('every client of a run gets the snapshots the first one gets (the split assumes equal work per client)', () => {
    const trace = s1Trace({ seed: 2, ticks: 80 });
    const one = tickMicros(trace, 1, 10);
    const three = tickMicros(trace, 3, 10);
    expect(one.micros).toHaveLength(70);
    expect(three.snapshotBytes).toEqual(one.snapshotBytes);
    expect(Math.min(...one.snapshotBytes)).toBeGreaterThan(500);
  });
});

/** A two-entity trace: id 0 lives throughout and changes at ticks 2 and 5; id 1 spawns at tick 3 and despawns at tick 6. */
function tinyTrace(): Trace {
  const tick = (o: { changed?: number[]; spawned?: number[]; despawned?: number[] }): Trace['ticks'][number] => ({
    despawned: Int32Array.from(o.despawned ?? []),
    spawned: Int32Array.from(o.spawned ?? []),
    spawnedValues: new Float64Array((o.spawned?.length ?? 0) * 3),
    changed: Int32Array.from(o.changed ?? []),
    values: new Float64Array((o.changed?.length ?? 0) * 3),
  });
  return {
    name: 'tiny', tickHz: 20, tickMs: 50, fields: ['x', 'y', 'angle'], initialIds: Int32Array.of(0), initialValues: new Float64Array(3),
    ticks: [tick({}), tick({ changed: [0] }), tick({ spawned: [1] }), tick({}), tick({ changed: [0] }), tick({ despawned: [1] })],
  };
}

describe('EntityLag', () => {
  const tickTime = (k: number): number => 1000 + 50 * k;
  const lags = (held: Record<number, number>, tick: number, now: number): number[] => {
    const out: number[] = [];
    new EntityLag(tinyTrace()).sample(now, tick, tickTime, (id) => held[id] ?? -1, out);
    return out;
  };

  it('0 when the client holds the current state; else the time since the first change after what it holds', () => {
    // Tick 4: entity 0 last changed at 2, entity 1 spawned at 3.
    expect(lags({ 0: 2, 1: 3 }, 4, 1230)).toEqual([0, 0]);
    expect(lags({ 0: 1, 1: 3 }, 4, 1230)).toEqual([1230 - tickTime(2), 0]);
    // Holding an older tick than the last change still lags from the first change after it.
    expect(lags({ 0: 0 }, 5, 1280)).toEqual([1280 - tickTime(2), 1280 - tickTime(3)]);
    // Not held at all: from its first state.
    expect(lags({}, 1, 1080)).toEqual([1080 - tickTime(0)]);
  });

  it('leaves out entities not yet spawned or already despawned', () => {
    expect(lags({ 0: 0 }, 2, 1130)).toHaveLength(1);
    expect(lags({ 0: 5 }, 6, 1330)).toEqual([0]);
  });
});

describe('gamewire system', () => {
  it('the server ticks while the client joins: the join\'s state is held before tick 1', () => {
    const r = runHarness(gamewireSystem(s1Trace({ seed: 1, ticks: 40 })), { seed: 1, ticks: 40 });
    expect(r.joinHeldMs).toBeLessThan(r.firstTickAtMs - r.joinAtMs);
    expect(r.ages.every((a) => a === 50)).toBe(true);
  });

  it('under the rate step its budget stays within the share of the pacing rate it samples each tick, and follows the step down', () => {
    const step = rateStep(120);
    const r = runHarness(gamewireSystem(s1Trace({ seed: 1, ticks: 120 })), { seed: 1, ticks: 120, link: step.link, onStart: step.onStart });
    const rate = r.samples.pacingBytesPerSec!;
    const budget = r.samples.budgetBytes!;
    expect(rate).toHaveLength(120);
    for (let i = 0; i < 120; i++) expect(budget[i]).toBeLessThanOrEqual(Math.max(200, Math.floor((0.6 * rate[i]!) / 20)));
    // The link steps from 1 Mbit/s to 128 kbit/s: the budget comes down with it.
    expect(Math.max(...budget.slice(100))).toBeLessThan(Math.max(...budget.slice(30, 60)) / 3);
  });
});

describe('prediction scenario', () => {
  const schema = defineSchema({ dot: { x: float(-10, 10, 0.01), y: float(-10, 10, 0.01) } }, { a: int(0, 3), b: int(0, 3) });

  it('inputsInMessage reads the count the client wrote', () => {
    const sent: Uint8Array[] = [];
    const client = new StateClient({ send: (lane: number, b: Uint8Array) => (lane === INPUTS && sent.push(b), sent.length), stats: () => undefined }, { schema });
    const welcome = new Uint8Array(11);
    welcome[0] = Kind.Welcome;
    new DataView(welcome.buffer).setUint32(1, schema.hash, true);
    welcome[5] = 20;
    client.handle(0, { type: 'message', lane: 0, bytes: welcome });
    const counts: number[] = [];
    for (let t = 1000; t <= 1200; t += 50) {
      client.input(t, { a: t % 4, b: 1 });
      counts.push(client.stats(t).inputsUnacked);
    }
    expect(sent.map(inputsInMessage)).toEqual(counts);
    expect(counts).toEqual([1, 2, 3, 4, 5]);
    expect(inputsInMessage(Uint8Array.of(Kind.Snapshot, 0, 0, 0, 0, 0, 0, 0, 0, 1))).toBe(-1);
  });

  it('settle: a smoothed correction, and a jump', () => {
    const frames = (ds: number[]): PredictionFrame[] => ds.map((d, i) => ({ t: 1000 + i * 20, tick: i, x: 0, y: 0, d }));
    const smooth = settle(frames([1, 1, 1, 0.9, 0.6, 0.3, 0.05, 0.0005, 0, 0]), 990, 1050);
    expect(smooth).toMatchObject({ toCorrectionMs: 60, offsetM: 0.9, lastOffMs: 70, firstWithinMs: 90, framesMoving: 4, grew: 0 });
    expect(smooth.largestStepShare).toBeCloseTo(1 / 3, 9);
    const jump = settle(frames([1, 1, 0, 0]), 990, 1020);
    expect(jump).toMatchObject({ lastOffMs: 0, largestStepShare: 1, framesMoving: 1 });
    expect(settle(frames([1, 0.5, 0.7, 0]), 990, 1000).grew).toBe(1);
  });

  it('when the server agrees every drawn frame matches its state; a 1 m move is one correction, drawn within 1 mm once smoothed', () => {
    const agree = runPrediction({ seed: 4, ticks: 240, oneWayMs: 50, jitterMs: 15, loss: 0.1 });
    expect(agree.corrections).toBe(0);
    expect(agree.framesCompared).toBeGreaterThan(150);
    expect(agree.framesOff).toBe(0);
    expect(agree.unapplied).toBe(0);
    expect(agree.perMessageWireMismatch).toBe(0);
    const moved = runPrediction({ seed: 4, ticks: 240, oneWayMs: 50, injectAtTick: 120 });
    expect(moved.corrections).toBe(1);
    expect(moved.framesOff).toBeGreaterThan(0);
    const s = settle(moved.frames, moved.injectedAtMs, moved.correctedAtMs);
    expect(s.offsetM).toBeCloseTo(1, 2);
    expect(s.lastOffMs).toBeLessThanOrEqual(100);
    expect(s.largestStepShare).toBeLessThan(0.5);
  });
});

describe('lag-compensation scenario', () => {
  it('a clean path: every shot is matched to its drawn frame, within one step, and hits', () => {
    const r = runLagComp({ seed: 1, ticks: 200, oneWayMs: 50, maxRewindMs: 500 });
    expect(r.shots).toBeGreaterThan(100);
    expect(r.unmatched).toBe(0);
    expect(r.matched.length).toBe(r.shots);
    expect(r.misses).toBe(0);
    expect(r.clamped).toBe(0);
    for (const s of r.matched) expect(s.error).toBeLessThanOrEqual(TARGET_STEP_M);
  });

  it('a rewind clamped short of the render time misses', () => {
    const r = runLagComp({ seed: 1, ticks: 200, oneWayMs: 100, maxRewindMs: 100 });
    expect(r.clamped).toBe(r.shots);
    expect(r.misses).toBeGreaterThan(r.shots / 2);
  });
});

describe('priority scenario', () => {
  it('typeRates: per type mean, its ratio to the lowest priority, and how far off', () => {
    const counts = new Map([[0, 10], [1, 20], [2, 44], [3, 10], [4, 20], [5, 36]]);
    const r = typeRates(counts, (id) => id % 3, [{ name: 'a', priority: 1 }, { name: 'b', priority: 2 }, { name: 'c', priority: 4 }], 10);
    expect(r.map((t) => [t.type, t.entities, t.mean, t.min, t.max, t.ratio, t.wanted])).toEqual([
      ['a', 2, 1, 1, 1, 1, 1], ['b', 2, 2, 2, 2, 2, 2], ['c', 2, 4, 3.6, 4.4, 4, 4],
    ]);
    expect(r[2]!.error).toBe(0);
  });

  it('under a binding budget every entity gets through, higher priorities more often', () => {
    const r = runPriority({ seed: 1, entities: 90, ticks: 240, warmTicks: 40, maxBytes: 200 });
    expect(r.skippedPerTick).toBeGreaterThan(0);
    const [low, mid, high] = r.types;
    expect(low!.min).toBeGreaterThan(0);
    expect(mid!.mean).toBeGreaterThan(low!.mean);
    expect(high!.mean).toBeGreaterThan(mid!.mean);
  });
});
