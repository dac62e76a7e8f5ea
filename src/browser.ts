/**
 * Browser entry point (`gamewire/browser`): everything of `gamewire` plus the WebRTC client
 * transport, which needs the browser's `RTCPeerConnection` and `fetch` (no Node built-ins, no
 * bundled WebRTC). Every export, one line each: docs/api.md.
 */
export * from './index.js';
export type { Logger } from './core/logger.js';
export {
  connectWebRtc, type WebRtcConnectFailure, type WebRtcConnection, WebRtcConnectError, type WebRtcConnectOptions,
} from './adapters/browser/webrtc.js';
