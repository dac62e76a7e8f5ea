/**
 * Seeded entity traces for `npm run bench:state`: every system under test replays the same trace, so
 * what differs between rows is how each system carries it, never the game. A trace is a list of ticks;
 * each tick lists the entities that despawned, spawned and changed, with their new values. Nothing here
 * reads a clock or allocates per replayed tick.
 *
 * - S1 (`s1Trace`): 900 entities, x and y in [−500, 500] m and a heading angle, 20 Hz; each tick 10 % of
 *   them, chosen at random, take one bounded random-walk step. Optional spawn/despawn churn.
 * - S2 (`s2Trace`): Gaffer's cubes: 901 cubes at 60 Hz, position and unit quaternion, most at rest, a
 *   player cube on a seeded path pushing the cubes it touches.
 */
import { NonCryptoRng } from '../../src/core/rng.js';
import { deriveSeed } from '../../src/sim/link.js';

/** One tick of a trace. Values are laid out entity by entity, `fields.length` numbers each. */
export interface TraceTick {
  /** Ids of entities removed this tick (applied first). */
  readonly despawned: Int32Array;
  /** Ids of entities created this tick (applied second), never an id used before. */
  readonly spawned: Int32Array;
  /** Their initial values: `spawned.length × fields.length`. */
  readonly spawnedValues: Float64Array;
  /** Ids of live entities whose values changed this tick (applied last; never a spawned one). */
  readonly changed: Int32Array;
  /** Their new values: `changed.length × fields.length`. */
  readonly values: Float64Array;
}

/** A deterministic entity trace: the state at tick 0, then `ticks[k − 1]` turns tick k − 1 into tick k. */
export interface Trace {
  readonly name: string;
  /** Simulation ticks per second (Hz). */
  readonly tickHz: number;
  /** 1000 / tickHz (ms). */
  readonly tickMs: number;
  /** The value slots of every entity, in layout order. */
  readonly fields: readonly string[];
  /** Live entities at tick 0 and their values (`ids.length × fields.length`). */
  readonly initialIds: Int32Array;
  readonly initialValues: Float64Array;
  /** Ticks 1..ticks.length. */
  readonly ticks: readonly TraceTick[];
}

/**
 * The state of a trace at some tick, replayed from tick 0 (`apply` one tick at a time): what a server
 * holds. Used by the systems to know what to encode and by the checks to know what a client must hold.
 */
export class TraceState {
  /** Id → values (a private copy per entity). */
  readonly entities = new Map<number, Float64Array>();
  /** Ticks applied so far. */
  tick = 0;

  constructor(readonly trace: Trace) {
    const n = trace.fields.length;
    trace.initialIds.forEach((id, i) => this.entities.set(id, trace.initialValues.slice(i * n, i * n + n)));
  }

  /** Apply trace tick `this.tick + 1`. Throws past the end. */
  apply(): TraceTick {
    const t = this.trace.ticks[this.tick];
    if (t === undefined) throw new Error(`trace ${this.trace.name} has ${this.trace.ticks.length} ticks`);
    const n = this.trace.fields.length;
    for (const id of t.despawned) this.entities.delete(id);
    t.spawned.forEach((id, i) => this.entities.set(id, t.spawnedValues.slice(i * n, i * n + n)));
    t.changed.forEach((id, i) => this.entities.get(id)!.set(t.values.subarray(i * n, i * n + n)));
    this.tick++;
    return t;
  }
}

// ---------------------------------------------------------------------------------------------
// S1

/** S1's world: x and y in [−S1_RANGE_M, S1_RANGE_M] metres. */
export const S1_RANGE_M = 500;

/**
 * The precision S1 is compared at (colyseus-quantized): x and y as 16-bit integers over the range
 * (1000 m / 65535 ≈ 15.3 mm a step), the angle as 16 bits over a full turn [0, 2π).
 */
export const S1_PRECISION = { positionBits: 16, positionMin: -S1_RANGE_M, positionMax: S1_RANGE_M, angleBits: 16 } as const;

