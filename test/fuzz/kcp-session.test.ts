// Fuzz of real KCP session traffic: KcpServer and KcpClients (raw and cookie mode) on the simulator
// world, with the datagrams of some sessions bit-flipped, truncated, duplicated or replaced on the
// way, mutated copies of all traffic sprayed at every endpoint from other addresses, random datagrams,
// and (raw mode) a flood of small out-of-order segments over many convs. Every datagram reaches some
// `handleDatagram`. Checked: nothing throws, memory stays within the configured limits, the drops are
// counted, and the honest sessions (whose datagrams are only lost, duplicated, reordered or cut, never
// forged: neither mode authenticates payload) deliver every message intact and in order.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../../src/core/rng.js';
import { KcpArena, type KcpOptions } from '../../src/kcp/kcp.js';
import { KCP_OVERHEAD, KcpCommand, encodeKcpHeader } from '../../src/kcp/segment.js';
import { KcpClient, KcpServer, type KcpSession, type KcpSessionEvent, type KcpSessionMode } from '../../src/kcp/session.js';
import { World } from '../../src/sim/world.js';

const FAST: KcpOptions = { nodelay: 1, interval: 10, resend: 2, nc: true };
// The raw flood below fills the out-of-order share (3/4) of this budget, its segments charged with their
// records (256 B each, KCP_SEGMENT_BYTES), about as far as the honest sessions' reordered segments
// still find room now and then.
const SERVER_BUDGET = 5 * 1024 * 1024;
const CLIENT_BUDGET = 128 * 1024;
const MAX_SESSIONS = 48;
const HONEST = 3;
const FUZZED = 3;
const ATTACKERS = ['evil-1', 'evil-2', 'evil-3'];

interface Peer {
  addr: string;
  honest: boolean;
  client: KcpClient;
  arena: KcpArena;
  sent: Uint8Array[];
  got: Uint8Array[];
  opened: boolean;
}

function randomBytes(rng: NonCryptoRng, n: number): Uint8Array {
  return rng.fill(new Uint8Array(n));
}

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

interface Outcome {
  server: KcpServer;
  serverArena: KcpArena;
  /** Every session the server opened (closed ones keep their counters). */
  sessions: Set<KcpSession>;
  peers: Peer[];
  world: World;
  mutated: number;
  sprayed: number;
  flooded: number;
  maxServerBytes: number;
  done: boolean;
}

