// Fuzz of real connection traffic: a listening ConnectionHost and clients on the simulator world. The
// datagrams of some clients are bit-flipped, truncated, extended, duplicated or replaced on the way;
// mutated and exact copies of all traffic are sprayed at every endpoint from other addresses; random datagrams
// arrive from anywhere. Every datagram reaches some `handleDatagram`. Checked: nothing throws, the
// host never holds more than maxConnections, the attackers (who never receive) never get a connection,
// drops are counted, and the honest clients (whose traffic
// is only lost, duplicated or reordered, as UDP's checksum allows: the unsecured framing does not
// authenticate payloads) get every reliable echo intact and in order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { Connection } from '../../src/connection/connection.js';
import { ConnectionHost } from '../../src/connection/host.js';
import type { LaneConfig } from '../../src/connection/options.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { World } from '../../src/sim/world.js';

const LANES: LaneConfig[] = [
  { mode: 'reliable-ordered' }, { mode: 'unreliable' }, { mode: 'notify' }, { mode: 'reliable-unordered' },
  { mode: 'block', maxMessageBytes: 64 * 1024 },
];
const BLOCK_LANE = 4;
const MAX_CONNECTIONS = 8;
const ATTACKERS = ['evil-1', 'evil-2'];

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

interface Client {
  addr: string;
  honest: boolean;
  host: ConnectionHost;
  conn: Connection;
  sent: Uint8Array[];
  got: Uint8Array[];
  blocksSent: Uint8Array[];
  blocksGot: Uint8Array[];
}

