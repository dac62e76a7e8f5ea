export * from './controller.js';
export * from './adaptive.js';
