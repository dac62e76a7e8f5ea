// The UDP ports of BrowserGateway's peer connections, Node to Node over loopback: every peer on one
// shared port (ICE UDP mux) by default, one port each from a range as the alternative, a public
// address in the answer's host candidates, and clear errors for a port in use or a bad address.
// The ports are read from the answers' candidates and from the pair each client selected.
import { createSocket } from 'node:dgram';
import { createServer } from 'node:net';
import ndc from 'node-datachannel';
import { RTCPeerConnection as PolyfillPeer } from 'node-datachannel/polyfill';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { connectWebRtc, type BrowserConnection } from '../../src/adapters/browser/connect.js';
import { BrowserGateway, type BrowserGatewayOptions, WEBRTC_ADDRESS_PREFIX, withPublicAddress } from '../../src/adapters/node/gateway.js';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import type { ClientEvent } from '../../src/netcode/client.js';
import { Server, type ServerEvent } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';
import { until } from './helpers.js';

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 23);
const PROTOCOL = 0x79n;
const LANES = [{ mode: 'reliable-ordered' }] as const;

/** A client peer bound to loopback that keeps its node-datachannel connection and the answer it was given. */
class RecordingPeer extends PolyfillPeer {
  static made: RecordingPeer[] = [];
  readonly ndcPeer: ndc.PeerConnection;
  answer = '';

  constructor(config: RTCConfiguration = {}) {
    const pc = new ndc.PeerConnection('client', { iceServers: [], bindAddress: '127.0.0.1' });
    super({ ...config, peerConnection: pc } as RTCConfiguration);
    this.ndcPeer = pc;
    RecordingPeer.made.push(this);
  }

  override setRemoteDescription(d: RTCSessionDescriptionInit): Promise<void> {
    this.answer = d.sdp ?? '';
    return super.setRemoteDescription(d);
  }
}
const Recording = RecordingPeer as unknown as new (c?: RTCConfiguration) => RTCPeerConnection;

/** `[address, port]` of every candidate line of `sdp`. */
const candidates = (sdp: string): [string, number][] => sdp.split(/\r?\n/)
  .filter((l) => l.startsWith('a=candidate:'))
  .map((l) => {
    const f = l.split(' ');
    return [f[4], Number(f[5])];
  });

/** A UDP port free on 127.0.0.1 when asked (`count` consecutive ones free). */
async function freeUdpPorts(count: number): Promise<number> {
  for (;;) {
    const first = createSocket('udp4');
    await new Promise<void>((r) => first.bind(0, '127.0.0.1', r));
    const base = first.address().port;
    const held = [first];
    let ok = base + count - 1 <= 65535;
    for (let i = 1; ok && i < count; i++) {
      const s = createSocket('udp4');
      ok = await new Promise<boolean>((r) => {
        s.once('error', () => r(false));
        s.bind(base + i, '127.0.0.1', () => r(true));
      });
      held.push(s);
    }
    for (const s of held) {
      try {
        s.close();
      } catch {
        /* never bound */
      }
    }
    if (ok) return base;
  }
}

/** A TCP port free on 127.0.0.1 when asked. */
async function freeTcpPort(): Promise<number> {
  const s = createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as { port: number }).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

let nextId = 1n;

interface Rig {
  server: Server;
  signalling: BrowserGateway;
  connect: (events: ClientEvent[]) => Promise<BrowserConnection>;
  close: () => Promise<void>;
}

async function rig(options: BrowserGatewayOptions): Promise<Rig> {
  const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: ['127.0.0.1:40003'], unixTime: systemUnixTime, lanes: LANES, maxClients: 8 });
  const driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port: 0 });
  driver.on('event', (e: ServerEvent) => {
    if (e.type === 'message') e.client.send(e.lane, e.bytes);
  });
  let signalling: BrowserGateway;
  try {
    signalling = await BrowserGateway.open(driver, server, { host: '127.0.0.1', ...options });
  } catch (err) {
    server.close();
    await driver.close();
    throw err;
  }
  const connect = (events: ClientEvent[]): Promise<BrowserConnection> => connectWebRtc({
    url: signalling.url, token: token(), lanes: LANES, onEvent: (e) => events.push(e), RTCPeerConnection: Recording,
  });
  return {
    server, signalling, connect,
    close: async () => {
      server.close();
      await driver.close({ linger: { quietMs: 50, maxMs: 300 } });
      await signalling.close();
    },
  };
}

const token = (): Uint8Array => generateConnectToken({
  protocolId: PROTOCOL, privateKey: KEY, clientId: nextId++, serverAddresses: ['127.0.0.1:40003'],
  nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 30, timeoutSeconds: 5,
});

// node-datachannel's cleanup() (with the last BrowserGateway closed) can crash the process once a
// channel wrapper has been garbage-collected, so the clients' channels are kept to the end.
const offerers: { pc: ndc.PeerConnection; dc: ndc.DataChannel }[] = [];
const clients: BrowserConnection[] = [];

