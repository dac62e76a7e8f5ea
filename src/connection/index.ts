export {
  Connection, type ConnectionEvent, type ConnectionState, type ConnectionStats, type DisconnectReason,
} from './connection.js';
export { ConnectionHost, type ConnectionHostCounter } from './host.js';
export type { ConnectionOptions } from './options.js';
