export * from './controller.js';
export * from './adaptive.js';
export * from './fixed.js';
export * from './pacer.js';
export * from './rtt.js';
export * from './path.js';
