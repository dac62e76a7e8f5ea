// What a flood can cost a KcpServer: the host's send and receive budgets under spoofed traffic that
// never acknowledges, bytes sent to addresses that have not shown they receive there (raw mode), and
// sessions per address. Deterministic: chosen `now`, seeded randomness, the simulator's World.
import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { decodeKcpHeader, encodeKcpHeader, KCP_OVERHEAD, KcpCommand, readU32LE, writeU32LE } from './segment.js';
import { decodeControl, encodeConnect, KcpRefuseReason, writeKeepAlive } from './session-wire.js';
import { KcpClient, KcpServer, type KcpServerOptions, type KcpSessionEvent } from './session.js';

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

const FAST = { nodelay: 1, interval: 10, resend: 2, nc: true };
const MiB = 1024 * 1024;

/** One raw KCP segment as a spoofer writes it. */
function segment(conv: number, cmd: number, sn: number, len: number, wnd = 0, ts = 0): Uint8Array {
  const d = new Uint8Array(KCP_OVERHEAD + len).fill(0x5a);
  encodeKcpHeader(d, 0, { conv, cmd, frg: 0, wnd, ts, sn, una: 0, len });
  return d;
}

/**
 * A server whose application echoes every message (as `kcp-echo --listen` does), driven by hand:
 * `feed` hands it datagrams at `now`, then runs its timers, drains its output and its events.
 */
class EchoServer {
  readonly server: KcpServer;
  /** Bytes and datagrams sent, by address. */
  readonly sent = new Map<string, { datagrams: number; bytes: number }>();
  refused = 0;
  private readonly out = new Uint8Array(65536);

  constructor(opts: KcpServerOptions) {
    this.server = new KcpServer({ random: seeded(5), ...opts });
  }

  feed(now: number, from: string, bytes: Uint8Array): void {
    this.server.handleDatagram(now, from, bytes);
  }

  run(now: number): void {
    const s = this.server;
    const due = s.pollTimeout();
    if (due !== undefined && due <= now) s.handleTimeout(now);
    for (let e = s.pollEvent(); e !== undefined; e = s.pollEvent()) this.onEvent(e);
    for (let t = s.pollTransmit(now, this.out); t !== undefined; t = s.pollTransmit(now, this.out)) {
      const x = this.sent.get(t.to) ?? { datagrams: 0, bytes: 0 };
      x.datagrams++;
      x.bytes += t.length;
      this.sent.set(t.to, x);
    }
  }

  /** Run until `end` (ms), waking the server when it asks to be woken. */
  runUntil(now: number, end: number): void {
    this.run(now);
    for (let t = this.server.pollTimeout(); t !== undefined && t <= end; t = this.server.pollTimeout()) this.run(Math.max(t, now));
  }

  private onEvent(e: KcpSessionEvent): void {
    if (e.type !== 'message' || e.session.state !== 'open') return;
    try {
      e.session.send(e.data);
    } catch (err) {
      if (!(err instanceof GamewireError) || err.code !== 'queue-full') throw err;
      this.refused++;
    }
  }
}

