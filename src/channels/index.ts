export * from './wire.js';
export * from './config.js';
export * from './channels.js';
