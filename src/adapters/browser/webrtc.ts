import { DriveLoop } from '../../core/drive-loop.js';
import type { LinkConfig } from '../../sim/config.js';
import { SimulatedEndpoint } from './simulated.js';
import { GamewireError } from '../../core/errors.js';
import { isLogger, type Logger } from '../../core/logger.js';
import { Client, type ClientEvent, type ClientOptions } from '../../netcode/client.js';
import { WEBRTC_TRANSPORT } from '../../netcode/options.js';
import { CONNECT_TOKEN_BYTES } from '../../netcode/wire.js';

/** Why {@link connectWebRtc} failed: the server's refusal of the token, or what went wrong on the way. */
export type WebRtcConnectFailure =
  | 'invalid' | 'expired' | 'wrong-server' | 'already-connected' | 'used' | 'full' | 'busy' | 'bad-request' | 'ice-timeout'
  | 'http' | 'unreachable' | 'timeout';

/** {@link connectWebRtc} rejects with this: `reason` says why (stable strings). */
export class WebRtcConnectError extends Error {
  /** Why the connection was not made. */
  readonly reason: WebRtcConnectFailure;

  constructor(reason: WebRtcConnectFailure, message: string) {
    super(`${reason}: ${message}`);
    this.name = 'WebRtcConnectError';
    this.reason = reason;
  }
}

/** Options of {@link connectWebRtc}: the netcode client's (lanes, crypto, …) and the transport's. Times in ms. */
export interface WebRtcConnectOptions extends ClientOptions {
  /** The server's signalling URL (`WebRtcSignalling.url`). */
  url: string;
  /** The 2048-byte connect token your web backend handed out (the same as for UDP). */
  token: Uint8Array;
  /** Receives every event of the netcode client (connected, message, delivery, disconnected, …). */
  onEvent: (event: ClientEvent) => void;
  /**
   * Receives what `onEvent` threw, with the event; the connection goes on either way (the next
   * events, the timer). Default: report it to `logger`. Rejections of an `async` `onEvent` are not seen here.
   */
  onError?: (error: unknown, event: ClientEvent) => void;
  /** Where what `onEvent` threw is reported when no `onError` is given (default `console`). */
  logger?: Logger;
  /**
   * Time (ms) from the signalling request to an open data channel, the request and its answer included,
   * before failing with `timeout`. Default 10 000.
   */
  openTimeoutMs?: number;
  /** Extra `RTCPeerConnection` configuration (ICE servers). Default `{ iceServers: [] }`. */
  rtcConfiguration?: RTCConfiguration;
  /** The `RTCPeerConnection` class (default the browser's; tests in Node pass node-datachannel's polyfill). */
  RTCPeerConnection?: new (configuration?: RTCConfiguration) => RTCPeerConnection;
  /** The `fetch` to post the offer with (default the global one). */
  fetch?: typeof fetch;
}

/** A browser's netcode connection over WebRTC: the `Client` and its transport. */
export interface WebRtcConnection {
  /** The netcode client (`send`, `sendRaw`, `stats`, `state`, …): the same object as over UDP. */
  readonly client: Client;
  /** Close the client (its redundant DISCONNECTs leave), then the channel and the peer connection. */
  close(): Promise<void>;
  /**
   * Pass both directions through the simulator's `Link` (loss, latency and jitter in ms, rate, …; the
   * same settings each way), on the real clock, to see how the game plays on a worse network; call
   * again to change it, or with `undefined` to stop. Throws `GamewireError('invalid-config')` on bad
   * settings. The connection's stats then show the simulated path.
   */
  simulate(config: Partial<LinkConfig> | undefined): void;
}

/** Bytes waiting in the data channel above which the client holds datagrams back (two full ones), and below which it resumes. */
const CHANNEL_HIGH_BYTES = 2400;
const CHANNEL_LOW_BYTES = 1200;

function base64(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i]!);
  return btoa(s);
}

/**
 * Connect to a gamewire server from a browser (or anything with `RTCPeerConnection`): post an offer
 * and the connect token to the server's signalling endpoint, open one pre-negotiated unordered,
 * unreliable data channel, and run a netcode `Client` over it (handshake, encryption, lanes, stats:
 * the same as over UDP). Resolves once the channel is open and the netcode handshake has started;
 * `onEvent` then sees `connected` (or `disconnected` with the reason). Rejects with
 * {@link WebRtcConnectError}; throws `GamewireError('invalid-argument')` for a missing token or URL.
 */
