/**
 * The gamewire state layer as a system of bench:state: a `StateServer` on the harness's server-side
 * connection replays the trace (one entity per trace id, its values set each tick), a `StateClient`
 * on the client's end decodes the snapshots. The client holds trace tick k once it has a snapshot of
 * tick k or later that carried everything the client lacked (the budget skipped nothing): a snapshot
 * is a delta against what the client is known to hold, so holding it means holding the server's
 * whole state of its tick.
 */
import type { Connection, ConnectionEvent } from '../../src/connection/connection.js';
import { StateClient } from '../../src/state/client.js';
import { defineSchema, float, angle, quat, type Schema } from '../../src/state/schema.js';
import { type Entity, StateServer, type StateServerOptions } from '../../src/state/server.js';
import { STATE_LANES } from '../../src/state/wire.js';
import type { HarnessContext, StateSystem } from './harness.js';
import { S1_PRECISION, S2_PRECISION, TraceState, type Trace } from './trace.js';

const s1Step = (S1_PRECISION.positionMax - S1_PRECISION.positionMin) / (2 ** S1_PRECISION.positionBits - 1);
/** S1 at colyseus-quantized precision: 16-bit x and y over ±500 m, a 16-bit angle. */
export const S1_SCHEMA = defineSchema({
  unit: { x: float(S1_PRECISION.positionMin, S1_PRECISION.positionMax, s1Step), y: float(S1_PRECISION.positionMin, S1_PRECISION.positionMax, s1Step), angle: angle(S1_PRECISION.angleBits) },
});
const P = S2_PRECISION;
/** S2 at Gaffer's precision: 512 values per metre, smallest-three quaternions at 9 bits. */
export const S2_SCHEMA = defineSchema({
  cube: {
    x: float(P.horizontalMinM, P.horizontalMaxM, 1 / P.positionPerMetre),
    y: float(P.horizontalMinM, P.horizontalMaxM, 1 / P.positionPerMetre),
    z: float(P.verticalMinM, P.verticalMaxM, 1 / P.positionPerMetre),
    q: quat(P.quaternionBits),
  },
});

type Vals = Record<string, unknown>;

/** Writes a trace entity's slot values into the entity's values object (S1: x, y, angle; S2: x, y, z, q). */
function assign(values: Vals, v: ArrayLike<number>, s2: boolean): void {
  values.x = v[0];
  values.y = v[1];
  if (!s2) {
    values.angle = v[2];
    return;
  }
  values.z = v[2];
  const q = values.q as { x: number; y: number; z: number; w: number };
  q.x = v[3]!;
  q.y = v[4]!;
  q.z = v[5]!;
  q.w = v[6]!;
}

function flatten(values: Vals, out: Float64Array, s2: boolean): void {
  out[0] = values.x as number;
  out[1] = values.y as number;
  if (!s2) {
    out[2] = values.angle as number;
    return;
  }
  out[2] = values.z as number;
  const q = values.q as { x: number; y: number; z: number; w: number };
  out[3] = q.x;
  out[4] = q.y;
  out[5] = q.z;
  out[6] = q.w;
}

function fresh(v: ArrayLike<number>, s2: boolean): Vals {
  const o: Vals = s2 ? { q: { x: 0, y: 0, z: 0, w: 1 } } : {};
  assign(o, v, s2);
  return o;
}

/**
 * Entity types other than S1's or S2's one: `schema` (each type with S1's or S2's fields) and the type
 * of each trace entity.
 */
export interface GamewireLayout {
  schema: Schema;
  typeOf(traceId: number): string;
}

/** The gamewire system, with what the bench reads of it beside the harness's figures. */
export interface GamewireSystem extends StateSystem {
  /** The client, once the first client event made it. */
  readonly client: StateClient | undefined;
  /** The server's entity of a trace entity (undefined once despawned). */
  entity(traceId: number): Entity | undefined;
  /** The trace tick of a server tick (valid once the join ran). */
  traceTickOf(serverTick: number): number;
  /** The trace tick of the newest state the client holds of a trace entity (−1: none). */
  heldTickOf(traceId: number): number;
}

/**
 * The gamewire snapshot system for `trace` (S1 or S2 by its fields). Samples per tick 1..ticks:
 * `messageBytes`, `encodeUs` (the whole server tick, one client), `entitiesSent`, `skippedByBudget`,
 * `budgetBytes`, `pacingBytesPerSec` (the server connection's pacing rate as the tick began); per
 * snapshot received: `decodeUs`.
 */
