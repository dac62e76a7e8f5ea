// The WebSocket transport, Node to Node over loopback: a netcode Server on its UdpDriver with a
// BrowserGateway beside it, and clients made by connect() on the `ws` package's WebSocket (the
// browser's API). Real sockets, so adapter tests only.
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { performance } from 'node:perf_hooks';
import ndc from 'node-datachannel';
import { RTCPeerConnection as PolyfillPeer } from 'node-datachannel/polyfill';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { type BrowserConnection, connect, ConnectError } from '../../src/adapters/browser/connect.js';
import { BrowserGateway, type BrowserGatewayOptions } from '../../src/adapters/node/gateway.js';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { type LaneStats } from '../../src/channels/channels.js';
import { type BlockLaneStats } from '../../src/connection/blocks.js';
import { type Path } from '../../src/congestion/path.js';
import { type ClientEvent } from '../../src/netcode/client.js';
import { NETCODE_PACKET_OVERHEAD_BYTES, WEBSOCKET_TRANSPORT } from '../../src/netcode/options.js';
import { Server, type ServerClient, type ServerEvent } from '../../src/netcode/server.js';
import { bulkProtocols, resumeProtocols, webSocketProtocols } from '../../src/netcode/websocket-protocol.js';
import { generateConnectToken } from '../../src/netcode/wire.js';
import { gamewire, waitForStderr } from './helpers.js';

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 11);
const PROTOCOL = 0x78n;
const LANES = [
  { mode: 'reliable-ordered' }, { mode: 'reliable-unordered' }, { mode: 'unreliable' }, { mode: 'unreliable-sequenced' },
  { mode: 'notify' }, { mode: 'block' },
] as const;
const Ws = WebSocket as unknown as new (url: string, protocols?: string | string[]) => globalThis.WebSocket;

/** node-datachannel's RTCPeerConnection bound to loopback; remembers the last one made (to cut it). */
class LoopbackPeer extends PolyfillPeer {
  static last: LoopbackPeer | undefined;
  channel: { close(): void } | undefined;

  constructor(config: RTCConfiguration = {}) {
    super({ ...config, peerConnection: new ndc.PeerConnection('client', { iceServers: [], bindAddress: '127.0.0.1' }) } as RTCConfiguration);
    LoopbackPeer.last = this;
  }

  override createDataChannel(label: string, init?: RTCDataChannelInit): ReturnType<PolyfillPeer['createDataChannel']> {
    const dc = super.createDataChannel(label, init);
    this.channel = dc;
    return dc;
  }
}
const Loopback = LoopbackPeer as unknown as new (c?: RTCConfiguration) => RTCPeerConnection;

const until = async (cond: () => boolean, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

/** A netcode server on loopback that echoes every message, its driver, and (with options) a gateway on it. */
async function echoServer(gatewayOptions?: BrowserGatewayOptions, migration = true): Promise<{
  server: Server; driver: UdpDriver<ServerEvent>; gateway: BrowserGateway; events: ServerEvent[]; close(): Promise<void>;
}> {
  const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: ['127.0.0.1:40002'], unixTime: systemUnixTime, lanes: LANES, maxClients: 8, migration });
  const driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port: 0 });
  const events: ServerEvent[] = [];
  driver.on('event', (e) => {
    events.push(e);
    if (e.type === 'message') e.client.send(e.lane, e.bytes);
  });
  const gateway = gatewayOptions === undefined ? undefined : await BrowserGateway.open(driver, server, { host: '127.0.0.1', ...gatewayOptions });
  return {
    server, driver, gateway: gateway!, events,
    async close() {
      server.close();
      await driver.close({ linger: { quietMs: 50, maxMs: 300 } });
      await gateway?.close();
    },
  };
}

/** An RTCPeerConnection stand-in whose ICE fails, never opens, or gathers nothing (UDP blocked three ways). */
function fakePeer(mode: 'ice-failed' | 'never' | 'no-candidates'): new () => RTCPeerConnection {
  return class {
    iceGatheringState = 'new';
    iceConnectionState = 'new';
    localDescription: { sdp: string } | null = null;
    onicecandidate: ((e: { candidate: null }) => void) | null = null;
    onicegatheringstatechange: (() => void) | null = null;
    oniceconnectionstatechange: (() => void) | null = null;
    createDataChannel(): object {
      return { close: () => undefined, binaryType: 'arraybuffer' };
    }
    async createOffer(): Promise<{ type: string; sdp: string }> {
      return { type: 'offer', sdp: 'v=0\r\n' };
    }
    async setLocalDescription(d: { sdp: string }): Promise<void> {
      this.localDescription = d;
      if (mode === 'no-candidates') {
        setTimeout(() => {
          this.iceGatheringState = 'complete';
          this.onicegatheringstatechange?.();
        }, 20);
      }
    }
    async setRemoteDescription(): Promise<void> {
      if (mode === 'ice-failed') {
        setTimeout(() => {
          this.iceConnectionState = 'failed';
          this.oniceconnectionstatechange?.();
        }, 20);
      }
    }
    close(): void {}
  } as unknown as new () => RTCPeerConnection;
}

