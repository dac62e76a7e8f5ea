/**
 * `@colyseus/schema` 5.0.34 as a system of bench:state (issue 21, Benchmark part 1): S1's
 * entities in a `t.map` of a schema class, each tick's changes encoded as one patch (`encode()`, then
 * `discardChanges()`), sent as ONE message on a reliable-ordered lane of the harness's connection, and
 * decoded on the client by colyseus's own `Decoder`. A patch is relative to the previous tick, so it
 * needs every earlier patch: reliable, ordered delivery is what colyseus assumes (its rooms send patches
 * over a WebSocket).
 *
 * Two field variants: `float32` (x, y, angle as `t.float32()`) and `quantized16` (x, y as
 * `t.quantized({ min: −500, max: 500 })`, 16 bits by default; angle as `t.angle()`, 16 bits over
 * [0, 2π)): the latter is colyseus at S1's compared precision (trace.ts `S1_PRECISION`).
 */
import { Decoder, Encoder, schema, t } from '@colyseus/schema';
import type { Connection, ConnectionEvent } from '../../src/connection/connection.js';
import type { HarnessContext, StateSystem } from './harness.js';
import { S1_PRECISION, TraceState, type Trace } from './trace.js';

/** The two field variants measured. */
export type ColyseusVariant = 'float32' | 'quantized16';

// The full S1 state is ~26 KB with float32 fields; colyseus's default encode buffer is smaller (it
// grows it with a warning otherwise).
Encoder.BUFFER_SIZE = 128 * 1024;

const EntityF32 = schema({ x: t.float32(), y: t.float32(), angle: t.float32() }, 'BenchEntityF32');
const StateF32 = schema({ entities: t.map(EntityF32) }, 'BenchStateF32');
const EntityQ16 = schema({
  x: t.quantized({ min: S1_PRECISION.positionMin, max: S1_PRECISION.positionMax, bits: S1_PRECISION.positionBits }),
  y: t.quantized({ min: S1_PRECISION.positionMin, max: S1_PRECISION.positionMax, bits: S1_PRECISION.positionBits }),
  angle: t.angle({ bits: S1_PRECISION.angleBits }),
}, 'BenchEntityQ16');
const StateQ16 = schema({ entities: t.map(EntityQ16) }, 'BenchStateQ16');

interface Entity { x: number; y: number; angle: number }
interface EntityMap {
  get(key: string): Entity | undefined;
  set(key: string, value: Entity): unknown;
  delete(key: string): unknown;
  keys(): IterableIterator<string>;
  readonly size: number;
}
interface State { entities: EntityMap }

/** Largest difference between a value a client holds and the trace's, by field, for the variant. */
function tolerance(variant: ColyseusVariant): { position: number; angle: number } {
  if (variant === 'float32') return { position: 500 * 2 ** -23, angle: 2 * Math.PI * 2 ** -23 };
  const step = (S1_PRECISION.positionMax - S1_PRECISION.positionMin) / (2 ** S1_PRECISION.positionBits - 1);
  return { position: step / 2 + 1e-9, angle: Math.PI / 2 ** S1_PRECISION.angleBits + 1e-9 };
}

function angleDiff(a: number, b: number): number {
  const d = Math.abs(a - b) % (2 * Math.PI);
  return Math.min(d, 2 * Math.PI - d);
}

/**
 * A colyseus system replaying `trace` (S1's layout: fields x, y, angle) with fields `variant`. Samples
 * per tick (1..ticks): `messageBytes` (the patch), `trackUs` (the field assignments: colyseus's change tracking),
 * `encodeUs` (`encode()`), `discardUs` (`discardChanges()`), `decodeUs` (the client's `decode()`).
 * `finish` throws unless the client's map equals the server's (same keys; the same values: bit-equal for
 * quantized fields, the float32 rounding of the server's for float32) and the server's equals the
 * trace's final state within the variant's precision.
 */