/** Options of `s1Trace`. */
export interface S1Options {
  seed: number;
  /** Live entities (default 900). */
  entities?: number;
  /** Ticks after tick 0 (default 1200: one minute at 20 Hz). */
  ticks?: number;
  /** Share of the live entities that move each tick (default 0.1). */
  moveShare?: number;
  /** Entities despawned and as many spawned each tick (default 0). */
  churnPerTick?: number;
  /** Highest speed (m/s, default 6: 0.3 m a tick at 20 Hz). The lowest is 1 m/s. */
  maxSpeedMps?: number;
}

const S1_HZ = 20;
const S1_MIN_SPEED = 1;
/** Largest change of heading in one step (rad). */
const S1_TURN = 0.3;

function wrapAngle(a: number): number {
  const t = a % (2 * Math.PI);
  return t < 0 ? t + 2 * Math.PI : t;
}

/**
 * Scenario S1: `entities` entities (default 900) with x, y (m, in [−500, 500]) and `angle` (rad, their
 * heading, in [0, 2π)), at 20 Hz. Each tick `round(moveShare × live)` distinct live entities, drawn at
 * random, take one step of a bounded random walk: the heading turns by up to ±0.3 rad, the speed
 * changes by up to ±1 m/s within [1, maxSpeedMps] m/s, and the entity moves speed × 50 ms along it
 * (at most 0.3 m; at least 50 mm, so every step changes a 16-bit position). At the edge the position is
 * clamped and the heading reflected. With `churnPerTick` c, each tick first despawns c random live
 * entities and spawns c new ones (fresh ids, random place and heading); movers are drawn from the
 * entities alive before the spawns. Deterministic in `seed`.
 */
export function s1Trace(o: S1Options): Trace {
  const count = o.entities ?? 900;
  const tickCount = o.ticks ?? 1200;
  const share = o.moveShare ?? 0.1;
  const churn = o.churnPerTick ?? 0;
  const maxSpeed = o.maxSpeedMps ?? 6;
  const dt = 1 / S1_HZ;
  const rng = new NonCryptoRng(deriveSeed(o.seed, 0x5331));
  const uniform = (lo: number, hi: number): number => lo + (hi - lo) * rng.nextFloat();

  let nextId = 0;
  // Per live entity: position, heading, speed. Indexed by slot in `live`.
  const live: number[] = [];
  const state = new Map<number, { x: number; y: number; heading: number; speed: number }>();
  const spawn = (): number => {
    const id = nextId++;
    state.set(id, {
      x: uniform(-S1_RANGE_M, S1_RANGE_M), y: uniform(-S1_RANGE_M, S1_RANGE_M),
      heading: uniform(0, 2 * Math.PI), speed: uniform(S1_MIN_SPEED, maxSpeed),
    });
    live.push(id);
    return id;
  };
  const values = (id: number, out: Float64Array, at: number): void => {
    const s = state.get(id)!;
    out[at] = s.x;
    out[at + 1] = s.y;
    out[at + 2] = wrapAngle(s.heading);
  };

  for (let i = 0; i < count; i++) spawn();
  const initialIds = Int32Array.from(live);
  const initialValues = new Float64Array(count * 3);
  live.forEach((id, i) => values(id, initialValues, i * 3));

  const ticks: TraceTick[] = [];
  const pick: number[] = [];
  for (let k = 0; k < tickCount; k++) {
    const despawned = new Int32Array(Math.min(churn, live.length));
    for (let i = 0; i < despawned.length; i++) {
      const slot = rng.nextInt(live.length);
      despawned[i] = live[slot]!;
      live[slot] = live[live.length - 1]!;
      live.pop();
      state.delete(despawned[i]!);
    }
    const movable = live.length;
    const spawned = new Int32Array(churn);
    const spawnedValues = new Float64Array(churn * 3);
    for (let i = 0; i < churn; i++) {
      spawned[i] = spawn();
      values(spawned[i]!, spawnedValues, i * 3);
    }
    // Partial Fisher-Yates over the entities alive before the spawns.
    const movers = Math.min(movable, Math.round(share * movable));
    pick.length = 0;
    for (let i = 0; i < movable; i++) pick.push(live[i]!);
    const changed = new Int32Array(movers);
    const newValues = new Float64Array(movers * 3);
    for (let i = 0; i < movers; i++) {
      const j = i + rng.nextInt(movable - i);
      const id = pick[j]!;
      pick[j] = pick[i]!;
      pick[i] = id;
      const s = state.get(id)!;
      s.heading += uniform(-S1_TURN, S1_TURN);
      s.speed = Math.min(maxSpeed, Math.max(S1_MIN_SPEED, s.speed + uniform(-1, 1)));
      let x = s.x + Math.cos(s.heading) * s.speed * dt;
      let y = s.y + Math.sin(s.heading) * s.speed * dt;
      if (x < -S1_RANGE_M || x > S1_RANGE_M) {
        x = Math.min(S1_RANGE_M, Math.max(-S1_RANGE_M, x));
        s.heading = Math.PI - s.heading;
      }
      if (y < -S1_RANGE_M || y > S1_RANGE_M) {
        y = Math.min(S1_RANGE_M, Math.max(-S1_RANGE_M, y));
        s.heading = -s.heading;
      }
      s.x = x;
      s.y = y;
      s.heading = wrapAngle(s.heading);
      changed[i] = id;
      values(id, newValues, i * 3);
    }
    ticks.push({ despawned, spawned, spawnedValues, changed, values: newValues });
  }
  return {
    name: `S1 seed ${o.seed}`, tickHz: S1_HZ, tickMs: 1000 / S1_HZ, fields: ['x', 'y', 'angle'], initialIds, initialValues, ticks,
  };
}

