export * from './wire.js';
export * from './config.js';
export * from './sender.js';
export * from './receiver.js';
export * from './endpoint.js';
