/**
 * Browser entry point (`gamewire/browser`): everything of `gamewire` plus the browser client
 * transports (WebRTC, WebSocket), which need the browser's `RTCPeerConnection`, `WebSocket` and `fetch` (no Node built-ins, no
 * bundled WebRTC). Every export, one line each: docs/api.md.
 */
export * from './index.js';
export type { Logger } from './core/logger.js';
export {
  type BrowserConnection, type BrowserTransport, connect, ConnectError, type ConnectFailure, type ConnectOptions, connectWebRtc,
} from './adapters/browser/connect.js';