export async function connectWebRtc(options: WebRtcConnectOptions): Promise<WebRtcConnection> {
  const { url, token, onEvent } = options;
  if (typeof url !== 'string' || url.length === 0) throw new GamewireError('invalid-argument', 'url is required');
  if (!(token instanceof Uint8Array) || token.length !== CONNECT_TOKEN_BYTES) {
    throw new GamewireError('invalid-argument', `token must be the ${CONNECT_TOKEN_BYTES}-byte connect token`);
  }
  if (typeof onEvent !== 'function') throw new GamewireError('invalid-argument', 'onEvent must be a function');
  const {
    url: _u, token: _t, onEvent: _e, onError, logger, openTimeoutMs, rtcConfiguration, RTCPeerConnection: Rtc, fetch: doFetch, ...clientOptions
  } = options;
  if (onError !== undefined && typeof onError !== 'function') throw new GamewireError('invalid-argument', 'onError must be a function');
  if (logger !== undefined && !isLogger(logger)) throw new GamewireError('invalid-argument', 'logger must have an error(message, error) method');
  const log = logger ?? console;
  const reportHandlerError = (error: unknown): void => log.error('gamewire: onEvent threw; the connection goes on (pass onError to handle it):', error);
  const client = new Client(clientOptions, WEBRTC_TRANSPORT);
  const Peer = Rtc ?? globalThis.RTCPeerConnection;
  const post = doFetch ?? globalThis.fetch.bind(globalThis);
  const pc = new Peer({ iceServers: [], ...rtcConfiguration });
  const dc = pc.createDataChannel('gamewire', { negotiated: true, id: 0, ordered: false, maxRetransmits: 0 });
  dc.binaryType = 'arraybuffer';
  const fail = (reason: WebRtcConnectFailure, message: string): never => {
    dc.close();
    pc.close();
    throw new WebRtcConnectError(reason, message);
  };
  const timeoutMs = openTimeoutMs ?? 10_000;
  // One bound from here to an open channel: a signalling server that never answers aborts the request.
  const abort = new AbortController();
  const opened = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => {
      abort.abort();
      resolve(false);
    }, timeoutMs);
    dc.onopen = () => {
      clearTimeout(timer);
      resolve(true);
    };
  });
  const offer = await pc.createOffer();
  await pc.setLocalDescription(offer);
  let res: Response;
  try {
    res = await post(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token: base64(token), sdp: pc.localDescription?.sdp ?? offer.sdp }),
      signal: abort.signal,
    });
  } catch (err) {
    if (abort.signal.aborted) return fail('timeout', `the signalling server did not answer within ${timeoutMs} ms`);
    return fail('unreachable', `signalling request failed: ${String(err)}`);
  }
  let body: { sdp?: unknown; error?: unknown } = {};
  try {
    body = (await res.json()) as typeof body;
  } catch {
    if (abort.signal.aborted) return fail('timeout', `the signalling server did not finish its answer within ${timeoutMs} ms`);
  }
  if (!res.ok || typeof body.sdp !== 'string') {
    const known: WebRtcConnectFailure[] = ['invalid', 'expired', 'wrong-server', 'already-connected', 'used', 'full', 'busy', 'bad-request', 'ice-timeout'];
    const reason = known.find((k) => k === body.error) ?? 'http';
    return fail(reason, `server answered ${res.status} ${typeof body.error === 'string' ? body.error : ''}`.trim());
  }
  await pc.setRemoteDescription({ type: 'answer', sdp: body.sdp });
  if (!(await opened)) return fail('timeout', 'the data channel did not open (ICE or DTLS failed, or the server is unreachable)');

  // SCTP's congestion control runs under the channel even unordered and unreliable: under loss it
  // sends less than our path would. Datagrams wait in our lanes (where later messages merge into
  // them) rather than in the channel's buffer: the loop stops sending while more than two datagrams
  // wait there, and resumes when the buffer drains.
  const scratch = new Uint8Array(1500);
  dc.bufferedAmountLowThreshold = CHANNEL_LOW_BYTES;
  const now = (): number => performance.now();
  const path = new SimulatedEndpoint(client, 1);
  const loop = new DriveLoop<ClientEvent, ReturnType<typeof setTimeout>>(path, {
    now,
    send: (bytes, length) => {
      if (dc.readyState === 'open') dc.send(bytes.subarray(0, length) as Uint8Array<ArrayBuffer>);
    },
    buffer: () => (dc.bufferedAmount > CHANNEL_HIGH_BYTES ? undefined : scratch),
    setTimer: (ms, fire) => setTimeout(fire, ms),
    clearTimer: (t) => clearTimeout(t),
    defer: (task) => void setTimeout(task, 0),
  }, { onEvent, onError: onError ?? reportHandlerError, maxDatagramBytes: scratch.length });
  dc.onbufferedamountlow = () => loop.wake();
  dc.onmessage = (e: MessageEvent) => {
    if (e.data instanceof ArrayBuffer) loop.handleDatagram(client.serverAddress ?? '', new Uint8Array(e.data));
  };
  dc.onclose = () => loop.close();
  client.connect(performance.now(), token);
  loop.wake();
  return {
    client,
    simulate(config) {
      path.configure(now(), config);
      loop.wake();
    },
    async close() {
      client.close();
      await loop.close();
      // SCTP may still hold the DISCONNECTs: give them a moment before the channel goes.
      await new Promise((r) => setTimeout(r, 100));
      dc.close();
      pc.close();
    },
  };
}