// ---------------------------------------------------------------------------------------------
// S2

/**
 * The precision S2 is compared at: Gaffer's "Snapshot Compression" final encoding. Position at
 * 512 values per metre within ±256 m horizontally (18 bits) and 0..32 m up (14 bits); orientation as
 * "smallest three" (2 bits for the largest component's index, then the other three, each in
 * [−1/√2, 1/√2], in 9 bits). 9 bits, not the 15 of his "State Synchronization" article, because 15 is
 * what quantizing on both sides of a deterministic simulation needs, while his "less than 0.25 Mbit/s"
 * (≈ 4.6 bits per cube per snapshot) was measured at 9: comparing against it at another precision
 * would not compare like with like.
 */
export const S2_PRECISION = {
  positionPerMetre: 512, horizontalMinM: -256, horizontalMaxM: 256, verticalMinM: 0, verticalMaxM: 32, quaternionBits: 9,
} as const;

/** Options of `s2Trace`. */
export interface S2Options {
  seed: number;
  /** Ticks after tick 0 (default 3600: one minute at 60 Hz). */
  ticks?: number;
  /** Small cubes beside the player cube (default 900: 901 cubes in all, as Gaffer's demo). */
  cubes?: number;
}

const S2_HZ = 60;
const S2_SMALL_HALF = 0.5;
const S2_PLAYER_HALF = 2;
const S2_PLAYER_SPEED = 8;
const S2_GRAVITY = 9.81;
/** Ground friction: a sliding cube loses μ·g of speed per second. */
const S2_FRICTION = 0.3 * S2_GRAVITY;
/** Angular velocity lost per second while on the ground (rad/s²), and the share kept per tick in the air. */
const S2_SPIN_DECEL = 6;
const S2_REST_SPEED = 0.05;
const S2_REST_SPIN = 0.05;
const S2_WORLD_LIMIT = 250;
const S2_GRID = 30;
const S2_CELL = 2;
const S2_SPACING = 1.6;

interface Cube {
  x: number; y: number; z: number;
  vx: number; vy: number; vz: number;
  qx: number; qy: number; qz: number; qw: number;
  /** Angular velocity (rad/s), world frame. */
  wx: number; wy: number; wz: number;
  half: number;
  resting: boolean;
}

