// The WebRTC transport, Node to Node over loopback: a netcode Server on its UdpDriver with
// BrowserGateway beside it, and clients made by connectWebRtc on node-datachannel's
// RTCPeerConnection polyfill (the browser's API). Real sockets, so adapter tests only.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import ndc from 'node-datachannel';
import { RTCPeerConnection as PolyfillPeer } from 'node-datachannel/polyfill';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectWebRtc, type BrowserConnection, ConnectError } from '../../src/adapters/browser/connect.js';
import { BrowserGateway } from '../../src/adapters/node/gateway.js';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { type ClientEvent } from '../../src/netcode/client.js';
import { Server, type ServerEvent } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';
import { freeUdpPort } from '../../src/cli/netcode.js';
import { gamewire, waitForStderr } from './helpers.js';

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 7);
const PROTOCOL = 0x77n;
const LANES = [{ mode: 'reliable-ordered' }, { mode: 'unreliable' }] as const;

/** node-datachannel's RTCPeerConnection bound to loopback (libjuice gathers no loopback candidate otherwise). */
class LoopbackPeer extends PolyfillPeer {
  /** The largest datagram any client channel sent, bytes. */
  static largestSent = 0;
  /** The options of the last channel a client made. */
  static lastInit: RTCDataChannelInit | undefined;

  constructor(config: RTCConfiguration = {}) {
    super({ ...config, peerConnection: new ndc.PeerConnection('client', { iceServers: [], bindAddress: '127.0.0.1' }) } as RTCConfiguration);
  }

  override createDataChannel(label: string, init?: RTCDataChannelInit): ReturnType<PolyfillPeer['createDataChannel']> {
    const dc = super.createDataChannel(label, init);
    LoopbackPeer.lastInit = init;
    const send = dc.send.bind(dc);
    dc.send = (data: Parameters<typeof send>[0]) => {
      if (data instanceof Uint8Array) LoopbackPeer.largestSent = Math.max(LoopbackPeer.largestSent, data.length);
      send(data);
    };
    return dc;
  }
}

/** The polyfill's class as the DOM type (its event types are its own). */
const Loopback = LoopbackPeer as unknown as new (c?: RTCConfiguration) => RTCPeerConnection;

const until = async (cond: () => boolean, ms = 5000): Promise<void> => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
};

