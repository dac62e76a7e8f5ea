/**
 * Server CPU of the state layer on S1, apart from the network: a `StateServer` replays the trace with
 * `clients` joined clients on fake connections (each snapshot acknowledged two ticks later, as a
 * 100 ms round trip at 20 Hz does), and the time of each `tick` is split into the part every server
 * pays once (reading and quantizing 900 entities) and the part each client adds (its snapshot:
 * candidates, priorities, delta encoding), from runs with 1 and with `clients` clients.
 */
import type { ConnectionStats } from '../../src/connection/session.js';
import { StateServer, type StateLink } from '../../src/state/server.js';
import { Kind, SNAPSHOTS } from '../../src/state/wire.js';
import { S1_SCHEMA } from './gamewire.js';
import { median } from './harness.js';
import { TraceState, type Trace } from './trace.js';

class FakeLink implements StateLink {
  next = 0;
  pending: number[] = [];
  send(lane: number): number {
    if (lane === SNAPSHOTS) this.pending.push(this.next);
    return this.next++;
  }
  stats(): ConnectionStats {
    return { pacingRateBytesPerSec: 1_000_000 } as ConnectionStats;
  }
}

/** One timed run: µs of each `server.tick` after the warm-up, and the first client's snapshot bytes per tick. */
export interface TickRun {
  micros: number[];
  snapshotBytes: number[];
}

/**
 * Time `server.tick` over the trace's ticks with `clients` clients (the first `warm` ticks not kept).
 * Every client gets the same snapshots (they join together and acknowledge alike), so each tick does
 * the same work per client.
 */
export function tickMicros(trace: Trace, clients: number, warm = 100): TickRun {
  const server = new StateServer({ schema: S1_SCHEMA, tickHz: trace.tickHz, lagCompensation: { historyMs: 0, maxRewindMs: 0 } });
  const replay = new TraceState(trace);
  const byTrace = new Map<number, { values: Record<string, number> }>();
  for (const [id, v] of replay.entities) byTrace.set(id, server.spawn('unit', { x: v[0]!, y: v[1]!, angle: v[2]! }) as never);
  const links = Array.from({ length: clients }, () => new FakeLink());
  const hello = Uint8Array.of(Kind.Hello, 0, 0, 0, 0);
  new DataView(hello.buffer).setUint32(1, S1_SCHEMA.hash, true);
  for (const l of links) server.handle({ type: 'message', connection: l, lane: 0, bytes: hello });
  const first = server.player(links[0]!)!;
  const out: TickRun = { micros: [], snapshotBytes: [] };
  for (let k = 0; k < trace.ticks.length; k++) {
    const step = replay.apply();
    step.changed.forEach((id, i) => {
      const e = byTrace.get(id)!.values;
      e.x = step.values[i * 3]!;
      e.y = step.values[i * 3 + 1]!;
      e.angle = step.values[i * 3 + 2]!;
    });
    for (const l of links) {
      while (l.pending.length > 2) server.handle({ type: 'delivery', connection: l, lane: SNAPSHOTS, id: l.pending.shift()!, delivered: true });
    }
    const t0 = performance.now();
    server.tick(k * trace.tickMs);
    const t1 = performance.now();
    if (k >= warm) {
      out.micros.push((t1 - t0) * 1000);
      out.snapshotBytes.push(first.stats().snapshotBytes);
    }
  }
  return out;
}

/**
 * A tick's time with 1 client (`t1`) and with `n` clients (`tn`), split: each client beyond the first
 * adds `perClient` = (tn − t1) / (n − 1); `shared` = t1 − perClient is what the tick costs with none.
 */
export function splitTick(t1: number, tn: number, n: number): { perClient: number; shared: number } {
  const perClient = (tn - t1) / (n - 1);
  return { perClient, shared: t1 - perClient };
}

/** Median and spread (min, max) of some figure over repeated runs (µs). */
export interface Spread {
  median: number;
  min: number;
  max: number;
}

function spreadOf(xs: readonly number[]): Spread {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

/** What `encodeCost` measured. */
export interface EncodeCost {
  clients: number;
  /** Each pair of runs: the trace's seed, the median µs per tick with 1 and with `clients` clients, and its split. */
  pairs: { seed: number; firstRun: 1 | 'n'; t1: number; tn: number; perClient: number; shared: number; snapshotBytes: number }[];
  perClient: Spread;
  shared: Spread;
  t1: Spread;
  tn: Spread;
}

/**
 * The encode cost of S1, split per client and shared: `repeats` pairs of runs (one with 1 client, one
 * with `clients`, the order alternating from pair to pair so that neither run always follows the
 * other), over `traces` in turn, after one pair not kept (warms the JIT). Each run's figure is its
 * median µs per tick; each pair gives one split; the result is the median of the pairs and their spread.
 */
export function encodeCost(traces: readonly { seed: number; trace: Trace }[], o: { clients?: number; repeats?: number; warm?: number } = {}): EncodeCost {
  const n = o.clients ?? 17;
  const repeats = o.repeats ?? 6;
  tickMicros(traces[0]!.trace, 1, o.warm);
  tickMicros(traces[0]!.trace, n, o.warm);
  const pairs: EncodeCost['pairs'] = [];
  for (let r = 0; r < repeats; r++) {
    const { seed, trace } = traces[r % traces.length]!;
    const oneFirst = r % 2 === 0;
    let one: TickRun;
    let many: TickRun;
    if (oneFirst) {
      one = tickMicros(trace, 1, o.warm);
      many = tickMicros(trace, n, o.warm);
    } else {
      many = tickMicros(trace, n, o.warm);
      one = tickMicros(trace, 1, o.warm);
    }
    const t1 = median(one.micros);
    const tn = median(many.micros);
    pairs.push({ seed, firstRun: oneFirst ? 1 : 'n', t1, tn, ...splitTick(t1, tn, n), snapshotBytes: median(one.snapshotBytes) });
  }
  return {
    clients: n,
    pairs,
    perClient: spreadOf(pairs.map((p) => p.perClient)),
    shared: spreadOf(pairs.map((p) => p.shared)),
    t1: spreadOf(pairs.map((p) => p.t1)),
    tn: spreadOf(pairs.map((p) => p.tn)),
  };
}