/** An offer from a fresh loopback peer connection with the gamewire channel (closed by `close`). */
async function offer(): Promise<{ sdp: string; close: () => void }> {
  const pc = new ndc.PeerConnection('offerer', { iceServers: [], bindAddress: '127.0.0.1' });
  const dc = pc.createDataChannel('gamewire', { negotiated: true, id: 0, unordered: true, maxRetransmits: 0 });
  offerers.push({ pc, dc });
  await until(() => pc.gatheringState() === 'complete', 'the offer\'s candidates');
  return {
    sdp: pc.localDescription()?.sdp ?? '',
    close: () => {
      dc.close();
      pc.close();
    },
  };
}

/** Connect `n` clients at once, check each echoes, and return them with their answers. */
async function connectAll(r: Rig, n: number): Promise<{ conns: BrowserConnection[]; peers: RecordingPeer[] }> {
  const from = RecordingPeer.made.length;
  const events = Array.from({ length: n }, (): ClientEvent[] => []);
  const conns = await Promise.all(events.map((ev) => r.connect(ev)));
  clients.push(...conns);
  const peers = RecordingPeer.made.slice(from);
  expect(peers).toHaveLength(n);
  await until(() => events.every((ev) => ev.some((e) => e.type === 'connected')), 'every client connected');
  conns.forEach((c, i) => c.client.send(0, new Uint8Array([i])));
  await until(() => events.every((ev) => ev.some((e) => e.type === 'message')), 'every echo');
  return { conns, peers };
}

describe('BrowserGateway UDP ports (node-datachannel, loopback)', () => {
  // Holds the process's node-datachannel threads between tests (cleanup() runs with the last instance).
  let anchor: Rig;
  beforeAll(async () => {
    anchor = await rig({});
  });
  afterAll(async () => {
    await anchor.close();
  });

  it('by default every peer connection shares one UDP port: three clients at once, one port in every answer and selected pair', async () => {
    const r = await rig({});
    try {
      const port = r.signalling.udpPort;
      expect(port).toBeGreaterThan(0);
      const { conns, peers } = await connectAll(r, 3);
      for (const p of peers) {
        expect(candidates(p.answer)).toEqual([['127.0.0.1', port]]);
        expect(p.ndcPeer.getSelectedCandidatePair()?.remote.port).toBe(port);
      }
      expect(r.signalling.size).toBe(3);
      await Promise.all(conns.map((c) => c.close()));
    } finally {
      await r.close();
    }
  }, 20_000);

  it('udpPort names the shared port; left out, it is the signalling port number', async () => {
    const chosen = await freeUdpPorts(1);
    const a = await rig({ udpPort: chosen });
    try {
      expect(a.signalling.udpPort).toBe(chosen);
      const { conns, peers } = await connectAll(a, 2);
      for (const p of peers) expect(candidates(p.answer)).toEqual([['127.0.0.1', chosen]]);
      await Promise.all(conns.map((c) => c.close()));
    } finally {
      await a.close();
    }
    // A TCP port free now may have its UDP twin in use: then open says so, and another is tried.
    for (let attempt = 0; ; attempt++) {
      const tcp = await freeTcpPort();
      let b: Rig;
      try {
        b = await rig({ port: tcp });
      } catch (err) {
        if (attempt < 5 && (err as { code?: string }).code === 'invalid-config') continue;
        throw err;
      }
      try {
        expect(b.signalling.url).toContain(`:${tcp}/`);
        expect(b.signalling.udpPort).toBe(tcp);
      } finally {
        await b.close();
      }
      break;
    }
  }, 20_000);

  it('udpPortRange: one port each from the range, and an offer beyond its size is answered 503 busy', async () => {
    const first = await freeUdpPorts(2);
    const r = await rig({ udpPortRange: [first, first + 1] });
    try {
      expect(r.signalling.udpPort).toBeUndefined();
      const { conns, peers } = await connectAll(r, 2);
      const ports = peers.map((p) => candidates(p.answer).map(([, port]) => port)).flat();
      expect(ports.sort()).toEqual([first, first + 1]);
      for (const p of peers) expect(p.ndcPeer.getSelectedCandidatePair()?.remote.port).toBe(candidates(p.answer)[0][1]);
      const o = await offer();
      const res = await fetch(r.signalling.url, { method: 'POST', body: JSON.stringify({ token: Buffer.from(token()).toString('base64'), sdp: o.sdp }) });
      o.close();
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: 'busy' });
      await Promise.all(conns.map((c) => c.close()));
    } finally {
      await r.close();
    }
  }, 20_000);

  it('publicAddress: the answer\'s host candidates name the public address and the shared port', async () => {
    const r = await rig({ publicAddress: '203.0.113.7' });
    try {
      const o = await offer();
      const res = await fetch(r.signalling.url, { method: 'POST', body: JSON.stringify({ token: Buffer.from(token()).toString('base64'), sdp: o.sdp }) });
      o.close();
      expect(res.status).toBe(200);
      const { sdp } = await res.json() as { sdp: string };
      expect(candidates(sdp)).toEqual([['203.0.113.7', r.signalling.udpPort]]);
      expect(sdp).toMatch(/\r\nc=IN IP4 203\.0\.113\.7\r\n/);
      expect(sdp).not.toContain('127.0.0.1 ');
    } finally {
      await r.close();
    }
  }, 20_000);

  it('webrtcFavor latency: the server\'s end of each channel gives a lost chunk up at once and its lanes ride each piece twice; by default SCTP resends and one ride', async () => {
    const registered = vi.spyOn(Server.prototype, 'registerTransport');
    try {
      for (const [favor, redundancy, init] of [
        ['latency', 2, { negotiated: true, id: 0, unordered: true, maxRetransmits: 0 }],
        [undefined, 1, { negotiated: true, id: 0, unordered: true }],
      ] as const) {
        registered.mockClear();
        const r = await rig(favor === undefined ? {} : { webrtcFavor: favor });
        try {
          expect(registered).toHaveBeenCalledWith(WEBRTC_ADDRESS_PREFIX, expect.objectContaining({ defaultRedundancy: redundancy }));
          // node-datachannel's channels do not say how reliable they are: what the gateway gives them is read instead.
          expect((r.signalling as unknown as { channelInit: object }).channelInit).toEqual(init);
          expect(r.signalling.webrtcFavor).toBe(favor ?? 'bytes');
          await connectAll(r, 1);
        } finally {
          await r.close();
        }
      }
    } finally {
      registered.mockRestore();
    }
  }, 30_000);

  it('a port in use, a bad address or contradictory port options fail open with invalid-config', async () => {
    const busy = createSocket('udp4');
    await new Promise<void>((r) => busy.bind(0, '127.0.0.1', r));
    try {
      const port = busy.address().port;
      await expect(rig({ udpPort: port })).rejects.toMatchObject({ code: 'invalid-config', message: expect.stringContaining(`UDP port ${port}`) });
    } finally {
      busy.close();
    }
    // TEST-NET-1: not an address of this host, so nothing can bind it.
    await expect(rig({ bindAddress: '192.0.2.99', udpPort: await freeUdpPorts(1) })).rejects.toMatchObject({ code: 'invalid-config' });
    for (const bad of [
      { bindAddress: 'not-an-ip' }, { publicAddress: 'example.com' }, { publicAddress: '' }, { udpPort: 70000 }, { udpPort: 1.5 },
      { udpPortRange: [50000, 49999] as const }, { udpPortRange: [0, 10] as const }, { udpPort: 50000, udpPortRange: [50000, 50001] as const },
      { webrtcFavor: 'fast' as never },
    ]) {
      await expect(BrowserGateway.open(undefined as never, anchor.server, bad)).rejects.toMatchObject({ code: 'invalid-config' });
    }
  }, 20_000);
});

