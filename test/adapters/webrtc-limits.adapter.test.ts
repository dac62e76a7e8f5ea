// BrowserGateway's limits against a stranger with one valid token, an open channel that never
// handshakes, many offers from one address, and slow HTTP clients. Real loopback sockets (the
// attacker's from 127.0.0.2 and up, the player's from 127.0.0.1), small limits so each case is quick.
import { request } from 'node:http';
import { connect as tcpConnect, type Socket } from 'node:net';
import ndc from 'node-datachannel';
import { RTCPeerConnection as PolyfillPeer } from 'node-datachannel/polyfill';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectWebRtc, type BrowserConnection } from '../../src/adapters/browser/connect.js';
import { BrowserGateway, type BrowserGatewayOptions } from '../../src/adapters/node/gateway.js';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import type { ClientEvent } from '../../src/netcode/client.js';
import { Server, type ServerEvent } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';
import { until } from './helpers.js';

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 11);
const PROTOCOL = 0x78n;

class LoopbackPeer extends PolyfillPeer {
  constructor(config: RTCConfiguration = {}) {
    super({ ...config, peerConnection: new ndc.PeerConnection('client', { iceServers: [], bindAddress: '127.0.0.1' }) } as RTCConfiguration);
  }
}
const Loopback = LoopbackPeer as unknown as new (c?: RTCConfiguration) => RTCPeerConnection;

interface Rig {
  server: Server;
  signalling: BrowserGateway;
  token: () => Uint8Array;
  close: () => Promise<void>;
}

let nextId = 1n;

async function rig(options: BrowserGatewayOptions, maxClients = 8): Promise<Rig> {
  const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: ['127.0.0.1:40002'], unixTime: systemUnixTime, maxClients });
  const driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port: 0 });
  driver.on('event', (e: ServerEvent) => {
    if (e.type === 'message') e.client.send(e.lane, e.bytes);
  });
  const signalling = await BrowserGateway.open(driver, server, { host: '127.0.0.1', ...options });
  const token = (): Uint8Array => generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId: nextId++, serverAddresses: ['127.0.0.1:40002'],
    nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
  });
  return {
    server, signalling, token,
    close: async () => {
      server.close();
      await driver.close({ linger: { quietMs: 50, maxMs: 300 } });
      await signalling.close();
    },
  };
}

interface Answer { status: number; error: unknown }

/** POST `body` to `url` from `localAddress` on a fresh connection. */
function post(url: string, body: string, localAddress = '127.0.0.1'): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', localAddress, agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let error: unknown;
        try {
          error = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { error?: unknown }).error;
        } catch {
          /* no JSON */
        }
        resolve({ status: res.statusCode ?? 0, error });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const offerBody = (token: Uint8Array, sdp: string): string => JSON.stringify({ token: Buffer.from(token).toString('base64'), sdp });

/** A client peer connection with the gamewire channel and its offer. */
async function offerer(): Promise<{ pc: LoopbackPeer; dc: RTCDataChannel; sdp: string }> {
  const pc = new LoopbackPeer();
  const dc = pc.createDataChannel('gamewire', { negotiated: true, id: 0, ordered: false, maxRetransmits: 0 }) as unknown as RTCDataChannel;
  await pc.setLocalDescription(await pc.createOffer());
  return { pc, dc, sdp: pc.localDescription!.sdp };
}

async function player(url: string, token: Uint8Array): Promise<{ conn: BrowserConnection; events: ClientEvent[] }> {
  const events: ClientEvent[] = [];
  const conn = await connectWebRtc({ url, token, onEvent: (e) => events.push(e), RTCPeerConnection: Loopback });
  await until(() => events.some((e) => e.type === 'connected'), 'the player to connect');
  return { conn, events };
}

/** Open `n` TCP connections from `localAddress` that send `head` and then stall; counts those the server closed. */
async function stalled(url: string, n: number, localAddress: string, head: string): Promise<{ sockets: Socket[]; closed: () => number }> {
  const u = new URL(url);
  let closed = 0;
  const sockets = await Promise.all(Array.from({ length: n }, () => new Promise<Socket>((resolve) => {
    const s = tcpConnect({ host: u.hostname, port: Number(u.port), localAddress });
    s.on('error', () => undefined);
    s.resume(); // read the 408, so the server's close is seen
    s.on('close', () => closed++);
    s.on('connect', () => {
      s.write(head);
      resolve(s);
    });
    s.on('close', () => resolve(s));
  })));
  return { sockets, closed: () => closed };
}

