import { DriveLoop } from '../../core/drive-loop.js';
import type { LinkConfig } from '../../sim/config.js';
import { SimulatedEndpoint } from './simulated.js';
import { GamewireError } from '../../core/errors.js';
import { isLogger, type Logger } from '../../core/logger.js';
import { Client, type ClientEvent, type ClientOptions } from '../../netcode/client.js';
import { type NetcodeTransport, WEBRTC_TRANSPORT, WEBSOCKET_TRANSPORT } from '../../netcode/options.js';
import { CONNECT_TOKEN_BYTES } from '../../netcode/wire.js';
import { bulkProtocols, resumeProtocols, WEBSOCKET_PROTOCOL, webSocketProtocols } from '../../netcode/websocket-protocol.js';

/** How a browser client reaches the server: a WebRTC data channel (UDP), or a WebSocket (TCP). */
export type BrowserTransport = 'webrtc' | 'websocket';

/**
 * Why {@link connect} failed: the server's refusal of the token (`invalid` … `full`, `busy`), or what
 * went wrong on the way: `bad-request`, `ice-timeout` and `http` (the signalling answer), `unreachable`
 * (the signalling request failed), `no-candidates` (the browser gathered no ICE candidate: UDP is
 * disabled), `ice-failed` (ICE checked and found no path: UDP is blocked), `websocket` (the WebSocket
 * did not open: refused, blocked or unreachable; a browser does not say which), `timeout`.
 */
export type ConnectFailure =
  | 'invalid' | 'expired' | 'wrong-server' | 'already-connected' | 'used' | 'full' | 'busy' | 'bad-request' | 'ice-timeout'
  | 'http' | 'unreachable' | 'no-candidates' | 'ice-failed' | 'websocket' | 'timeout';

/** {@link connect} rejects with this: `reason` says why (stable strings); `failures` has every transport's own. */
export class ConnectError extends Error {
  /** Why the connection was not made (the last transport's reason when every transport failed). */
  readonly reason: ConnectFailure;
  /** Each transport tried and why it failed, in the order they failed. */
  readonly failures: ReadonlyArray<{ transport: BrowserTransport; reason: ConnectFailure; message: string }>;

  constructor(reason: ConnectFailure, message: string, failures: ConnectError['failures'] = []) {
    super(`${reason}: ${message}`);
    this.name = 'ConnectError';
    this.reason = reason;
    this.failures = failures;
  }
}

/** Options of {@link connect}: the netcode client's (lanes, crypto, …) and the transports'. Times in ms. */
export interface ConnectOptions extends ClientOptions {
  /** The server's endpoint URL (`BrowserGateway.url`, `http:` or `https:`); the WebSocket opens at the same URL as `ws:`/`wss:`. */
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
   * The transports to try, most wanted first. Default `['webrtc', 'websocket']`: WebRTC, and the
   * WebSocket when WebRTC fails or has not opened within `fallbackAfterMs`.
   */
  transports?: readonly BrowserTransport[];
  /**
   * Time (ms) after which the next transport is tried beside the one still opening (happy eyeballs:
   * the first to open is used, the other closed). A transport that fails sooner (`ice-failed`,
   * `no-candidates`, a signalling error other than a refused token) starts the next at once. Default 2 500.
   */
  fallbackAfterMs?: number;
  /**
   * Time (ms) from the call to an open transport, every attempt included, before failing with
   * `timeout`. Default 10 000.
   */
  openTimeoutMs?: number;
  /**
   * Once connected, how long (ms) nothing may arrive before the client moves the connection to a new
   * WebSocket (as it does when its transport closes): the same client, its slot and every
   * unacknowledged reliable message go on there. Only with `'websocket'` among `transports`; 0 never
   * moves. Default 2 000 (below netcode's own timeout, at least 5 s in a token).
   */
  resumeAfterMs?: number;
  /**
   * With a block lane: once connected, open a second WebSocket to the server for the block lane alone
   * (its slices and acks), so a large block goes at TCP's rate and the other lanes keep their
   * transport and latency. Only with `'websocket'` among `transports`. While it cannot open, or after
   * it closes, blocks go on the connection's own transport, and it is tried again (after 1 s,
   * doubling, three times in a row at most). Default true.
   */
  bulk?: boolean;
  /** Extra `RTCPeerConnection` configuration (ICE servers). Default `{ iceServers: [] }`. */
  rtcConfiguration?: RTCConfiguration;
  /** The `RTCPeerConnection` class (default the browser's; tests in Node pass node-datachannel's polyfill). */
  RTCPeerConnection?: new (configuration?: RTCConfiguration) => RTCPeerConnection;
  /** The `WebSocket` class (default the global one; Node 20 tests pass the `ws` package's). */
  WebSocket?: new (url: string, protocols?: string | string[]) => WebSocket;
  /** The `fetch` to post the WebRTC offer with (default the global one). */
  fetch?: typeof fetch;
}

