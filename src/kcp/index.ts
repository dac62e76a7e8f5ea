export * from './segment.js';
export * from './kcp.js';
export * from './session-wire.js';
export * from './session.js';