function run(mode: KcpSessionMode, seed: number): Outcome {
  const rng = new NonCryptoRng(seed);
  const world = new World({ seed, link: { latencyMs: 15, jitterMs: 10, loss: 0.02 }, integerTime: true });
  const serverArena = new KcpArena({ maxReceiveBytes: SERVER_BUDGET });
  const server = new KcpServer({
    mode, maxSessions: MAX_SESSIONS, random: seeded(seed + 1), kcp: { ...FAST, arena: serverArena }, idleTimeoutMs: 4000,
  });
  world.add('server', server);
  const peers: Peer[] = [];
  for (let i = 0; i < HONEST + FUZZED; i++) {
    const honest = i < HONEST;
    const arena = new KcpArena({ maxReceiveBytes: CLIENT_BUDGET });
    // Raw-mode convs far apart in bits, so a few flipped bits never turn one session's conv into another's.
    const conv = honest ? 0x1000_0001 + i : 0x7e5a_0000 + i;
    const client = new KcpClient({ mode, conv, remote: 'server', random: seeded(seed * 31 + i), kcp: { ...FAST, arena } });
    const p: Peer = { addr: `${honest ? 'honest' : 'fuzzed'}-${i}`, honest, client, arena, sent: [], got: [], opened: mode === 'raw' };
    peers.push(p);
    world.add(p.addr, client);
  }
  const byAddr = new Map(peers.map((p) => [p.addr, p]));
  const isFuzzed = (a: string): boolean => byAddr.get(a)?.honest === false;
  const endpoints = ['server', ...peers.map((p) => p.addr)];
  const pick = <T>(xs: readonly T[]): T => xs[rng.nextInt(xs.length)]!;

  function mutate(b: Uint8Array): Uint8Array {
    const op = rng.nextInt(6);
    if (op === 0 || b.length === 0) return randomBytes(rng, rng.nextInt(1500)); // random datagram
    if (op === 1) return b.slice(0, rng.nextInt(b.length)); // truncated
    if (op === 2) return Uint8Array.from([...b, ...randomBytes(rng, 1 + rng.nextInt(64))]); // trailing garbage
    if (op === 3) {
      const c = b.slice();
      c.fill(0, 0, Math.min(4, c.length)); // a zero prefix: cookie mode reads a control packet
      return c;
    }
    const c = b.slice();
    for (let n = 1 + rng.nextInt(op === 4 ? 2 : 12); n > 0; n--) c[rng.nextInt(c.length)]! ^= 1 << rng.nextInt(8);
    return c;
  }

  let mutated = 0;
  let sprayed = 0;
  world.onDeliver = (from, to, bytes) => {
    const real = byAddr.has(from) || from === 'server';
    if (!real) return undefined; // attackers' datagrams arrive as sent
    // Mutated copies from other addresses, at any endpoint. Raw sessions are keyed by (address, conv),
    // so copies of honest traffic from an attacker's address reach other sessions; a cookie session
    // follows any address with its cookie, so copies of honest traffic get their cookie or conv hit.
    if (rng.nextFloat() < 0.25) {
      const fuzzedTraffic = isFuzzed(from) || isFuzzed(to);
      let copy = mutate(bytes);
      if (mode === 'cookie' && !fuzzedTraffic) {
        copy = bytes.slice();
        if (copy.length >= 8) copy[rng.nextInt(8)]! ^= 1 << rng.nextInt(8);
      }
      const target = fuzzedTraffic || mode === 'raw' ? pick(endpoints) : 'server';
      // Honest clients accept only their own conv from the server: copies of their traffic never come from there.
      const source = fuzzedTraffic ? pick([...ATTACKERS, 'server', ...endpoints]) : pick(ATTACKERS);
      if (source !== target && !(byAddr.get(target)?.honest === true && source === 'server' && !fuzzedTraffic)) {
        world.send(source, target, copy);
        sprayed++;
      }
    }
    if (isFuzzed(from) || isFuzzed(to)) {
      if (rng.nextFloat() < 0.3) {
        mutated++;
        return rng.nextFloat() < 0.2 ? [mutate(bytes), bytes.slice()] : mutate(bytes);
      }
      return undefined;
    }
    // Honest traffic: duplicated or cut short (acts as a loss), never forged.
    const r = rng.nextFloat();
    if (r < 0.03) return [bytes, bytes.slice()];
    if (r < 0.05) return bytes.slice(0, rng.nextInt(bytes.length));
    return undefined;
  };

  // Random datagrams from anywhere, every few ms.
  const noise = (): void => {
    world.send(pick([...ATTACKERS, ...endpoints]), pick(endpoints), randomBytes(rng, rng.nextInt(200)));
    world.at(world.now + 1 + rng.nextInt(20), noise);
  };
  world.at(1, noise);

  // Raw mode: small out-of-order PUSH segments (sn 0 never comes) over more convs than sessions fit.
  let flooded = 0;
  if (mode === 'raw') {
    const seg = new Uint8Array(KCP_OVERHEAD + 1000);
    const nextSn = new Map<number, number>();
    const flood = (): void => {
      floodOne();
      floodOne();
      world.at(world.now + 1, flood);
    };
    const floodOne = (): void => {
      const conv = 0x0f00_0000 + rng.nextInt(MAX_SESSIONS + 4);
      const sn = nextSn.get(conv) ?? 1;
      nextSn.set(conv, sn === 127 ? 1 : sn + 1);
      const len = rng.nextFloat() < 0.3 ? 1 : 1000;
      encodeKcpHeader(seg, 0, { conv, cmd: KcpCommand.PUSH, frg: 0, wnd: 128, ts: 0, sn, una: 0, len });
      world.send('flood', 'server', seg.slice(0, KCP_OVERHEAD + len));
      flooded++;
    };
    // It starts once the clients' sessions exist: in raw mode sessions are first come, first served,
    // and a flood of new convs would otherwise take every slot (refusedFull) before they arrive.
    world.at(500, flood);
  }

  const sessions = new Set<KcpSession>();
  const poll = (): void => {
    for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) {
      if (ev.type === 'open') sessions.add(ev.session);
      if (ev.type === 'message' && ev.session.state === 'open') ev.session.send(ev.data);
    }
    for (const p of peers) {
      for (let ev: KcpSessionEvent | undefined = p.client.pollEvent(); ev !== undefined; ev = p.client.pollEvent()) {
        if (ev.type === 'open') p.opened = true;
        if (ev.type === 'message') p.got.push(ev.data);
      }
    }
  };

  // Every open client sends a message every 25 ms for 4 s (one in ten up to 3000 bytes: fragments).
  const sendUntil = 4000;
  const talk = (): void => {
    for (const p of peers) {
      if (p.client.state !== 'open' || (mode === 'cookie' && !p.opened)) continue;
      const m = randomBytes(rng, 1 + rng.nextInt(rng.nextInt(10) === 0 ? 3000 : 300));
      p.client.send(m);
      p.sent.push(m);
    }
    if (world.now + 25 <= sendUntil) world.at(world.now + 25, talk);
  };
  world.at(50, talk);

  let maxServerBytes = 0;
  const honest = peers.filter((p) => p.honest);
  const r = world.runUntil(() => {
    poll();
    maxServerBytes = Math.max(maxServerBytes, serverArena.receiveBytes);
    if (serverArena.receiveBytes > SERVER_BUDGET) expect(serverArena.receiveBytes).toBeLessThanOrEqual(SERVER_BUDGET);
    if (server.sessionCount > MAX_SESSIONS) expect(server.sessionCount).toBeLessThanOrEqual(MAX_SESSIONS);
    for (const p of peers) if (p.arena.receiveBytes > CLIENT_BUDGET) expect(p.arena.receiveBytes).toBeLessThanOrEqual(CLIENT_BUDGET);
    return world.now > sendUntil && honest.every((p) => p.got.length >= p.sent.length);
  }, { maxTimeMs: 15_000 });
  return { server, serverArena, sessions, peers, world, mutated, sprayed, flooded, maxServerBytes, done: r.ok };
}

