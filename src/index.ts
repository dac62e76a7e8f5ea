/**
 * gamewire's browser-safe entry point: the sans-IO protocol objects (chunk, KCP), rate controllers,
 * the network simulator and the core primitives. Node sockets live in `gamewire/node`. Wire codecs
 * are internal: they are not part of the public API.
 */
export * from './core/index.js';
export * from './sim/index.js';
export * from './congestion/index.js';
export { ChunkSender, type ChunkSenderEvent, type ChunkSenderProgress, type CancelReason } from './chunk/sender.js';
export { ChunkReceiver, type ChunkReceiverEvent } from './chunk/receiver.js';
export { ChunkEndpoint, type ChunkEndpointConfig } from './chunk/endpoint.js';
export { ChunkHost, type ChunkHostOptions, type ChunkHostEvent, type ChunkHostPeerEvent } from './chunk/host.js';
export type { ChunkSenderConfig, ChunkReceiverConfig } from './chunk/config.js';
export { MAX_BLOCK_BYTES } from './chunk/wire.js';
export * from './kcp/kcp.js';
export { KcpScheduler, type KcpSchedulable, type KcpSchedulerOptions } from './kcp/scheduler.js';
export * from './kcp/session.js';
