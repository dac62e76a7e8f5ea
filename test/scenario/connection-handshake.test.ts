// The unsecured handshake against a remote that does not receive at the address it claims (issue #19
// item 6): a spoofed CONNECT must not end a connection, a flood of them must not allocate, nothing sent
// to an unproven address may exceed what came from it, and the cookie round trip survives loss.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ConnectionEvent } from '../../src/connection/connection.js';
import { ConnectionHost } from '../../src/connection/host.js';
import type { LaneConfig } from '../../src/connection/options.js';
import { resolveConnectionOptions } from '../../src/connection/options.js';
import { CONNECT_BYTES, encodeConnect, FrameKind } from '../../src/connection/wire.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { World } from '../../src/sim/world.js';

const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'unreliable' }];
const HASH = resolveConnectionOptions({ lanes: LANES }).lanesHash;
// The server's answer to a CONNECT without a valid cookie (kind byte).
const COOKIE_KIND = 0x07;
// Offset and length of the cookie inside a CONNECT.
const COOKIE_AT = 14;
const COOKIE_LEN = 12;

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

function connect(clientId: number, lanesHash: number, cookie?: Uint8Array, version?: number): Uint8Array {
  const b = new Uint8Array(CONNECT_BYTES);
  encodeConnect(b, clientId, lanesHash);
  if (cookie !== undefined) b.set(cookie, COOKIE_AT);
  if (version !== undefined) b[5] = version;
  return b;
}

function drainEvents(h: ConnectionHost): string[] {
  const out: string[] = [];
  for (let e = h.pollEvent(); e !== undefined; e = h.pollEvent()) out.push(e.type === 'disconnected' ? e.reason : e.type);
  return out;
}

/** A server and one connected client on a world with `latencyMs` each way. */
function established(seed: number, latencyMs = 10): { world: World; server: ConnectionHost; client: ConnectionHost } {
  const world = new World({ seed, link: { latencyMs } });
  const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(seed) });
  const client = new ConnectionHost({ lanes: LANES, random: seeded(seed + 100) });
  world.add('server', server);
  world.add('client', client);
  const conn = client.connect(0, 'server');
  world.runUntil(() => conn.state === 'connected' && server.connections()[0]?.state === 'connected', { maxTimeMs: 2000 });
  expect(drainEvents(server)).toEqual(['connected']);
  expect(drainEvents(client)).toEqual(['connected']);
  return { world, server, client };
}

describe('a spoofed CONNECT from an established client\'s address', () => {
  it('with another client id and a wrong lanes hash leaves the connection up', () => {
    const { world, server, client } = established(1);
    world.inject('client', 'server', connect(0xdeadbeef, HASH ^ 1));
    world.runFor(3000);
    expect(drainEvents(server)).toEqual([]);
    expect(server.connections().map((c) => c.state)).toEqual(['connected']);
    expect(client.connections()[0]!.state).toBe('connected');
    expect(server.counters().superseded).toBe(0);
  });

  it('with another client id and the right lanes hash, with no cookie or a forged one, leaves the connection up', () => {
    const { world, server, client } = established(2);
    const rng = new NonCryptoRng(2);
    world.inject('client', 'server', connect(0x01020304, HASH));
    for (let i = 0; i < 50; i++) world.inject('client', 'server', connect(rng.nextU32() || 1, HASH, rng.fill(new Uint8Array(COOKIE_LEN))));
    world.runFor(3000);
    expect(drainEvents(server)).toEqual([]);
    expect(server.size).toBe(1);
    expect(server.connections()[0]!.state).toBe('connected');
    expect(client.connections()[0]!.state).toBe('connected');
    expect(server.counters()).toMatchObject({ superseded: 0, cookieInvalid: 50 });
  });

  it('with a cookie the attacker got at its own address leaves the connection up', () => {
    const { world, server } = established(3);
    let cookie: Uint8Array | undefined;
    world.onDeliver = (from, to, bytes) => {
      if (from === 'server' && to === 'attacker' && bytes[0] === COOKIE_KIND) cookie = bytes.slice(5, 5 + COOKIE_LEN);
    };
    world.add('attacker', { handleDatagram() {}, handleTimeout() {}, pollTransmit: () => undefined, pollTimeout: () => undefined, pollEvent: () => undefined });
    world.send('attacker', 'server', connect(0x0badf00d, HASH));
    world.runFor(100);
    expect(cookie).toBeDefined();
    world.inject('client', 'server', connect(0x0badf00d, HASH, cookie));
    world.runFor(3000);
    expect(drainEvents(server)).toEqual([]);
    expect(server.size).toBe(1);
    expect(server.connectionAt('client')!.state).toBe('connected');
    expect(server.connectionAt('attacker')).toBeUndefined();
  });
});