describe('send budget under a flood (raw mode)', () => {
  it('spoofed zero-window PUSHes echoed by the application stay within the default budgets; the echoes beyond are refused and counted', () => {
    // 16 addresses × 8 convs, each sending in-order 1376-byte PUSHes that advertise a zero window:
    // every echo waits in its session's send queue for a window that never opens.
    const e = new EchoServer({ kcp: FAST, keepAliveMs: 0 });
    const arena = e.server.arena;
    expect(arena.maxSendBytes).toBe(32 * MiB);
    expect(arena.maxReceiveBytes).toBe(8 * MiB);
    let peak = 0;
    let now = 0;
    for (let sn = 0; sn < 250; sn++, now += 10) {
      for (let a = 0; a < 16; a++) {
        for (let c = 0; c < 8; c++) e.feed(now, `10.0.0.${a}:4000`, segment(100 + c, KcpCommand.PUSH, sn, 1376));
      }
      e.run(now);
      peak = Math.max(peak, arena.sendBytes);
      if (arena.sendBytes > 32 * MiB) expect(arena.sendBytes).toBeLessThanOrEqual(32 * MiB);
      if (arena.receiveBytes > 8 * MiB) expect(arena.receiveBytes).toBeLessThanOrEqual(8 * MiB);
    }
    expect(e.server.sessionCount).toBe(128);
    // The budget was what stopped it, and no session holds more than its share.
    expect(peak).toBeGreaterThan(31 * MiB);
    const sessions = [...e.server.sessions()];
    expect(sessions[0]!.kcp.maxSendBytes).toBe(384 * 1024);
    expect(Math.max(...sessions.map((s) => s.kcp.sendBytes))).toBeLessThanOrEqual(384 * 1024);
    expect(e.refused).toBeGreaterThan(0);
    expect(arena.counters().sendRefused).toBe(e.refused);
    const overBudget = sessions.reduce((n, s) => n + s.kcp.counters().sendOverBudget, 0);
    expect(overBudget).toBe(e.refused);
    // A budget full of live copies has no holes to pack: refused sends move nothing (each used to
    // repack the pool, a full pass per refusal).
    expect(arena.counters().compactedBytes).toBe(0);
  });

  it('one flooding session cannot take the send budget from another: an honest client is echoed in full beside it', () => {
    const world = new World({ seed: 3, link: { latencyMs: 10, jitterMs: 3 }, integerTime: true, startMs: 0 });
    const server = new KcpServer({ kcp: FAST, keepAliveMs: 0, maxSendBytes: 1 * MiB, random: seeded(1) });
    world.add('server', server);
    const client = new KcpClient({ conv: 7, kcp: FAST, remote: 'server', random: seeded(2) });
    world.add('c1', client);
    let refused = 0;
    const got: Uint8Array[] = [];
    const poll = (): void => {
      for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) {
        if (ev.type !== 'message' || ev.session.state !== 'open') continue;
        try {
          ev.session.send(ev.data);
        } catch {
          refused++;
        }
      }
      for (let ev = client.pollEvent(); ev !== undefined; ev = client.pollEvent()) if (ev.type === 'message') got.push(ev.data);
    };
    let sn = 0;
    const flood = (): void => {
      for (let i = 0; i < 4; i++) world.send('spoof', 'server', segment(9, KcpCommand.PUSH, sn++, 1376));
      if (sn < 4000) world.at(world.now + 1, flood);
    };
    world.at(1, flood);
    let sent = 0;
    const talk = (): void => {
      if (client.state === 'open') {
        client.send(new Uint8Array(1000).fill(sent & 0xff));
        sent++;
      }
      if (sent < 300) world.at(world.now + 3, talk);
    };
    world.at(5, talk);
    let maxFlooder = 0;
    const ok = world.runUntil(() => {
      poll();
      const f = server.session(9, 'spoof');
      if (f !== undefined) maxFlooder = Math.max(maxFlooder, f.kcp.sendBytes);
      expect(server.arena.sendBytes).toBeLessThanOrEqual(1 * MiB);
      return sent === 300 && got.length === 300;
    }, { maxTimeMs: 10_000 }).ok;
    expect(ok).toBe(true);
    expect(got.every((m, i) => m.length === 1000 && m[0] === (i & 0xff))).toBe(true);
    expect(maxFlooder).toBeGreaterThan(330 * 1024);
    expect(maxFlooder).toBeLessThanOrEqual(384 * 1024);
    expect(refused).toBeGreaterThan(0);
  });
});

/** `kcp-echo --listen`'s session settings (fast mode, src/cli/kcp-echo.ts). */
const ECHO = { kcp: { sndWnd: 128, rcvWnd: 128, interval: 10, nodelay: 2, resend: 2, nc: true }, keepAliveMs: 0, idleTimeoutMs: 30_000 };

