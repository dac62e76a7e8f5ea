export * from './segment.js';
export * from './kcp.js';
