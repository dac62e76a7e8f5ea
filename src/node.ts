/**
 * Node entry point (`gamewire/node`): everything of the browser-safe entry point (`gamewire`) plus
 * the Node UDP adapters, the only part that owns sockets and a clock. TypeScript users need
 * `@types/node` for this entry point only. Every export, one line each: docs/api.md.
 */
export * from './index.js';
export { nodeCrypto } from './adapters/node/node-crypto.js';
export type { Logger } from './core/logger.js';
export {
  addressKey, parseAddressKey, systemUnixTime, type UdpAddress, UdpDriver, type UdpDriverCloseOptions, type UdpDriverEvents,
  type UdpDriverOptions, type UdpEndpointOptions, type UdpSocketOptions,
} from './adapters/node/udp-driver.js';
export { UdpLinkProxy, type UdpLinkProxyEvents, type UdpLinkProxyOptions } from './adapters/node/udp-proxy.js';
export {
  KcpUdpClient, type KcpUdpClientOptions, type KcpUdpEvents, KcpUdpServer, type KcpUdpServerOptions,
} from './adapters/node/kcp.js';
export {
  BrowserGateway, type BrowserGatewayCounter, type BrowserGatewayOptions, WEBRTC_ADDRESS_PREFIX, WEBSOCKET_ADDRESS_PREFIX,
} from './adapters/node/gateway.js';
