export * from './wrap.js';
export * from './errors.js';
export * from './result.js';
export * from './bytes.js';
export * from './rng.js';
export * from './counters.js';
export * from './sequence-buffer.js';
export * from './peer.js';
