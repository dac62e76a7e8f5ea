export * from './controller.js';
export * from './adaptive.js';
export * from './fixed.js';