describe('anti-amplification (raw mode)', () => {
  for (const [name, opts] of [['kcp-echo --listen', ECHO], ['KcpServer defaults', { kcp: FAST }]] as const) {
    it(`${name}: one spoofed 1,400-byte PUSH gets at most 3x its bytes back over 20 s`, () => {
      const e = new EchoServer(opts);
      const push = segment(42, KcpCommand.PUSH, 0, 1376, 128);
      e.feed(0, 'victim:1', push);
      e.runUntil(0, 20_000);
      const sent = e.sent.get('victim:1')!;
      expect(sent.bytes).toBeLessThanOrEqual(3 * push.length);
      expect(sent.datagrams).toBeLessThanOrEqual(4); // an ACK, the echo twice, one window probe
      expect(e.server.counters().addressesValidated).toBe(0);
      expect(e.server.counters().heldUnvalidated).toBeGreaterThan(0);
    });

    it(`${name}: one spoofed 24-byte segment gets at most 72 bytes back over 60 s`, () => {
      for (const cmd of [KcpCommand.PUSH, KcpCommand.WASK, KcpCommand.WINS, KcpCommand.ACK]) {
        const e = new EchoServer(opts);
        e.feed(0, 'victim:1', segment(42, cmd, 0, 0, 0));
        e.runUntil(0, 60_000);
        const sent = e.sent.get('victim:1') ?? { bytes: 0, datagrams: 0 };
        expect([cmd, sent.bytes <= 3 * KCP_OVERHEAD]).toEqual([cmd, true]);
      }
    });
  }
});

/** The ts of the first PUSH segment in `d`, or undefined. */
function pushTs(d: Uint8Array): number | undefined {
  for (let off = 0; off + KCP_OVERHEAD <= d.length;) {
    const h = decodeKcpHeader(d, off);
    if (!h.ok) return undefined;
    if (h.value.cmd === KcpCommand.PUSH) return h.value.ts;
    off += KCP_OVERHEAD + h.value.len;
  }
  return undefined;
}

/** An ACK segment for `sn` echoing `ts`. */
function ack(conv: number, sn: number, ts: number): Uint8Array {
  const d = new Uint8Array(KCP_OVERHEAD);
  encodeKcpHeader(d, 0, { conv, cmd: KcpCommand.ACK, frg: 0, wnd: 128, ts, sn, una: 0, len: 0 });
  return d;
}

/** Raw echo on the World: a client sends `n` messages (1..1376 bytes), one every 5 ms; returns when all came back. */
function rawEcho(opts: KcpServerOptions, n: number): { doneAt: number; serverOut: number; clientOut: number; server: KcpServer } {
  const world = new World({ seed: 11, link: { latencyMs: 20, jitterMs: 5, loss: 0.02 }, integerTime: true, startMs: 0 });
  const server = new KcpServer({ kcp: FAST, random: seeded(1), ...opts });
  world.add('server', server);
  const client = new KcpClient({ conv: 77, kcp: FAST, remote: 'server', random: seeded(2) });
  world.add('c1', client);
  const rng = new NonCryptoRng(4);
  let sent = 0;
  let got = 0;
  const talk = (): void => {
    if (client.state === 'open') {
      client.send(rng.fill(new Uint8Array(1 + rng.nextInt(1376))));
      sent++;
    }
    if (sent < n) world.at(world.now + 5, talk);
  };
  world.at(1, talk);
  const r = world.runUntil(() => {
    for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) if (ev.type === 'message') ev.session.send(ev.data);
    for (let ev = client.pollEvent(); ev !== undefined; ev = client.pollEvent()) if (ev.type === 'message') got++;
    return got === n;
  }, { maxTimeMs: 30_000 });
  expect(r.ok).toBe(true);
  return { doneAt: world.now, serverOut: server.counters().datagramsOut, clientOut: client.counters().datagramsOut, server };
}

