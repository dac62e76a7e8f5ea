import { describe, expect, it } from 'vitest';
import { lanesHash, type MessageLaneConfig, type LaneStats } from '../channels/index.js';
import { NonCryptoRng } from '../core/rng.js';
import type { LinkConfig } from '../sim/config.js';
import { World } from '../sim/world.js';
import type { Connection, ConnectionEvent, DisconnectReason } from './connection.js';
import { ConnectionHost } from './host.js';
import type { ConnectionOptions } from './options.js';
import { encodeConnect } from './wire.js';

const LANES: MessageLaneConfig[] = [
  { mode: 'reliable-ordered' },
  { mode: 'reliable-unordered' },
  { mode: 'unreliable' },
  { mode: 'unreliable-sequenced' },
  { mode: 'notify' },
];

function seededRandom(seed: number): (out: Uint8Array) => void {
  const rng = new NonCryptoRng(seed);
  return (out) => void rng.fill(out);
}

interface Rig {
  world: World;
  server: ConnectionHost;
  client: ConnectionHost;
  conn: Connection;
  serverEvents: ConnectionEvent[];
  clientEvents: ConnectionEvent[];
  pump: () => void;
  /** Run `ms` of virtual time, pumping events (and so echoing) after every step. */
  run: (ms: number) => void;
}

/** A client and a listening server on a world; every event is collected, and the server echoes messages. */
function rig(seed: number, link: Partial<LinkConfig> = {}, opts: ConnectionOptions = {}, echo = true): Rig {
  const world = new World({ seed, link });
  const server = new ConnectionHost({ lanes: LANES, listen: true, random: seededRandom(seed + 1), ...opts });
  const client = new ConnectionHost({ lanes: LANES, random: seededRandom(seed + 2), ...opts });
  world.add('server', server);
  world.add('client', client);
  const serverEvents: ConnectionEvent[] = [];
  const clientEvents: ConnectionEvent[] = [];
  const pump = (): void => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      serverEvents.push(e);
      if (echo && e.type === 'message') e.connection.send(e.lane, e.bytes);
    }
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) clientEvents.push(e);
  };
  const conn = client.connect(world.now, 'server');
  const run = (ms: number): void => {
    world.runUntil(() => (pump(), false), { maxTimeMs: ms });
    pump();
  };
  return { world, server, client, conn, serverEvents, clientEvents, pump, run };
}

function message(i: number, size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let k = 0; k < size; k++) b[k] = (i * 31 + k) & 0xff;
  if (size >= 4) new DataView(b.buffer).setUint32(0, i, true);
  return b;
}

function idOf(bytes: Uint8Array): number {
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0, true);
}

describe('ConnectionHost: handshake', () => {
  it('connects both sides and raises connected once on each', () => {
    const r = rig(1, { latencyMs: 20 });
    r.world.runUntil(() => (r.pump(), r.serverEvents.length > 0 && r.clientEvents.length > 0), { maxTimeMs: 2000 });
    expect(r.clientEvents.map((e) => e.type)).toEqual(['connected']);
    expect(r.serverEvents.map((e) => e.type)).toEqual(['connected']);
    expect(r.conn.state).toBe('connected');
    // Two round trips (COOKIE, then ACCEPT) and the first DATA's one way: 100 ms at 20 ms each way.
    expect(r.world.now).toBeLessThanOrEqual(100);
  });

  it('connects through 50 % loss both ways by resending CONNECT', () => {
    const r = rig(2, { latencyMs: 10, loss: 0.5 });
    r.world.runUntil(() => (r.pump(), r.serverEvents.length > 0 && r.clientEvents.length > 0), { maxTimeMs: 5000 });
    expect(r.conn.state).toBe('connected');
    expect(r.server.connections()[0]!.state).toBe('connected');
  });

  it('refuses a client whose lanes differ, and one beyond maxConnections', () => {
    const world = new World({ seed: 3 });
    const server = new ConnectionHost({ lanes: LANES, listen: true, maxConnections: 1 });
    world.add('server', server);
    const odd = new ConnectionHost({ lanes: [{ mode: 'unreliable' }] });
    world.add('odd', odd);
    const a = new ConnectionHost({ lanes: LANES });
    const b = new ConnectionHost({ lanes: LANES });
    world.add('a', a);
    world.add('b', b);
    odd.connect(0, 'server');
    a.connect(0, 'server');
    world.runFor(50);
    b.connect(world.now, 'server');
    world.runFor(500);
    const reasons = (h: ConnectionHost): (DisconnectReason | string)[] => {
      const out: string[] = [];
      for (let e = h.pollEvent(); e !== undefined; e = h.pollEvent()) out.push(e.type === 'disconnected' ? e.reason : e.type);
      return out;
    };
    expect(reasons(odd)).toEqual(['refused-lanes']);
    expect(reasons(a)).toEqual(['connected']);
    expect(reasons(b)).toEqual(['refused-full']);
    expect(server.counters().refusedLanes).toBe(1);
    expect(server.counters().refusedFull).toBeGreaterThanOrEqual(1);
  });

  it('gives up with handshake-timeout when nobody answers', () => {
    const world = new World({ seed: 4 });
    const client = new ConnectionHost({ handshakeTimeoutMs: 1000 });
    world.add('client', client);
    client.connect(0, 'nobody');
    world.runFor(1500);
    expect(client.pollEvent()).toMatchObject({ type: 'disconnected', reason: 'handshake-timeout' });
    expect(client.pollEvent()).toBeUndefined();
    expect(client.size).toBe(0);
    expect(world.peerStats('client').datagramsSent).toBe(4); // CONNECT at 0, 250, 500, 750
  });

  it('a CONNECT from the same address with another id but no cookie gets a COOKIE and supersedes nothing', () => {
    // A restarted client's CONNECT with its cookie does (test/scenario/connection-handshake.test.ts).
    const r = rig(5, { latencyMs: 5 });
    r.world.runUntil(() => (r.pump(), r.serverEvents.length > 0), { maxTimeMs: 1000 });
    const bytes = new Uint8Array(32);
    encodeConnect(bytes, 12345, lanesHash({ lanes: LANES }));
    r.world.inject('client', 'server', bytes);
    r.world.runFor(100);
    r.pump();
    expect(r.serverEvents.map((e) => (e.type === 'disconnected' ? e.reason : e.type))).toEqual(['connected']);
    expect(r.server.counters()).toMatchObject({ superseded: 0, cookiesSent: 2 }); // the client's own, and this one
    expect(r.conn.state).toBe('connected');
  });

  it('drops and counts garbage without throwing', () => {
    const r = rig(6);
    const rng = new NonCryptoRng(6);
    for (let i = 0; i < 2000; i++) {
      const b = new Uint8Array(rng.nextU32() % 64);
      for (let k = 0; k < b.length; k++) b[k] = rng.nextU32() & 0xff;
      if (b.length > 0 && i % 2 === 0) b[0] = 1 + (rng.nextU32() % 5);
      r.world.inject('stranger', 'server', b);
    }
    expect(() => r.world.runFor(100)).not.toThrow();
    const c = r.server.counters();
    expect(c.malformed + c.unknownAddress).toBeGreaterThan(0);
    expect(r.server.size).toBe(1);
  });
});

