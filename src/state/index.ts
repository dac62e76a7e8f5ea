/**
 * Game-state entry point (`gamewire/state`): declare entity types and inputs once (`defineSchema`),
 * replicate them from a `StateServer` to `StateClient`s over any gamewire connection (netcode,
 * unsecured, browser), with snapshots delta-compressed against what each client is known to hold, a
 * priority accumulator within a budget taken from the measured path rate, interest, interpolation on
 * an adaptive playback clock, prediction with reconciliation, and lag compensation. See docs/state.md.
 */
export {
  defineSchema,
  float,
  int,
  bool,
  oneOf,
  angle,
  vec2,
  vec3,
  quat,
  Schema,
  type TypeCodec,
  type Field,
  type Fields,
  type FloatField,
  type IntField,
  type BoolField,
  type EnumField,
  type AngleField,
  type VecField,
  type QuatField,
  type SchemaTypes,
  type SlotKind,
  type ValueOf,
  type ValuesOf,
} from './schema.js';
export {
  StateServer,
  Entity,
  Player,
  type StateServerOptions,
  type StateServerCounter,
  type SnapshotBudget,
  type PlayerStats,
  type Past,
  type StateLink,
  type LinkEvent,
} from './server.js';
export { StateClient, type StateClientOptions, type StateClientStats, type StateClientCounter, type ViewEntity } from './client.js';
export { GridInterest, type GridInterestOptions, type Point } from './interest.js';
export { STATE_LANES } from './wire.js';
export type { PlaybackOptions, PlaybackStats, SampleOutcome } from './interpolation.js';