describe('a flood of spoofed CONNECTs from addresses that never answer', () => {
  it('maxConnections + 276 of them allocate nothing, and a real client still connects', () => {
    const world = new World({ seed: 4, link: { latencyMs: 10 } });
    const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(4) });
    world.add('server', server);
    const n = 1300;
    for (let i = 0; i < n; i++) world.inject(`spoof-${i}`, 'server', connect(i + 1, HASH));
    world.runFor(100);
    expect(server.size).toBe(0);
    expect(server.counters().host.peersAdded).toBe(0);
    expect(server.counters().connectionsOpened).toBe(0);
    const client = new ConnectionHost({ lanes: LANES, random: seeded(5) });
    world.add('client', client);
    const conn = client.connect(world.now, 'server');
    world.runUntil(() => conn.state !== 'connecting', { maxTimeMs: 2000 });
    expect(drainEvents(client)).toEqual(['connected']);
    expect(server.size).toBe(1);
    world.runFor(10_000);
    expect(drainEvents(server)).toEqual(['connected']);
    expect(server.size).toBe(1);
  });
});

describe('what an unproven address gets back', () => {
  it('never more datagrams or bytes than it sent, and nothing once it stops sending', () => {
    // Every kind of CONNECT a spoofer can make: any version, lanes hash, client id, cookie (none,
    // random, or a valid one granted to another address), sent at chosen times.
    const variant = fc.record({
      dt: fc.integer({ min: 0, max: 3000 }),
      id: fc.integer({ min: 0, max: 0xffffffff }),
      lanes: fc.constantFrom(HASH, HASH ^ 0x10, 0),
      version: fc.constantFrom(undefined, 0, 1, 3, 255),
      cookie: fc.constantFrom('none', 'random', 'other-address'),
    });
    fc.assert(fc.property(fc.array(variant, { minLength: 1, maxLength: 40 }), fc.integer({ min: 1, max: 1000 }), (xs, seed) => {
      const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(seed), handshakeTimeoutMs: 1000 });
      const out = new Uint8Array(1500);
      const rng = new NonCryptoRng(seed);
      let inBytes = 0;
      let inCount = 0;
      let outBytes = 0;
      let outCount = 0;
      let granted: Uint8Array | undefined;
      const drain = (now: number): void => {
        for (let t = server.pollTransmit(now, out); t !== undefined; t = server.pollTransmit(now, out)) {
          if (t.to === 'victim') {
            outBytes += t.length;
            outCount++;
          } else if (out[0] === COOKIE_KIND) granted = out.slice(5, 5 + COOKIE_LEN);
        }
        for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent());
      };
      let now = 0;
      for (const x of xs) {
        now += x.dt;
        server.handleTimeout(now);
        drain(now);
        if (x.cookie === 'other-address') {
          server.handleDatagram(now, 'accomplice', connect(x.id, x.lanes));
          drain(now);
        }
        const cookie = x.cookie === 'none' ? undefined : x.cookie === 'random' ? rng.fill(new Uint8Array(COOKIE_LEN)) : granted;
        const b = connect(x.id, x.lanes, cookie, x.version);
        server.handleDatagram(now, 'victim', b);
        inBytes += b.length;
        inCount++;
        drain(now);
        expect(outBytes).toBeLessThanOrEqual(inBytes);
        expect(outCount).toBeLessThanOrEqual(inCount);
      }
      // The victim is silent from here: run every timer the server has for a minute.
      const sentBefore = outCount;
      for (const end = now + 60_000; now < end;) {
        const t = server.pollTimeout();
        now = t === undefined ? end : Math.min(end, Math.max(now, t));
        server.handleTimeout(now);
        drain(now);
      }
      expect(outCount).toBe(sentBefore);
      expect(server.connectionAt('victim')).toBeUndefined();
    }), { numRuns: 100 });
  });
});