describe('WebSocket transport (ws, loopback)', () => {
  let server: Server;
  let gateway: BrowserGateway;
  let serverEvents: ServerEvent[];
  let closeRig: () => Promise<void>;
  let nextId = 1n;

  const token = (o: { ageSeconds?: number } = {}): Uint8Array => generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId: nextId++, serverAddresses: ['127.0.0.1:40002'],
    nowUnixSeconds: Math.floor(systemUnixTime()) - (o.ageSeconds ?? 0), expireSeconds: 30, timeoutSeconds: 5,
  });

  const open = (t: Uint8Array, events: ClientEvent[], more: Partial<Parameters<typeof connect>[0]> = {}): Promise<BrowserConnection> => connect({
    url: gateway.url, token: t, lanes: LANES, onEvent: (e) => events.push(e), transports: ['websocket'], WebSocket: Ws, ...more,
  });

  /** The server's side of `conn` once its block lane's WebSocket has opened (`timeoutMs`) and proved itself there (its first packet). */
  const bulkBound = async (conn: BrowserConnection, timeoutMs?: number): Promise<ServerClient> => {
    await until(() => conn.bulk, timeoutMs);
    const sc = server.clients().find((c) => c.clientIndex === conn.client.slot.clientIndex)!;
    await until(() => sc.bulkAddress !== undefined);
    return sc;
  };

  /** A raw WebSocket request with these subprotocols: the HTTP status of the refusal, or 101. */
  const rawStatus = async (protocols: string[], headers: Record<string, string> = {}, url = gateway.url): Promise<number> => {
    const ws = new WebSocket(url.replace('http', 'ws'), protocols, { headers });
    ws.on('error', () => undefined);
    return new Promise((resolve) => {
      ws.on('unexpected-response', (_req, res) => {
        resolve(res.statusCode ?? 0);
        ws.terminate();
      });
      ws.on('open', () => {
        resolve(101);
        ws.close();
      });
    });
  };

  beforeAll(async () => {
    ({ server, gateway, events: serverEvents, close: closeRig } = await echoServer({ handshakeTimeoutMs: 1000 }));
  });

  afterAll(() => closeRig());

  it('every delivery mode and a 1 MiB block over a WebSocket, one ServerClient, nothing sent twice, a clean disconnect', async () => {
    const events: ClientEvent[] = [];
    const conn = await open(token(), events, { bulk: false });
    expect(conn.transport).toBe('websocket');
    await until(() => events.some((e) => e.type === 'connected'));
    const sc = server.clients().find((c) => c.address.startsWith('ws:'));
    expect(sc).toBeDefined();
    const N = 40;
    for (let i = 0; i < N; i++) for (let lane = 0; lane < 5; lane++) conn.client.send(lane, Uint8Array.of(lane, i));
    const block = Uint8Array.from({ length: 1 << 20 }, (_, i) => (i * 7) & 255);
    conn.client.send(5, block);
    const onLane = (lane: number): number[] => events.flatMap((e) => (e.type === 'message' && e.lane === lane ? [e.bytes[1]!] : []));
    await until(() => [0, 1, 2, 3].every((l) => onLane(l).length === N) && events.some((e) => e.type === 'message' && e.lane === 5), 15_000);
    const inOrder = Array.from({ length: N }, (_, i) => i);
    expect(onLane(0)).toEqual(inOrder);
    expect([...onLane(1)].sort((a, b) => a - b)).toEqual(inOrder);
    expect(onLane(2)).toEqual(inOrder); // a reliable transport loses nothing, reorders nothing
    expect(onLane(3)).toEqual(inOrder);
    const back = events.find((e) => e.type === 'message' && e.lane === 5);
    expect(back?.type === 'message' && back.bytes).toEqual(block);
    await until(() => events.filter((e) => e.type === 'delivery' && e.lane === 4).length === N);
    expect(events.filter((e) => e.type === 'delivery' && e.lane === 4).every((e) => e.type === 'delivery' && e.delivered)).toBe(true);
    const stats = conn.client.stats()!;
    expect(stats.srttMs).toBeGreaterThan(0);
    const message = stats.lanes.flatMap((l) => (l.mode === 'block' ? [] : [l]));
    expect(message).toHaveLength(5);
    for (const l of message) expect({ resent: l.resent, redundant: l.redundant, lost: l.lost }).toEqual({ resent: 0, redundant: 0, lost: 0 });
    expect(gateway.counters()).toMatchObject({ upgrades: 1, webSockets: 1, badMessages: 0, sendDropped: 0 });
    await conn.close();
    await until(() => serverEvents.some((e) => e.type === 'disconnected' && e.client === sc && e.reason === 'peer'));
    await until(() => gateway.size === 0, 3000);
  }, 30_000);

  it('refuses a bad token before the upgrade completes (HTTP 401), and malformed requests with 400/404/403', async () => {
    const before = gateway.counters();
    const foreign = generateConnectToken({
      protocolId: PROTOCOL, privateKey: new Uint8Array(32), clientId: 99n, serverAddresses: ['127.0.0.1:40002'],
      nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
    });
    expect(await rawStatus(webSocketProtocols(foreign))).toBe(401);
    expect(await rawStatus(webSocketProtocols(token({ ageSeconds: 60 })))).toBe(401);
    expect(await rawStatus(['gamewire'])).toBe(400);
    expect(await rawStatus(['gamewire', 'gamewire.token.AAAA'])).toBe(400);
    expect(await rawStatus([webSocketProtocols(token())[1]])).toBe(400);
    const c = gateway.counters();
    expect(c.tokensRefused - before.tokensRefused).toBe(2);
    expect(c.badRequests - before.badRequests).toBe(3);
    expect(c.webSockets).toBe(before.webSockets);
    expect(gateway.size).toBe(0);
    // connect() reports a refused WebSocket as 'websocket' (a browser cannot read the status).
    await expect(open(foreign, [])).rejects.toMatchObject({ reason: 'websocket' });
  });

  it('one token, one WebSocket at a time: a second upgrade with the same token is refused 409', async () => {
    const t = token();
    const first = new WebSocket(gateway.url.replace('http', 'ws'), webSocketProtocols(t));
    await once(first, 'open');
    expect(await rawStatus(webSocketProtocols(t))).toBe(409);
    first.close();
    await until(() => gateway.size === 0);
  });

  it('the server starts the handshake: its challenge comes on a WebSocket before the client sends anything', async () => {
    const before = server.counters().challengesSent;
    const ws = new WebSocket(gateway.url.replace('http', 'ws'), webSocketProtocols(token()));
    const got = await new Promise<Uint8Array>((resolve, reject) => {
      ws.once('message', (d: Buffer) => resolve(new Uint8Array(d)));
      setTimeout(() => reject(new Error('no challenge within 3 s')), 3000);
    });
    expect(got[0]! & 0x0f).toBe(2); // netcode's connection challenge
    expect(server.counters().challengesSent).toBe(before + 1);
    ws.terminate();
  });

  it('drops text and junk, closes on an oversized frame, and a socket that never handshakes is closed after handshakeTimeoutMs', async () => {
    const before = gateway.counters();
    const ws = new WebSocket(gateway.url.replace('http', 'ws'), webSocketProtocols(token()));
    await once(ws, 'open');
    ws.send('hello');
    for (let i = 0; i < 50; i++) ws.send(Uint8Array.from({ length: 100 }, () => i));
    const events: ClientEvent[] = [];
    const player = await open(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    ws.send(new Uint8Array(4000));
    const [code] = (await once(ws, 'close')) as [number];
    expect(code).toBe(1009);
    const c = gateway.counters();
    expect(c.badMessages - before.badMessages).toBeGreaterThanOrEqual(2);
    expect(server.counters().host).toBeDefined();
    // Silent socket: closed by the handshake timeout, its slot free.
    const silent = new WebSocket(gateway.url.replace('http', 'ws'), webSocketProtocols(token()));
    await once(silent, 'open');
    const started = performance.now();
    await once(silent, 'close');
    expect(performance.now() - started).toBeLessThan(2500);
    expect(gateway.counters().handshakeTimeouts - before.handshakeTimeouts).toBeGreaterThanOrEqual(1);
    player.client.send(0, Uint8Array.of(1));
    await until(() => events.some((e) => e.type === 'message'));
    await player.close();
  }, 15_000);

  it('a client that stops reading costs the server a bounded queue: above it datagrams are dropped and counted, the socket kept', async () => {
    const events: ClientEvent[] = [];
    const conn = await open(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    const sc = server.clients().filter((c) => c.address.startsWith('ws:')).at(-1)!;
    // The server's end of it, as if its kernel buffers were full and 1 MiB waited in the WebSocket.
    const peer = (gateway as unknown as { peers: Map<string, { ws: { bufferedAmount: number } }> }).peers.get(sc.address)!;
    Object.defineProperty(peer.ws, 'bufferedAmount', { value: 1 << 20, configurable: true });
    const before = gateway.counters().sendDropped;
    for (let i = 0; i < 20; i++) sc.send(2, new Uint8Array(100));
    await until(() => gateway.counters().sendDropped - before >= 1);
    const heard = events.filter((e) => e.type === 'message').length;
    delete (peer.ws as { bufferedAmount?: number }).bufferedAmount;
    // Drained again: the connection carries on, and the reliable lane recovers what was dropped.
    sc.send(0, Uint8Array.of(42));
    await until(() => events.some((e) => e.type === 'message' && e.lane === 0 && e.bytes[0] === 42));
    expect(heard).toBe(0);
    await conn.close();
  });

  it('falls back to the WebSocket at once when ICE fails or gathers nothing, and after fallbackAfterMs when WebRTC hangs', async () => {
    for (const mode of ['ice-failed', 'no-candidates'] as const) {
      const started = performance.now();
      const conn = await open(token(), [], {
        transports: ['webrtc', 'websocket'], RTCPeerConnection: fakePeer(mode), fallbackAfterMs: 5000,
        fetch: (async () => new Response(JSON.stringify({ type: 'answer', sdp: 'v=0\r\n' }), { status: 200 })) as typeof fetch,
      });
      expect(conn.transport).toBe('websocket');
      expect(performance.now() - started).toBeLessThan(2000);
      await conn.close();
    }
    const started = performance.now();
    const conn = await open(token(), [], {
      transports: ['webrtc', 'websocket'], RTCPeerConnection: fakePeer('never'), fallbackAfterMs: 300,
      fetch: (async () => new Response(JSON.stringify({ type: 'answer', sdp: 'v=0\r\n' }), { status: 200 })) as typeof fetch,
    });
    expect(conn.transport).toBe('websocket');
    expect(performance.now() - started).toBeGreaterThanOrEqual(290);
    await conn.close();
  });

  it('a refused token ends the attempt: no fallback, every transport that failed is listed', async () => {
    const err = await open(token({ ageSeconds: 60 }), [], {
      transports: ['webrtc', 'websocket'], RTCPeerConnection: fakePeer('never'), fetch: globalThis.fetch,
    }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).reason).toBe('expired');
    expect((err as ConnectError).failures.map((f) => f.transport)).toEqual(['webrtc']);
  });

  it('a gateway with webrtc: false answers offers 405 no-webrtc, and connect() goes on to the WebSocket', async () => {
    const rig = await echoServer({ webrtc: false });
    const g2 = rig.gateway;
    try {
      expect(g2.udpPort).toBeUndefined();
      const res = await fetch(g2.url, { method: 'POST', body: '{}' });
      expect(res.status).toBe(405);
      expect(await res.json()).toEqual({ error: 'no-webrtc' });
      const conn = await open(token(), [], { url: g2.url, transports: ['webrtc', 'websocket'], RTCPeerConnection: fakePeer('never'), fetch: globalThis.fetch });
      expect(conn.transport).toBe('websocket');
      // Closing the gateway with a WebSocket open ends it at once (the HTTP server waits for its TCP connections).
      const started = performance.now();
      await rig.close();
      expect(performance.now() - started).toBeLessThan(2000);
      await conn.close();
    } finally {
      await rig.close();
    }
  });

  it('a server with migration: false: the gateway answers a resumption 403 before the upgrade, and still takes tokens and block-lane WebSockets', async () => {
    const rig = await echoServer({}, false);
    try {
      const events: ClientEvent[] = [];
      const conn = await connect({ url: rig.gateway.url, token: token(), lanes: LANES, onEvent: (e) => events.push(e), transports: ['websocket'], WebSocket: Ws });
      await until(() => events.some((e) => e.type === 'connected'));
      expect(await rawStatus(resumeProtocols(conn.client.slot.clientIndex), {}, rig.gateway.url)).toBe(403);
      expect(rig.server.clients()[0]!.address).toMatch(/^ws:/);
      // The block lane's own WebSocket moves no client: it is taken all the same.
      await until(() => conn.bulk && rig.server.clients()[0]!.bulkAddress !== undefined);
      await conn.close();
    } finally {
      await rig.close();
    }
  });

  it('bad options: nothing to serve, a tls without a key, a certificate Node cannot read', async () => {
    const { server: s3, driver: d3, close } = await echoServer();
    try {
      await expect(BrowserGateway.open(d3, s3, { webrtc: false, webSocket: false })).rejects.toMatchObject({ code: 'invalid-config' });
      await expect(BrowserGateway.open(d3, s3, { tls: { cert: 'x' } as never })).rejects.toMatchObject({ code: 'invalid-config' });
      await expect(BrowserGateway.open(d3, s3, { webrtc: false, tls: { cert: 'not a pem', key: 'nor this' } })).rejects.toMatchObject({ code: 'invalid-config' });
    } finally {
      await close();
    }
  });

  it('with tls: HTTPS signalling and WSS on one port, checked against the certificate; plain ws:// is not served', async () => {
    const here = new URL('../fixtures/tls/', import.meta.url);
    const cert = readFileSync(new URL('cert.pem', here));
    const key = readFileSync(new URL('key.pem', here));
    const rig = await echoServer({ tls: { cert: cert.toString(), key } });
    const g4 = rig.gateway;
    try {
      expect(g4.url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/gamewire$/);
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(g4.url, { method: 'POST', ca: cert }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end('{}');
      });
      expect(status).toBe(400); // a signalling answer, over TLS
      class Trusting extends WebSocket {
        constructor(url: string, protocols?: string | string[]) {
          super(url, protocols, { ca: cert });
        }
      }
      const events: ClientEvent[] = [];
      const conn = await open(token(), events, { url: g4.url, WebSocket: Trusting as unknown as typeof Ws });
      await until(() => events.some((e) => e.type === 'connected'));
      conn.client.send(0, Uint8Array.of(5));
      await until(() => events.some((e) => e.type === 'message' && e.bytes[0] === 5));
      await conn.close();
      // A client that does not trust the certificate does not connect.
      await expect(open(token(), [], { url: g4.url })).rejects.toMatchObject({ reason: 'websocket' });
      expect(await new Promise<string>((resolve) => {
        const plain = new WebSocket(g4.url.replace('https', 'ws'), webSocketProtocols(token()));
        plain.on('error', (e) => resolve(String(e)));
        plain.on('open', () => resolve('open'));
      })).not.toBe('open');
    } finally {
      await rig.close();
    }
  });

  it('a client whose WebRTC path dies moves to a WebSocket mid-stream: every reliable message once, in order, the same ServerClient and slot', async () => {
    const events: ClientEvent[] = [];
    const conn = await open(token(), events, { transports: ['webrtc', 'websocket'], RTCPeerConnection: Loopback });
    expect(conn.transport).toBe('webrtc');
    await until(() => events.some((e) => e.type === 'connected'));
    const sc = server.clients().find((c) => c.address.startsWith('webrtc:'))!;
    const N = 200;
    const inUse = gateway.counters().tokensInUse;
    let squatter: WebSocket | undefined;
    for (let i = 0; i < N; i++) {
      conn.client.send(0, Uint8Array.of(i & 255, i >> 8));
      if (i === 60) {
        // A stranger names this client in a resumption just before its path dies: the client's own must still get in.
        squatter = new WebSocket(gateway.url.replace('http', 'ws'), resumeProtocols(sc.clientIndex));
        squatter.on('error', () => undefined);
        await once(squatter, 'open');
        LoopbackPeer.last!.close(); // the data channel and its peer connection die
      }
      await new Promise((r) => setTimeout(r, 5));
    }
    const got = (): number[] => events.flatMap((e) => (e.type === 'message' && e.lane === 0 ? [e.bytes[0]! | (e.bytes[1]! << 8)] : []));
    await until(() => got().length >= N, 15_000);
    expect(got()).toEqual(Array.from({ length: N }, (_, i) => i));
    expect(conn.transport).toBe('websocket');
    expect(sc.address).toMatch(/^ws:\d+$/);
    expect(gateway.counters().tokensInUse).toBe(inUse); // the squatter did not get the client's own resumption refused
    squatter!.close();
    expect(serverEvents.filter((e) => e.type === 'migrated' && e.client === sc)).toEqual([{ type: 'migrated', client: sc, previous: expect.stringMatching(/^webrtc:/) }]);
    expect(serverEvents.some((e) => e.type === 'disconnected' && e.client === sc)).toBe(false);
    expect(server.counters().migrations).toBeGreaterThanOrEqual(1);
    // On the WebSocket the server's end rides nothing again (over WebRTC it rides every piece once).
    const rode = (): number => (sc.stats()!.lanes[0] as LaneStats).redundant;
    const ridden = rode();
    for (let i = 0; i < 50; i++) {
      sc.send(0, Uint8Array.of(i));
      await new Promise((r) => setTimeout(r, 5));
    }
    await until(() => events.filter((e) => e.type === 'message').length >= N + 50);
    expect(rode()).toBe(ridden);
    // The browser's end took the WebSocket's settings too (its 'auto' rides nothing on a lossless loopback, so look at its path).
    const path = (conn.client as unknown as { session: { path: Path } }).session.path;
    expect([path.overheadBytes, path.reliableTransport]).toEqual([WEBSOCKET_TRANSPORT.overheadBytes + NETCODE_PACKET_OVERHEAD_BYTES, true]);
    await conn.close();
    await until(() => serverEvents.some((e) => e.type === 'disconnected' && e.client === sc && e.reason === 'peer'));
    await until(() => gateway.size === 0, 3000);
  }, 30_000);

  it('a WebRTC path that falls silent (open, but nothing arrives) moves to a WebSocket after resumeAfterMs, and the gateway closes the path it left', async () => {
    const events: ClientEvent[] = [];
    const conn = await open(token(), events, { transports: ['webrtc', 'websocket'], RTCPeerConnection: Loopback, resumeAfterMs: 500 });
    await until(() => events.some((e) => e.type === 'connected'));
    const sc = server.clients().find((c) => c.address.startsWith('webrtc:') && c.clientIndex === conn.client.slot.clientIndex)!;
    const left = sc.address;
    type Dc = { bufferedAmount(): number; sendMessageBinary(b: Uint8Array): boolean; close(): void };
    const peers = (gateway as unknown as { peers: Map<string, { rtc?: { pc: unknown; dc: Dc } }> }).peers;
    // The server's end still open, its datagrams going nowhere: the client hears nothing.
    const rtc = peers.get(left)!.rtc!;
    const real = rtc.dc;
    rtc.dc = { bufferedAmount: () => 0, sendMessageBinary: () => true, close: () => real.close() };
    // And the client's close of the path it leaves never reaches the server (as on a dead network).
    const clientPc = LoopbackPeer.last!;
    const closePc = clientPc.close.bind(clientPc);
    clientPc.close = () => undefined;
    clientPc.channel!.close = () => undefined;
    await until(() => conn.transport === 'websocket' && sc.address.startsWith('ws:'), 5000);
    expect(peers.has(left)).toBe(false);
    conn.client.send(0, Uint8Array.of(7, 0));
    await until(() => events.some((e) => e.type === 'message' && e.bytes[0] === 7));
    await conn.close();
    closePc();
  }, 15_000);

  it('what the gateway hands a WebSocket is its own copy: the driver reuses its buffer for the next datagram', async () => {
    const events: ClientEvent[] = [];
    const conn = await open(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    const sc = server.clients().filter((c) => c.address.startsWith('ws:')).at(-1)!;
    const ws = (gateway as unknown as { peers: Map<string, { ws: { send(b: Uint8Array, o: object): void } }> }).peers.get(sc.address)!.ws;
    const handed: [Uint8Array, Uint8Array][] = [];
    const send = ws.send.bind(ws);
    ws.send = (b, o) => {
      handed.push([b, new Uint8Array(b)]); // a copy (a Buffer's slice() is a view)
      send(b, o);
    };
    for (let i = 0; i < 20; i++) sc.send(0, Uint8Array.from({ length: 300 }, () => i));
    await until(() => events.filter((e) => e.type === 'message').length >= 20);
    expect(handed.length).toBeGreaterThan(1);
    expect(handed.filter(([given, atTheTime]) => !Buffer.from(given).equals(atTheTime)).length).toBe(0);
    await conn.close();
  });

  it('a resumption it cannot prove moves nothing: a packet not sealed with the client\'s key is refused, the WebSocket closed; no such client is 404', async () => {
    const events: ClientEvent[] = [];
    const conn = await open(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    const sc = server.clients().find((c) => c.address.startsWith('ws:') && c.clientIndex === conn.client.slot.clientIndex)!;
    const before = { refused: server.counters().migrationsRefused, address: sc.address };
    const thief = new WebSocket(gateway.url.replace('http', 'ws'), resumeProtocols(sc.clientIndex));
    await once(thief, 'open');
    // A keep-alive's shape (prefix: type 4, one sequence byte) with a forged seal.
    thief.send(Uint8Array.from({ length: 1 + 1 + 8 + 16 }, (_, i) => (i === 0 ? 0x14 : i)));
    thief.send(new Uint8Array(30));
    await until(() => server.counters().migrationsRefused - before.refused >= 2);
    await once(thief, 'close'); // handshakeTimeoutMs
    expect(sc.address).toBe(before.address);
    expect((server as unknown as { claims: Map<string, number> }).claims.size).toBe(0); // released with its WebSocket
    conn.client.send(0, Uint8Array.of(9, 0));
    await until(() => events.some((e) => e.type === 'message' && e.bytes[0] === 9));
    expect(await rawStatus(resumeProtocols(7))).toBe(404);
    expect(await rawStatus(resumeProtocols(100))).toBe(400); // beyond maxClients
    await conn.close();
  }, 15_000);

  it('a WebRTC client\'s block lane goes over a WebSocket of its own, both ways, while its messages stay on the data channel; when that WebSocket dies, blocks go on over the channel until it is opened again', async () => {
    const sockets: CountingWs[] = [];
    class CountingWs extends WebSocket {
      sentBytes = 0;
      receivedBytes = 0;
      offered: string;
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols);
        this.offered = String(protocols);
        sockets.push(this);
        this.on('message', (data: ArrayBuffer) => {
          this.receivedBytes += data.byteLength;
        });
      }

      override send(data: Uint8Array, ...rest: unknown[]): void {
        this.sentBytes += data.byteLength;
        (super.send as (...a: unknown[]) => void)(data, ...rest);
      }
    }
    const events: ClientEvent[] = [];
    const conn = await open(token(), events, {
      transports: ['webrtc', 'websocket'], RTCPeerConnection: Loopback, WebSocket: CountingWs as unknown as typeof Ws,
    });
    expect(conn.transport).toBe('webrtc');
    const sc = await bulkBound(conn);
    expect(sc.address).toMatch(/^webrtc:/);
    expect(sc.bulkAddress).toMatch(/^ws:\d+$/);
    expect(serverEvents.filter((e) => e.type === 'bulk' && e.client === sc)).toEqual([{ type: 'bulk', client: sc, address: sc.bulkAddress, previous: undefined }]);
    expect(sockets).toHaveLength(1);
    const bulk = sockets[0]!;
    expect(bulk.offered).toContain('gamewire.bulk.');
    expect(bulk.protocol).toBe('gamewire');

    const block = Uint8Array.from({ length: 1 << 20 }, (_, i) => (i * 13) & 255);
    conn.client.send(5, block);
    const N = 40;
    for (let i = 0; i < N; i++) conn.client.send(0, Uint8Array.of(i, 0));
    const blocksBack = (): Uint8Array[] => events.flatMap((e) => (e.type === 'message' && e.lane === 5 ? [e.bytes] : []));
    await until(() => blocksBack().length === 1 && events.filter((e) => e.type === 'message' && e.lane === 0).length === N, 15_000);
    expect(blocksBack()[0]).toEqual(block);
    // The block crossed the WebSocket each way; the 40 messages (and their acks) did not.
    expect(bulk.sentBytes).toBeGreaterThan(block.length);
    expect(bulk.receivedBytes).toBeGreaterThan(block.length);
    expect(bulk.sentBytes + bulk.receivedBytes).toBeLessThan(2.2 * block.length);
    expect(conn.transport).toBe('webrtc');

    // The block lane's WebSocket dies mid-block: both ends take the lane back to the data channel.
    const second = Uint8Array.from({ length: 600_000 }, (_, i) => (i * 5) & 255);
    conn.client.send(5, second);
    await until(() => bulk.sentBytes > block.length + 100_000);
    bulk.terminate();
    await until(() => !conn.bulk && sc.bulkAddress === undefined);
    await until(() => blocksBack().length === 2, 20_000);
    expect(blocksBack()[1]).toEqual(second);
    // A second later the client opens the block lane's WebSocket again, and the next block goes there.
    // (The data channel may fall silent under that block long enough for the connection to move to a
    // WebSocket too, resumeAfterMs: that socket is a resumption, not the block lane's.)
    await until(() => conn.bulk && sc.bulkAddress !== undefined, 5000);
    const bulkSockets = (): CountingWs[] => sockets.filter((w) => w.offered.includes('gamewire.bulk.'));
    expect(bulkSockets()).toHaveLength(2);
    expect(serverEvents.filter((e) => e.type === 'bulk' && e.client === sc).map((e) => e.type === 'bulk' && e.previous)).toEqual([undefined, undefined]);
    const third = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 3) & 255);
    const before = bulkSockets()[1]!.sentBytes;
    conn.client.send(5, third);
    await until(() => blocksBack().length === 3, 15_000);
    expect(blocksBack()[2]).toEqual(third);
    expect(bulkSockets()[1]!.sentBytes - before).toBeGreaterThan(third.length);
    expect(serverEvents.some((e) => e.type === 'disconnected' && e.client === sc)).toBe(false);
    await conn.close();
    await until(() => gateway.size === 0, 3000);
  }, 45_000);

  it('a WebSocket client opens a second WebSocket for its block lane; one that cannot prove itself binds nothing and is closed; no such client is 404', async () => {
    const events: ClientEvent[] = [];
    const before = gateway.counters().upgrades;
    const conn = await open(token(), events);
    const sc = await bulkBound(conn);
    expect(gateway.counters().upgrades - before).toBe(2);
    expect([sc.address, sc.bulkAddress].every((a) => /^ws:\d+$/.test(a ?? ''))).toBe(true);
    const block = Uint8Array.from({ length: 300_000 }, (_, i) => (i * 3) & 255);
    conn.client.send(5, block);
    await until(() => events.some((e) => e.type === 'message' && e.lane === 5), 15_000);

    const refused = server.counters().bulkRefused;
    const bound = sc.bulkAddress;
    // A stranger's WebSocket naming the same client is let in (several may claim one client until one
    // proves itself), but its forged packet binds nothing, and it is closed after handshakeTimeoutMs.
    const forger = new WebSocket(gateway.url.replace('http', 'ws'), bulkProtocols(sc.clientIndex));
    await once(forger, 'open');
    forger.send(Uint8Array.from({ length: 1 + 1 + 8 + 16 }, (_, i) => (i === 0 ? 0x14 : i)));
    await until(() => server.counters().bulkRefused - refused >= 1);
    await once(forger, 'close');
    expect(sc.bulkAddress).toBe(bound);
    expect(await rawStatus(bulkProtocols(7))).toBe(404);
    expect(await rawStatus(bulkProtocols(100))).toBe(400);
    // The server ends the client: the gateway closes both its WebSockets (the page may never close the second).
    sc.close();
    await until(() => events.some((e) => e.type === 'disconnected'));
    await until(() => gateway.size === 0, 5000);
    await conn.close();
  }, 30_000);

  it('a client that times out closes its WebSockets itself, the block lane\'s too, though the server still holds them', async () => {
    const sockets: WebSocket[] = [];
    class Kept extends WebSocket {
      constructor(url: string, protocols?: string | string[]) {
        super(url, protocols);
        sockets.push(this);
      }
    }
    const events: ClientEvent[] = [];
    const conn = await open(token(), events, { WebSocket: Kept as unknown as typeof Ws, resumeAfterMs: 0 });
    const sc = await bulkBound(conn);
    // The server's datagrams stop reaching the client; the client's still reach the server, so the
    // server keeps it and both its WebSockets until the client goes.
    const peers = (gateway as unknown as { peers: Map<string, { ws?: { send: unknown } }> }).peers;
    for (const a of [sc.address, sc.bulkAddress!]) peers.get(a)!.ws!.send = () => undefined;
    await until(() => events.some((e) => e.type === 'disconnected'), 8000);
    expect(events.find((e) => e.type === 'disconnected')).toEqual({ type: 'disconnected', reason: 'connection-timed-out' });
    expect(conn.bulk).toBe(false);
    expect(sockets).toHaveLength(2);
    await until(() => sockets.every((w) => w.readyState === WebSocket.CLOSED), 2000);
    await until(() => gateway.size === 0, 2000);
    await conn.close();
  }, 20_000);

  it('a block-lane WebSocket that does not open is tried again a second later, and binds', async () => {
    const offered: string[] = [];
    class FailFirst extends WebSocket {
      constructor(url: string, protocols?: string | string[]) {
        const bulk = String(protocols).includes('gamewire.bulk.');
        // The first block-lane WebSocket goes to a closed port: refused, as an unreachable server would be.
        super(bulk && !offered.some((p) => p.includes('gamewire.bulk.')) ? 'ws://127.0.0.1:1/' : url, protocols);
        offered.push(String(protocols));
      }
    }
    const events: ClientEvent[] = [];
    const conn = await open(token(), events, { WebSocket: FailFirst as unknown as typeof Ws });
    await until(() => offered.filter((p) => p.includes('gamewire.bulk.')).length === 1);
    expect(conn.bulk).toBe(false);
    await bulkBound(conn, 4000);
    expect(offered.filter((p) => p.includes('gamewire.bulk.'))).toHaveLength(2);
    await conn.close();
  }, 15_000);

  it('the server holds its block lane while that WebSocket holds more than 64 KiB, and lets it go once a frame it wrote finds it drained: the block arrives whole, nothing dropped', async () => {
    const events: ClientEvent[] = [];
    const conn = await open(token(), events);
    const sc = await bulkBound(conn);
    const holds: boolean[] = [];
    const hold = sc.holdBulk.bind(sc);
    sc.holdBulk = (h: boolean) => void (holds.push(h), hold(h));
    // Loopback's TCP buffers take whatever the lane has in flight, so the server's socket is made to
    // report a backlog (a long path, where they fill first, does it for real).
    const peers = (gateway as unknown as { peers: Map<string, { ws?: object }> }).peers;
    const ws = peers.get(sc.bulkAddress!)!.ws!;
    Object.defineProperty(ws, 'bufferedAmount', { configurable: true, get: () => 100_000 });
    const dropped = gateway.counters().sendDropped;
    const wire = (): number => (sc.stats()!.lanes[5] as BlockLaneStats).sentWireBytes;
    const block = Uint8Array.from({ length: 4 << 20 }, (_, i) => (i * 7) & 255);
    const before = wire();
    sc.send(5, block);
    await until(() => holds.length > 0);
    const held = wire();
    await new Promise((r) => setTimeout(r, 300));
    expect(holds).toEqual([true]);
    expect(held - before).toBeLessThan(8 * 1024);
    expect(wire()).toBe(held);
    // The backlog is gone; the lane's acks still go while it is held, and the one for this block finds the socket drained.
    delete (ws as { bufferedAmount?: number }).bufferedAmount;
    conn.client.send(5, new Uint8Array(1000).fill(1));
    await until(() => events.some((e) => e.type === 'message' && e.lane === 5), 15_000);
    expect(holds).toEqual([true, false]);
    const got = events.find((e) => e.type === 'message' && e.lane === 5);
    expect(got?.type === 'message' && Buffer.from(got.bytes).equals(block)).toBe(true);
    expect(gateway.counters().sendDropped).toBe(dropped);
    await conn.close();
  }, 30_000);

});