const SLOW_HEAD = 'POST /gamewire HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: appl';

describe('BrowserGateway limits (node-datachannel, loopback)', () => {
  // One instance open for the whole file, so node-datachannel is not torn down between cases.
  let anchor: Rig;
  beforeAll(async () => {
    anchor = await rig({});
  });
  afterAll(async () => {
    await anchor.close();
  });

  it('one token, 20 concurrent offers: one answer, the rest 409; another player with their own token still connects', async () => {
    const r = await rig({ maxPending: 8, maxPendingPerAddress: 64 });
    const { pc, sdp } = await offerer();
    try {
      const t = r.token();
      const answers = await Promise.all(Array.from({ length: 20 }, () => post(r.signalling.url, offerBody(t, sdp))));
      const statuses = answers.map((a) => a.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(1);
      expect(answers.filter((a) => a.status === 409 && a.error === 'already-connected')).toHaveLength(19);
      expect(r.signalling.counters().tokensInUse).toBe(19);
      const { conn } = await player(r.signalling.url, r.token());
      await conn.close();
    } finally {
      pc.close();
      await r.close();
    }
  }, 10_000);

  it('a channel that opens but never completes a netcode handshake is closed after handshakeTimeoutMs, and its slot is free', async () => {
    // The bound is generous: under a loaded suite the rogue's own 'open' event has come seconds after the gateway's.
    const r = await rig({ maxPeers: 1, handshakeTimeoutMs: 6000 });
    const rogue = await offerer();
    try {
      const res = await fetch(r.signalling.url, { method: 'POST', body: offerBody(r.token(), rogue.sdp) });
      expect(res.status).toBe(200);
      await rogue.pc.setRemoteDescription({ type: 'answer', sdp: ((await res.json()) as { sdp: string }).sdp });
      const received: Uint8Array[] = [];
      rogue.dc.onmessage = (e: MessageEvent) => void received.push(new Uint8Array(e.data as ArrayBuffer));
      await until(() => rogue.dc.readyState === 'open', 'the rogue channel to open');
      expect(r.signalling.size, JSON.stringify(r.signalling.counters())).toBe(1);
      // The gateway starts the handshake with the token's request: a challenge comes unasked.
      await until(() => received.some((b) => (b[0]! & 0x0f) === 2), 'the server\'s challenge on the silent channel', 3000);
      // maxPeers 1: while the rogue holds the slot a player is refused.
      expect((await post(r.signalling.url, offerBody(r.token(), rogue.sdp))).error).toBe('busy');
      await until(() => r.signalling.size === 0, 'the silent channel to be closed', 12_000);
      expect(r.signalling.counters().handshakeTimeouts).toBe(1);
      await until(() => rogue.dc.readyState === 'closed', 'the rogue to see its channel closed', 3000);
      // The slot is free again; a player who completes the handshake is kept past the bound.
      const { conn, events } = await player(r.signalling.url, r.token());
      await new Promise((resolve) => setTimeout(resolve, 6300));
      conn.client.send(0, Uint8Array.of(42));
      await until(() => events.some((e) => e.type === 'message' && e.bytes[0] === 42), 'the echo after the bound');
      expect(r.signalling.size).toBe(1);
      expect(r.signalling.counters().handshakeTimeouts).toBe(1);
      await conn.close();
    } finally {
      rogue.pc.close();
      await r.close();
    }
  }, 45_000);

  it('offers pending from one address are capped (429 busy), another address is answered, and the cap frees as they end', async () => {
    const r = await rig({ maxPending: 16, maxPendingPerAddress: 2, openTimeoutMs: 1000 });
    const { pc, sdp } = await offerer();
    try {
      const tokens = Array.from({ length: 4 }, () => r.token());
      const answers = await Promise.all(tokens.map((t) => post(r.signalling.url, offerBody(t, sdp), '127.0.0.2')));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(2);
      expect(answers.filter((a) => a.status === 429 && a.error === 'busy')).toHaveLength(2);
      expect(r.signalling.counters().addressBusy).toBe(2);
      const { conn } = await player(r.signalling.url, r.token());
      await conn.close();
      // The two answered offers never open; after openTimeoutMs the address may offer again, even
      // with one of their tokens (nothing was spent on it).
      await until(() => r.signalling.counters().openTimeouts === 2, 'the unopened offers to time out', 3000);
      const again = tokens[answers.findIndex((a) => a.status === 200)]!;
      expect((await post(r.signalling.url, offerBody(again, sdp), '127.0.0.2')).status).toBe(200);
    } finally {
      pc.close();
      await r.close();
    }
  }, 10_000);

  it('slow HTTP clients: sockets per address are capped at once, the rest are closed by the header and request timeouts; a player still connects', async () => {
    const r = await rig({ headersTimeoutMs: 1500, requestTimeoutMs: 2000, maxConnectionsPerAddress: 8, maxConnections: 64 });
    try {
      const flood = await stalled(r.signalling.url, 200, '127.0.0.2', SLOW_HEAD);
      const body = await stalled(r.signalling.url, 1, '127.0.0.3', `${SLOW_HEAD}ication/json\r\nContent-Length: 4000\r\n\r\n{"token":`);
      await until(() => flood.closed() >= 192, 'the sockets over the per-address cap to be closed', 1000);
      expect(r.signalling.counters().connectionsRefused).toBe(192);
      // 8 from 127.0.0.2 and 1 from 127.0.0.3 are held; a player from 127.0.0.1 is answered meanwhile.
      const { conn } = await player(r.signalling.url, r.token());
      await conn.close();
        await until(() => flood.closed() === 200 && body.closed() === 1, 'the header and request timeouts', 4000);
      expect(r.signalling.counters().httpTimeouts).toBe(9);
      expect(r.signalling.counters().connectionsRefused).toBe(192);
    } finally {
      await r.close();
    }
  }, 10_000);

  it('open sockets are capped across addresses (maxConnections): a new one closes the oldest still sending, so a player gets in', async () => {
    const r = await rig({ maxConnections: 12, maxConnectionsPerAddress: 8, headersTimeoutMs: 5000, requestTimeoutMs: 5000 });
    try {
      const a = await stalled(r.signalling.url, 8, '127.0.0.4', SLOW_HEAD);
      await until(() => r.signalling.counters().connectionsEvicted === 0 && a.sockets.every((s) => s.readyState === 'open'), 'the first 8');
      const b = await stalled(r.signalling.url, 8, '127.0.0.5', SLOW_HEAD);
      await until(() => a.closed() >= 4, 'the 4 oldest to be closed', 1000);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(a.closed()).toBe(4);
      expect(b.closed()).toBe(0);
      expect(r.signalling.counters().connectionsEvicted).toBe(4);
      // The cap is full of stalled connections; a player's connection takes the oldest one's place.
      const { conn } = await player(r.signalling.url, r.token());
      await conn.close();
      expect(a.closed()).toBeGreaterThanOrEqual(5);
      expect(r.signalling.counters().connectionsRefused).toBe(0);
      for (const s of [...a.sockets, ...b.sockets]) s.destroy();
    } finally {
      await r.close();
    }
  }, 10_000);

  it('a body over maxBodyBytes (default 16 KiB) is answered 413; an offer within it is answered', async () => {
    const { pc, sdp } = await offerer();
    try {
      expect(await post(anchor.signalling.url, JSON.stringify({ token: 'x'.repeat(17_000), sdp }))).toEqual({ status: 413, error: 'too-large' });
      expect((await post(anchor.signalling.url, offerBody(anchor.token(), sdp))).status).toBe(200);
    } finally {
      pc.close();
    }
  });

  it('malformed HTTP is answered as Node would (400; 431 for headers over 16 KiB), counted, and closed', async () => {
    const u = new URL(anchor.signalling.url);
    const raw = (text: string): Promise<string> => new Promise((resolve) => {
      let got = '';
      const s = tcpConnect({ host: u.hostname, port: Number(u.port) }, () => s.write(text));
      s.on('data', (d: Buffer) => (got += d.toString('latin1')));
      s.on('error', () => undefined);
      s.on('close', () => resolve(got));
    });
    const before = anchor.signalling.counters().badRequests;
    expect(await raw('NOT HTTP AT ALL\r\n\r\n')).toMatch(/^HTTP\/1\.1 400 /);
    expect(await raw(`POST ${u.pathname} HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)).toMatch(/^HTTP\/1\.1 431 /);
    expect(anchor.signalling.counters().badRequests - before).toBe(2);
  });

  it('rejects bad limit options with invalid-config', async () => {
    for (const bad of [
      { handshakeTimeoutMs: 0 }, { maxPendingPerAddress: 0 }, { maxConnections: 1.5 }, { maxConnectionsPerAddress: -1 },
      { headersTimeoutMs: 0 }, { headersTimeoutMs: 3000, requestTimeoutMs: 2000 },
    ]) {
      await expect(BrowserGateway.open(undefined as never, anchor.server, bad)).rejects.toMatchObject({ code: 'invalid-config' });
    }
  });
});