describe('withPublicAddress', () => {
  const answer = [
    'v=0', 'o=rtc 1 0 IN IP4 10.0.0.5', 'm=application 47000 UDP/DTLS/SCTP webrtc-datachannel', 'c=IN IP4 10.0.0.5',
    'a=candidate:1 1 UDP 2114977791 10.0.0.5 47000 typ host',
    'a=candidate:2 1 UDP 2114977535 172.17.0.1 47000 typ host',
    'a=candidate:3 1 UDP 1686052607 198.51.100.2 47000 typ srflx raddr 10.0.0.5 rport 47000',
    'a=end-of-candidates', '',
  ].join('\r\n');

  it('names the public address in host candidates (one per port) and c= lines; other candidates and lines stay', () => {
    expect(withPublicAddress(answer, '203.0.113.7')).toBe([
      'v=0', 'o=rtc 1 0 IN IP4 10.0.0.5', 'm=application 47000 UDP/DTLS/SCTP webrtc-datachannel', 'c=IN IP4 203.0.113.7',
      'a=candidate:1 1 UDP 2114977791 203.0.113.7 47000 typ host',
      'a=candidate:3 1 UDP 1686052607 198.51.100.2 47000 typ srflx raddr 10.0.0.5 rport 47000',
      'a=end-of-candidates', '',
    ].join('\r\n'));
  });

  it('an IPv6 public address gives an IP6 c= line', () => {
    const out = withPublicAddress(answer, '2001:db8::7');
    expect(out).toContain('\r\nc=IN IP6 2001:db8::7\r\n');
    expect(out).toContain('a=candidate:1 1 UDP 2114977791 2001:db8::7 47000 typ host');
  });
});