describe('WebRTC transport (node-datachannel, loopback)', () => {
  let server: Server;
  let driver: UdpDriver<ServerEvent>;
  let signalling: BrowserGateway;
  let udpAddress: string;
  const serverEvents: ServerEvent[] = [];
  let nextId = 1n;

  const token = (o: { key?: Uint8Array; ageSeconds?: number; id?: bigint } = {}): Uint8Array => generateConnectToken({
    protocolId: PROTOCOL, privateKey: o.key ?? KEY, clientId: o.id ?? nextId++, serverAddresses: [udpAddress],
    nowUnixSeconds: Math.floor(systemUnixTime()) - (o.ageSeconds ?? 0), expireSeconds: 30, timeoutSeconds: 5,
  });

  const connect = async (t: Uint8Array, events: ClientEvent[]): Promise<BrowserConnection> => connectWebRtc({
    url: signalling.url, token: t, lanes: LANES, onEvent: (e) => events.push(e), RTCPeerConnection: Loopback,
  });

  beforeAll(async () => {
    server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: ['127.0.0.1:40001'], unixTime: systemUnixTime, lanes: LANES, maxClients: 8 });
    udpAddress = '127.0.0.1:40001';
    driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port: 0 });
    driver.on('event', (e) => {
      serverEvents.push(e);
      if (e.type === 'message') e.client.send(e.lane, e.bytes); // echo
    });
    signalling = await BrowserGateway.open(driver, server, { host: '127.0.0.1', maxPending: 4 });
  });

  afterAll(async () => {
    server.close();
    await driver.close({ linger: { quietMs: 100, maxMs: 500 } });
    await signalling.close();
  });

  it('connects with a token, echoes on every lane, shows up as one ServerClient, and disconnects cleanly', async () => {
    const events: ClientEvent[] = [];
    const conn = await connect(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    const sc = server.clients().find((c) => c.address.startsWith('webrtc:'));
    expect(sc).toBeDefined();
    const sent: string[] = [];
    for (let i = 0; i < 50; i++) {
      const text = `message ${i}`;
      sent.push(text);
      conn.client.send(0, new TextEncoder().encode(text));
    }
    await until(() => events.filter((e) => e.type === 'message' && e.lane === 0).length === 50);
    const got = events.flatMap((e) => (e.type === 'message' && e.lane === 0 ? [new TextDecoder().decode(e.bytes)] : []));
    expect(got).toEqual(sent);
    for (let i = 0; i < 20; i++) conn.client.send(1, new Uint8Array([i]));
    await until(() => events.some((e) => e.type === 'message' && e.lane === 1));
    expect(conn.client.stats()?.srttMs).toBeGreaterThan(0);
    // A 200 KB message each way: every datagram stays within one SCTP packet (1,172 bytes of data).
    const big = Uint8Array.from({ length: 200_000 }, (_, i) => (i * 13) & 255);
    conn.client.send(0, big);
    await until(() => events.some((e) => e.type === 'message' && e.lane === 0 && e.bytes.length === big.length));
    const back = events.find((e) => e.type === 'message' && e.bytes.length === big.length);
    expect(back?.type === 'message' && back.bytes).toEqual(big);
    expect(LoopbackPeer.largestSent).toBeGreaterThan(1100);
    expect(LoopbackPeer.largestSent).toBeLessThanOrEqual(1172);
    expect(signalling.size).toBe(1);
    await conn.close();
    await until(() => serverEvents.some((e) => e.type === 'disconnected' && e.client === sc && e.reason === 'peer'));
    await until(() => signalling.size === 0, 3000);
  }, 20_000);

  it('what onEvent throws goes to onError, else to the logger given (not the console); the connection goes on', async () => {
    const reported: [string, unknown][] = [];
    const logger = { error: (message: string, error: unknown): void => void reported.push([message, error]) };
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    const events: ClientEvent[] = [];
    const conn = await connectWebRtc({
      url: signalling.url, token: token(), lanes: LANES, RTCPeerConnection: Loopback, logger,
      onEvent: (e) => {
        events.push(e);
        if (e.type === 'connected') throw new Error('handler bug');
      },
    });
    try {
      await until(() => reported.length === 1);
      expect(reported[0]![0]).toMatch(/onEvent threw; the connection goes on/);
      expect((reported[0]![1] as Error).message).toBe('handler bug');
      conn.client.send(0, Uint8Array.of(7));
      await until(() => events.some((e) => e.type === 'message'));
      expect(printed).not.toHaveBeenCalled();
    } finally {
      printed.mockRestore();
      await conn.close();
    }
    await expect(connectWebRtc({ url: signalling.url, token: token(), onEvent: () => undefined, logger: {} as never }))
      .rejects.toMatchObject({ code: 'invalid-argument' });
  }, 20_000);

  it('simulate(): the same reliable lane through 100 ms of added latency and 10 % loss each way, then back to normal', async () => {
    const events: ClientEvent[] = [];
    const conn = await connect(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    conn.simulate({ latencyMs: 50, loss: 0.1 });
    for (let i = 0; i < 40; i++) conn.client.send(0, Uint8Array.of(i));
    await until(() => events.filter((e) => e.type === 'message').length === 40, 15_000);
    expect(events.flatMap((e) => (e.type === 'message' ? [e.bytes[0]] : []))).toEqual(Array.from({ length: 40 }, (_, i) => i));
    const slow = conn.client.stats()!;
    expect(slow.srttMs).toBeGreaterThan(90); // 50 ms each way added
    expect(() => conn.simulate({ loss: 2 })).toThrow(/invalid-config/);
    conn.simulate(undefined);
    await conn.close();
  }, 30_000);

  it('the offer goes as a CORS simple request (text/plain: no preflight); the browser end of the channel resends a chunk at most once', async () => {
    const types: Array<string | null> = [];
    const seen: typeof fetch = (input, init) => {
      types.push(new Headers(init?.headers).get('content-type'));
      return fetch(input, init);
    };
    const events: ClientEvent[] = [];
    const conn = await connectWebRtc({
      url: signalling.url, token: token(), lanes: LANES, onEvent: (e) => events.push(e), RTCPeerConnection: Loopback, fetch: seen,
    });
    try {
      await until(() => events.some((e) => e.type === 'connected'));
      expect(types).toEqual(['text/plain']);
      expect(LoopbackPeer.lastInit).toMatchObject({ negotiated: true, id: 0, ordered: false, maxRetransmits: 1 });
    } finally {
      await conn.close();
    }
  }, 10_000);

  it('a signalling endpoint that never answers fails with timeout after openTimeoutMs, not never', async () => {
    const silent = createServer(() => undefined); // accepts the request, never answers
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`;
    const started = performance.now();
    try {
      await expect(connectWebRtc({ url, token: token(), onEvent: () => undefined, openTimeoutMs: 300, RTCPeerConnection: Loopback }))
        .rejects.toMatchObject({ reason: 'timeout' });
      expect(performance.now() - started).toBeLessThan(5_000);
    } finally {
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  }, 10_000);

  it('refuses missing, foreign, expired and spent tokens before any peer connection', async () => {
    await expect(connectWebRtc({ url: signalling.url, token: new Uint8Array(10), onEvent: () => undefined, RTCPeerConnection: Loopback }))
      .rejects.toMatchObject({ code: 'invalid-argument' });
    const reason = async (t: Uint8Array): Promise<string> => {
      try {
        const c = await connect(t, []);
        await c.close();
        return 'connected';
      } catch (err) {
        expect(err).toBeInstanceOf(ConnectError);
        return (err as ConnectError).reason;
      }
    };
    const before = signalling.counters();
    expect(await reason(token({ key: new Uint8Array(32) }))).toBe('invalid');
    expect(await reason(token({ ageSeconds: 60 }))).toBe('expired');
    const spent = token();
    const events: ClientEvent[] = [];
    const conn = await connect(spent, events);
    await until(() => events.some((e) => e.type === 'connected'));
    await conn.close();
    expect(await reason(spent)).toBe('used');
    const after = signalling.counters();
    expect(after.tokensRefused - before.tokensRefused).toBe(3);
    expect(after.opened - before.opened).toBe(1);
  }, 20_000);

  it('garbage on the signalling endpoint is answered with an error and costs nothing; a client still connects after', async () => {
    const post = (body: string, path = new URL(signalling.url).pathname, method = 'POST'): Promise<number> =>
      fetch(new URL(path, signalling.url), { method, body: method === 'POST' ? body : undefined }).then((r) => r.status);
    expect(await post('not json')).toBe(400);
    expect(await post(JSON.stringify({ token: 'AAAA', sdp: 'x' }))).toBe(400);
    expect(await post(JSON.stringify({ token: btoa('x'.repeat(2048)), sdp: 'v=0' }))).toBe(401);
    expect(await post('x'.repeat(100_000))).toBe(413);
    expect(await post('', '/elsewhere')).toBe(404);
    expect(await post('', undefined, 'GET')).toBe(405);
    expect(signalling.size).toBe(0);
    const events: ClientEvent[] = [];
    const conn = await connect(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    await conn.close();
  }, 20_000);

  it('garbage on the data channel is dropped and counted; the connection beside it is unaffected', async () => {
    const events: ClientEvent[] = [];
    const conn = await connect(token(), events);
    await until(() => events.some((e) => e.type === 'connected'));
    // A second peer that signals with a valid token, then sends junk instead of netcode.
    const rogue = new LoopbackPeer();
    const dc = rogue.createDataChannel('gamewire', { negotiated: true, id: 0, ordered: false, maxRetransmits: 0 });
    await rogue.setLocalDescription(await rogue.createOffer());
    const bytes = token();
    let s = '';
    for (const b of bytes) s += String.fromCharCode(b);
    const res = await fetch(signalling.url, { method: 'POST', body: JSON.stringify({ token: btoa(s), sdp: rogue.localDescription!.sdp }) });
    const answer = (await res.json()) as { sdp: string };
    await rogue.setRemoteDescription({ type: 'answer', sdp: answer.sdp });
    await until(() => dc.readyState === 'open');
    const malformedBefore = server.counters().malformed + server.counters().requestsDropped + server.counters().unknownAddress;
    for (let i = 0; i < 200; i++) dc.send(Uint8Array.from({ length: (i * 37) % 1400 }, (_, k) => (k * i) & 255));
    dc.send('text is not a datagram');
    dc.send(new Uint8Array(4000));
    conn.client.send(0, new TextEncoder().encode('still here'));
    await until(() => events.some((e) => e.type === 'message' && new TextDecoder().decode(e.bytes) === 'still here'));
    await until(() => signalling.counters().badMessages >= 2);
    const c = server.counters();
    expect(c.malformed + c.requestsDropped + c.unknownAddress - malformedBefore).toBeGreaterThan(0);
    dc.close();
    rogue.close();
    await conn.close();
  }, 20_000);
});

describe('gamewire serve --webrtc (spawned)', () => {
  it('takes a browser-style client over WebRTC beside UDP, its peer on the given UDP port: the echo comes back and the client disconnects cleanly', async () => {
    const KEY_HEX = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';
    const peersPort = await freeUdpPort('127.0.0.1');
    const s = gamewire('serve', '--port', '0', '--host', '127.0.0.1', '--key', KEY_HEX, '--protocol-id', 'abcd', '--webrtc', '0',
      '--webrtc-udp-port', String(peersPort), '--public-address', '127.0.0.1', '--webrtc-favor', 'latency');
    try {
      const udpPort = Number((await waitForStderr(s, /listening on 127\.0\.0\.1:(\d+)/))[1]);
      const line = await waitForStderr(s, /browser clients \(WebRTC\) at (http:\S+), their WebRTC peers on UDP port (\d+) \(announced as 127\.0\.0\.1\), favoring latency/);
      const url = line[1]!;
      expect(Number(line[2])).toBe(peersPort);
      const token = generateConnectToken({
        protocolId: 0xabcdn, privateKey: Uint8Array.from({ length: 32 }, (_, i) => i), clientId: 5n, serverAddresses: [`127.0.0.1:${udpPort}`],
        nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
      });
      const events: ClientEvent[] = [];
      const conn = await connectWebRtc({ url, token, onEvent: (e) => events.push(e), RTCPeerConnection: Loopback });
      await until(() => events.some((e) => e.type === 'connected'));
      conn.client.send(0, new TextEncoder().encode('over webrtc'));
      await until(() => events.some((e) => e.type === 'message' && new TextDecoder().decode(e.bytes) === 'over webrtc'));
      await conn.close();
      await waitForStderr(s, /client 5 \(webrtc:\d+\) disconnected \(peer\)/);
    } finally {
      s.child.kill('SIGINT');
      expect(await s.exit).toBe(130); // Ctrl-C, as for every command (docs/cli.md)
    }
  }, 30_000);

  it('refuses --webrtc-udp-port, --public-address or --webrtc-favor without --webrtc, a public address that is not an IP, and a favor that is neither bytes nor latency', async () => {
    const a = gamewire('serve', '--port', '0', '--public-address', '203.0.113.7');
    expect(await a.exit).toBe(2);
    expect(a.stderr()).toMatch(/error: --webrtc-udp-port, --public-address and --webrtc-favor go with --webrtc/);
    const c = gamewire('serve', '--port', '0', '--webrtc', '0', '--webrtc-favor', 'speed');
    expect(await c.exit).toBe(2);
    expect(c.stderr()).toMatch(/error: --webrtc-favor: expected bytes or latency, got "speed"/);
    const b = gamewire('serve', '--port', '0', '--webrtc', '0', '--public-address', 'example.com');
    expect(await b.exit).toBe(2);
    expect(b.stderr()).toMatch(/error: --public-address: expected an IP address, got "example.com"/);
  }, 30_000);
});