describe('gamewire serve --ws (spawned)', () => {
  const KEY_HEX = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
  const tlsDir = new URL('../fixtures/tls/', import.meta.url).pathname;

  it('takes a client over a WSS WebSocket alone (--ws PORT, --tls-cert/--tls-key): the echo comes back, the disconnect is seen', async () => {
    const s = gamewire('serve', '--port', '0', '--host', '127.0.0.1', '--key', KEY_HEX, '--protocol-id', 'abcd', '--ws', '0',
      '--tls-cert', `${tlsDir}cert.pem`, '--tls-key', `${tlsDir}key.pem`);
    try {
      const udpPort = Number((await waitForStderr(s, /listening on 127\.0\.0\.1:(\d+)/))[1]);
      const url = (await waitForStderr(s, /browser clients \(WebSocket\) at (https:\S+)\n/))[1]!;
      const token = generateConnectToken({
        protocolId: 0xabcdn, privateKey: Uint8Array.from({ length: 32 }, (_, i) => i), clientId: 6n, serverAddresses: [`127.0.0.1:${udpPort}`],
        nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
      });
      const ca = readFileSync(`${tlsDir}cert.pem`);
      class Trusting extends WebSocket {
        constructor(u: string, protocols?: string | string[]) {
          super(u, protocols, { ca });
        }
      }
      const events: ClientEvent[] = [];
      const conn = await connect({ url, token, onEvent: (e) => events.push(e), WebSocket: Trusting as unknown as typeof Ws });
      expect(conn.transport).toBe('websocket'); // no RTCPeerConnection in Node, no offers taken: the fallback at once
      await until(() => events.some((e) => e.type === 'connected'));
      conn.client.send(0, new TextEncoder().encode('over wss'));
      await until(() => events.some((e) => e.type === 'message' && new TextDecoder().decode(e.bytes) === 'over wss'));
      await conn.close();
      await waitForStderr(s, /client 6 \(ws:\d+\) disconnected \(peer\)/);
    } finally {
      s.child.kill('SIGINT');
      expect(await s.exit).toBe(130);
    }
  }, 30_000);

  it('refuses --ws without a port and without --webrtc, another port than --webrtc, and half of the TLS pair', async () => {
    const cases: Array<[string[], RegExp]> = [
      [['--ws'], /error: --ws needs a port \(--ws PORT\) when there is no --webrtc PORT/],
      [['--webrtc', '9001', '--ws', '9002'], /error: --ws 9002: WebSockets share the --webrtc port \(9001\); give --ws without a port/],
      [['--ws', '0', '--tls-cert', `${tlsDir}cert.pem`], /error: --tls-cert and --tls-key go together/],
      [['--tls-cert', `${tlsDir}cert.pem`, '--tls-key', `${tlsDir}key.pem`], /error: --tls-cert and --tls-key go with --webrtc or --ws/],
      [['--ws', '0', '--tls-cert', '/nonexistent.pem', '--tls-key', `${tlsDir}key.pem`], /error: cannot read \/nonexistent\.pem: no such file/],
    ];
    for (const [args, message] of cases) {
      const r = gamewire('serve', '--port', '0', ...args);
      expect(await r.exit).toBe(2);
      expect(r.stderr()).toMatch(message);
    }
  }, 30_000);
});