describe('anti-amplification: validation and honest clients (raw mode)', () => {
  it('a client that acknowledges is not slowed: the same datagrams at the same times as with the limit off', () => {
    const on = rawEcho({}, 300);
    const off = rawEcho({ amplificationLimit: Infinity }, 300);
    expect(on.server.counters().addressesValidated).toBe(1);
    expect(on.server.counters().heldUnvalidated).toBe(0);
    expect([on.doneAt, on.serverOut, on.clientOut]).toEqual([off.doneAt, off.serverOut, off.clientOut]);
  });

  it('an address is validated by an ACK that echoes the ts of a segment we sent, not by a guessed one', () => {
    const first = (): { e: EchoServer; ts: number } => {
      const e = new EchoServer({ kcp: FAST, keepAliveMs: 0 });
      let ts: number | undefined;
      const out = new Uint8Array(2048);
      e.feed(1000, 'v:1', segment(5, KcpCommand.PUSH, 0, 1376, 128));
      e.server.handleTimeout(1000);
      for (let ev = e.server.pollEvent(); ev !== undefined; ev = e.server.pollEvent()) if (ev.type === 'message') ev.session.send(ev.data);
      e.server.handleTimeout(1010);
      for (let t = e.server.pollTransmit(1010, out); t !== undefined; t = e.server.pollTransmit(1010, out)) ts ??= pushTs(out.subarray(0, t.length));
      expect(ts).toBeDefined();
      return { e, ts: ts! };
    };
    // The echo's ts, acknowledged: validated.
    const a = first();
    a.e.feed(1050, 'v:1', ack(5, 0, a.ts));
    expect(a.e.server.counters().addressesValidated).toBe(1);
    // A blind guess (the host clock itself, or anything else) is not; after 16 wrong ones, neither is the right one.
    const b = first();
    b.e.feed(1050, 'v:1', ack(5, 0, 1010));
    b.e.feed(1050, 'v:1', ack(5, 0, 0));
    for (let i = 0; i < 14; i++) b.e.feed(1050, 'v:1', ack(5, 0, (b.ts + 100_000 * (i + 1)) >>> 0));
    expect(b.e.server.counters().addressesValidated).toBe(0);
    b.e.feed(1060, 'v:1', ack(5, 0, b.ts));
    expect(b.e.server.counters().addressesValidated).toBe(0);
    // An ACK before we sent anything proves nothing.
    const c = new EchoServer({ kcp: FAST, keepAliveMs: 0 });
    c.feed(0, 'v:1', ack(5, 0, 0));
    expect(c.server.counters().addressesValidated).toBe(0);
  });

  it('what waits for an unvalidated address leaves once it is validated: a small request, a large answer', () => {
    const world = new World({ seed: 5, link: { latencyMs: 15, jitterMs: 4 }, integerTime: true, startMs: 0 });
    const server = new KcpServer({ kcp: FAST, random: seeded(1) });
    world.add('server', server);
    const client = new KcpClient({ conv: 3, kcp: FAST, remote: 'server', random: seeded(2) });
    world.add('c1', client);
    let got = 0;
    world.at(1, () => client.send(new Uint8Array(1376).fill(1)));
    const r = world.runUntil(() => {
      for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) {
        if (ev.type === 'message') for (let i = 0; i < 30; i++) ev.session.send(new Uint8Array(1000).fill(i));
      }
      for (let ev = client.pollEvent(); ev !== undefined; ev = client.pollEvent()) if (ev.type === 'message') got++;
      return got === 30;
    }, { maxTimeMs: 5000 });
    expect(r.ok).toBe(true);
    expect(world.now).toBeLessThan(500);
    const c = server.counters();
    expect(c.heldUnvalidated).toBeGreaterThan(0);
    expect(c.addressesValidated).toBe(1);
  });

  it('what waits for an address never validated is dropped when its session ends, and its slot is freed', () => {
    const e = new EchoServer({ kcp: FAST, keepAliveMs: 0, idleTimeoutMs: 2000, maxSessions: 1, maxOutboxDatagrams: 64 });
    // Each spoofed request gets a 30-datagram answer from the application; almost all of it waits.
    const answer = (ev: KcpSessionEvent): void => {
      if (ev.type === 'message' && ev.session.state === 'open') for (let i = 0; i < 30; i++) ev.session.send(new Uint8Array(1300));
    };
    let now = 0;
    for (let round = 0; round < 5; round++) {
      e.feed(now, `spoof:${round}`, segment(1, KcpCommand.PUSH, 0, 100, 128));
      e.server.handleTimeout(now);
      for (let ev = e.server.pollEvent(); ev !== undefined; ev = e.server.pollEvent()) answer(ev);
      expect(e.server.sessionCount).toBe(1); // each round's session got the one slot: the last one's was freed
      // Until its idle timeout (2 s) it holds what waits, and drops its retransmissions beyond 16.
      e.runUntil(now, now + 1999);
      expect(e.server.sessionCount).toBe(1);
      const dropped = e.server.counters().droppedUnvalidated;
      e.runUntil(now + 1999, now + 3000);
      now += 3000;
      expect(e.server.sessionCount).toBe(0);
      expect(e.sent.get(`spoof:${round}`)?.bytes ?? 0).toBeLessThanOrEqual(3 * 124);
      // What waited (16 datagrams, the most a session may hold) was dropped when the session ended.
      expect(e.server.counters().droppedUnvalidated - dropped).toBeGreaterThanOrEqual(16);
    }
    const c = e.server.counters();
    expect(c.sessionsClosed).toBe(5);
    expect(c.heldUnvalidated).toBe(5); // every round's session could hold again: nothing was left counted
    expect(c.outboxFull).toBe(0);
  });

  it('one unvalidated session holds at most 16 datagrams; the rest are dropped at once and counted', () => {
    const e = new EchoServer({ kcp: { ...FAST, sndWnd: 64 }, keepAliveMs: 0, maxOutboxDatagrams: 1024 });
    e.feed(0, 'spoof:1', segment(1, KcpCommand.PUSH, 0, 100, 128));
    e.server.handleTimeout(0);
    for (let ev = e.server.pollEvent(); ev !== undefined; ev = e.server.pollEvent()) {
      if (ev.type === 'message') for (let i = 0; i < 40; i++) ev.session.send(new Uint8Array(1300));
    }
    e.run(10); // one flush: 40 datagrams (the ACK rides with the first), none of which fits 3 × 124 bytes
    expect(e.sent.get('spoof:1')).toEqual({ datagrams: 1, bytes: KCP_OVERHEAD }); // a window probe, no more
    expect(e.server.counters().droppedUnvalidated).toBe(40 - 16);
    expect(e.server.counters().heldUnvalidated).toBe(1);
  });

  it('datagrams waiting for unvalidated addresses cannot fill the outbox that validated sessions need', () => {
    const world = new World({ seed: 9, link: { latencyMs: 10, jitterMs: 2 }, integerTime: true, startMs: 0 });
    const server = new KcpServer({ kcp: FAST, keepAliveMs: 0, maxOutboxDatagrams: 64, random: seeded(1) });
    world.add('server', server);
    const client = new KcpClient({ conv: 7, kcp: FAST, remote: 'server', random: seeded(2) });
    world.add('c1', client);
    let got = 0;
    let sent = 0;
    // Every 20 ms a new spoofed address asks for a 30-datagram answer that it will never acknowledge.
    let spoofs = 0;
    const spoof = (): void => {
      world.send(`spoof-${spoofs++}`, 'server', segment(1, KcpCommand.PUSH, 0, 100, 128));
      if (spoofs < 100) world.at(world.now + 20, spoof);
    };
    world.at(1, spoof);
    const talk = (): void => {
      if (client.state === 'open') {
        client.send(new Uint8Array(500).fill(sent));
        sent++;
      }
      if (sent < 200) world.at(world.now + 10, talk);
    };
    world.at(2, talk);
    const r = world.runUntil(() => {
      for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) {
        if (ev.type !== 'message' || ev.session.state !== 'open') continue;
        if (ev.session.address.startsWith('spoof')) for (let i = 0; i < 30; i++) ev.session.send(new Uint8Array(1300));
        else ev.session.send(ev.data);
      }
      for (let ev = client.pollEvent(); ev !== undefined; ev = client.pollEvent()) if (ev.type === 'message') got++;
      return got === 200;
    }, { maxTimeMs: 10_000 });
    expect(r.ok).toBe(true);
    expect(world.now).toBeLessThan(2200);
    const c = server.counters();
    expect(c.outboxFull).toBe(0);
    expect(c.droppedUnvalidated).toBeGreaterThan(1000);
    expect(c.addressesValidated).toBe(1);
  });
});

