export {
  Connection, type ConnectionEvent, type ConnectionState, type ConnectionStats, type DisconnectReason,
} from './connection.js';
export { ConnectionHost, type ConnectionHostCounter } from './host.js';
export type { BlockLaneConfig, LaneConfig, ConnectionOptions } from './options.js';
export type { BlockLaneCounters, BlockLaneProgress, BlockLaneStats } from './blocks.js';
