// The two-peer world the tests have always used; it now lives in src/sim (PairWorld, over the N-peer World).
export {
  PairWorld as World,
  type Direction,
  type PairDeliverHook as DeliverHook,
  type PairTransmitHook as TransmitHook,
  type PairWorldOptions as WorldOptions,
  type PairWorldStats as WorldStats,
} from '../../src/sim/pair-world.js';
export type { PeerStats, RunLimits, RunResult, RunStopReason } from '../../src/sim/world.js';
