export * from './world.js';