/** q ← rotation by the angle |w|·dt about w (world frame) applied after q; renormalised. */
function rotate(c: Cube, dt: number): void {
  const ang = Math.hypot(c.wx, c.wy, c.wz) * dt;
  if (ang === 0) return;
  const s = Math.sin(ang / 2) / (ang / dt);
  const dx = c.wx * s, dy = c.wy * s, dz = c.wz * s, dw = Math.cos(ang / 2);
  const { qx, qy, qz, qw } = c;
  c.qw = dw * qw - dx * qx - dy * qy - dz * qz;
  c.qx = dw * qx + dx * qw + dy * qz - dz * qy;
  c.qy = dw * qy - dx * qz + dy * qw + dz * qx;
  c.qz = dw * qz + dx * qy - dy * qx + dz * qw;
  const n = Math.hypot(c.qx, c.qy, c.qz, c.qw);
  c.qx /= n; c.qy /= n; c.qz /= n; c.qw /= n;
}

/**
 * Scenario S2, after Gaffer's "Snapshot Compression" demo (his data set is not public): 901 cubes at
 * 60 Hz, each x, y, z (m; z up) and a unit quaternion qx, qy, qz, qw. Simple kinematics, no physics
 * engine, seeded:
 *
 * - Cube 0 is the player, a 4 m cube moving at 8 m/s along straight legs between random waypoints
 *   within ±30 m (the field of cubes spans about ±23 m, so it keeps crossing it), rolling as it goes
 *   (it turns about the horizontal axis across its motion at speed / half-size): it changes every tick.
 * - Cubes 1..900 are 1 m cubes laid on a 30 × 30 grid, 1.6 m apart, each at a random yaw, at rest.
 * - Contact is tested between bounding circles in the ground plane. A cube the player touches is put
 *   back at contact distance and takes the player's speed along the contact normal × 1.2 plus a
 *   random sideways part, a hop (up to 4 m/s up, by the impact speed), a spin about the vertical (up to
 *   ±6 rad/s) and, while in the air, a tumble about the horizontal axis across its motion.
 * - Two cubes touching where at least one moves are separated and exchange the normal part of their
 *   relative velocity (restitution 0.4): pushes chain, as in his demo.
 * - On the ground a cube slides with friction (μ = 0.3) and its spin slows by 6 rad/s²; in the air
 *   gravity pulls it down and it lands with a small bounce. Below 5 cm/s and 0.05 rad/s on the ground it
 *   stops: velocity and spin become exactly zero and its values stay bit-identical until it is pushed
 *   again (what "at rest" means to a delta coder). A cube at rest keeps the orientation it stopped in
 *   (no settling onto a face: the trace is for bytes, not looks).
 * - Positions stay within ±250 m and below 32 m (a hop reaches about 1 m).
 *
 * `changed` lists the cubes whose values differ from the previous tick. Deterministic in `seed`.
 */
