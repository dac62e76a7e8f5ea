export * from './world.js';
export * from './bytes.js';
