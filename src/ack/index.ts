export * from './wire.js';
export * from './acks.js';
