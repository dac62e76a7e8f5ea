/**
 * Node entry point (`gamewire/node`): the browser-safe core plus the Node UDP adapter, which is the
 * only part that owns a socket and a clock.
 */
export * from './core/index.js';
export * from './adapters/node/index.js';
