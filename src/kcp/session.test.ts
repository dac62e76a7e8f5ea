import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../core/rng.js';
import type { LinkConfig } from '../sim/index.js';
import { World } from '../sim/world.js';
import { Kcp } from './kcp.js';
import { encodeKcpHeader, KCP_OVERHEAD, KcpCommand, readU32LE } from './segment.js';
import {
  KcpClient, KcpServer, type KcpClientOptions, type KcpServerOptions, type KcpSessionEvent,
} from './session.js';
import {
  cookieKeyFromBytes, decodeControl, deriveCookie, encodeAccept, encodeClose, encodeConnect, encodeRefuse,
  isWellFormedKcp, KcpRefuseReason, sipHashLow32, writeKeepAlive,
} from './session-wire.js';

/** Deterministic "CSPRNG" for tests only. */
function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

interface Peer {
  client: KcpClient;
  addr: string;
  events: KcpSessionEvent[];
  /** Drop every datagram in both directions while true. */
  cut: boolean;
}

/**
 * A KcpServer at 'server' and KcpClients on the N-peer World (integer ms, as KCP's clock), with
 * every event polled after each step and the server echoing messages.
 */
class KcpFixture {
  readonly world: World;
  readonly server: KcpServer;
  readonly peers: Peer[] = [];
  readonly serverEvents: KcpSessionEvent[] = [];
  /** Every datagram, as transmitted: [from, to, hex]. */
  readonly wire: [string, string, string][] = [];
  echo = true;
  /** Poll the server's events (false: leave messages inside KCP, as a slow application would). */
  pollServer = true;
  private seed = 1;

  constructor(opts: KcpServerOptions, link: Partial<LinkConfig> = { latencyMs: 10, jitterMs: 5 }) {
    this.world = new World({ seed: 1, link, integerTime: true, startMs: 0 });
    this.server = new KcpServer({ random: seeded(99), ...opts });
    this.world.add('server', this.server);
    this.world.onTransmit = (from, to, bytes) => {
      if (!this.isCut(from) && !this.isCut(to)) this.wire.push([from, to, Buffer.from(bytes).toString('hex')]);
    };
    this.world.onDeliver = (from, to) => (this.isCut(from) || this.isCut(to) ? null : undefined);
  }

  get now(): number {
    return this.world.now;
  }

  add(addr: string, opts: KcpClientOptions): Peer {
    const p: Peer = { client: new KcpClient({ random: seeded(this.seed++), remote: 'server', ...opts }), addr, events: [], cut: false };
    this.peers.push(p);
    this.world.add(addr, p.client);
    return p;
  }

  /** The client's datagrams now come from `addr` (a NAT rebinding). */
  move(p: Peer, addr: string): void {
    this.world.remove(p.addr);
    p.addr = addr;
    this.world.add(addr, p.client);
  }

  /** Advance until `pred` holds (checked after every step) or `maxMs` passes; returns pred(). */
  runUntil(pred: () => boolean, maxMs: number): boolean {
    return this.world.runUntil(() => {
      this.pollEvents();
      return pred();
    }, { maxTimeMs: maxMs }).ok;
  }

  runFor(ms: number): void {
    const end = this.world.now + ms;
    this.runUntil(() => false, ms);
    if (this.world.now < end) this.world.runFor(end - this.world.now);
  }

  private isCut(addr: string): boolean {
    return this.peers.some((p) => p.cut && p.addr === addr);
  }

  private pollEvents(): void {
    for (let ev = this.pollServer ? this.server.pollEvent() : undefined; ev !== undefined; ev = this.server.pollEvent()) {
      this.serverEvents.push(ev);
      if (ev.type === 'message' && this.echo && ev.session.state === 'open') ev.session.send(ev.data);
    }
    for (const p of this.peers) for (let ev = p.client.pollEvent(); ev !== undefined; ev = p.client.pollEvent()) p.events.push(ev);
  }
}

function messages(p: Peer): Uint8Array[] {
  return p.events.flatMap((e) => (e.type === 'message' ? [e.data] : []));
}

