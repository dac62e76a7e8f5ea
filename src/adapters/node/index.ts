export * from './udp-driver.js';
export * from './udp-proxy.js';
export * from './kcp.js';