describe('ConnectionHost: close and timeout', () => {
  it('close() tells the peer at once (disconnected peer) and frees both slots', () => {
    const r = rig(7, { latencyMs: 10 });
    r.world.runUntil(() => (r.pump(), r.serverEvents.length > 0 && r.clientEvents.length > 0), { maxTimeMs: 1000 });
    r.conn.close();
    expect(r.conn.send(0, new Uint8Array(1))).toBe(-1);
    r.world.runFor(100);
    r.pump();
    expect(r.clientEvents.at(-1)).toMatchObject({ type: 'disconnected', reason: 'local' });
    expect(r.serverEvents.at(-1)).toMatchObject({ type: 'disconnected', reason: 'peer' });
    expect(r.server.size).toBe(0);
    expect(r.client.size).toBe(0);
  });

  it('times out when the link dies, and keeps an idle link alive for an hour', () => {
    const r = rig(8, { latencyMs: 10 });
    r.world.runUntil(() => (r.pump(), r.serverEvents.length > 0), { maxTimeMs: 1000 });
    r.world.runFor(3_600_000);
    r.pump();
    expect(r.conn.state).toBe('connected');
    const sent = r.world.peerStats('client').datagramsSent;
    expect(sent).toBeLessThan(3 * 3600 + 50); // keep-alives at about 1 Hz, no ack ping-pong
    r.conn.send(0, message(1, 100));
    r.run(200);
    expect(r.clientEvents.filter((e) => e.type === 'message')).toHaveLength(1);
    const outage = [{ startMs: r.world.now, endMs: r.world.now + 60_000 }];
    r.world.link('client', 'server').reconfigure(r.world.now, { outage });
    r.world.link('server', 'client').reconfigure(r.world.now, { outage });
    r.world.runFor(11_000);
    r.pump();
    expect(r.clientEvents.at(-1)).toMatchObject({ type: 'disconnected', reason: 'timeout' });
    expect(r.serverEvents.at(-1)).toMatchObject({ type: 'disconnected', reason: 'timeout' });
  });
});