/** Cookie-mode handshake by hand from `from`: CONNECT, read the answer, send the first DATA. */
function cookieConnect(s: KcpServer, now: number, from: string, nonce: number): { reason?: number; conv?: number } {
  const b = new Uint8Array(32);
  encodeConnect(b, nonce);
  s.handleDatagram(now, from, b);
  const out = new Uint8Array(64);
  const t = s.pollTransmit(now, out);
  if (t === undefined) return {};
  const c = decodeControl(out.subarray(0, t.length));
  if (!c.ok) return {};
  if (c.value.type === 'refuse') return { reason: c.value.reason };
  if (c.value.type !== 'accept') return {};
  const d = new Uint8Array(4 + KCP_OVERHEAD);
  writeU32LE(d, 0, c.value.cookie);
  writeKeepAlive(d, 4, c.value.conv, 128, 0);
  s.handleDatagram(now, from, d);
  return { conv: c.value.conv };
}

describe('sessions per address', () => {
  it('cookie mode: one IP cannot take every session (default 64); its further CONNECTs are refused, others still get in', () => {
    const s = new KcpServer({ mode: 'cookie', kcp: FAST, random: seeded(8) });
    expect(s.maxSessionsPerAddress).toBe(64);
    const refusals: number[] = [];
    for (let port = 1; port <= 100; port++) {
      const r = cookieConnect(s, 0, `1.2.3.4:${port}`, port);
      if (r.reason !== undefined) refusals.push(r.reason);
    }
    expect(s.sessionCount).toBe(64);
    expect(refusals).toEqual(Array.from({ length: 36 }, () => KcpRefuseReason.ADDRESS_FULL));
    expect(s.counters().refusedAddress).toBe(36);
    expect(cookieConnect(s, 0, '5.6.7.8:1', 1).conv).toBeDefined();
    expect(s.sessionCount).toBe(65);
  });

  it('cookie mode: a first DATA beyond the cap (an ACCEPT obtained earlier) is dropped and counted', () => {
    const s = new KcpServer({ mode: 'cookie', kcp: FAST, random: seeded(8), maxSessionsPerAddress: 2 });
    // Three ACCEPTs while the IP has no session yet; then three first DATAs.
    const accepts: { from: string; conv: number; cookie: number }[] = [];
    const out = new Uint8Array(64);
    for (let port = 1; port <= 3; port++) {
      const b = new Uint8Array(32);
      encodeConnect(b, port);
      s.handleDatagram(0, `9.9.9.9:${port}`, b);
      const t = s.pollTransmit(0, out)!;
      const c = decodeControl(out.subarray(0, t.length));
      if (c.ok && c.value.type === 'accept') accepts.push({ from: `9.9.9.9:${port}`, conv: c.value.conv, cookie: c.value.cookie });
    }
    expect(accepts.length).toBe(3);
    for (const a of accepts) {
      const d = new Uint8Array(4 + KCP_OVERHEAD);
      writeU32LE(d, 0, a.cookie);
      writeKeepAlive(d, 4, a.conv, 128, 0);
      s.handleDatagram(1, a.from, d);
    }
    expect(s.sessionCount).toBe(2);
    expect(s.counters().refusedAddress).toBe(1);
  });

  it('cookie mode: a session cannot migrate into an IP that holds its cap', () => {
    const s = new KcpServer({ mode: 'cookie', kcp: FAST, random: seeded(8), maxSessionsPerAddress: 1 });
    cookieConnect(s, 0, '1.1.1.1:1', 1);
    const b = cookieConnect(s, 0, '2.2.2.2:1', 2);
    const sb = s.session(b.conv!)!;
    const d = new Uint8Array(4 + KCP_OVERHEAD);
    writeU32LE(d, 0, sb.cookie!);
    writeKeepAlive(d, 4, sb.conv, 128, 0);
    s.handleDatagram(5, '1.1.1.1:2', d);
    expect(sb.address).toBe('2.2.2.2:1');
    expect(s.counters().refusedAddress).toBe(1);
    s.handleDatagram(6, '3.3.3.3:1', d); // to an IP with room: fine
    expect(sb.address).toBe('3.3.3.3:1');
    expect(s.counters().migrations).toBe(1);
  });

  it('raw mode: one IP cannot open more than maxSessionsPerAddress conversations', () => {
    const s = new KcpServer({ kcp: FAST, random: seeded(8) });
    for (let conv = 0; conv < 100; conv++) s.handleDatagram(0, `1.2.3.4:${1000 + (conv % 7)}`, segment(conv, KcpCommand.WASK, 0, 0, 128));
    expect(s.sessionCount).toBe(64);
    expect(s.counters().refusedAddress).toBe(36);
    s.handleDatagram(0, '1.2.3.5:1000', segment(1, KcpCommand.WASK, 0, 0, 128));
    expect(s.sessionCount).toBe(65);
  });

  it('groups by IP (IPv6 by /64): "ip:port" and "[v6]:port" without the port; other strings as they are', () => {
    const s = new KcpServer({ kcp: FAST, random: seeded(8), maxSessionsPerAddress: 1 });
    const open = (from: string): boolean => {
      const before = s.sessionCount;
      s.handleDatagram(0, from, segment(1, KcpCommand.WASK, 0, 0, 128));
      return s.sessionCount > before;
    };
    expect(['10.0.0.1:5', '10.0.0.1:6', '[::1]:5', '[::1]:6', '[2001:db8::1]:7', '[2001:db8::2]:7', '[2001:db8:0:1::2]:7', 'peer-a', 'peer-b', 'peer-a:1'].map(open))
      .toEqual([true, false, true, false, true, false, true, true, true, false]);
  });
});