function closedReason(events: KcpSessionEvent[]): string | undefined {
  const e = events.find((x) => x.type === 'closed');
  return e?.type === 'closed' ? e.reason : undefined;
}

const FAST = { nodelay: 1, interval: 10, resend: 2, nc: true };

describe('KcpServer / KcpClient, raw mode', () => {
  it('echoes for many senders, demultiplexed by address + conv (two clients share a conv)', () => {
    const net = new KcpFixture({ kcp: FAST });
    const peers = [net.add('c1', { conv: 1, kcp: FAST }), net.add('c2', { conv: 2, kcp: FAST }), net.add('c3', { conv: 1, kcp: FAST })];
    net.runFor(1);
    for (let i = 0; i < 50; i++) {
      for (const [j, p] of peers.entries()) p.client.send(new Uint8Array([j, i, 1, 2, 3]));
    }
    expect(net.runUntil(() => peers.every((p) => messages(p).length === 50), 5000)).toBe(true);
    for (const [j, p] of peers.entries()) {
      expect(messages(p).map((m) => [m[0], m[1]])).toEqual(Array.from({ length: 50 }, (_, i) => [j, i]));
    }
    expect(net.server.sessionCount).toBe(3);
    expect(net.server.session(1, 'c3')?.address).toBe('c3');
  });

  it('puts nothing but plain KCP on the wire: what its Kcp emits, byte for byte', () => {
    // A bare Kcp receives every call the session makes on its own Kcp, at the same times; the
    // client's datagrams on the wire must be exactly the bare Kcp's output (keep-alive off).
    const net = new KcpFixture({ kcp: FAST, keepAliveMs: 0 }, { latencyMs: 7, jitterMs: 9, loss: 0.15 });
    const p = net.add('c1', { conv: 0xabcdef01, kcp: FAST, keepAliveMs: 0 });
    net.runFor(1);
    const bare: string[] = [];
    const k = new Kcp(0xabcdef01, (d) => bare.push(Buffer.from(d).toString('hex')), FAST);
    const sk = p.client.session!.kcp;
    k.update(sk.current);
    const upd = sk.update.bind(sk);
    sk.update = (now) => {
      k.update(now);
      upd(now);
    };
    const inp = sk.input.bind(sk);
    sk.input = (d, now) => {
      k.input(d, now);
      return inp(d, now);
    };
    const snd = sk.send.bind(sk);
    sk.send = (d) => {
      k.send(d);
      return snd(d);
    };
    const rcv = sk.recvMessage.bind(sk);
    sk.recvMessage = () => {
      k.recvMessage();
      return rcv();
    };
    const before = net.wire.length;
    for (let i = 0; i < 200; i++) p.client.send(new Uint8Array(100 + i).fill(i));
    expect(net.runUntil(() => messages(p).length === 200, 10_000)).toBe(true);
    net.runFor(500);
    const fromClient = net.wire.slice(before).filter((w) => w[0] === 'c1').map((w) => w[2]);
    expect(fromClient.length).toBeGreaterThan(10);
    expect(fromClient).toEqual(bare);
    expect(sk.counters().retransmitTimeout + sk.counters().retransmitFast).toBeGreaterThan(0);
    for (const w of net.wire) expect(isWellFormedKcp(Buffer.from(w[2], 'hex'), 0, 0xabcdef01)).toBe(true);
  });

  it('refuses sessions beyond maxSessions and counts them; acceptConv filters convs', () => {
    const net = new KcpFixture({ kcp: FAST, maxSessions: 2, acceptConv: (c) => c !== 13 });
    const a = net.add('a', { conv: 1, kcp: FAST });
    const b = net.add('b', { conv: 2, kcp: FAST });
    const c = net.add('c', { conv: 3, kcp: FAST });
    const d = net.add('d', { conv: 13, kcp: FAST });
    net.runFor(1);
    for (const p of [a, b, c, d]) p.client.send(new Uint8Array([1]));
    net.runFor(500);
    // The first two to arrive (jitter decides which) get sessions; the third is refused.
    expect(net.server.sessionCount).toBe(2);
    expect([a, b, c].map((p) => messages(p).length).sort()).toEqual([0, 1, 1]);
    expect(messages(d)).toEqual([]);
    expect(net.server.counters().refusedFull).toBeGreaterThan(0);
    expect(net.server.counters().droppedConv).toBeGreaterThan(0);
  });

  it('keep-alive holds an idle pair open; a cut link closes both ends by idle timeout', () => {
    const opts = { kcp: FAST, keepAliveMs: 500, idleTimeoutMs: 2000 };
    const net = new KcpFixture(opts);
    const p = net.add('c1', { conv: 5, ...opts });
    net.runFor(1);
    p.client.send(new Uint8Array([9]));
    net.runFor(20_000);
    expect(p.client.state).toBe('open');
    expect(net.server.sessionCount).toBe(1);
    expect(net.server.counters().keepAlivesSent + p.client.counters().keepAlivesSent).toBeGreaterThan(15);
    p.cut = true;
    const cutAt = net.now;
    net.runUntil(() => p.client.state === 'closed' && net.server.sessionCount === 0, 5000);
    expect(closedReason(p.events)).toBe('idle-timeout');
    expect(closedReason(net.serverEvents)).toBe('idle-timeout');
    expect(net.now - cutAt).toBeLessThanOrEqual(2100);
  });

  it('closes on dead link (or only notifies, by policy)', () => {
    for (const policy of ['close', 'notify'] as const) {
      const opts = { kcp: { ...FAST, deadLink: 4 }, idleTimeoutMs: 0, keepAliveMs: 0, deadLinkPolicy: policy };
      const net = new KcpFixture(opts);
      const p = net.add('c1', { conv: 5, ...opts });
      net.runFor(1);
      p.cut = true;
      p.client.send(new Uint8Array(10));
      net.runFor(5000);
      if (policy === 'close') {
        expect(closedReason(p.events)).toBe('dead-link');
        expect(p.client.state).toBe('closed');
      } else {
        expect(p.events.filter((e) => e.type === 'dead-link').length).toBe(1);
        expect(p.client.state).toBe('open');
      }
    }
  });

  it('immediateAck sends the ACK inside handleDatagram, not at the next interval', () => {
    for (const immediateAck of [false, true]) {
      const s = new KcpServer({ kcp: { interval: 100 }, immediateAck });
      const c = new Kcp(3, () => {}, { interval: 100 });
      const dgrams: Uint8Array[] = [];
      const k = new Kcp(3, (d) => dgrams.push(d.slice()), { interval: 100 });
      k.update(0);
      k.send(new Uint8Array([1, 2, 3]));
      k.update(100);
      s.handleDatagram(0, 'x', new Uint8Array(24).fill(0)); // conv 0 session, unrelated
      s.handleTimeout(0);
      s.handleDatagram(5, 'peer', dgrams[0]!);
      const out = new Uint8Array(2000);
      const tx = s.pollTransmit(5, out);
      if (immediateAck) {
        expect(tx?.to).toBe('peer');
        expect(out[4]).toBe(82); // ACK
      } else {
        expect(tx).toBeUndefined();
      }
      void c;
    }
  });

  it('immediateAck lowers the RTT both ends measure, at the cost of separate ACK datagrams', () => {
    const srtt = (immediateAck: boolean): { client: number; server: number; serverDatagrams: number } => {
      const opts = { kcp: { interval: 50 }, immediateAck, keepAliveMs: 0, idleTimeoutMs: 0 };
      const net = new KcpFixture(opts, { latencyMs: 30, jitterMs: 4 });
      const p = net.add('c1', { conv: 11, ...opts });
      net.runFor(1);
      for (let i = 0; i < 40; i++) {
        p.client.send(new Uint8Array(64).fill(i));
        net.runFor(80 + ((i * 37) % 50));
      }
      net.runFor(500);
      expect(messages(p)).toHaveLength(40);
      const server = net.server.session(11, 'c1')!;
      const serverDatagrams = net.wire.filter(([from]) => from === 'server').length;
      return { client: p.client.session!.kcp.rxSrtt, server: server.kcp.rxSrtt, serverDatagrams };
    };
    const off = srtt(false);
    const on = srtt(true);
    // One-way 30±4 ms: ACKs sent at once see ~60 ms; ACKs waiting for the next flush up to 50 ms more (25 on average).
    expect(on.client).toBeLessThan(70);
    expect(on.server).toBeLessThan(70);
    expect(off.client).toBeGreaterThan(on.client + 10);
    expect(off.server).toBeGreaterThan(on.server + 10);
    // Off, an ACK rides with the echo in the next flush; on, it leaves alone first.
    expect(on.serverDatagrams).toBeGreaterThan(off.serverDatagrams);
  });

  it('close with linger waits until everything is acknowledged', () => {
    const net = new KcpFixture({ kcp: FAST }, { latencyMs: 30, loss: 0.2 });
    const p = net.add('c1', { conv: 8, kcp: FAST });
    net.echo = false;
    net.runFor(1);
    for (let i = 0; i < 30; i++) p.client.send(new Uint8Array(500).fill(i));
    p.client.close({ linger: true });
    expect(p.client.state).toBe('closing');
    // Sending once closing or closed is a counted drop (as on every connection), never a throw.
    expect(p.client.send(new Uint8Array(1))).toBe(false);
    net.runUntil(() => p.client.state === 'closed', 10_000);
    expect(p.client.send(new Uint8Array(1))).toBe(false);
    expect(p.client.counters().sendsAfterClose).toBe(2);
    expect(closedReason(p.events)).toBe('local');
    net.runFor(200);
    expect(net.serverEvents.filter((e) => e.type === 'message').length).toBe(30);
    const [ended] = [...net.server.sessions()];
    ended!.close();
    expect(ended!.send(new Uint8Array(1))).toBe(false);
    expect(net.server.counters().sendsAfterClose).toBe(1);
  });

  it('every session receives into the host\'s one arena, under one budget; a closed session gives its share back', () => {
    const budget = 96 * 1024;
    const net = new KcpFixture({ kcp: FAST, maxReceiveBytes: budget, idleTimeoutMs: 0 });
    const peers = ['c1', 'c2', 'c3'].map((a, i) => net.add(a, { conv: i + 1, kcp: FAST, idleTimeoutMs: 0 }));
    net.echo = false;
    net.pollServer = false;
    net.runFor(1);
    for (const p of peers) for (let i = 0; i < 100; i++) p.client.send(new Uint8Array(1000).fill(i));
    let peak = 0;
    net.runUntil(() => {
      peak = Math.max(peak, net.server.arena.receiveBytes);
      return false;
    }, 3000);
    const sessions = [...net.server.sessions()];
    expect(sessions.map((x) => x.kcp.arena)).toEqual([net.server.arena, net.server.arena, net.server.arena]);
    expect(peak).toBeLessThanOrEqual(budget);
    expect(peak).toBeGreaterThan(budget / 2);
    expect(net.server.arena.counters().receiveDropped).toBeGreaterThan(0);
    // A session closed with data unread hands out what is complete and returns the rest (segments
    // waiting for a gap) to the arena: its Kcp is disposed.
    const s1 = net.server.session(1, 'c1')!;
    expect(s1.kcp.rcvQueueLength + s1.kcp.rcvBufLength).toBeGreaterThan(0);
    const held = net.server.arena.receiveBytes;
    s1.close();
    expect(s1.kcp.isDisposed).toBe(true);
    expect(s1.kcp.rcvQueueLength + s1.kcp.rcvBufLength).toBe(0);
    expect(net.server.arena.receiveBytes).toBeLessThanOrEqual(held);
    expect(sessions.filter((x) => x !== s1).every((x) => !x.kcp.isDisposed)).toBe(true);
    expect(net.server.counters().sessionsClosed).toBe(1);
  });

  it('a client takes datagrams only from its remote; the rest are dropped and counted', () => {
    const c = new KcpClient({ conv: 9, kcp: FAST, remote: 'srv:1' });
    c.handleTimeout(0);
    expect(c.pollEvent()?.type).toBe('open');
    const k = new Kcp(9, (d) => {
      c.handleDatagram(5, 'elsewhere:2', d);
      c.handleDatagram(5, 'srv:1', d);
    }, FAST);
    k.send(new Uint8Array([42]));
    k.update(0);
    const ev = c.pollEvent();
    expect(ev?.type === 'message' && [...ev.data]).toEqual([42]);
    expect(c.pollEvent()).toBeUndefined();
    expect(c.counters().droppedUnknown).toBe(1);
    c.send(new Uint8Array([1]));
    c.handleTimeout(100);
    const tx = c.pollTransmit(100, new Uint8Array(1500));
    expect(tx?.to).toBe('srv:1');
  });

  it('never throws on random bytes and stays bounded', () => {
    // Random bytes alone almost never pass the header check, so most datagrams here are well-formed
    // KCP with random fields (and, in cookie mode, CONNECTs and DATA with a right or wrong cookie):
    // they open sessions, get answers, and fill the table beyond maxSessions.
    const key = new Uint8Array(16).fill(7);
    const ck = cookieKeyFromBytes(key);
    const segment = fc.record({
      cmd: fc.integer({ min: KcpCommand.PUSH, max: KcpCommand.WINS }), frg: fc.nat(3), wnd: fc.nat(200),
      ts: fc.nat(100), sn: fc.nat(6), una: fc.nat(3), data: fc.uint8Array({ maxLength: 40 }),
    });
    const bytes = fc.record({ kind: fc.constant('bytes' as const), bytes: fc.uint8Array({ maxLength: 80 }) });
    const kcp = (kind: 'kcp' | 'cookie' | 'bad-cookie') => fc.record({ kind: fc.constant(kind), conv: fc.nat(11), segs: fc.array(segment, { minLength: 1, maxLength: 3 }) });
    const connect = fc.record({ kind: fc.constant('connect' as const), nonce: fc.nat() });
    const datagram = fc.oneof(
      { arbitrary: bytes, weight: 1 }, { arbitrary: kcp('kcp'), weight: 3 }, { arbitrary: kcp('cookie'), weight: 3 },
      { arbitrary: kcp('bad-cookie'), weight: 1 }, { arbitrary: connect, weight: 1 },
    );
    type Datagram = typeof datagram extends fc.Arbitrary<infer T> ? T : never;
    const encode = (d: Datagram, from: string): Uint8Array => {
      if (d.kind === 'bytes') return d.bytes;
      if (d.kind === 'connect') {
        const b = new Uint8Array(32);
        encodeConnect(b, d.nonce);
        return b;
      }
      const p = d.kind === 'kcp' ? 0 : 4;
      const b = new Uint8Array(p + d.segs.reduce((n, x) => n + KCP_OVERHEAD + x.data.length, 0));
      if (p > 0) new DataView(b.buffer).setUint32(0, deriveCookie(ck, from, d.conv) ^ (d.kind === 'bad-cookie' ? 1 : 0), true);
      let off = p;
      for (const x of d.segs) {
        encodeKcpHeader(b, off, { conv: d.conv, cmd: x.cmd, frg: x.frg, wnd: x.wnd, ts: x.ts, sn: x.sn, una: x.una, len: x.data.length });
        b.set(x.data, off + KCP_OVERHEAD);
        off += KCP_OVERHEAD + x.data.length;
      }
      return b;
    };
    for (const mode of ['raw', 'cookie'] as const) {
      const s = new KcpServer({ mode, maxSessions: 8, random: seeded(3), cookieKey: key, kcp: FAST });
      const out = new Uint8Array(1500);
      let now = 0;
      let fed = 0;
      let maxLive = 0;
      fc.assert(
        fc.property(fc.array(fc.tuple(datagram, fc.nat(3)), { minLength: 5, maxLength: 30 }), (ds) => {
          now += 1000; // sessions idle out (10 s) across runs, so the table keeps turning over
          for (const [d, who] of ds) {
            s.handleDatagram(now, `a${who}`, encode(d, `a${who}`));
            fed++;
            s.handleTimeout(now + 1);
            while (s.pollTransmit(now + 1, out) !== undefined);
            for (let e = s.pollEvent(); e !== undefined; e = s.pollEvent()) if (e.type === 'message' && e.session.state === 'open') e.session.send(e.data);
            maxLive = Math.max(maxLive, s.sessionCount);
            expect(s.sessionCount).toBeLessThanOrEqual(8);
          }
        }),
        { numRuns: 200 },
      );
      // The datagrams reached the sessions: the table filled (and refused), and the server answered.
      const c = s.counters();
      expect(c.datagramsIn).toBe(fed);
      expect(maxLive).toBe(8);
      expect(c.sessionsOpened).toBeGreaterThan(8);
      expect(c.refusedFull).toBeGreaterThan(0);
      expect(c.datagramsOut).toBeGreaterThan(100);
      expect(c.droppedMalformed).toBeGreaterThan(0);
      if (mode === 'cookie') expect(c.handshakes + c.droppedBadCookie).toBeGreaterThan(0);
    }
  });
});