describe('Connection: every mode end to end', () => {
  for (const loss of [0, 0.1, 0.3, 0.5]) {
    it(`echoes messages on all five lanes at ${loss * 100} % loss with jitter and duplication`, () => {
      const r = rig(100 + loss * 10, { latencyMs: 30, jitterMs: 10, loss, duplicate: 0.02 });
      const n = 200;
      const sizes = [1, 40, 300, 1500, 5000];
      let sent = 0;
      const notices = new Map<number, boolean>();
      const timer = (): void => {
        if (sent >= n) return;
        const i = sent++;
        for (let lane = 0; lane < 5; lane++) {
          const size = lane >= 2 ? Math.min(sizes[i % 5]!, 1000) + 4 : sizes[i % 5]! + 4;
          const id = r.conn.send(lane, message(i, size));
          if (lane === 4) notices.set(id, false);
        }
        r.world.at(r.world.now + 20, timer);
      };
      r.world.at(0, timer);
      r.run(n * 20 + 8000);
      const got = (lane: number): number[] => r.clientEvents.flatMap((e) => (e.type === 'message' && e.lane === lane ? [idOf(e.bytes)] : []));
      expect(got(0)).toEqual([...Array(n).keys()]);
      expect([...got(1)].sort((a, b) => a - b)).toEqual([...Array(n).keys()]);
      for (const lane of [2, 3, 4]) {
        const ids = got(lane);
        expect(new Set(ids).size).toBe(ids.length);
        // Sequenced drops what arrives after a newer one (the link reorders); the others lose only to loss.
        if (loss === 0) expect(ids.length, `lane ${lane}`).toBeGreaterThanOrEqual(lane === 3 ? n * 0.9 : n);
        else expect(ids.length).toBeGreaterThan(n * (1 - loss) * (1 - loss) * 0.5);
      }
      const seq = got(3);
      for (let k = 1; k < seq.length; k++) expect(seq[k]!).toBeGreaterThan(seq[k - 1]!);
      for (const e of r.clientEvents) {
        if (e.type === 'message') {
          const i = idOf(e.bytes);
          expect(e.bytes).toEqual(message(i, e.bytes.length));
        }
      }
      const outcomes = r.clientEvents.filter((e) => e.type === 'delivery');
      expect(outcomes).toHaveLength(n);
      const s = r.conn.stats();
      expect(s.srttMs).toBeGreaterThan(55);
      expect(s.srttMs).toBeLessThan(150);
    });
  }
});

describe('Connection: one-way links, ack-path loss, bursts', () => {
  it('one-way traffic: the receiver only acks (ack-only packets, no ping-pong), everything reliable arrives', () => {
    const r = rig(300, { latencyMs: 25, loss: 0.05 }, {}, false);
    r.run(500);
    // A packet every 2 ms: the receiver acks every second one (ackEveryPackets 2) within maxAckDelayMs.
    for (let i = 0; i < 500; i++) r.world.at(r.world.now + i * 2, () => r.conn.send(0, message(i, 200)));
    r.run(10_000);
    const got = r.serverEvents.filter((e) => e.type === 'message').map((e) => idOf((e as { bytes: Uint8Array }).bytes));
    expect(got).toEqual([...Array(500).keys()]);
    const serverSent = r.world.peerStats('server').datagramsSent;
    const clientSent = r.world.peerStats('client').datagramsSent;
    expect(serverSent).toBeLessThan(clientSent * 0.8); // acks ride every second packet or so, never one each way per packet
    expect(r.conn.stats().packetsLost).toBeGreaterThan(0);
  });

  it('loss on the ack path only (40 % server → client): no message is sent twice needlessly forever, all arrive', () => {
    const world = new World({
      seed: 301,
      routes: [
        { from: 'client', to: 'server', link: { latencyMs: 20 } },
        { from: 'server', to: 'client', link: { latencyMs: 20, loss: 0.4 } },
      ],
    });
    const server = new ConnectionHost({ lanes: LANES, listen: true, random: seededRandom(1) });
    const client = new ConnectionHost({ lanes: LANES, random: seededRandom(2) });
    world.add('server', server);
    world.add('client', client);
    const conn = client.connect(0, 'server');
    const got: number[] = [];
    for (let i = 0; i < 300; i++) world.at(100 + i * 10, () => conn.send(0, message(i, 100)));
    world.runUntil(() => {
      for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) if (e.type === 'message') got.push(idOf(e.bytes));
      client.pollEvent();
      return false;
    }, { maxTimeMs: 10_000 });
    expect(got).toEqual([...Array(300).keys()]);
    const lane = conn.stats().lanes[0] as LaneStats;
    expect(lane.delivered).toBe(300);
    expect(lane.inFlightBytes).toBe(0);
    expect(server.connections()[0]!.counters().channels.payloadsRefused).toBe(0);
  });

  it('bursty loss (Gilbert-Elliott, bursts of ~5 at 50 %) both ways: reliable lanes complete, in order', () => {
    const r = rig(302, { latencyMs: 30, gilbertElliott: { pGoodToBad: 0.02, pBadToGood: 0.2, lossGood: 0, lossBad: 0.5 } });
    for (let i = 0; i < 300; i++) r.world.at(i * 15, () => { r.conn.send(0, message(i, 60)); r.conn.send(1, message(i, 60)); });
    r.run(15_000);
    const lane = (l: number): number[] => r.clientEvents.flatMap((e) => (e.type === 'message' && e.lane === l ? [idOf(e.bytes)] : []));
    expect(lane(0)).toEqual([...Array(300).keys()]);
    expect([...lane(1)].sort((a, b) => a - b)).toEqual([...Array(300).keys()]);
  });
});
