/**
 * Node entry point (`gamewire/node`): everything of the browser-safe entry point (`gamewire`) plus
 * the Node UDP adapter (`UdpDriver`, `UdpLinkProxy`), the only part that owns sockets and a clock.
 */
export * from './index.js';
export * from './adapters/node/index.js';