describe('cookie mode', () => {
  const COOKIE = { mode: 'cookie' as const, kcp: FAST };

  it('handshakes, allocates distinct convs and echoes', () => {
    const net = new KcpFixture(COOKIE);
    const peers = [net.add('c1', COOKIE), net.add('c2', COOKIE)];
    expect(net.runUntil(() => peers.every((p) => p.client.state === 'open'), 2000)).toBe(true);
    expect(peers[0]!.client.conv).not.toBe(peers[1]!.client.conv);
    for (const p of peers) for (let i = 0; i < 10; i++) p.client.send(new Uint8Array([i]));
    expect(net.runUntil(() => peers.every((p) => messages(p).length === 10), 3000)).toBe(true);
    expect(net.server.sessionCount).toBe(2);
    // Every data datagram carries the cookie, then plain KCP with the session's conv.
    const s = net.server.session(peers[0]!.client.conv!)!;
    for (const [from, , hex] of net.wire.filter((w) => w[0] === 'c1')) {
      const b = Buffer.from(hex, 'hex');
      if (readU32LE(b, 0) === 0) continue;
      expect(from).toBe('c1');
      expect(readU32LE(b, 0)).toBe(s.cookie);
      expect(isWellFormedKcp(b, 4, s.conv)).toBe(true);
    }
  });

  it('spoofed CONNECTs create no state; wrong cookies are dropped', () => {
    const net = new KcpFixture(COOKIE);
    const p = net.add('c1', COOKIE);
    net.runUntil(() => p.client.state === 'open', 2000);
    net.runFor(50);
    const s = net.server.session(p.client.conv!)!;
    const connect = new Uint8Array(32);
    encodeConnect(connect, 1234);
    for (let i = 0; i < 100; i++) net.server.handleDatagram(net.now, `spoof${i}`, connect);
    expect(net.server.sessionCount).toBe(1);
    expect(net.server.counters().handshakes).toBe(101);
    // A forged datagram for the live conv with a wrong cookie, from another address: no migration, no effect.
    const forged = Buffer.from(net.wire.filter((w) => w[0] === 'c1' && !w[2].startsWith('00000000')).at(-1)![2], 'hex');
    forged.writeUInt32LE((s.cookie! ^ 1) >>> 0, 0);
    net.server.handleDatagram(net.now, 'attacker', forged);
    expect(s.address).toBe('c1');
    expect(net.server.counters().droppedBadCookie).toBe(1);
    // A forged CLOSE needs the cookie too.
    const close = new Uint8Array(14);
    encodeClose(close, s.conv, (s.cookie! + 1) >>> 0);
    net.server.handleDatagram(net.now, 'attacker', close);
    expect(s.state).toBe('open');
    // An unknown conv with a guessed cookie opens nothing.
    const body = new Uint8Array(28);
    body.set(forged.subarray(4, 28), 4);
    body[4] = 0x77;
    net.server.handleDatagram(net.now, 'attacker', body);
    expect(net.server.sessionCount).toBe(1);
  });

  it('moves a session to a new address (known conv + valid cookie)', () => {
    const net = new KcpFixture(COOKIE);
    const p = net.add('c1', COOKIE);
    net.runUntil(() => p.client.state === 'open', 2000);
    for (let i = 0; i < 5; i++) p.client.send(new Uint8Array([i]));
    net.runUntil(() => messages(p).length === 5, 2000);
    net.move(p, 'c1-after-nat-rebind');
    for (let i = 5; i < 10; i++) p.client.send(new Uint8Array([i]));
    expect(net.runUntil(() => messages(p).length === 10, 2000)).toBe(true);
    expect(messages(p).map((m) => m[0])).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    const mig = net.serverEvents.find((e) => e.type === 'migrated');
    expect(mig?.type === 'migrated' && mig.from).toBe('c1');
    expect(net.server.session(p.client.conv!)!.address).toBe('c1-after-nat-rebind');
  });

  it('close() reaches the peer as CLOSE', () => {
    const net = new KcpFixture(COOKIE);
    const p = net.add('c1', COOKIE);
    net.runUntil(() => p.client.state === 'open', 2000);
    net.runFor(100);
    p.client.close();
    net.runUntil(() => net.server.sessionCount === 0, 1000);
    expect(closedReason(net.serverEvents)).toBe('peer');
    expect(closedReason(p.events)).toBe('local');
  });

  it('a full server answers REFUSE; an unanswered client times out', () => {
    const net = new KcpFixture({ ...COOKIE, maxSessions: 1 });
    const a = net.add('a', COOKIE);
    net.runUntil(() => a.client.state === 'open', 2000);
    net.runFor(100);
    const b = net.add('b', COOKIE);
    net.runUntil(() => b.client.state === 'closed', 2000);
    expect(closedReason(b.events)).toBe('refused');
    const c = net.add('c', { ...COOKIE, handshakeTimeoutMs: 1000 });
    c.cut = true;
    net.runUntil(() => c.client.state === 'closed', 3000);
    expect(closedReason(c.events)).toBe('handshake-timeout');
  });
});