/** A browser's netcode connection: the `Client` and the transport it runs on. */
export interface BrowserConnection {
  /** The netcode client (`send`, `sendRaw`, `stats`, `state`, …): the same object as over UDP. */
  readonly client: Client;
  /** The transport in use (it becomes `'websocket'` when the connection moved: `resumeAfterMs`). */
  readonly transport: BrowserTransport;
  /** True while the block lane goes over a WebSocket of its own (`ConnectOptions.bulk`). */
  readonly bulk: boolean;
  /**
   * Close the client (its redundant DISCONNECTs leave), then its transports. Done by itself once the
   * client is `disconnected` (the server ended it, a timeout, a refusal); safe to call again.
   */
  close(): Promise<void>;
  /**
   * Pass both directions through the simulator's `Link` (loss, latency and jitter in ms, rate, …; the
   * same settings each way), on the real clock, to see how the game plays on a worse network; call
   * again to change it, or with `undefined` to stop. Throws `GamewireError('invalid-config')` on bad
   * settings. The connection's stats then show the simulated path. The block lane's own WebSocket
   * (`bulk`), if open, is closed first: the simulated links carry one transport.
   */
  simulate(config: Partial<LinkConfig> | undefined): void;
}

/** An open transport, before the netcode client runs on it. */
interface Pipe {
  readonly kind: BrowserTransport;
  readonly transport: NetcodeTransport;
  send(bytes: Uint8Array): void;
  /** True while the transport holds more than the client lets wait there. */
  full(): boolean;
  /** Call `wake` once the transport can take more after `full()` said true. */
  onDrain(wake: () => void): void;
  onMessage(handle: (bytes: Uint8Array) => void): void;
  onClose(handle: () => void): void;
  close(): void;
  /** Runs the drive loop's deferred drains (see `taskQueue`). */
  defer(task: () => void): void;
}

/**
 * Data channel: bytes waiting above which the client holds datagrams back (two full ones), and below
 * which it resumes. SCTP's window under loss is small: datagrams wait in our lanes (where later
 * messages merge into them) rather than behind it.
 */
const CHANNEL_HIGH_BYTES = 2400;
const CHANNEL_LOW_BYTES = 1200;
/**
 * WebSocket: bytes waiting in the browser above which the client holds datagrams back, looked at again
 * every `WEBSOCKET_DRAIN_POLL_MS` (a WebSocket has no drain event). TCP's own buffer lies beyond it;
 * the path's delay-based rate keeps that short.
 */
const WEBSOCKET_HIGH_BYTES = 65_536;
const WEBSOCKET_DRAIN_POLL_MS = 5;
/**
 * The browser's end of the data channel (pre-negotiated: the server's end has the same label and id):
 * unordered, each SCTP chunk resent at most once. Not 0: an abandoned chunk holds the peer's
 * cumulative ack until a FORWARD-TSN gets through, which Chromium sends at most once per round trip;
 * when one is lost the retransmission timer fires, the congestion window drops to one packet and
 * grows only as that ack moves, so at 10 % loss sends stalled for seconds. Not unlimited: Chromium
 * resends a lost chunk again on every third SACK, before the first resend could have arrived.
 */
