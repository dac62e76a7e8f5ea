/**
 * gamewire's browser-safe entry point (`gamewire`): the sans-IO protocol objects and the contracts
 * that drive them. Node sockets live in `gamewire/node`, the link simulator in `gamewire/sim`, the
 * test world in `gamewire/testing`. Wire codecs and byte helpers are internal. Every export, one
 * line each: docs/api.md.
 */

// Errors.
export { GamewireError, type GamewireErrorCode } from './core/errors.js';

// The drive contract: endpoints, peers, the drive loop, hosts, randomness.
export type { Address, Endpoint, Transmit } from './core/endpoint.js';
export { EndpointPeer, PeerEndpoint, type SansIoPeer } from './core/peer.js';
export { DriveLoop, type DriveLoopOptions, type DrivePlatform, type LingerOptions } from './core/drive-loop.js';
export { Host, type HostEvent, type HostOptions, type HostedPeer, type PeerId } from './core/host.js';
export { cryptoRandom, type RandomSource } from './core/random.js';

// Connections with message lanes (unsecured), and what they are made of.
export {
  Connection, type ConnectionEvent, type ConnectionState, type ConnectionStats, type DisconnectReason,
} from './connection/connection.js';
export { ConnectionHost } from './connection/host.js';
export type { BlockLaneConfig, ConnectionLaneConfig, ConnectionOptions } from './connection/options.js';
export type { BlockLaneProgress, BlockLaneStats } from './connection/blocks.js';
export type { ChannelsConfig, DeliveryMode, LaneConfig } from './channels/config.js';
export { Channels, type ChannelEvent, type LaneStats } from './channels/channels.js';
export { PacketAcks, type AckConfig, type PacketOutcomes } from './ack/acks.js';

// Secure connections: netcode 1.02 (docs/netcode.md).
export { Server, ServerClient, type ServerCounter, type ServerDisconnectReason, type ServerEvent, type ServerOptions, type TokenCheck } from './netcode/server.js';
export {
  Client, CLIENT_STATE_CODES, type ClientCounter, type ClientDisconnectReason, type ClientEvent, type ClientOptions, type ClientState,
} from './netcode/client.js';
export type { NetcodeCarryOptions } from './netcode/options.js';
export { generateConnectToken, type ConnectTokenOptions, type NetcodeAddress } from './netcode/wire.js';
export type { CryptoProvider } from './crypto/provider.js';
export { nobleCrypto } from './crypto/noble.js';
export { sodiumCrypto } from './crypto/sodium.js';

// Large blocks (the chunk protocol).
export { ChunkSender, type CancelReason, type ChunkSenderEvent, type ChunkSenderProgress } from './chunk/sender.js';
export {
  ChunkReceiver, type ChunkReceiverBlockProgress, type ChunkReceiverEvent, type ChunkReceiverProgress,
} from './chunk/receiver.js';
export type { ChunkReceiverConfig, ChunkSenderConfig } from './chunk/config.js';
export { ChunkEndpoint, type ChunkEndpointConfig, type ChunkEndpointEvent } from './chunk/endpoint.js';
export { ChunkHost, type ChunkHostEvent, type ChunkHostOptions, type ChunkHostPeerEvent } from './chunk/host.js';
export { MAX_BLOCK_BYTES } from './chunk/wire.js';

// Rate and path.
export type { RateController } from './congestion/controller.js';
export { AdaptiveRate, type AdaptiveRateConfig } from './congestion/adaptive.js';
export { FixedRate } from './congestion/fixed.js';
export { Path, type PathConfig, UDP_IPV4_OVERHEAD_BYTES, UDP_IPV6_OVERHEAD_BYTES } from './congestion/path.js';

// KCP.
export { Kcp, type KcpOptions, type KcpOutput } from './kcp/kcp.js';
export { KcpArena, type KcpArenaOptions } from './kcp/arena.js';
export {
  KcpClient, type KcpClientOptions, KcpServer, type KcpServerOptions, KcpSession, type KcpSessionEvent,
  type KcpSessionOptions,
} from './kcp/session.js';