function run(seed: number): {
  clients: Client[]; server: ConnectionHost; done: boolean; mutated: number; sprayed: number; attackerConnections: number;
} {
  const rng = new NonCryptoRng(seed);
  const world = new World({ seed, link: { latencyMs: 15, jitterMs: 10, loss: 0.02 } });
  const server = new ConnectionHost({ lanes: LANES, listen: true, maxConnections: MAX_CONNECTIONS, random: seeded(seed + 1), timeoutMs: 3000 });
  world.add('server', server);
  const clients: Client[] = [];
  for (let i = 0; i < 5; i++) {
    const honest = i < 3;
    const addr = `${honest ? 'honest' : 'fuzzed'}-${i}`;
    const host = new ConnectionHost({ lanes: LANES, random: seeded(seed * 31 + i), timeoutMs: 3000 });
    world.add(addr, host);
    clients.push({ addr, honest, host, conn: host.connect(0, 'server'), sent: [], got: [], blocksSent: [], blocksGot: [] });
  }
  const byAddr = new Map(clients.map((c) => [c.addr, c]));
  const isFuzzed = (a: string): boolean => byAddr.get(a)?.honest === false;
  const endpoints = ['server', ...clients.map((c) => c.addr)];
  const pick = <T>(xs: readonly T[]): T => xs[rng.nextInt(xs.length)]!;
  const random = (n: number): Uint8Array => rng.fill(new Uint8Array(n));

  const mutate = (b: Uint8Array): Uint8Array => {
    const op = rng.nextInt(5);
    if (op === 0 || b.length === 0) return random(rng.nextInt(1300));
    if (op === 1) return b.slice(0, rng.nextInt(b.length));
    if (op === 2) return Uint8Array.from([...b, ...random(1 + rng.nextInt(64))]);
    const c = b.slice();
    for (let n = 1 + rng.nextInt(op === 3 ? 2 : 12); n > 0; n--) c[rng.nextInt(c.length)]! ^= 1 << rng.nextInt(8);
    return c;
  };

  let mutated = 0;
  let sprayed = 0;
  world.onDeliver = (from, to, bytes) => {
    if (!byAddr.has(from) && from !== 'server') return undefined;
    const fuzzedTraffic = isFuzzed(from) || isFuzzed(to);
    if (rng.nextFloat() < 0.25) {
      // Copies go to the server or to fuzzed clients only: an honest client has one connection, to the
      // server's address, and an unauthenticated copy from there would be indistinguishable from it.
      const target = pick(['server', ...clients.filter((c) => !c.honest).map((c) => c.addr)]);
      const source = pick(ATTACKERS);
      world.send(source, target, rng.nextFloat() < 0.2 ? bytes.slice() : mutate(bytes));
      sprayed++;
    }
    if (fuzzedTraffic) {
      if (rng.nextFloat() < 0.3) {
        mutated++;
        return rng.nextFloat() < 0.2 ? [mutate(bytes), bytes.slice()] : mutate(bytes);
      }
      return undefined;
    }
    return rng.nextFloat() < 0.03 ? [bytes, bytes.slice()] : undefined;
  };
  const noise = (): void => {
    world.send(pick(ATTACKERS), pick(['server', ...clients.filter((c) => !c.honest).map((c) => c.addr)]), random(rng.nextInt(200)));
    world.at(world.now + 1 + rng.nextInt(20), noise);
  };
  world.at(1, noise);

  const sendUntil = 4000;
  const talk = (): void => {
    for (const c of clients) {
      if (c.conn.state !== 'connected') continue;
      const m = random(1 + rng.nextInt(rng.nextInt(10) === 0 ? 4000 : 300));
      c.conn.send(0, m);
      c.sent.push(m);
      c.conn.send(1 + rng.nextInt(3), random(rng.nextInt(900)));
      if (rng.nextInt(10) === 0) {
        const b = random(rng.nextInt(40_000));
        c.conn.send(BLOCK_LANE, b);
        c.blocksSent.push(b);
      }
    }
    if (world.now + 25 <= sendUntil) world.at(world.now + 25, talk);
  };
  world.at(50, talk);

  const honest = clients.filter((c) => c.honest);
  let attackerConnections = 0;
  const r = world.runUntil(() => {
    for (const a of ATTACKERS) if (server.connectionAt(a) !== undefined) attackerConnections++;
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      if (e.type === 'message' && (e.lane === 0 || e.lane === BLOCK_LANE) && e.connection.state === 'connected') {
        e.connection.send(e.lane, e.bytes);
      }
    }
    for (const c of clients) {
      for (let e = c.host.pollEvent(); e !== undefined; e = c.host.pollEvent()) {
        if (e.type === 'message' && e.lane === 0) c.got.push(e.bytes);
        if (e.type === 'message' && e.lane === BLOCK_LANE) c.blocksGot.push(e.bytes);
      }
    }
    if (server.size > MAX_CONNECTIONS) expect(server.size).toBeLessThanOrEqual(MAX_CONNECTIONS);
    return world.now > sendUntil && honest.every((c) => c.got.length >= c.sent.length && c.blocksGot.length >= c.blocksSent.length);
  }, { maxTimeMs: 20_000 });
  return { clients, server, done: r.ok, mutated, sprayed, attackerConnections };
}

describe('fuzz: connection traffic into every handleDatagram', () => {
  it('never throws, stays bounded, counts drops, and honest clients get every reliable echo in order', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 1_000_000 }), (seed) => {
      const o = run(seed);
      expect(o.mutated).toBeGreaterThan(50);
      expect(o.sprayed).toBeGreaterThan(100);
      expect(o.attackerConnections).toBe(0);
      for (const c of o.clients.filter((x) => x.honest)) {
        expect(c.sent.length).toBeGreaterThan(100);
        expect(c.got.map((b) => Array.from(b).join(','))).toEqual(c.sent.map((b) => Array.from(b).join(',')));
        expect(c.blocksSent.length).toBeGreaterThan(0);
        expect(c.blocksGot.map((b) => Buffer.from(b).toString('base64'))).toEqual(c.blocksSent.map((b) => Buffer.from(b).toString('base64')));
      }
      expect(o.done).toBe(true);
      const k = o.server.counters();
      expect(k.malformed + k.unknownAddress).toBeGreaterThan(0);
    }), { numRuns: 3 });
  });
});