const CHANNEL_INIT: RTCDataChannelInit = { negotiated: true, id: 0, ordered: false, maxRetransmits: 1 };
/** Refusals of the token: every transport would be refused the same way, so none is tried after one. */
const FINAL: ReadonlySet<ConnectFailure> = new Set(['invalid', 'expired', 'wrong-server', 'already-connected', 'used', 'full']);
const SIGNALLING_ERRORS: readonly ConnectFailure[] = [
  'invalid', 'expired', 'wrong-server', 'already-connected', 'used', 'full', 'busy', 'bad-request', 'ice-timeout',
];

function base64(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += String.fromCharCode(b[i]!);
  return btoa(s);
}

/**
 * Connect to a gamewire server (`BrowserGateway`) from a browser: over WebRTC (one pre-negotiated
 * unordered data channel whose chunks SCTP resends at most once), falling back to a WebSocket when
 * WebRTC fails or is slow to open (`transports`, `fallbackAfterMs`), and run a netcode `Client` on
 * the transport that opened first (handshake, encryption, lanes, stats: the same as over UDP).
 * Resolves once a transport is open and the netcode handshake has started (`transport` says which);
 * `onEvent` then sees `connected` (or `disconnected` with the reason). Rejects with {@link ConnectError}; throws
 * `GamewireError('invalid-argument')` for a missing token, URL or handler, `invalid-config` for bad
 * client options.
 */