export function colyseusSystem(trace: Trace, variant: ColyseusVariant): StateSystem {
  if (trace.fields.join() !== 'x,y,angle') throw new Error(`colyseus system: trace fields ${trace.fields.join()} are not S1's`);
  const Ent = (variant === 'float32' ? EntityF32 : EntityQ16) as unknown as new () => Entity;
  const St = (variant === 'float32' ? StateF32 : StateQ16) as unknown as new () => State;
  const replay = new TraceState(trace);
  const make = (v: ArrayLike<number>): Entity => {
    const e = new Ent();
    e.x = v[0]!;
    e.y = v[1]!;
    e.angle = v[2]!;
    return e;
  };
  const server = new St();
  for (const [id, v] of replay.entities) server.entities.set(String(id), make(v));
  const encoder = new Encoder(server as never);
  const client = new St();
  const decoder = new Decoder(client as never);
  let received = 0;
  let fullStateBytes = 0;

  return {
    name: `colyseus ${variant}`,
    lanes: [{ mode: 'reliable-ordered' }],
    serverTick(_now: number, tick: number, connection: Connection, ctx: HarnessContext): void {
      if (tick === 0) {
        const full = encoder.encodeAll();
        fullStateBytes = full.length;
        connection.send(0, full);
        encoder.discardChanges();
        return;
      }
      const step = replay.apply();
      const t0 = performance.now();
      for (const id of step.despawned) server.entities.delete(String(id));
      step.spawned.forEach((id, i) => server.entities.set(String(id), make(step.spawnedValues.subarray(i * 3, i * 3 + 3))));
      const v = step.values;
      step.changed.forEach((id, i) => {
        const e = server.entities.get(String(id))!;
        e.x = v[i * 3]!;
        e.y = v[i * 3 + 1]!;
        e.angle = v[i * 3 + 2]!;
      });
      const t1 = performance.now();
      const patch = encoder.encode();
      const t2 = performance.now();
      connection.send(0, patch);
      const t3 = performance.now();
      encoder.discardChanges();
      const t4 = performance.now();
      ctx.sample('messageBytes', patch.length);
      ctx.sample('trackUs', (t1 - t0) * 1000);
      ctx.sample('encodeUs', (t2 - t1) * 1000);
      ctx.sample('discardUs', (t4 - t3) * 1000);
    },
    heldTickOf: () => received - 1,
    clientEvent(_now: number, e: ConnectionEvent, ctx: HarnessContext): void {
      if (e.type !== 'message') return;
      const t0 = performance.now();
      decoder.decode(e.bytes);
      const t1 = performance.now();
      if (received > 0) ctx.sample('decodeUs', (t1 - t0) * 1000);
      ctx.clientHolds(received++);
    },
    finish(ctx: HarnessContext): Record<string, unknown> {
      const where = `colyseus ${variant}`;
      if (received !== ctx.ticks + 1) throw new Error(`${where}: the client decoded ${received} of ${ctx.ticks + 1} messages`);
      if (replay.tick !== ctx.ticks) throw new Error(`${where}: the server applied ${replay.tick} of ${ctx.ticks} trace ticks`);
      const s = server.entities;
      const c = client.entities;
      if (s.size !== c.size || s.size !== replay.entities.size) {
        throw new Error(`${where}: entities: server ${s.size}, client ${c.size}, trace ${replay.entities.size}`);
      }
      const tol = tolerance(variant);
      let maxPos = 0;
      let maxAngle = 0;
      for (const [id, want] of replay.entities) {
        const key = String(id);
        const se = s.get(key);
        const ce = c.get(key);
        if (se === undefined || ce === undefined) throw new Error(`${where}: entity ${key} missing (server ${se !== undefined}, client ${ce !== undefined})`);
        for (const f of ['x', 'y', 'angle'] as const) {
          const expect = variant === 'float32' ? Math.fround(se[f]) : se[f];
          if (ce[f] !== expect) throw new Error(`${where}: entity ${key}.${f}: client ${ce[f]}, server ${se[f]}`);
        }
        maxPos = Math.max(maxPos, Math.abs(ce.x - want[0]!), Math.abs(ce.y - want[1]!));
        maxAngle = Math.max(maxAngle, angleDiff(ce.angle, want[2]!));
      }
      if (maxPos > tol.position || maxAngle > tol.angle) {
        throw new Error(`${where}: client differs from the trace by ${maxPos} m / ${maxAngle} rad (allowed ${tol.position} / ${tol.angle})`);
      }
      return { fullStateBytes, clientEqualsServer: true, maxPositionErrorM: maxPos, maxAngleErrorRad: maxAngle };
    },
  };
}
