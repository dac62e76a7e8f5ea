export {
  PairWorld,
  type Direction,
  type PairDeliverHook,
  type PairTransmitHook,
  type PairWorldOptions,
  type PairWorldStats,
} from '../../src/sim/pair-world.js';
export type { PeerStats, RunLimits, RunResult, RunStopReason } from '../../src/sim/world.js';
export * from './bytes.js';
