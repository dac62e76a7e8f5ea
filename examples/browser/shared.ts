/**
 * What the dots example's server, bots and page share: the lanes, the field, the state declared once
 * (a dot per client, and the input that moves it), and the step that moves a dot, which the server
 * runs for every input and each client runs to predict its own dot.
 */
import type { LaneConfig } from 'gamewire';
import { defineSchema, float, type Schema, type StateClient, STATE_LANES } from 'gamewire/state';

/** The state layer's three lanes; the example has no lane of its own. */
export const LANES: LaneConfig[] = [...STATE_LANES];
export const FIELD = { width: 640, height: 400 } as const;
/** Snapshots (and input ticks) per second. */
export const TICK_HZ = 20;
/** Pixels a dot moves per tick at most. */
export const SPEED = 12;

export const schema = defineSchema(
  { dot: { x: float(0, FIELD.width, 0.1), y: float(0, FIELD.height, 0.1) } },
  { tx: float(0, FIELD.width, 0.5), ty: float(0, FIELD.height, 0.5) }, // where the dot heads
);

type Parts<S> = S extends Schema<infer T, infer I> ? { types: T; inputs: I } : never;
/** A client's view of the dots (`new StateClient(connection, { schema, predict: step })`). */
export type DotView = StateClient<Parts<typeof schema>['types'], Parts<typeof schema>['inputs']>;
export type Dot = { x: number; y: number };
export type Target = { tx: number; ty: number };

/** One tick of a dot: towards its target, at most SPEED pixels. Deterministic (no trigonometry), so a client's prediction matches the server. */
export function step(dot: Dot, input: Target): void {
  const dx = input.tx - dot.x;
  const dy = input.ty - dot.y;
  const d = Math.sqrt(dx * dx + dy * dy);
  if (d <= SPEED) {
    dot.x = input.tx;
    dot.y = input.ty;
  } else {
    dot.x += (dx / d) * SPEED;
    dot.y += (dy / d) * SPEED;
  }
}

/** A point on bot `i`'s loop at time `s` (seconds): where it steers. */
export function loop(i: number, s: number): Target {
  const t = s * 0.7 + i;
  const k = i % 6;
  return { tx: FIELD.width / 2 + Math.cos(t) * (60 + 25 * k), ty: FIELD.height / 2 + Math.sin(t) * (40 + 20 * k) };
}
