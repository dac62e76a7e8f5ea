/**
 * Benchmark part 5: lag compensation over the world. The server moves a target along a fixed
 * Lissajous path; the client samples it every frame and, on each frame where it drew the target
 * interpolated, fires at what it drew (the input carries the aim). The server's `input` handler
 * rewinds to the render time the client reported (`rewind(player, past => past.get(target))`) and
 * the bench compares the rewound target with what the client drew at that render time, and runs a
 * hit test: a shot aimed at the drawn target must hit the rewound one.
 */
import type { Connection, ConnectionEvent } from '../../src/connection/connection.js';
import { readU32LE } from '../../src/core/bytes.js';
import { StateClient } from '../../src/state/client.js';
import { bool, defineSchema, float, int } from '../../src/state/schema.js';
import { StateServer } from '../../src/state/server.js';
import { RENDER_SCALE, SNAPSHOTS, STATE_LANES } from '../../src/state/wire.js';
import { type HarnessLink, runHarness, type StateSystem } from './harness.js';

/** The target's position precision (m): one quantization step. */
export const TARGET_STEP_M = 0.01;
/** The aim's precision in the input (m). */
export const AIM_STEP_M = 0.001;

/** The scenario's schema: a target at 1 cm, inputs a trigger and an aim at 1 mm. */
export const LAGCOMP_SCHEMA = defineSchema(
  // `hp` is not used; it gives the entity as many slots as the inputs have (StateClient sizes its input scratch by the entity types' slots).
  { target: { x: float(-1000, 1000, TARGET_STEP_M), y: float(-1000, 1000, TARGET_STEP_M), hp: int(0, 100) } },
  { fire: bool(), aimX: float(-1000, 1000, AIM_STEP_M), aimY: float(-1000, 1000, AIM_STEP_M) },
);

/**
 * The target's path at server time `t` (s): a Lissajous curve within ±15 m × ±10 m, 1.1–10.2 m/s,
 * accelerating at up to 6.1 m/s² (so interpolating across a lost snapshot shows).
 */
export function targetAt(t: number, out: { x: number; y: number }): void {
  out.x = 15 * Math.sin(0.5 * t);
  out.y = 10 * Math.sin(0.7 * t + 1);
}

/** Options of `runLagComp`. */
export interface LagCompOptions extends HarnessLink {
  seed: number;
  /** Server ticks per second (default 20). */
  tickHz?: number;
  /** Server ticks to run. */
  ticks: number;
  /** `lagCompensation.maxRewindMs` of the server (default the library's, 220). */
  maxRewindMs?: number;
  /** Hit-test radius around the rewound target's centre (m, default 0.1). */
  hitRadiusM?: number;
}

/** One shot as the server applied it. */
export interface Shot {
  /** The render time the client reported (ticks) and the tick rewound to (clamped by maxRewindMs). */
  renderTick: number;
  pastTick: number;
  /** How far back the reported render time was from the newest tick the server held (ms). */
  depthMs: number;
  /** Rewound minus drawn (m), per axis, and the distance. */
  dx: number;
  dy: number;
  error: number;
  /** Distance from the aim (as the input carried it) to the rewound centre (m), and the verdict. */
  aimError: number;
  hit: boolean;
  /**
   * What the client drew from: 'blend' (within `BLEND_TICKS` of render time after the target was
   * extrapolated or held, or after a snapshot arrived out of order: the track may be blending from
   * what it showed), else 'gap' (one of the two snapshots around the render time not received when
   * the frame was drawn: it interpolated across a lost or late snapshot), else 'clean'.
   */
  drawnFrom: 'clean' | 'gap' | 'blend';
}

/** Render ticks after a starved frame or a late snapshot during which a frame counts as 'blend' (the track's shortest blend is 2 ticks). */
export const BLEND_TICKS = 2;

/** What `runLagComp` measured. */
export interface LagCompRun {
  seed: number;
  maxRewindMs: number;
  hitRadiusM: number;
  /** Frames by how the target was placed. */
  placed: Record<string, number>;
  /** Shots applied by the server; those whose drawn frame the bench found (all, unless the run is broken). */
  shots: number;
  matched: Shot[];
  unmatched: number;
  /** Shots whose rewind was clamped by maxRewindMs. */
  clamped: number;
  /** Shots that missed (false negatives: every shot was aimed at the drawn target). */
  misses: number;
  /** The client's interpolation delay (`PlaybackStats.delayMs`) at each frame that drew the target (ms). */
  delays: number[];
}

