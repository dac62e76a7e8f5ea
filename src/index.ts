/**
 * gamewire's browser-safe entry point (`gamewire`): the products, with their options, events and
 * errors. A game server is a netcode `Server`, a native client a `Client`; large files go with
 * `ChunkSender`/`ChunkReceiver`; KCP peers are `KcpServer`/`KcpClient`. Sockets live in
 * `gamewire/node`, browser clients in `gamewire/browser`, the test world in `gamewire/testing`, and
 * the building blocks these are made of (for extending the library) in `gamewire/extend`. Every
 * export, one line each: docs/api.md.
 */

export { GamewireError, type GamewireErrorCode } from './core/errors.js';

// Secure connections: netcode 1.02 (docs/netcode.md).
export { Server, ServerClient, type ServerDisconnectReason, type ServerEvent, type ServerOptions, type TokenCheck } from './netcode/server.js';
export { Client, type ClientDisconnectReason, type ClientEvent, type ClientOptions, type ClientState } from './netcode/client.js';
export { generateConnectToken, type ConnectTokenOptions } from './netcode/wire.js';
export type { CryptoProvider } from './crypto/provider.js';
export { nobleCrypto } from './crypto/noble.js';
export { sodiumCrypto } from './crypto/sodium.js';

// The lanes every connection carries, and unsecured connections (docs/connection.md).
export type { DeliveryMode } from './channels/config.js';
export type { LaneConfig } from './connection/options.js';
export { Connection, type ConnectionEvent, type ConnectionStats } from './connection/connection.js';
export { ConnectionHost } from './connection/host.js';
export type { ConnectionOptions } from './connection/options.js';

// Large blocks (docs/chunk.md).
export { ChunkSender, type ChunkSenderEvent } from './chunk/sender.js';
export { ChunkReceiver, type ChunkReceiverEvent } from './chunk/receiver.js';
export type { ChunkReceiverOptions, ChunkSenderOptions } from './chunk/config.js';
export { ChunkHost, type ChunkHostEvent, type ChunkHostOptions } from './chunk/host.js';

// KCP peers (docs/kcp-session.md).
export { KcpClient, type KcpClientOptions, KcpServer, type KcpServerOptions, type KcpSessionEvent } from './kcp/session.js';