describe('the cookie round trip on the simulator', () => {
  it('connects when the first COOKIE and the first CONNECT carrying a cookie are lost (each retried)', () => {
    const world = new World({ seed: 6, link: { latencyMs: 15 } });
    const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(6) });
    const client = new ConnectionHost({ lanes: LANES, random: seeded(7) });
    world.add('server', server);
    world.add('client', client);
    const log: string[] = [];
    let droppedCookie = false;
    let droppedEcho = false;
    world.onDeliver = (from, _to, b) => {
      const hasCookie = b[0] === FrameKind.Connect && b.subarray(COOKIE_AT, COOKIE_AT + COOKIE_LEN).some((x) => x !== 0);
      const kind = b[0] === COOKIE_KIND ? 'cookie' : b[0] === FrameKind.Connect ? (hasCookie ? 'connect+cookie' : 'connect') : `${b[0]}`;
      if (kind === 'cookie' && !droppedCookie) {
        droppedCookie = true;
        log.push(`lost ${kind}`);
        return null;
      }
      if (kind === 'connect+cookie' && !droppedEcho) {
        droppedEcho = true;
        log.push(`lost ${kind}`);
        return null;
      }
      log.push(`${from}: ${kind}`);
      return undefined;
    };
    const conn = client.connect(0, 'server');
    world.runUntil(() => conn.state === 'connected', { maxTimeMs: 3000 });
    expect(conn.state).toBe('connected');
    expect(log).toEqual([
      'client: connect', // at 0
      'lost cookie',
      'client: connect', // resent at 250
      'server: cookie',
      'lost connect+cookie', // the echo, sent at once
      'client: connect+cookie', // resent 250 ms later
      'server: 2', // ACCEPT
    ]);
    expect(world.now).toBeGreaterThan(500);
    expect(world.now).toBeLessThan(600);
    world.runFor(100);
    expect(drainEvents(server)).toEqual(['connected']);
    expect(server.counters().connectionsOpened).toBe(1);
  });

  for (const seed of [11, 12, 13]) {
    it(`seed ${seed}: connects through 40 % loss each way with jitter and duplication`, () => {
      const world = new World({ seed, link: { latencyMs: 40, jitterMs: 20, loss: 0.4, duplicate: 0.05 } });
      const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(seed) });
      const client = new ConnectionHost({ lanes: LANES, random: seeded(seed + 1) });
      world.add('server', server);
      world.add('client', client);
      const conn = client.connect(0, 'server');
      world.runUntil(() => conn.state === 'connected' && server.connections()[0]?.state === 'connected', { maxTimeMs: 5000 });
      expect(conn.state).toBe('connected');
      expect(server.size).toBe(1);
      expect(server.counters().connectionsOpened).toBe(1);
    });
  }

  it('a cookie that expired while every echo was lost is replaced, and the client connects', () => {
    const world = new World({ seed: 8, link: { latencyMs: 10 } });
    const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(8), handshakeTimeoutMs: 1000 });
    const client = new ConnectionHost({ lanes: LANES, random: seeded(9), handshakeTimeoutMs: 5000 });
    world.add('server', server);
    world.add('client', client);
    world.onDeliver = (_from, _to, b) => {
      const echo = b[0] === FrameKind.Connect && b.subarray(COOKIE_AT, COOKIE_AT + COOKIE_LEN).some((x) => x !== 0);
      return echo && world.now < 1500 ? null : undefined;
    };
    const conn = client.connect(0, 'server');
    world.runUntil(() => conn.state === 'connected', { maxTimeMs: 4000 });
    expect(conn.state).toBe('connected');
    expect(server.counters().cookieExpired).toBeGreaterThan(0);
  });
});