export function s2Trace(o: S2Options): Trace {
  const tickCount = o.ticks ?? 3600;
  const small = o.cubes ?? S2_GRID * S2_GRID;
  const dt = 1 / S2_HZ;
  const rng = new NonCryptoRng(deriveSeed(o.seed, 0x5332));
  const uniform = (lo: number, hi: number): number => lo + (hi - lo) * rng.nextFloat();
  const cubes: Cube[] = [];
  const make = (x: number, y: number, half: number, yaw: number): Cube => ({
    x, y, z: half, vx: 0, vy: 0, vz: 0, qx: 0, qy: 0, qz: Math.sin(yaw / 2), qw: Math.cos(yaw / 2), wx: 0, wy: 0, wz: 0, half, resting: true,
  });
  const waypoint = (): [number, number] => [uniform(-30, 30), uniform(-30, 30)];
  let [px, py] = waypoint();
  cubes.push(make(px, py, S2_PLAYER_HALF, 0));
  cubes[0]!.resting = false;
  const side = Math.ceil(Math.sqrt(small));
  for (let i = 0; i < small; i++) {
    const gx = (i % side) - (side - 1) / 2;
    const gy = Math.floor(i / side) - (side - 1) / 2;
    cubes.push(make(gx * S2_SPACING, gy * S2_SPACING, S2_SMALL_HALF, uniform(0, 2 * Math.PI)));
  }
  const fields = ['x', 'y', 'z', 'qx', 'qy', 'qz', 'qw'];
  const write = (c: Cube, out: Float64Array, at: number): void => {
    out[at] = c.x; out[at + 1] = c.y; out[at + 2] = c.z;
    out[at + 3] = c.qx; out[at + 4] = c.qy; out[at + 5] = c.qz; out[at + 6] = c.qw;
  };
  const initialIds = Int32Array.from(cubes, (_, i) => i);
  const initialValues = new Float64Array(cubes.length * 7);
  cubes.forEach((c, i) => write(c, initialValues, i * 7));

  // Cubes by grid cell (S2_CELL ≥ the widest contact between small cubes), rebuilt each tick.
  const grid = new Map<number, number[]>();
  const near: number[] = [];
  const cell = (x: number, y: number): number => (Math.floor(x / S2_CELL) + 1024) * 4096 + Math.floor(y / S2_CELL) + 1024;
  let target = waypoint();
  const prev = new Float64Array(initialValues);
  const now = new Float64Array(7);
  const ticks: TraceTick[] = [];
  const empty = new Int32Array(0);
  for (let k = 0; k < tickCount; k++) {
    // The player: a leg toward the waypoint, rolling.
    const p = cubes[0]!;
    let dx = target[0] - p.x, dy = target[1] - p.y;
    let d = Math.hypot(dx, dy);
    while (d < S2_PLAYER_SPEED * dt) {
      target = waypoint();
      dx = target[0] - p.x; dy = target[1] - p.y;
      d = Math.hypot(dx, dy);
    }
    p.vx = (dx / d) * S2_PLAYER_SPEED;
    p.vy = (dy / d) * S2_PLAYER_SPEED;
    p.x += p.vx * dt;
    p.y += p.vy * dt;
    p.wx = -p.vy / p.half;
    p.wy = p.vx / p.half;
    rotate(p, dt);
    // The player pushes what it touches.
    for (let i = 1; i < cubes.length; i++) {
      const c = cubes[i]!;
      const nx = c.x - p.x, ny = c.y - p.y;
      const dist = Math.hypot(nx, ny);
      const contact = (p.half + c.half) * 1.2;
      if (dist >= contact || dist === 0) continue;
      const ux = nx / dist, uy = ny / dist;
      c.x = p.x + ux * contact;
      c.y = p.y + uy * contact;
      const along = Math.max(0, p.vx * ux + p.vy * uy) * 1.2;
      const sideways = uniform(-0.3, 0.3) * along;
      c.vx = ux * along - uy * sideways;
      c.vy = uy * along + ux * sideways;
      if (c.z <= c.half + 1e-9) c.vz = Math.min(4, 0.4 * along * rng.nextFloat());
      c.wz = uniform(-6, 6) * Math.min(1, along / S2_PLAYER_SPEED);
      c.resting = false;
    }
    // Moving cubes push the cubes they touch (after the player, so a pushed cube passes it on next tick).
    grid.clear();
    for (let i = 1; i < cubes.length; i++) {
      const key = cell(cubes[i]!.x, cubes[i]!.y);
      const list = grid.get(key);
      if (list === undefined) grid.set(key, [i]);
      else list.push(i);
    }
    for (let i = 1; i < cubes.length; i++) {
      const a = cubes[i]!;
      if (a.resting) continue;
      near.length = 0;
      for (let ox = -1; ox <= 1; ox++) {
        for (let oy = -1; oy <= 1; oy++) near.push(...(grid.get(cell(a.x + ox * S2_CELL, a.y + oy * S2_CELL)) ?? []));
      }
      near.sort((u, v) => u - v);
      for (const j of near) {
        if (j === i) continue;
        const b = cubes[j]!;
        const nx = b.x - a.x, ny = b.y - a.y;
        const reach = a.half + b.half;
        if (Math.abs(nx) >= reach || Math.abs(ny) >= reach) continue;
        const dist = Math.hypot(nx, ny);
        if (dist >= reach || dist === 0) continue;
        const ux = nx / dist, uy = ny / dist;
        const approach = (a.vx - b.vx) * ux + (a.vy - b.vy) * uy;
        const overlap = (reach - dist) / 2;
        a.x -= ux * overlap; a.y -= uy * overlap;
        b.x += ux * overlap; b.y += uy * overlap;
        if (approach > 0) {
          const jn = approach * (1 + 0.4) / 2;
          a.vx -= ux * jn; a.vy -= uy * jn;
          b.vx += ux * jn; b.vy += uy * jn;
          b.wz += uniform(-1, 1) * jn;
        }
        b.resting = false;
      }
    }
    // Integrate, slow down, come to rest.
    for (let i = 1; i < cubes.length; i++) {
      const c = cubes[i]!;
      if (c.resting) continue;
      const airborne = c.z > c.half + 1e-9 || c.vz > 0;
      const speed = Math.hypot(c.vx, c.vy);
      if (airborne) {
        c.vz -= S2_GRAVITY * dt;
        c.wx = -c.vy / c.half;
        c.wy = c.vx / c.half;
      } else {
        c.wx = 0;
        c.wy = 0;
        const slow = speed - S2_FRICTION * dt;
        const f = slow > 0 ? slow / speed : 0;
        c.vx *= f; c.vy *= f;
        const spin = Math.abs(c.wz) - S2_SPIN_DECEL * dt;
        c.wz = spin > 0 ? Math.sign(c.wz) * spin : 0;
      }
      c.x = Math.min(S2_WORLD_LIMIT, Math.max(-S2_WORLD_LIMIT, c.x + c.vx * dt));
      c.y = Math.min(S2_WORLD_LIMIT, Math.max(-S2_WORLD_LIMIT, c.y + c.vy * dt));
      c.z = Math.min(32 - c.half, c.z + c.vz * dt);
      if (c.z <= c.half) {
        c.z = c.half;
        c.vz = c.vz < -1 ? -0.3 * c.vz : 0;
      }
      rotate(c, dt);
      if (c.z === c.half && c.vz === 0 && Math.hypot(c.vx, c.vy) < S2_REST_SPEED && Math.abs(c.wz) < S2_REST_SPIN) {
        c.vx = c.vy = c.vz = c.wx = c.wy = c.wz = 0;
        c.resting = true;
      }
    }
    const ids: number[] = [];
    const vals: number[] = [];
    for (let i = 0; i < cubes.length; i++) {
      write(cubes[i]!, now, 0);
      let same = true;
      for (let f = 0; f < 7; f++) if (now[f] !== prev[i * 7 + f]) same = false;
      if (same) continue;
      prev.set(now, i * 7);
      ids.push(i);
      for (let f = 0; f < 7; f++) vals.push(now[f]!);
    }
    ticks.push({ despawned: empty, spawned: empty, spawnedValues: new Float64Array(0), changed: Int32Array.from(ids), values: Float64Array.from(vals) });
  }
  return { name: `S2 seed ${o.seed}`, tickHz: S2_HZ, tickMs: 1000 / S2_HZ, fields, initialIds, initialValues, ticks };
}

/** Per tick of `trace`: how many entities changed (median, p95, max) and the share of entity-ticks changed. */
export function traceSummary(trace: Trace): { changedMedian: number; changedP95: number; changedMax: number; changedShare: number } {
  const counts = trace.ticks.map((t) => t.changed.length).sort((a, b) => a - b);
  const at = (p: number): number => counts[Math.min(counts.length - 1, Math.max(0, Math.ceil(p * counts.length) - 1))] ?? 0;
  const total = counts.reduce((a, b) => a + b, 0);
  return { changedMedian: at(0.5), changedP95: at(0.95), changedMax: counts.at(-1) ?? 0, changedShare: total / (counts.length * trace.initialIds.length) };
}
