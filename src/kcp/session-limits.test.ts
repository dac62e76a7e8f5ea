// What a flood can cost a KcpServer: the host's send and receive budgets under spoofed traffic that
// never acknowledges, bytes sent to addresses that have not shown they receive there (raw mode), and
// sessions per address. Deterministic: chosen `now`, seeded randomness, the simulator's World.
import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { encodeKcpHeader, KCP_OVERHEAD, KcpCommand } from './segment.js';
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
    expect(arena.maxSendBytes).toBe(24 * MiB);
    expect(arena.maxReceiveBytes).toBe(8 * MiB);
    let peak = 0;
    let now = 0;
    for (let sn = 0; sn < 160; sn++, now += 10) {
      for (let a = 0; a < 16; a++) {
        for (let c = 0; c < 8; c++) e.feed(now, `10.0.0.${a}:4000`, segment(100 + c, KcpCommand.PUSH, sn, 1376));
      }
      e.run(now);
      peak = Math.max(peak, arena.sendBytes);
      if (arena.sendBytes > 24 * MiB) expect(arena.sendBytes).toBeLessThanOrEqual(24 * MiB);
      if (arena.receiveBytes > 8 * MiB) expect(arena.receiveBytes).toBeLessThanOrEqual(8 * MiB);
    }
    expect(e.server.sessionCount).toBe(128);
    // The budget was what stopped it, and no session holds more than its share.
    expect(peak).toBeGreaterThan(23 * MiB);
    const sessions = [...e.server.sessions()];
    expect(sessions[0]!.kcp.maxSendBytes).toBe(256 * 1024);
    expect(Math.max(...sessions.map((s) => s.kcp.sendBytes))).toBeLessThanOrEqual(256 * 1024);
    expect(e.refused).toBeGreaterThan(0);
    expect(arena.counters().sendRefused).toBe(e.refused);
    const overBudget = sessions.reduce((n, s) => n + s.kcp.counters().sendOverBudget, 0);
    expect(overBudget).toBe(e.refused);
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
    expect(maxFlooder).toBeGreaterThan(200 * 1024);
    expect(maxFlooder).toBeLessThanOrEqual(256 * 1024);
    expect(refused).toBeGreaterThan(0);
  });
});
