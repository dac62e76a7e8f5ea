/**
 * Benchmark part 4's priority ratios: S1's entities (x, y, heading) in three types whose priorities
 * are in known ratios (1 : 2 : 4), every entity changing every tick, under a snapshot budget that
 * binds (`budget.maxBytes`), on the harness's link. Counts, per entity, the snapshots that carried it
 * to the client, and compares each type's update rate with its priority.
 */
import { readU32LE } from '../../src/core/bytes.js';
import { angle, defineSchema, float } from '../../src/state/schema.js';
import { SNAPSHOTS } from '../../src/state/wire.js';
import { gamewireSystem } from './gamewire.js';
import { median, runHarness } from './harness.js';
import { S1_PRECISION, s1Trace } from './trace.js';

/** The types of the scenario and their priorities. */
export const PRIORITY_TYPES = [
  { name: 'low', priority: 1 },
  { name: 'mid', priority: 2 },
  { name: 'high', priority: 4 },
] as const;

const step = (S1_PRECISION.positionMax - S1_PRECISION.positionMin) / (2 ** S1_PRECISION.positionBits - 1);
const fields = {
  x: float(S1_PRECISION.positionMin, S1_PRECISION.positionMax, step),
  y: float(S1_PRECISION.positionMin, S1_PRECISION.positionMax, step),
  angle: angle(S1_PRECISION.angleBits),
};
/** S1's fields under three type names. */
export const PRIORITY_SCHEMA = defineSchema({ low: fields, mid: fields, high: fields });

/** Ticks at the start of a run not counted (the creates and the first rounds). */
export const PRIORITY_WARM_TICKS = 100;

/** Options of `runPriority`. */
export interface PriorityOptions {
  seed: number;
  /** Entities, split evenly over the types by trace id (default 300). */
  entities?: number;
  /** Trace ticks at 20 Hz (default 1200). */
  ticks?: number;
  /** Ticks at the start not counted (default `PRIORITY_WARM_TICKS`). */
  warmTicks?: number;
  /** The snapshot budget's cap (B, default 400). */
  maxBytes?: number;
  /** One-way delay (ms, default 50); no loss. */
  oneWayMs?: number;
}

/** One type's figures in a run. */
export interface TypeRates {
  type: string;
  priority: number;
  entities: number;
  /** Updates per entity per second: the type's mean, and its lowest and highest entity. */
  mean: number;
  min: number;
  max: number;
  /** mean ÷ the lowest priority type's mean, and the ratio the priorities ask for. */
  ratio: number;
  wanted: number;
  /** ratio ÷ wanted − 1. */
  error: number;
}

/** What one run measured. */
export interface PriorityRun {
  seed: number;
  budgetBytes: number;
  countedSeconds: number;
  types: TypeRates[];
  /** Medians per tick of entities sent and of entities left out by the budget. */
  sentPerTick: number;
  skippedPerTick: number;
  snapshotBytes: number;
}

/** Updates per second of each type from per-entity update counts. `typeIndexOf(id)` is the type's index in `types`. */
export function typeRates(
  counts: ReadonlyMap<number, number>, typeIndexOf: (id: number) => number, types: readonly { name: string; priority: number }[], seconds: number,
): TypeRates[] {
  const per = types.map(() => [] as number[]);
  for (const [id, n] of counts) per[typeIndexOf(id)]!.push(n / seconds);
  const means = per.map((xs) => xs.reduce((a, b) => a + b, 0) / xs.length);
  const base = types.reduce((b, t, i) => (t.priority < types[b]!.priority ? i : b), 0);
  return types.map((t, i) => {
    const ratio = means[i]! / means[base]!;
    const wanted = t.priority / types[base]!.priority;
    return {
      type: t.name, priority: t.priority, entities: per[i]!.length, mean: means[i]!, min: Math.min(...per[i]!), max: Math.max(...per[i]!),
      ratio, wanted, error: ratio / wanted - 1,
    };
  });
}

/** Run the priority scenario once. */
export function runPriority(o: PriorityOptions): PriorityRun {
  const ticks = o.ticks ?? 1200;
  const warm = o.warmTicks ?? PRIORITY_WARM_TICKS;
  const maxBytes = o.maxBytes ?? 400;
  const trace = s1Trace({ seed: o.seed, ticks, entities: o.entities ?? 300, moveShare: 1 });
  const typeIndexOf = (id: number): number => id % PRIORITY_TYPES.length;
  const sys = gamewireSystem(
    trace,
    { priorities: Object.fromEntries(PRIORITY_TYPES.map((t) => [t.name, t.priority])), budget: { maxBytes, minBytes: Math.min(200, maxBytes) } },
    { schema: PRIORITY_SCHEMA, typeOf: (id) => PRIORITY_TYPES[typeIndexOf(id)]!.name },
  );
  const counts = new Map<number, number>();
  for (const id of trace.initialIds) counts.set(id, 0);
  const clientEvent = sys.clientEvent.bind(sys);
  sys.clientEvent = (now, e, ctx): void => {
    clientEvent(now, e, ctx);
    if (e.type !== 'message' || e.lane !== SNAPSHOTS || e.bytes.length < 5) return;
    const serverTick = readU32LE(e.bytes, 1);
    const k = sys.traceTickOf(serverTick);
    if (k <= warm || k > ticks) return;
    const client = sys.client!;
    for (const id of counts.keys()) {
      if (client.latest(sys.entity(id)!.id)?.tick === serverTick) counts.set(id, counts.get(id)! + 1);
    }
  };
  const run = runHarness(sys, { seed: o.seed, ticks, oneWayMs: o.oneWayMs ?? 50 });
  const seconds = ((ticks - warm) * run.tickMs) / 1000;
  return {
    seed: o.seed,
    budgetBytes: median(run.samples.budgetBytes ?? []),
    countedSeconds: seconds,
    types: typeRates(counts, typeIndexOf, PRIORITY_TYPES, seconds),
    sentPerTick: median((run.samples.entitiesSent ?? []).slice(warm)),
    skippedPerTick: median((run.samples.skippedByBudget ?? []).slice(warm)),
    snapshotBytes: median((run.samples.messageBytes ?? []).slice(warm)),
  };
}