function expectHonestComplete(o: Outcome): void {
  expect(o.done).toBe(true);
  for (const p of o.peers.filter((x) => x.honest)) {
    expect(p.client.state).toBe('open');
    expect(p.got.length).toBe(p.sent.length);
    p.got.forEach((m, i) => {
      if (m.length !== p.sent[i]!.length || m.some((b, j) => b !== p.sent[i]![j])) expect([p.addr, i, ...m]).toEqual([p.addr, i, ...p.sent[i]!]);
    });
  }
}

// The run's seed is the global fast-check seed (test/setup/fast-check.ts): FC_SEED explores here too.
const SEED = (fc.readConfigureGlobal().seed ?? 1) | 0;

describe('fuzz: KCP sessions under mutated traffic', () => {
  it('raw mode: nothing throws, memory within the budgets, drops counted, honest sessions complete', () => {
    const o = run('raw', SEED);
    expectHonestComplete(o);
    expect(o.mutated).toBeGreaterThan(100);
    expect(o.sprayed).toBeGreaterThan(100);
    const c = o.server.counters();
    // Every datagram that reached the server was counted, and the bad ones were dropped as such.
    expect(c.datagramsIn).toBe(o.world.peerStats('server').datagramsReceived);
    expect(c.droppedMalformed).toBeGreaterThan(0);
    expect(c.refusedFull).toBeGreaterThan(0);
    // The flood filled the receive budget's out-of-order share: each segment refused there was counted
    // once by its session's Kcp and once by the arena.
    const arena = o.serverArena.counters();
    expect(arena.receiveDropped).toBeGreaterThan(0);
    expect(o.maxServerBytes).toBeGreaterThan(SERVER_BUDGET / 2);
    let overBudget = 0;
    let rejected = 0;
    for (const s of o.sessions) {
      const k = s.kcp.counters();
      overBudget += k.pushOverBudget;
      rejected += k.inputRejectedConv + k.inputRejectedLength + k.inputRejectedCommand + k.inputRejectedShort;
    }
    expect(overBudget).toBe(arena.receiveDropped);
    expect(o.sessions.size).toBe(o.server.counters().sessionsOpened);
    expect(rejected).toBe(0); // the host checks datagrams before any session's Kcp sees them
    for (const p of o.peers) {
      expect(p.client.counters().datagramsIn).toBe(o.world.peerStats(p.addr).datagramsReceived);
      if (p.honest) expect(p.client.counters().droppedUnknown + p.client.counters().droppedMalformed).toBeGreaterThan(0);
    }
  });

  it('cookie mode: nothing throws, memory within the budgets, drops counted, honest sessions complete', () => {
    const o = run('cookie', SEED + 1);
    expectHonestComplete(o);
    expect(o.mutated).toBeGreaterThan(100);
    expect(o.sprayed).toBeGreaterThan(100);
    const c = o.server.counters();
    expect(c.datagramsIn).toBe(o.world.peerStats('server').datagramsReceived);
    expect(c.droppedMalformed).toBeGreaterThan(0);
    expect(c.droppedBadCookie).toBeGreaterThan(0);
    for (const p of o.peers) {
      expect(p.client.counters().datagramsIn).toBe(o.world.peerStats(p.addr).datagramsReceived);
      if (p.honest) expect(p.client.counters().droppedBadCookie + p.client.counters().droppedUnknown).toBeGreaterThan(0);
    }
  });
});
