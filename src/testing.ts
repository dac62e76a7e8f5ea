/**
 * Testing entry point (`gamewire/testing`): drive your own client and server code on a simulated
 * network, deterministically, from your own tests (see docs/testing.md). Everything here is sans-IO
 * and browser-safe: a `World` of addressed endpoints on a virtual clock, `PairWorld` for two
 * single-remote peers, seeded `Link`s you can reconfigure mid-run, the link presets, and
 * `seededRandom`, a seeded `RandomSource` for the objects that draw random ids and keys.
 */
export {
  World,
  type WorldOptions,
  type RouteOptions,
  type RouteSpec,
  type LinkSpec,
  type DeliverHook,
  type TransmitHook,
  type PeerStats,
  type RouteStats,
  type WorldStats,
  type RunLimits,
  type RunResult,
  type RunStopReason,
} from './sim/world.js';
export {
  PairWorld,
  type PairWorldOptions,
  type PairWorldStats,
  type Direction,
  type PairDeliverHook,
  type PairTransmitHook,
} from './sim/pair-world.js';
export { Link, type LinkCounters } from './sim/link.js';
export {
  LINK_DEFAULTS,
  type LinkConfig,
  type GilbertElliottConfig,
  type OutageWindow,
  type ShuffleBagLossConfig,
} from './sim/config.js';
export { presets, preset, type PresetName } from './sim/presets.js';
export { seededRandom, type RandomSource } from './core/random.js';
export type { Address, Endpoint, Transmit } from './core/endpoint.js';
export type { SansIoPeer, PeerEndpoint } from './core/peer.js';