describe('anti-amplification: a small request, a large answer (raw mode)', () => {
  it('the server earns its allowance with window probes, which every KCP answers: the answer arrives within a second', () => {
    const world = new World({ seed: 6, link: { latencyMs: 15, jitterMs: 3 }, integerTime: true, startMs: 0 });
    const server = new KcpServer({ kcp: FAST, random: seeded(1) });
    world.add('server', server);
    // No keep-alive: like a C KCP client, it sends nothing once its request is acknowledged.
    const client = new KcpClient({ conv: 3, kcp: FAST, keepAliveMs: 0, remote: 'server', random: seeded(2) });
    world.add('c1', client);
    let got = 0;
    world.at(1, () => client.send(new Uint8Array(1).fill(1))); // a 25-byte datagram
    const r = world.runUntil(() => {
      for (let ev = server.pollEvent(); ev !== undefined; ev = server.pollEvent()) {
        if (ev.type === 'message') for (let i = 0; i < 20; i++) ev.session.send(new Uint8Array(1000).fill(i));
      }
      for (let ev = client.pollEvent(); ev !== undefined; ev = client.pollEvent()) if (ev.type === 'message') got++;
      return got === 20;
    }, { maxTimeMs: 10_000 });
    expect(r.ok).toBe(true);
    expect(world.now).toBeLessThan(1500);
    expect(server.counters().addressesValidated).toBe(1);
  });
});
