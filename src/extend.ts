/**
 * Building blocks (`gamewire/extend`), for people who extend the library: the drive contract and
 * the loop and host that drive it, the lanes and the packet layer without a connection, the path
 * and rate controllers, bare KCP, block transfer both ways on one path, and the secondary types of
 * the products (counter names, progress and statistics reports). Browser-safe. No stability
 * promise: these may change in a minor version (CHANGELOG.md says how). Every export, one line
 * each: docs/api.md.
 */

// The drive contract: endpoints, peers, the drive loop, hosts, randomness.
export type { Address, Endpoint, Transmit } from './core/endpoint.js';
export { PeerEndpoint, type SansIoPeer } from './core/peer.js';
export { DriveLoop, type DriveLoopOptions, type DrivePlatform, type LingerOptions } from './core/drive-loop.js';
export { Host, type HostEvent, type HostOptions, type HostedPeer, type PeerId } from './core/host.js';
export { cryptoRandom, type RandomSource } from './core/random.js';

// What connections are made of: lanes, the packet layer, and the secondary types of a connection.
export type { ConnectionState, DisconnectReason } from './connection/connection.js';
export type { BlockLaneConfig } from './connection/options.js';
export type { BlockLaneProgress, BlockLaneStats } from './connection/blocks.js';
export type { WireCounts } from './connection/session.js';
export type { MessageLanesOptions, MessageLaneConfig } from './channels/config.js';
export { MessageLanes, type MessageLaneEvent, type LaneStats } from './channels/channels.js';
export { PacketAcks, type AckOptions, type PacketOutcomes } from './ack/acks.js';

// The secondary types of the netcode server and client.
export type { ServerCounter } from './netcode/server.js';
export { CLIENT_STATE_CODES, type ClientCounter } from './netcode/client.js';
export type { NetcodePayloadOptions } from './netcode/options.js';
export type { NetcodeAddress } from './netcode/wire.js';

// Blocks: both ways on one path, and the secondary types of the sender, receiver and host.
export type { CancelReason, ChunkSenderProgress } from './chunk/sender.js';
export type { ChunkReceiverBlockProgress, ChunkReceiverProgress } from './chunk/receiver.js';
export { ChunkEndpoint, type ChunkEndpointOptions, type ChunkEndpointEvent } from './chunk/endpoint.js';
export type { ChunkHostPeerEvent } from './chunk/host.js';
export { MAX_BLOCK_BYTES } from './chunk/wire.js';

// Rate and path.
export type { RateController } from './congestion/controller.js';
export { AdaptiveRate, type AdaptiveRateOptions } from './congestion/adaptive.js';
export { FixedRate } from './congestion/fixed.js';
export { Path, type PathOptions, UDP_IPV4_OVERHEAD_BYTES, UDP_IPV6_OVERHEAD_BYTES } from './congestion/path.js';

// Bare KCP, and the session inside a KCP server or client.
export { Kcp, type KcpOptions, type KcpOutput } from './kcp/kcp.js';
export { KcpArena, type KcpArenaOptions } from './kcp/arena.js';
export { KcpSession, type KcpSessionOptions } from './kcp/session.js';