export async function connect(options: ConnectOptions): Promise<BrowserConnection> {
  const { url, token, onEvent } = options;
  if (typeof url !== 'string' || !/^https?:\/\//i.test(url)) throw new GamewireError('invalid-argument', 'url must be the http(s) URL of the server\'s gateway');
  if (!(token instanceof Uint8Array) || token.length !== CONNECT_TOKEN_BYTES) {
    throw new GamewireError('invalid-argument', `token must be the ${CONNECT_TOKEN_BYTES}-byte connect token`);
  }
  if (typeof onEvent !== 'function') throw new GamewireError('invalid-argument', 'onEvent must be a function');
  const {
    url: _u, token: _t, onEvent: _e, onError, logger, transports, fallbackAfterMs, openTimeoutMs, resumeAfterMs, rtcConfiguration,
    RTCPeerConnection: Rtc, WebSocket: Ws, fetch: doFetch, bulk, ...clientOptions
  } = options;
  if (bulk !== undefined && typeof bulk !== 'boolean') throw new GamewireError('invalid-argument', 'bulk must be a boolean');
  if (onError !== undefined && typeof onError !== 'function') throw new GamewireError('invalid-argument', 'onError must be a function');
  if (logger !== undefined && !isLogger(logger)) throw new GamewireError('invalid-argument', 'logger must have an error(message, error) method');
  const order = transports ?? ['webrtc', 'websocket'];
  if (!Array.isArray(order) || order.length === 0 || order.some((t) => t !== 'webrtc' && t !== 'websocket') || new Set(order).size !== order.length) {
    throw new GamewireError('invalid-argument', "transports must list 'webrtc' and/or 'websocket', each once");
  }
  const fallbackMs = fallbackAfterMs ?? 2500;
  const timeoutMs = openTimeoutMs ?? 10_000;
  const resumeMs = resumeAfterMs ?? 2000;
  for (const [name, v] of [['fallbackAfterMs', fallbackMs], ['openTimeoutMs', timeoutMs], ['resumeAfterMs', resumeMs]] as const) {
    if (typeof v !== 'number' || !(v >= 0) || !Number.isFinite(v)) throw new GamewireError('invalid-argument', `${name} must be a number of ms ≥ 0`);
  }
  // Bad client options throw here, before anything goes on the network.
  new Client(clientOptions, WEBRTC_TRANSPORT);
  const openers: Record<BrowserTransport, Opener> = {
    webrtc: (signal, hurry) => openWebRtc(url, token, signal, hurry, Rtc ?? globalThis.RTCPeerConnection, rtcConfiguration, doFetch ?? globalThis.fetch.bind(globalThis)),
    websocket: (signal) => openWebSocket(url, webSocketProtocols(token), signal, Ws ?? globalThis.WebSocket),
  };
  const pipe = await firstOpen(order, openers, fallbackMs, timeoutMs);
  const resume = order.includes('websocket') && resumeMs > 0
    ? { afterMs: resumeMs, open: (index: number, signal: AbortSignal) => openWebSocket(url, resumeProtocols(index), signal, Ws ?? globalThis.WebSocket) }
    : undefined;
  const openBulk = order.includes('websocket') && (bulk ?? true)
    ? (index: number, signal: AbortSignal) => openWebSocket(url, bulkProtocols(index), signal, Ws ?? globalThis.WebSocket)
    : undefined;
  return run(pipe, clientOptions, token, onEvent, onError ?? ((error: unknown) => {
    (logger ?? console).error('gamewire: onEvent threw; the connection goes on (pass onError to handle it):', error);
  }), resume, openBulk);
}

/** Connect over WebRTC only: {@link connect} with `transports: ['webrtc']`. */
export function connectWebRtc(options: Omit<ConnectOptions, 'transports' | 'fallbackAfterMs' | 'WebSocket'>): Promise<BrowserConnection> {
  return connect({ ...options, transports: ['webrtc'] });
}

/**
 * Opens one transport: rejects with a `ConnectError` when it fails or `signal` aborts; may call
 * `hurry` when it has a hint that it will not open (the next transport then starts at once, beside it).
 */
type Opener = (signal: AbortSignal, hurry: () => void) => Promise<Pipe>;

/**
 * Start the transports in `order`, each `fallbackMs` after the one before, or at once when it failed
 * or hurried; the first open wins. At `timeoutMs` every attempt is aborted and says why it ended.
 */
function firstOpen(order: readonly BrowserTransport[], openers: Record<BrowserTransport, Opener>, fallbackMs: number, timeoutMs: number): Promise<Pipe> {
  return new Promise((resolve, reject) => {
    const attempts: AbortController[] = [];
    const failures: Array<{ transport: BrowserTransport; reason: ConnectFailure; message: string }> = [];
    let settled = false;
    let started = 0;
    let running = 0;
    let next: ReturnType<typeof setTimeout> | undefined;
    const finish = (): void => {
      settled = true;
      clearTimeout(next);
      clearTimeout(overall);
      for (const a of attempts) a.abort();
    };
    const overall = setTimeout(() => {
      if (settled) return;
      clearTimeout(next);
      started = order.length;
      for (const a of attempts) a.abort(new ConnectError('timeout', `no transport opened within ${timeoutMs} ms`));
    }, timeoutMs);
    const start = (): void => {
      clearTimeout(next);
      if (settled || started >= order.length) return;
      const kind = order[started++]!;
      running++;
      const attempt = new AbortController();
      attempts.push(attempt);
      if (started < order.length) next = setTimeout(start, fallbackMs);
      openers[kind](attempt.signal, start).then((pipe) => {
        running--;
        if (settled) {
          pipe.close();
          return;
        }
        finish();
        resolve(pipe);
      }, (err: unknown) => {
        running--;
        if (settled) return;
        const e = err instanceof ConnectError ? err : new ConnectError('unreachable', String(err));
        const text = e.message.startsWith(`${e.reason}: `) ? e.message.slice(e.reason.length + 2) : e.message;
        failures.push({ transport: kind, reason: e.reason, message: text });
        if (FINAL.has(e.reason) || (started >= order.length && running === 0)) {
          finish();
          const message = failures.length === 1 ? text : failures.map((f) => `${f.transport} (${f.reason}): ${f.message}`).join('; ');
          reject(new ConnectError(e.reason, message, failures));
        } else {
          start();
        }
      });
    };
    start();
  });
}

/** The WebRTC transport: offer, signalling POST, answer, an open data channel. */
async function openWebRtc(
  url: string, token: Uint8Array, signal: AbortSignal, hurry: () => void, Peer: new (c?: RTCConfiguration) => RTCPeerConnection,
  rtcConfiguration: RTCConfiguration | undefined, post: typeof fetch,
): Promise<Pipe> {
  if (typeof Peer !== 'function') throw new ConnectError('no-candidates', 'this environment has no RTCPeerConnection');
  const pc = new Peer({ iceServers: [], ...rtcConfiguration });
  const dc = pc.createDataChannel('gamewire', CHANNEL_INIT);
  dc.binaryType = 'arraybuffer';
  let failure: ConnectError | undefined;
  let wakeFail: () => void = () => undefined;
  const fail = (e: ConnectError): void => {
    failure ??= e;
    wakeFail();
  };
  // No candidate gathered is a strong hint (UDP disabled by policy) but no proof: ICE may still find a
  // path from the server's candidates. The next transport starts at once; this one goes on trying.
  let noCandidates = false;
  const aborted = (): void => fail(noCandidates
    ? new ConnectError('no-candidates', 'the browser gathered no ICE candidate (UDP disabled by policy?) and the channel did not open')
    : signal.reason instanceof ConnectError ? signal.reason : new ConnectError('timeout', 'another transport opened first'));
  signal.addEventListener('abort', aborted);
  let candidates = 0;
  pc.onicecandidate = (e) => {
    if (e.candidate !== null && e.candidate.candidate !== '') candidates++;
  };
  // Looked at a task after gathering completed: some implementations report the candidates after it.
  pc.onicegatheringstatechange = () => {
    if (pc.iceGatheringState !== 'complete') return;
    setTimeout(() => {
      if (candidates === 0 && !(pc.localDescription?.sdp ?? '').includes('a=candidate:')) {
        noCandidates = true;
        hurry();
      }
    }, 0);
  };
  pc.oniceconnectionstatechange = () => {
    if (pc.iceConnectionState === 'failed') fail(new ConnectError('ice-failed', 'ICE found no path to the server (UDP blocked?)'));
  };
  const opened = new Promise<void>((resolve) => {
    dc.onopen = () => resolve();
    wakeFail = () => resolve();
  });
  const stop = (): never => {
    signal.removeEventListener('abort', aborted);
    dc.close();
    pc.close();
    throw failure!;
  };
  const check = (): void => {
    if (failure !== undefined) stop();
  };
  try {
    const offer = await pc.createOffer();
    await pc.setLocalDescription(offer);
    check();
    let res: Response;
    try {
      res = await post(url, {
        method: 'POST',
        // A CORS simple request: no preflight round trip before the offer (the body is JSON all the same).
        headers: { 'content-type': 'text/plain' },
        body: JSON.stringify({ token: base64(token), sdp: pc.localDescription?.sdp ?? offer.sdp }),
        signal,
      });
    } catch (err) {
      // An earlier failure (the abort that ended the request) stays the reason.
      fail(new ConnectError('unreachable', `signalling request failed: ${String(err)}`));
      return stop();
    }
    let body: { sdp?: unknown; error?: unknown } = {};
    try {
      body = (await res.json()) as typeof body;
    } catch {
      check();
    }
    if (!res.ok || typeof body.sdp !== 'string') {
      const reason = SIGNALLING_ERRORS.find((k) => k === body.error) ?? 'http';
      fail(new ConnectError(reason, `server answered ${res.status} ${typeof body.error === 'string' ? body.error : ''}`.trim()));
    }
    check();
    await pc.setRemoteDescription({ type: 'answer', sdp: body.sdp as string });
    await opened;
    check();
  } catch (err) {
    if (err instanceof ConnectError) throw err;
    dc.close();
    pc.close();
    signal.removeEventListener('abort', aborted);
    throw new ConnectError('unreachable', `WebRTC setup failed: ${String(err)}`);
  }
  signal.removeEventListener('abort', aborted);
  pc.onicegatheringstatechange = null;
  pc.oniceconnectionstatechange = null;
  dc.bufferedAmountLowThreshold = CHANNEL_LOW_BYTES;
  return {
    kind: 'webrtc',
    transport: WEBRTC_TRANSPORT,
    defer: (task) => void setTimeout(task, 0),
    send: (bytes) => {
      if (dc.readyState !== 'open') return;
      try {
        dc.send(bytes as Uint8Array<ArrayBuffer>);
      } catch {
        // Closing under us: the datagram is lost, as on any path; the lanes resend.
      }
    },
    full: () => dc.bufferedAmount > CHANNEL_HIGH_BYTES,
    onDrain: (wake) => {
      dc.onbufferedamountlow = wake;
    },
    onMessage: (handle) => {
      dc.onmessage = (e: MessageEvent) => {
        if (e.data instanceof ArrayBuffer) handle(new Uint8Array(e.data));
      };
    },
    onClose: (handle) => {
      dc.onclose = handle;
    },
    close: () => {
      dc.close();
      pc.close();
    },
  };
}

/** The WebSocket transport: the same URL as `ws:`/`wss:`, the token (or the client to resume) in the subprotocols. */
function openWebSocket(url: string, protocols: string[], signal: AbortSignal, Ws: new (url: string, protocols?: string | string[]) => WebSocket): Promise<Pipe> {
  return new Promise((resolve, reject) => {
    if (typeof Ws !== 'function') {
      reject(new ConnectError('websocket', 'this environment has no WebSocket (pass the WebSocket option)'));
      return;
    }
    let ws: WebSocket;
    try {
      ws = new Ws(url.replace(/^http/i, 'ws'), protocols);
    } catch (err) {
      reject(new ConnectError('websocket', `cannot open a WebSocket to ${url}: ${String(err)}`));
      return;
    }
    ws.binaryType = 'arraybuffer';
    const aborted = (): void => {
      ws.close();
      reject(signal.reason instanceof ConnectError ? signal.reason : new ConnectError('timeout', 'another transport opened first'));
    };
    signal.addEventListener('abort', aborted);
    ws.onerror = () => undefined;
    ws.onclose = (e: CloseEvent) => {
      signal.removeEventListener('abort', aborted);
      reject(new ConnectError('websocket', `the WebSocket did not open (code ${e.code}: the token refused, the server unreachable, or TCP blocked)`));
    };
    ws.onopen = () => {
      signal.removeEventListener('abort', aborted);
      if (ws.protocol !== WEBSOCKET_PROTOCOL) {
        ws.close();
        reject(new ConnectError('websocket', `the server chose subprotocol '${ws.protocol}', not '${WEBSOCKET_PROTOCOL}'`));
        return;
      }
      ws.onclose = null;
      let drainTimer: ReturnType<typeof setTimeout> | undefined;
      resolve({
        kind: 'websocket',
        transport: WEBSOCKET_TRANSPORT,
        defer: taskQueue(),
        send: (bytes) => {
          if (ws.readyState === 1) ws.send(bytes as Uint8Array<ArrayBuffer>);
        },
        full: () => ws.bufferedAmount > WEBSOCKET_HIGH_BYTES,
        onDrain: (wake) => {
          const poll = (): void => {
            drainTimer = undefined;
            if (ws.readyState > 1) return;
            if (ws.bufferedAmount > WEBSOCKET_HIGH_BYTES) drainTimer = setTimeout(poll, WEBSOCKET_DRAIN_POLL_MS);
            else wake();
          };
          drainTimer ??= setTimeout(poll, WEBSOCKET_DRAIN_POLL_MS);
        },
        onMessage: (handle) => {
          ws.onmessage = (e: MessageEvent) => {
            if (e.data instanceof ArrayBuffer) handle(new Uint8Array(e.data));
          };
        },
        onClose: (handle) => {
          ws.onclose = () => {
            clearTimeout(drainTimer);
            handle();
          };
        },
        close: () => {
          clearTimeout(drainTimer);
          ws.close(1000);
        },
      });
    };
  });
}

/**
 * Runs a task after the current one. Browsers hold a `setTimeout(0)` called from nested timers (as a
 * game loop's are) for at least 4 ms; a message posted to a `MessageChannel` is not held. The
 * WebSocket's drains use it; the data channel's keep `setTimeout(0)`, whose hold merges what a game
 * sends in those milliseconds into fewer datagrams: unheld, a data channel carried about twice the
 * packets (each costing SCTP acknowledgements and window) and stalled longer.
 */
function taskQueue(): (task: () => void) => void {
  if (typeof MessageChannel !== 'function') return (task) => void setTimeout(task, 0);
  const channel = new MessageChannel();
  const tasks: Array<() => void> = [];
  channel.port1.onmessage = () => tasks.shift()?.();
  // In Node a port with a listener would keep the process alive.
  (channel.port1 as { unref?: () => void }).unref?.();
  return (task) => {
    tasks.push(task);
    channel.port2.postMessage(null);
  };
}

/** How a connection moves to a new WebSocket: after how long without a datagram (ms), and how it opens one for its client index. */
interface Resume {
  afterMs: number;
  open(clientIndex: number, signal: AbortSignal): Promise<Pipe>;
}

/** How long (ms) opening a WebSocket to move to (or for the block lane) may take; how often (ms) the silence is looked at. */
const RESUME_OPEN_MS = 5000;
/** The client's name for the block lane's WebSocket (its datagrams' `to`). */
const BULK_ADDRESS = 'bulk';
/**
 * When the block lane's WebSocket cannot open (refused, or TCP's handshake slow under loss) or closes
 * under a connected client (a network blip; a proxy that closes idle connections, since it carries
 * nothing between blocks), it is opened again after this long
 * (ms), doubling, at most `BULK_REOPENS` times in a row; one that stayed up `BULK_STABLE_MS` (ms)
 * starts the count over.
 */
const BULK_REOPEN_MS = 1000;
const BULK_REOPENS = 3;
const BULK_STABLE_MS = 30_000;
const RESUME_CHECK_MS = 250;

/**
 * Run a netcode client on `first` with the browser's timers. With `resume`, a connected client whose
 * transport closes or falls silent for `resume.afterMs` moves to a new WebSocket: its next
 * packet there, sealed with its key, proves it to the server, which moves it (`migrated`); the lanes
 * resend what the old transport lost. One move at a time; a move that fails leaves the client to
 * netcode's timeout.
 */
function run(
  first: Pipe, clientOptions: ClientOptions, token: Uint8Array, onEvent: (e: ClientEvent) => void,
  onError: (error: unknown, event: ClientEvent) => void, resume: Resume | undefined,
  openBulk: ((clientIndex: number, signal: AbortSignal) => Promise<Pipe>) | undefined,
): BrowserConnection {
  const client = new Client(clientOptions, first.transport);
  const scratch = new Uint8Array(1500);
  const now = (): number => performance.now();
  const path = new SimulatedEndpoint(client, 1);
  let pipe = first;
  let held = false;
  let closing = false;
  let moving = false;
  let heardAt = now();
  let bulk: Pipe | undefined;
  let bulkHeld = false;
  let bulkReopens = 0;
  let bulkTimer: ReturnType<typeof setTimeout> | undefined;
  let simulating = false;
  const sendBulk = (bytes: Uint8Array): void => {
    const b = bulk;
    if (b === undefined) return;
    b.send(bytes);
    if (bulkHeld || !b.full()) return;
    bulkHeld = true;
    client.holdBulk(true);
    b.onDrain(() => {
      if (b !== bulk) return;
      bulkHeld = false;
      client.holdBulk(false);
      loop.wake();
    });
  };
  const loop = new DriveLoop<ClientEvent, ReturnType<typeof setTimeout>>(path, {
    now,
    send: (bytes, length, to) => (to === BULK_ADDRESS ? sendBulk : pipe.send)(bytes.subarray(0, length)),
    buffer: () => {
      if (!pipe.full()) return scratch;
      if (!held) {
        held = true;
        const holding = pipe;
        pipe.onDrain(() => {
          if (holding !== pipe) return;
          held = false;
          loop.wake();
        });
      }
      return undefined;
    },
    setTimer: (ms, fire) => setTimeout(fire, ms),
    clearTimer: (t) => clearTimeout(t),
    defer: (task) => pipe.defer(task),
  }, {
    onEvent: (e) => {
      if (e.type === 'connected' && openBulk !== undefined && client.hasBlockLane) void startBulk(e.clientIndex);
      if (e.type === 'disconnected') void release();
      onEvent(e);
    },
    onError, maxDatagramBytes: scratch.length,
  });
  const startBulk = async (index: number): Promise<void> => {
    let next: Pipe;
    try {
      next = await openBulk!(index, AbortSignal.timeout(RESUME_OPEN_MS));
    } catch {
      // Refused, unreachable, or slower than RESUME_OPEN_MS (TCP's handshake under loss): blocks go on
      // the connection's transport meanwhile.
      reopenBulk(index);
      return;
    }
    if (closing || simulating || client.state !== 'connected' || !client.bindBulk(BULK_ADDRESS, next.transport)) {
      next.close();
      return;
    }
    bulk = next;
    bulkHeld = false;
    next.onMessage((bytes) => {
      if (next === bulk) loop.handleDatagram(BULK_ADDRESS, bytes);
    });
    const boundAt = now();
    next.onClose(() => {
      if (next !== bulk) return;
      stopBulk(next);
      if (now() - boundAt >= BULK_STABLE_MS) bulkReopens = 0;
      reopenBulk(index);
    });
    loop.wake();
  };
  const reopenBulk = (index: number): void => {
    if (bulkReopens >= BULK_REOPENS || closing || simulating || client.state !== 'connected') return;
    bulkTimer = setTimeout(() => void startBulk(index), BULK_REOPEN_MS * 2 ** bulkReopens++);
  };
  const stopBulk = (b: Pipe): void => {
    if (b !== bulk) return;
    bulk = undefined;
    bulkHeld = false;
    client.unbindBulk();
    b.close();
    loop.wake();
  };
  const move = async (): Promise<void> => {
    if (resume === undefined || moving || closing || client.state !== 'connected') return;
    moving = true;
    const signal = AbortSignal.timeout(RESUME_OPEN_MS);
    try {
      const next = await resume.open(client.slot.clientIndex, signal);
      if (closing) {
        next.close();
        return;
      }
      const old = pipe;
      pipe = next;
      client.changeTransport(next.transport);
      held = false;
      heardAt = now();
      attach(next);
      old.close();
      loop.wake();
    } catch {
      // The server refused, or cannot be reached: netcode's timeout ends the connection.
    } finally {
      moving = false;
    }
  };
  const attach = (p: Pipe): void => {
    p.onMessage((bytes) => {
      if (p !== pipe) return;
      heardAt = now();
      loop.handleDatagram(client.serverAddress ?? '', bytes);
    });
    p.onClose(() => {
      if (p !== pipe) return;
      if (resume !== undefined && !closing && client.state === 'connected') void move();
      else void loop.close();
    });
  };
  attach(first);
  const watch = resume === undefined ? undefined : setInterval(() => {
    if (client.state !== 'connected' && client.state !== 'sending-request' && client.state !== 'sending-response') {
      clearInterval(watch);
      return;
    }
    if (client.state === 'connected' && now() - heardAt > resume.afterMs) void move();
  }, RESUME_CHECK_MS);
  let released = Promise.resolve();
  function release(): Promise<void> {
    if (closing) return released;
    closing = true;
    // Begun after this call returns, so a close() from an event handler the teardown fires gets this promise.
    released = Promise.resolve().then(async () => {
      clearInterval(watch);
      clearTimeout(bulkTimer);
      if (bulk !== undefined) stopBulk(bulk);
      client.close();
      await loop.close();
      // The transport may still hold the DISCONNECTs: give them a moment before it goes.
      await new Promise((r) => setTimeout(r, 100));
      pipe.close();
    });
    return released;
  }
  client.connect(now(), token);
  loop.wake();
  return {
    client,
    get transport() {
      return pipe.kind;
    },
    get bulk() {
      return bulk !== undefined;
    },
    simulate(config) {
      path.configure(now(), config);
      simulating = config !== undefined;
      if (simulating) {
        clearTimeout(bulkTimer);
        if (bulk !== undefined) stopBulk(bulk);
      }
      loop.wake();
    },
    close: release,
  };
}
