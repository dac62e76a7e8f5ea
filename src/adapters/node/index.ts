export * from './udp-driver.js';