export function gamewireSystem(trace: Trace, options: Omit<StateServerOptions<never, never>, 'schema'> = {}, layout?: GamewireLayout): GamewireSystem {
  const s2 = trace.fields.length === 7;
  const schema = layout?.schema ?? ((s2 ? S2_SCHEMA : S1_SCHEMA) as Schema);
  const typeOf = layout?.typeOf ?? ((): string => (s2 ? 'cube' : 'unit'));
  const replay = new TraceState(trace);
  const server = new StateServer({ schema, tickHz: trace.tickHz, lagCompensation: { historyMs: 0, maxRewindMs: 0 }, ...(options as object) });
  const byTrace = new Map<number, Entity>();
  for (const [id, v] of replay.entities) byTrace.set(id, server.spawn(typeOf(id), fresh(v, s2) as never));
  let client: StateClient | undefined;
  /** Server ticks whose snapshot carried everything (no entity skipped by the budget). */
  const complete = new Set<number>();
  let held = -1;
  /** The server tick that ran trace tick 1; server ticks before it (the join's) hold trace tick 0. */
  let firstTick = Infinity;
  const traceTickOf = (serverTick: number): number => (serverTick < firstTick ? 0 : serverTick - firstTick + 1);
  const tickServer = (now: number): void => {
    server.tick(now);
    const p = [...server.players()][0];
    if (p !== undefined && p.stats().skippedByBudget === 0) complete.add(server.tickNo);
  };
  return {
    name: 'gamewire snapshots',
    lanes: STATE_LANES,
    get client() {
      return client;
    },
    entity: (traceId) => byTrace.get(traceId),
    traceTickOf: (serverTick) => traceTickOf(serverTick),
    heldTickOf(traceId: number): number {
      const e = byTrace.get(traceId);
      const l = e === undefined ? undefined : client?.latest(e.id);
      return l === undefined ? -1 : traceTickOf(l.tick);
    },
    serverTick(now: number, tick: number, connection: Connection, ctx: HarnessContext): void {
      if (tick > 0) {
        const step = replay.apply();
        const n = trace.fields.length;
        for (const id of step.despawned) {
          server.despawn(byTrace.get(id)!);
          byTrace.delete(id);
        }
        step.spawned.forEach((id, i) => byTrace.set(id, server.spawn(typeOf(id), fresh(step.spawnedValues.subarray(i * n, i * n + n), s2) as never)));
        step.changed.forEach((id, i) => assign(byTrace.get(id)!.values as Vals, step.values.subarray(i * n, i * n + n), s2));
      }
      const pacing = connection.stats(now).pacingRateBytesPerSec;
      const t0 = performance.now();
      tickServer(now);
      const t1 = performance.now();
      if (tick === 0) {
        // A game ticks while a client joins: the join's state reaches the client before tick 1, as colyseus's full state does.
        for (let i = 1; now + i * ctx.tickMs < ctx.tickTime(1) - 1e-6; i++) ctx.world.at(now + i * ctx.tickMs, () => tickServer(ctx.world.now));
      }
      if (tick === 1) firstTick = server.tickNo;
      if (tick === ctx.ticks) {
        // A game goes on ticking: what the last ticks lost still reaches the client, as colyseus's resends do.
        for (let i = 1; i * ctx.tickMs < 1500; i++) ctx.world.at(now + i * ctx.tickMs, () => tickServer(ctx.world.now));
      }
      const p = [...server.players()][0];
      if (p === undefined) return;
      const s = p.stats();
      if (tick > 0) {
        ctx.sample('messageBytes', s.snapshotBytes);
        ctx.sample('encodeUs', (t1 - t0) * 1000);
        ctx.sample('entitiesSent', s.entitiesSent);
        ctx.sample('skippedByBudget', s.skippedByBudget);
        ctx.sample('budgetBytes', s.budgetBytes);
        ctx.sample('pacingBytesPerSec', pacing);
      }
    },
    serverEvent(_now: number, e: ConnectionEvent): void {
      server.handle(e);
    },
    clientEvent(now: number, e: ConnectionEvent, ctx: HarnessContext): void {
      client ??= new StateClient(e.connection, { schema });
      const t0 = performance.now();
      client.handle(now, e);
      const t1 = performance.now();
      if (e.type !== 'message' || e.lane !== 1) return;
      ctx.sample('decodeUs', (t1 - t0) * 1000);
      const newest = client.stats(now).newestTick;
      if (newest > held && complete.has(newest)) {
        held = newest;
        const k = traceTickOf(newest);
        if (k >= 0) ctx.clientHolds(Math.min(k, ctx.ticks));
      }
    },
    finish(ctx: HarnessContext): Record<string, unknown> {
      if (replay.tick !== ctx.ticks) throw new Error(`gamewire: the server applied ${replay.tick} of ${ctx.ticks} trace ticks`);
      if (client === undefined) throw new Error('gamewire: the client saw no event');
      const ids = client.ids();
      if (ids.length !== replay.entities.size) throw new Error(`gamewire: client holds ${ids.length} entities, trace ${replay.entities.size}`);
      const codec = schema.type(typeOf(replay.entities.keys().next().value!));
      const got = new Float64Array(codec.slots);
      const exact = new Float64Array(codec.slots);
      let maxErr = 0;
      for (const [id, v] of replay.entities) {
        const e = byTrace.get(id)!;
        const held = client.latest(e.id);
        if (held === undefined) throw new Error(`gamewire: entity ${id} missing at the client`);
        flatten(held.values as Vals, got, s2);
        flatten(e.values as Vals, exact, s2);
        for (let i = 0; i < codec.slots; i++) {
          if (got[i] !== exact[i]) throw new Error(`gamewire: entity ${id} slot ${i}: client ${got[i]}, server ${exact[i]}`);
          if (!s2 || i < 3) maxErr = Math.max(maxErr, i === 2 && !s2 ? Math.abs(Math.atan2(Math.sin(got[i]! - v[i]!), Math.cos(got[i]! - v[i]!))) : Math.abs(got[i]! - v[i]!));
        }
      }
      return { clientEqualsServer: true, maxErrorVsTrace: maxErr, counters: client.counters(), server: server.counters() };
    },
  };
}
