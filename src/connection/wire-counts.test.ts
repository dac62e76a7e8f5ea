// The wire counts of an unsecured connection (ConnectionStats datagramsSent/bytesSent/datagramsReceived/
// bytesReceived) against what the simulator's drivers saw, datagram for datagram.
import { describe, expect, it } from 'vitest';
import type { LaneConfig } from './options.js';
import { seededRandom } from '../core/random.js';
import { World } from '../sim/world.js';
import type { Connection, ConnectionEvent } from './connection.js';
import { ConnectionHost } from './host.js';
import { FrameKind } from './wire.js';

const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'unreliable' }, { mode: 'block', maxMessageBytes: 1 << 20 }];

interface Seen {
  datagrams: number;
  bytes: number;
  kinds: number[];
  lengths: number[];
}

const seen = (): Seen => ({ datagrams: 0, bytes: 0, kinds: [], lengths: [] });

function rig(seed: number) {
  const world = new World({ seed, link: { latencyMs: 25 } });
  const server = new ConnectionHost({ lanes: LANES, listen: true, random: seededRandom(seed + 1) });
  const client = new ConnectionHost({ lanes: LANES, random: seededRandom(seed + 2) });
  world.add('server', server);
  world.add('client', client);
  // What each driver handed to its endpoint, by receiving address.
  const delivered: Record<string, Seen> = { server: seen(), client: seen() };
  world.onDeliver = (_from, to, bytes) => {
    const s = delivered[to]!;
    s.datagrams++;
    s.bytes += bytes.length;
    s.kinds.push(bytes[0]!);
    s.lengths.push(bytes.length);
  };
  let serverConn: Connection | undefined;
  const events: ConnectionEvent[] = [];
  const pump = (): void => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      events.push(e);
      if (e.type === 'connected') serverConn = e.connection;
      if (e.type === 'message' && e.lane !== 2) e.connection.send(e.lane, e.bytes);
    }
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) events.push(e);
  };
  const conn = client.connect(world.now, 'server');
  const quiet = (): boolean => {
    const a = world.link('client', 'server').counters();
    const b = world.link('server', 'client').counters();
    return a.sent === a.delivered && b.sent === b.delivered;
  };
  return { world, server, client, conn, delivered, events, pump, quiet, serverConn: () => serverConn! };
}

describe('wire counts: unsecured Connection', () => {
  it('equal, exactly, the datagrams and bytes the other side\'s driver saw (DATA, BLOCK, handshake, DISCONNECT)', () => {
    const r = rig(11);
    const msg = new Uint8Array(3000).fill(7);
    for (let i = 0; i < 20; i++) r.conn.send(0, msg.subarray(0, 100 + i * 100));
    for (let i = 0; i < 20; i++) r.conn.send(1, msg.subarray(0, 50 + i));
    const block = r.conn.send(2, new Uint8Array(40_000).fill(3), true);
    let deliveredBlock = false;
    r.world.runUntil(() => {
      r.pump();
      deliveredBlock ||= r.events.some((e) => e.type === 'delivery' && e.id === block && e.delivered);
      return deliveredBlock && r.events.filter((e) => e.type === 'message' && e.lane === 0).length === 40 && r.quiet();
    }, { maxTimeMs: 10_000 });
    expect(deliveredBlock).toBe(true);
    expect(r.quiet()).toBe(true);

    const c = r.conn.stats();
    const s = r.serverConn().stats();
    const atServer = r.delivered.server;
    const atClient = r.delivered.client;
    // The block went as BLOCK datagrams, the messages as DATA.
    expect(atServer.kinds.filter((k) => k === FrameKind.Block).length).toBeGreaterThan(30);
    expect(atServer.kinds.filter((k) => k === FrameKind.Data).length).toBeGreaterThan(5);
    // The client's connection made every datagram the server's driver received, and accepted every
    // one the server's driver sent (the stateless COOKIE included: it answers this connection).
    expect([c.datagramsSent, c.bytesSent]).toEqual([atServer.datagrams, atServer.bytes]);
    expect([c.datagramsReceived, c.bytesReceived]).toEqual([atClient.datagrams, atClient.bytes]);
    // The server's connection did not exist for the first CONNECT (32 bytes) and the COOKIE (17)
    // that answered it: those were the host's.
    expect(atServer.kinds[0]).toBe(FrameKind.Connect);
    expect(atClient.kinds[0]).toBe(FrameKind.Cookie);
    expect([s.datagramsReceived, s.bytesReceived]).toEqual([atServer.datagrams - 1, atServer.bytes - 32]);
    expect([s.datagramsSent, s.bytesSent]).toEqual([atClient.datagrams - 1, atClient.bytes - 17]);
    // And the driver's own figures of the single-connection client host are the connection's.
    const pc = r.world.peerStats('client');
    expect([pc.datagramsSent, pc.bytesSent, pc.datagramsReceived, pc.bytesReceived])
      .toEqual([c.datagramsSent, c.bytesSent, c.datagramsReceived, c.bytesReceived]);

    // Close: three DISCONNECTs (6 bytes each) leave; the server's connection accepts the first and ends,
    // the other two reach an address without a connection (the host's unknownAddress).
    r.conn.close();
    r.world.runUntil(() => (r.pump(), r.quiet() && r.serverConn().state === 'closed'), { maxTimeMs: 1000 });
    r.world.runFor(200);
    const c2 = r.conn.stats();
    const s2 = r.serverConn().stats();
    expect(c2.datagramsSent - c.datagramsSent).toBe(3);
    expect(c2.bytesSent - c.bytesSent).toBe(18);
    expect([c2.datagramsSent, c2.bytesSent]).toEqual([r.delivered.server.datagrams, r.delivered.server.bytes]);
    expect(s2.datagramsReceived - s.datagramsReceived).toBe(1);
    expect(s2.bytesReceived - s.bytesReceived).toBe(6);
  });

  it('count only datagrams the connection accepted: a duplicate, a wrong receiver id and a bad header are not', () => {
    const r = rig(12);
    const captured: Uint8Array[] = [];
    r.world.onTransmit = (from, _to, bytes) => {
      if (from === 'client' && bytes[0] === FrameKind.Data) captured.push(bytes.slice());
    };
    r.conn.send(0, new Uint8Array(200));
    r.world.runUntil(() => (r.pump(), r.events.some((e) => e.type === 'message' && e.lane === 0) && r.quiet()), { maxTimeMs: 2000 });
    const before = r.serverConn().stats();
    const atServer = r.world.peerStats('server').bytesReceived;
    expect(before.bytesReceived).toBe(atServer - 32); // all but the first CONNECT, as above
    const dup = captured[captured.length - 1]!;
    const wrongId = dup.slice();
    wrongId[1]! ^= 0xff;
    const badHeader = dup.slice(0, 6);
    r.world.inject('client', 'server', dup);
    r.world.inject('client', 'server', wrongId);
    r.world.inject('client', 'server', badHeader);
    r.world.runFor(1);
    const after = r.serverConn().stats();
    expect(r.world.peerStats('server').bytesReceived - atServer).toBe(2 * dup.length + 6);
    expect(after.datagramsReceived).toBe(before.datagramsReceived);
    expect(after.bytesReceived).toBe(before.bytesReceived);
    expect(r.serverConn().counters().acks.duplicate).toBe(1);
    expect(r.serverConn().counters().acks.invalidHeader).toBe(1);
  });
});