/** Run the lag-compensation scenario once. */
export function runLagComp(o: LagCompOptions): LagCompRun {
  const tickHz = o.tickHz ?? 20;
  const tickMs = 1000 / tickHz;
  const maxRewindMs = o.maxRewindMs ?? 220;
  const radius = o.hitRadiusM ?? 0.1;
  const server = new StateServer({ schema: LAGCOMP_SCHEMA, tickHz, lagCompensation: { maxRewindMs } });
  const path = { x: 0, y: 0 };
  targetAt(0, path);
  const tgt = server.spawn('target', { x: path.x, y: path.y, hp: 100 });
  /** What the client drew, by reported render time (1/256 ticks). */
  const drawn = new Map<number, { x: number; y: number; from: Shot['drawnFrom'] }>();
  const shots: Shot[] = [];
  let shotCount = 0;
  let unmatched = 0;
  let clamped = 0;
  let misses = 0;
  server.on('input', (p, _tick, input) => {
    if (!input.fire) return;
    shotCount++;
    const newest = server.tickNo - 1;
    server.rewind(p, (past) => {
      const v = past.get(tgt);
      const d = drawn.get(Math.round(p.renderTick * RENDER_SCALE));
      if (past.tick > p.renderTick + 1e-9) clamped++;
      if (v === undefined || d === undefined) {
        unmatched++;
        return;
      }
      const aimError = Math.hypot(input.aimX - v.x, input.aimY - v.y);
      const hit = aimError <= radius;
      if (!hit) misses++;
      shots.push({
        renderTick: p.renderTick, pastTick: past.tick, depthMs: (newest - p.renderTick) * tickMs,
        dx: v.x - d.x, dy: v.y - d.y, error: Math.hypot(v.x - d.x, v.y - d.y), aimError, hit, drawnFrom: d.from,
      });
    });
  });

  const makeView = (link: Connection) => new StateClient(link, { schema: LAGCOMP_SCHEMA });
  let view: ReturnType<typeof makeView> | undefined;
  const received = new Set<number>();
  let newestReceived = -1;
  /** Render tick of the last frame that did not interpolate the target, and at the last out-of-order snapshot. */
  let starvedAt = -Infinity;
  let lateAt = -Infinity;
  const placed: Record<string, number> = {};
  const delays: number[] = [];
  const aim = { fire: false, aimX: 0, aimY: 0 };

  const system: StateSystem = {
    name: 'gamewire lag compensation',
    lanes: STATE_LANES,
    serverTick(now: number): void {
      targetAt(((server.tickNo + 1) * tickMs) / 1000, path);
      tgt.values.x = path.x;
      tgt.values.y = path.y;
      server.tick(now);
    },
    serverEvent(_now: number, e: ConnectionEvent): void {
      server.handle(e);
    },
    clientEvent(now: number, e: ConnectionEvent): void {
      const v = (view ??= makeView(e.connection));
      v.handle(now, e);
      if (e.type === 'message' && e.lane === SNAPSHOTS && e.bytes.length >= 5) {
        const t = readU32LE(e.bytes, 1);
        received.add(t);
        if (t < newestReceived) lateAt = v.stats(now).playback?.renderTick ?? -Infinity;
        newestReceived = Math.max(newestReceived, t);
      }
    },
    clientFrame(now: number): void {
      const v = view;
      if (v === undefined) return;
      const e = v.sample(now).find((x) => x.id === tgt.id);
      aim.fire = false;
      if (e !== undefined) {
        placed[e.placed] = (placed[e.placed] ?? 0) + 1;
        const pb = v.stats(now).playback!;
        const r = pb.renderTick;
        delays.push(pb.delayMs);
        if (e.placed !== 'interpolated') starvedAt = r;
        else {
          const t0 = Math.floor(r);
          const x = e.values.x as number;
          const y = e.values.y as number;
          const from = r - Math.max(starvedAt, lateAt) <= BLEND_TICKS ? 'blend' : !received.has(t0) || !received.has(t0 + 1) ? 'gap' : 'clean';
          drawn.set(Math.round(r * RENDER_SCALE), { x, y, from });
          aim.fire = true;
          aim.aimX = x;
          aim.aimY = y;
        }
      }
      v.input(now, aim);
    },
    finish(): Record<string, unknown> {
      if (view === undefined) throw new Error('lag compensation: the client saw no event');
      return {};
    },
  };
  runHarness(system, { ...o, seed: o.seed, ticks: o.ticks, tickHz, clientFrameHz: 60, joinSettleMs: tickMs });
  return { seed: o.seed, maxRewindMs, hitRadiusM: radius, placed, shots: shotCount, matched: shots, unmatched, clamped, misses, delays };
}
