export * from './config.js';
export * from './link.js';
export * from './presets.js';
export * from './pair.js';