describe('docs/kcp-session.md wire vectors', () => {
  const doc = readFileSync(new URL('../../docs/kcp-session.md', import.meta.url), 'utf8');
  /** The hex of the vector called `name` in the doc (a line `name: hex`, inside a code block). */
  const vector = (name: string): string => {
    const m = new RegExp(`^${name}: ([0-9a-f ]+)$`, 'm').exec(doc);
    if (m === null) throw new Error(`vector ${name} missing from docs/kcp-session.md`);
    return m[1]!.replace(/ /g, '');
  };
  const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

  it('CONNECT, ACCEPT, REFUSE, CLOSE, keep-alive and the cookie match the doc both ways', () => {
    const b = new Uint8Array(64);
    expect(hex(b.subarray(0, encodeConnect(b, 0x04030201)))).toBe(vector('CONNECT'));
    expect(hex(b.subarray(0, encodeAccept(b, 0x04030201, 0x11223344, 0xa1b2c3d4)))).toBe(vector('ACCEPT'));
    expect(hex(b.subarray(0, encodeRefuse(b, 0x04030201, KcpRefuseReason.SERVER_FULL)))).toBe(vector('REFUSE'));
    expect(hex(b.subarray(0, encodeRefuse(b, 0x04030201, KcpRefuseReason.ADDRESS_FULL)))).toBe(vector('REFUSE_ADDRESS'));
    expect(hex(b.subarray(0, encodeClose(b, 0x11223344, 0xa1b2c3d4)))).toBe(vector('CLOSE'));
    expect(hex(b.subarray(0, writeKeepAlive(b, 0, 0x11223344, 128, 5)))).toBe(vector('KEEPALIVE'));
    expect(decodeControl(Buffer.from(vector('ACCEPT'), 'hex'))).toMatchObject({
      ok: true, value: { type: 'accept', nonce: 0x04030201, conv: 0x11223344, cookie: 0xa1b2c3d4 },
    });
    expect(decodeControl(Buffer.from(vector('CONNECT'), 'hex'))).toMatchObject({ ok: true, value: { type: 'connect', nonce: 0x04030201 } });
    expect(decodeControl(Buffer.from(vector('REFUSE'), 'hex'))).toMatchObject({ ok: true, value: { type: 'refuse', reason: 1 } });
    expect(decodeControl(Buffer.from(vector('REFUSE_ADDRESS'), 'hex'))).toMatchObject({ ok: true, value: { type: 'refuse', reason: 2 } });
    expect(decodeControl(Buffer.from(vector('CLOSE'), 'hex'))).toMatchObject({ ok: true, value: { type: 'close', conv: 0x11223344 } });
    const key = cookieKeyFromBytes(Buffer.from(vector('COOKIE_KEY'), 'hex'));
    const cookie = deriveCookie(key, '127.0.0.1:40000', 0x11223344);
    expect(cookie.toString(16).padStart(8, '0')).toBe(vector('COOKIE'));
  });

  it('sipHashLow32 matches the SipHash-2-4 paper vector', () => {
    const key = cookieKeyFromBytes(Uint8Array.from({ length: 16 }, (_, i) => i));
    // SipHash-2-4(k = 00..0f, m = 00..0e): output bytes e5 45 be 49 61 ca 29 a1, the u64 0xa129ca6149be45e5.
    expect(sipHashLow32(key, Uint8Array.from({ length: 15 }, (_, i) => i))).toBe(0x49be45e5);
  });

  it('rejects malformed control packets', () => {
    const b = new Uint8Array(32);
    encodeConnect(b, 7);
    expect(decodeControl(b.subarray(0, 31))).toEqual({ ok: false, code: 'bad-length' });
    b[31] = 1;
    expect(decodeControl(b)).toEqual({ ok: false, code: 'bad-field' });
    b[31] = 0;
    b[5] = 2;
    expect(decodeControl(b)).toEqual({ ok: false, code: 'bad-version' });
    b[5] = 1;
    b[4] = 9;
    expect(decodeControl(b)).toEqual({ ok: false, code: 'bad-type' });
    expect(decodeControl(new Uint8Array(3))).toEqual({ ok: false, code: 'truncated' });
  });
});

describe('KcpServer.pollTransmit', () => {
  it('addresses a datagram to its own peer after skipping an oversized one (regression)', () => {
    // The limit on what unvalidated addresses are sent would hold a's 1000 bytes back: off here.
    const s = new KcpServer({ kcp: FAST, keepAliveMs: 0, idleTimeoutMs: 0, amplificationLimit: Infinity });
    const out = new Uint8Array(2048);
    for (const [addr, conv] of [['a', 1], ['b', 2]] as const) {
      const k = new Kcp(conv, (d) => s.handleDatagram(0, addr, d), FAST);
      k.send(new Uint8Array([conv]));
      k.update(0);
    }
    s.handleTimeout(0);
    while (s.pollTransmit(0, out) !== undefined);
    while (s.pollEvent() !== undefined);
    s.session(1, 'a')!.send(new Uint8Array(1000));
    s.session(2, 'b')!.send(new Uint8Array(10));
    s.handleTimeout(100);
    const small = new Uint8Array(200);
    const tx = s.pollTransmit(100, small);
    expect(s.counters().transmitTooLarge).toBe(1);
    expect(tx?.to).toBe('b');
    expect(readU32LE(small, 0)).toBe(2);
  });
});