describe('a client restarted at the same address', () => {
  it('replaces its old connection once its new CONNECT proves the address and passes every check', () => {
    const { world, server } = established(10);
    const old = server.connectionAt('client')!;
    world.remove('client');
    const again = new ConnectionHost({ lanes: LANES, random: seeded(999) });
    world.add('client', again);
    const conn = again.connect(world.now, 'server');
    world.runUntil(() => conn.state === 'connected', { maxTimeMs: 2000 });
    expect(conn.state).toBe('connected');
    world.runFor(100);
    const events: ConnectionEvent[] = [];
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) events.push(e);
    expect(events.map((e) => [e.type === 'disconnected' ? e.reason : e.type, e.connection === old])).toEqual([
      ['superseded', true],
      ['connected', false],
    ]);
    expect(server.size).toBe(1);
    expect(server.counters().superseded).toBe(1);
  });

  it('with a lane list that differs is refused and the old connection stays', () => {
    const { world, server } = established(11);
    world.remove('client');
    const odd = new ConnectionHost({ lanes: [{ mode: 'unreliable' }], random: seeded(1000) });
    world.add('client', odd);
    odd.connect(world.now, 'server');
    world.runFor(500);
    expect(drainEvents(odd)).toEqual(['refused-lanes']);
    expect(drainEvents(server)).toEqual([]);
    expect(server.connectionAt('client')!.state).toBe('connected');
  });
});

describe('checks before any state changes', () => {
  it('a CONNECT of framing version 1 (no cookie round trip) is refused at once, statelessly, with 6 bytes', () => {
    const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(20) });
    const v1 = Uint8Array.from('014757434e0144332211d4c3b2a1000000000000000000000000000000000000'.match(/../g)!.map((x) => Number.parseInt(x, 16)));
    server.handleDatagram(5, 'old-client', v1);
    const out = new Uint8Array(1500);
    const t = server.pollTransmit(5, out);
    expect(t).toMatchObject({ to: 'old-client', length: 6 });
    expect(Buffer.from(out.subarray(0, 6)).toString('hex')).toBe('034433221103');
    expect(server.pollTransmit(5, out)).toBeUndefined();
    expect(server.size).toBe(0);
    expect(server.counters().refusedVersion).toBe(1);
  });

  it('at maxConnections a restarted client is refused (full) and its old connection stays', () => {
    const world = new World({ seed: 21, link: { latencyMs: 10 } });
    const server = new ConnectionHost({ lanes: LANES, listen: true, maxConnections: 1, random: seeded(21) });
    const first = new ConnectionHost({ lanes: LANES, random: seeded(22) });
    world.add('server', server);
    world.add('client', first);
    const conn = first.connect(0, 'server');
    world.runUntil(() => conn.state === 'connected', { maxTimeMs: 1000 });
    world.runFor(50);
    expect(drainEvents(server)).toEqual(['connected']);
    world.remove('client');
    const again = new ConnectionHost({ lanes: LANES, random: seeded(23) });
    world.add('client', again);
    again.connect(world.now, 'server');
    world.runFor(500);
    expect(drainEvents(again)).toEqual(['refused-full']);
    expect(drainEvents(server)).toEqual([]);
    expect(server.connectionAt('client')!.state).toBe('connected');
  });
});
