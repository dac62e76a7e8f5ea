import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { u32 } from '../core/wrap.js';
import { Kcp, KCP_MAX_FRAGMENTS, KCP_STATE_DEAD, type KcpOptions } from './kcp.js';
import { decodeKcpHeader, encodeKcpHeader, KCP_OVERHEAD, KcpCommand, type KcpSegmentHeader } from './segment.js';

// Behaviour that node-kcp's API cannot reach (rx_minrto, fastlimit, dead_link/state, conservative
// fast-ack, byte-count send, sequence numbers near 2^32) and our own limits. The byte-exact
// comparison with C lives in test/kcp/differential.test.ts.

interface Captured {
  k: Kcp;
  out: Uint8Array[];
}

function capture(opts: KcpOptions = {}, conv = 1): Captured {
  const out: Uint8Array[] = [];
  return { k: new Kcp(conv, (d) => out.push(d.slice()), opts), out };
}

function segments(d: Uint8Array): KcpSegmentHeader[] {
  const segs: KcpSegmentHeader[] = [];
  for (let off = 0; off + KCP_OVERHEAD <= d.length;) {
    const r = decodeKcpHeader(d, off);
    if (!r.ok) throw new Error(r.code);
    segs.push(r.value);
    off += KCP_OVERHEAD + r.value.len;
  }
  return segs;
}

function allSegments(out: Uint8Array[]): KcpSegmentHeader[] {
  return out.flatMap(segments);
}

function datagram(...hs: Partial<KcpSegmentHeader>[]): Uint8Array {
  const d = new Uint8Array(hs.length * KCP_OVERHEAD);
  hs.forEach((h, i) => encodeKcpHeader(d, i * KCP_OVERHEAD, { conv: 1, cmd: 82, frg: 0, wnd: 128, ts: 0, sn: 0, una: 0, len: 0, ...h }));
  return d;
}

/**
 * Two of our Kcp objects over an in-memory link with a seeded drop decision; returns the messages B
 * received, in order. Ticks every `tick` ms from `start` (u32 wrap allowed).
 */
function runPair(opts: KcpOptions, p: { start: number; loss: number; messages: Uint8Array[]; seed: number; sn?: number; maxTicks?: number; tick?: number; flushAcks?: boolean; onTick?: (now: number, a: Kcp) => void }): { received: Uint8Array[]; a: Kcp; b: Kcp } {
  const rng = new NonCryptoRng(p.seed);
  const toB: Uint8Array[] = [];
  const toA: Uint8Array[] = [];
  const a = new Kcp(9, (d) => { if (!rng.chance(p.loss)) toB.push(d.slice()); }, opts);
  const b = new Kcp(9, (d) => { if (!rng.chance(p.loss)) toA.push(d.slice()); }, opts);
  if (p.sn !== undefined) {
    a._startSequenceAt(p.sn);
    b._startSequenceAt(p.sn);
  }
  const received: Uint8Array[] = [];
  let next = 0;
  const tick = p.tick ?? 10;
  for (let i = 0; i < (p.maxTicks ?? 20000) && received.length < p.messages.length; i++) {
    const now = u32(p.start + i * tick);
    while (next < p.messages.length && a.waitSnd() < 64) expect(a.send(p.messages[next++]!)).toBe(0);
    a.update(now);
    b.update(now);
    for (const d of toB.splice(0)) {
      expect(b.input(d)).toBe(0);
      if (p.flushAcks === true) b.flushAcks(now);
    }
    for (const d of toA.splice(0)) {
      expect(a.input(d)).toBe(0);
      if (p.flushAcks === true) a.flushAcks(now);
    }
    for (let m = b.recvMessage(); m !== undefined; m = b.recvMessage()) received.push(m);
    p.onTick?.(now, a);
  }
  return { received, a, b };
}

function sameMessages(a: Uint8Array[], b: Uint8Array[]): boolean {
  return a.length === b.length && a.every((m, i) => m.length === b[i]!.length && m.every((x, j) => x === b[i]![j]));
}

function messages(seed: number, n: number, maxLen: number): Uint8Array[] {
  const rng = new NonCryptoRng(seed);
  return Array.from({ length: n }, () => rng.fill(new Uint8Array(rng.nextRange(0, maxLen))));
}

describe('Kcp: messages, fragments, stream mode', () => {
  it('fragments a message into count-1 … 0 and reassembles it; recv codes -1/-2/-3', () => {
    const a = capture({ nc: true });
    const b = capture();
    const msg = new NonCryptoRng(1).fill(new Uint8Array(3000));
    expect(a.k.send(msg)).toBe(0);
    expect(a.k.waitSnd()).toBe(3);
    a.k.update(0);
    const segs = allSegments(a.out);
    expect(segs.map((s) => [s.frg, s.len, s.sn])).toEqual([[2, 1376, 0], [1, 1376, 1], [0, 248, 2]]);
    expect(a.out.map((d) => d.length)).toEqual([1400, 1400, 272]);
    b.k.update(0);
    expect(b.k.recv(new Uint8Array(4000))).toBe(-1);
    expect(b.k.input(a.out[0]!)).toBe(0);
    expect(b.k.input(a.out[1]!)).toBe(0);
    expect(b.k.peekSize()).toBe(-1);
    expect(b.k.recv(new Uint8Array(4000))).toBe(-2);
    expect(b.k.input(a.out[2]!)).toBe(0);
    expect(b.k.peekSize()).toBe(3000);
    expect(b.k.recv(new Uint8Array(2999))).toBe(-3);
    const got = new Uint8Array(3000);
    expect(b.k.recv(got)).toBe(3000);
    expect(got).toEqual(msg);
    expect(b.k.recv(got)).toBe(-1);
  });

  it('allows 127 fragments and refuses 128 with -2 (the constant, not the configured window)', () => {
    const { k } = capture({ mtu: 100, rcvWnd: 1024 });
    expect(k.maxMessageSize).toBe(KCP_MAX_FRAGMENTS * 76);
    expect(k.send(new Uint8Array(127 * 76))).toBe(0);
    expect(k.waitSnd()).toBe(127);
    expect(k.send(new Uint8Array(127 * 76 + 1))).toBe(-2);
    expect(k.waitSnd()).toBe(127);
    expect(k.counters().sendTooLarge).toBe(1);
  });

  it('a zero-length message is one empty segment, delivered as an empty message', () => {
    const a = capture({ nc: true });
    const b = capture();
    expect(a.k.send(new Uint8Array(0))).toBe(0);
    expect(a.k.waitSnd()).toBe(1);
    a.k.update(0);
    b.k.update(0);
    for (const d of a.out) b.k.input(d);
    expect(b.k.peekSize()).toBe(0);
    expect(b.k.recv(new Uint8Array(0))).toBe(0);
    expect(b.k.peekSize()).toBe(-1);
  });

  it('stream mode tops up the last queued segment, sends frg 0 and receives one segment per recv', () => {
    const a = capture({ stream: true, mtu: 100, nc: true });
    const b = capture({ stream: true, mtu: 100 });
    const rng = new NonCryptoRng(3);
    const all: number[] = [];
    for (let i = 0; i < 30; i++) {
      const chunk = rng.fill(new Uint8Array(rng.nextRange(0, 20)));
      all.push(...chunk);
      expect(a.k.send(chunk)).toBe(0);
    }
    expect(a.k.waitSnd()).toBe(Math.ceil(all.length / 76));
    a.k.update(0);
    const segs = allSegments(a.out);
    expect(segs.every((s) => s.frg === 0)).toBe(true);
    expect(segs.map((s) => s.len).slice(0, -1).every((l) => l === 76)).toBe(true);
    b.k.update(0);
    for (const d of a.out) b.k.input(d);
    const got: number[] = [];
    const buf = new Uint8Array(76);
    for (let n = b.k.recv(buf); n >= 0; n = b.k.recv(buf)) {
      expect(n).toBeLessThanOrEqual(76);
      got.push(...buf.subarray(0, n));
    }
    expect(got).toEqual(all);
    expect(a.k.send(new Uint8Array(0))).toBe(0); // stream mode: empty send queues nothing
    expect(a.k.waitSnd()).toBe(segs.length);
  });

  it('after an MTU shrink, a queued segment larger than the MTU goes out alone (C would overrun its buffer)', () => {
    const { k, out } = capture({ nc: true });
    k.send(new Uint8Array(1376).fill(1));
    k.send(new Uint8Array(10).fill(2));
    expect(k.setMtu(100)).toBe(0);
    k.update(0);
    expect(out.map((d) => d.length)).toEqual([1400, 34]);
    expect(allSegments(out).map((s) => s.len)).toEqual([1376, 10]);
    expect(out[0]!.subarray(24).every((b) => b === 1)).toBe(true);
  });

  it('recvMessage returns messages the caller owns, fragmented or not', () => {
    const a = capture({ nc: true });
    const b = capture();
    a.k.send(new Uint8Array([1, 2, 3]));
    a.k.send(new Uint8Array(2000).fill(7));
    a.k.update(0);
    b.k.update(0);
    for (const d of a.out) b.k.input(d);
    expect(b.k.recvMessage()).toEqual(new Uint8Array([1, 2, 3]));
    expect(b.k.recvMessage()).toEqual(new Uint8Array(2000).fill(7));
    expect(b.k.recvMessage()).toBeUndefined();
  });
});

describe('Kcp: later-upstream options', () => {
  it('sendReturnsBytes (2023): byte counts, and a stream partial append instead of -2', () => {
    const { k } = capture({ sendReturnsBytes: true, mtu: 100 });
    expect(k.send(new Uint8Array(500))).toBe(500);
    expect(k.send(new Uint8Array(0))).toBe(0);
    expect(k.send(new Uint8Array(128 * 76))).toBe(-2);
    const s = capture({ sendReturnsBytes: true, stream: true, mtu: 100 }).k;
    expect(s.send(new Uint8Array(10))).toBe(10);
    expect(s.send(new Uint8Array(200 * 76))).toBe(66); // tops up the tail, then refuses the rest
    expect(s.waitSnd()).toBe(1);
    const old = capture({ stream: true, mtu: 100 }).k;
    old.send(new Uint8Array(10));
    expect(old.send(new Uint8Array(200 * 76))).toBe(-2); // 2020 behaviour: -2 although 66 bytes went in
    expect(old.waitSnd()).toBe(1);
  });

  it('fastAckConserve (2024) stops counting skips from ACKs older than a fast resend', () => {
    for (const conserve of [false, true]) {
      const { k, out } = capture({ nodelay: 1, interval: 10, resend: 2, nc: true, fastAckConserve: conserve });
      for (let i = 0; i < 6; i++) k.send(new Uint8Array([i]));
      k.update(1000);
      out.length = 0;
      // Two datagrams each acking a later segment (echoing the first send's ts): sn 0 is skipped twice.
      k.input(datagram({ sn: 1, ts: 1000 }), 1005);
      k.input(datagram({ sn: 2, ts: 1000 }), 1006);
      k.update(1010);
      expect(allSegments(out).filter((s) => s.cmd === KcpCommand.PUSH).map((s) => s.sn)).toEqual([0]);
      out.length = 0;
      // Two more old ACKs (ts 1000, before the resend at 1010).
      k.input(datagram({ sn: 3, ts: 1000 }), 1012);
      k.input(datagram({ sn: 4, ts: 1000 }), 1013);
      k.update(1020);
      const resent = allSegments(out).filter((s) => s.cmd === KcpCommand.PUSH).map((s) => s.sn);
      expect(resent).toEqual(conserve ? [] : [0]);
    }
  });
});

describe('Kcp: retransmission', () => {
  /** Times (ms from 0) at which sn 0 is transmitted while nothing ever comes back. */
  function sendTimes(opts: KcpOptions, until: number): number[] {
    const { k, out } = capture({ interval: 10, nc: true, ...opts });
    k.send(new Uint8Array(1));
    const times: number[] = [];
    for (let t = 0; t <= until; t += 10) {
      out.length = 0;
      k.update(t);
      if (allSegments(out).some((s) => s.cmd === KcpCommand.PUSH)) times.push(t);
    }
    return times;
  }

  it('backs off ×2 in normal mode (first timeout at rto + rto/8), ×1.5 at nodelay 1, linearly at nodelay 2', () => {
    expect(sendTimes({ nodelay: 0 }, 7000)).toEqual([0, 230, 630, 1430, 3030, 6230]);
    expect(sendTimes({ nodelay: 1 }, 3000)).toEqual([0, 200, 500, 950, 1630, 2650]);
    expect(sendTimes({ nodelay: 2 }, 3000)).toEqual([0, 200, 500, 900, 1400, 2000, 2700]);
  });

  it('minRto bounds the estimated RTO (30 with nodelay, settable below)', () => {
    const { k } = capture({ nodelay: 1, interval: 10 });
    k.send(new Uint8Array(1));
    k.update(1000);
    k.input(datagram({ sn: 0, ts: 1000 }), 1005); // rtt 5: srtt 5, rttval 2 → 5 + max(10, 8) = 15
    expect(k.rxSrtt).toBe(5);
    expect(k.rxRto).toBe(30);
    const low = capture({ nodelay: 1, interval: 10, minRto: 10 }).k;
    expect(low.minRto).toBe(10);
    low.send(new Uint8Array(1));
    low.update(1000);
    low.input(datagram({ sn: 0, ts: 1000 }), 1005);
    expect(low.rxRto).toBe(15);
    low.setNoDelay(0, -1, -1, -1); // ikcp_nodelay resets rx_minrto
    expect(low.minRto).toBe(100);
  });

  it('fast retransmit needs `resend` skipping datagrams and stops after fastLimit transmissions', () => {
    for (const [limit, expected] of [[1, 1], [3, 3], [0, 6]] as const) {
      const { k, out } = capture({ nodelay: 1, interval: 10, resend: 1, nc: true, fastLimit: limit });
      for (let i = 0; i < 10; i++) k.send(new Uint8Array([i]));
      k.update(0);
      let fast = 0;
      for (let i = 1; i <= 6; i++) {
        out.length = 0;
        k.input(datagram({ sn: i, ts: 0 }), i);
        k.update(i * 10);
        if (allSegments(out).some((s) => s.cmd === KcpCommand.PUSH && s.sn === 0)) fast++;
      }
      expect(fast).toBe(expected);
      expect(k.counters().retransmitFast).toBe(expected);
      expect(k.fastLimit).toBe(limit);
    }
  });

  it('marks the link dead after deadLink transmissions of one segment and keeps retransmitting', () => {
    const { k, out } = capture({ nodelay: 2, interval: 10, deadLink: 5 });
    k.send(new Uint8Array(1));
    let t = 0;
    for (; !k.isDeadLink && t < 60000; t += 10) k.update(t);
    expect(k.state).toBe(KCP_STATE_DEAD);
    expect(allSegments(out).filter((s) => s.cmd === KcpCommand.PUSH)).toHaveLength(5);
    expect(k.xmit).toBe(4);
    for (let end = t + 10000; t < end; t += 10) k.update(t);
    expect(allSegments(out).filter((s) => s.cmd === KcpCommand.PUSH).length).toBeGreaterThan(5);
    expect(k.state).toBe(KCP_STATE_DEAD);
  });
});

describe('Kcp: windows', () => {
  it('probes a zero window after 7 s, then ×1.5 up to 120 s, and stops when it opens', () => {
    const { k, out } = capture({ interval: 100 });
    k.update(0);
    k.input(datagram({ cmd: KcpCommand.WINS, wnd: 0 }));
    expect(k.rmtWnd).toBe(0);
    k.send(new Uint8Array(10));
    const probes: number[] = [];
    for (let t = 0; t <= 700_000; t += 100) {
      out.length = 0;
      k.update(t);
      if (allSegments(out).some((s) => s.cmd === KcpCommand.WASK)) probes.push(t);
      expect(allSegments(out).some((s) => s.cmd === KcpCommand.PUSH)).toBe(false);
    }
    // Armed by the first flush after the window closed (t = 100); each wait is the previous ×1.5,
    // capped at 120 s, and fires on the first 100 ms tick at or after it.
    const gaps = probes.map((p, i) => p - (i === 0 ? 100 : probes[i - 1]!));
    const waits = [7000, 10500, 15750, 23625, 35437, 53155, 79732, 119598, 120000, 120000];
    expect(gaps.length).toBeGreaterThanOrEqual(waits.length);
    waits.forEach((w, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(w);
      expect(gaps[i]).toBeLessThan(w + 100);
    });
    k.input(datagram({ cmd: KcpCommand.WINS, wnd: 5 }));
    out.length = 0;
    k.update(700_100);
    expect(allSegments(out).map((s) => s.cmd)).toEqual([KcpCommand.PUSH]);
  });

  it('answers WASK with WINS carrying the free receive window', () => {
    const { k, out } = capture({ rcvWnd: 200 });
    k.update(0);
    k.input(datagram({ cmd: KcpCommand.WASK }));
    k.flush();
    expect(allSegments(out)).toEqual([expect.objectContaining({ cmd: KcpCommand.WINS, wnd: 200, sn: 0, ts: 0 })]);
  });

  it('setWndSize keeps rcvWnd ≥ 128 and ignores values ≤ 0', () => {
    const { k } = capture();
    k.setWndSize(0, 1);
    expect([k.sndWnd, k.rcvWnd]).toEqual([32, 128]);
    k.setWndSize(-1, 300);
    expect([k.sndWnd, k.rcvWnd]).toEqual([32, 300]);
    k.setWndSize(7, -5);
    expect([k.sndWnd, k.rcvWnd]).toEqual([7, 300]);
  });
});

describe('Kcp: wrap-around', () => {
  it('delivers everything in order across the u32 clock wrap with loss', () => {
    const msgs = messages(5, 300, 3000);
    // At every tick, before and after the wrap, check() is a u32 time at most one interval ahead.
    const ahead: number[] = [];
    const { received, a } = runPair({ nodelay: 1, interval: 10, resend: 2, nc: true }, {
      start: 2 ** 32 - 300, loss: 0.1, messages: msgs, seed: 5,
      onTick: (now, k) => {
        const due = k.check(now);
        ahead.push(due === due >>> 0 ? u32(due - now) : -1);
      },
    });
    expect(sameMessages(received, msgs)).toBe(true);
    expect(a.current).toBeLessThan(2 ** 31); // the clock did wrap
    expect(ahead.length).toBeGreaterThan(30);
    expect(ahead.filter((d) => !(d >= 0 && d <= 10))).toEqual([]);
  });

  it('delivers everything in order across the u32 sequence wrap with loss', () => {
    const msgs = messages(6, 400, 200);
    const start = 2 ** 32 - 100;
    const { received, a, b } = runPair({ nodelay: 2, interval: 10, resend: 2, nc: false }, { start: 0, loss: 0.1, messages: msgs, seed: 6, sn: start });
    expect(sameMessages(received, msgs)).toBe(true);
    expect(a.sndNxt).toBe(u32(start + msgs.length));
    expect(b.rcvNxt).toBe(a.sndNxt);
  });

  it('check() is absolute u32 time and wraps with the clock', () => {
    const { k } = capture({ interval: 50 });
    expect(k.check(2 ** 32 - 5)).toBe(2 ** 32 - 5); // never updated: due now
    k.update(2 ** 32 - 20);
    expect(k.check(2 ** 32 - 20)).toBe(30); // next flush 50 ms later, past the wrap
    expect(k.check(2 ** 32 - 20 + 20000)).toBe(u32(2 ** 32 - 20 + 20000)); // a 20 s jump: due now
  });
});

describe('Kcp: bad input and limits', () => {
  it('never throws on random bytes; results and counters follow the C codes', () => {
    const { k } = capture({}, 0x01020304);
    k.update(0);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.boolean(), (bytes, withConv) => {
        if (withConv && bytes.length >= 4) bytes.set([4, 3, 2, 1]);
        const r = k.input(bytes);
        expect([0, -1, -2, -3]).toContain(r);
        if (bytes.length < 24) expect(r).toBe(-1);
      }),
      { numRuns: 2000 },
    );
    const c = k.counters();
    expect(c.inputRejectedShort + c.inputRejectedConv + c.inputRejectedLength + c.inputRejectedCommand).toBeGreaterThan(0);
    expect(c.inputDatagrams).toBeGreaterThanOrEqual(2000);
  });

  it('maxSendQueueSegments refuses a send that would exceed it with -4, queueing nothing', () => {
    const { k } = capture({ mtu: 100, nc: true, maxSendQueueSegments: 10 });
    for (let i = 0; i < 8; i++) expect(k.send(new Uint8Array(10))).toBe(0);
    expect(k.send(new Uint8Array(200))).toBe(-4); // 3 fragments, only 2 slots
    expect(k.waitSnd()).toBe(8);
    expect(k.send(new Uint8Array(100))).toBe(0);
    expect(k.send(new Uint8Array(1))).toBe(-4);
    expect(k.counters().sendQueueFull).toBe(2);
    k.update(0); // the window takes segments off the queue
    expect(k.send(new Uint8Array(1))).toBe(0);
    const s = capture({ mtu: 100, stream: true, maxSendQueueSegments: 1 }).k;
    expect(s.send(new Uint8Array(10))).toBe(0);
    expect(s.send(new Uint8Array(50))).toBe(0); // fits into the tail segment
    expect(s.send(new Uint8Array(50))).toBe(-4); // would need a second segment
    expect(s.waitSnd()).toBe(1);
  });

  it('maxPendingAcks drops ACKs beyond the limit and counts them', () => {
    const { k, out } = capture({ maxPendingAcks: 4 });
    k.update(0);
    const pushes = Array.from({ length: 10 }, (_, i) => ({ cmd: KcpCommand.PUSH, sn: i, ts: i }));
    expect(k.input(datagram(...pushes))).toBe(0);
    k.flush();
    expect(allSegments(out).filter((s) => s.cmd === KcpCommand.ACK).map((s) => s.sn)).toEqual([0, 1, 2, 3]);
    expect(k.counters().ackListFull).toBe(6);
    expect(k.rcvQueueLength).toBe(10); // the data itself was still accepted
  });

  it('validates configuration and arguments with GamewireError', () => {
    const bad: KcpOptions[] = [{ mtu: 70000 }, { mtu: 49 }, { sndWnd: 0 }, { rcvWnd: 70000 }, { interval: 1.5 }, { minRto: -1 }, { maxSendQueueSegments: 0 }];
    for (const o of bad) expect(() => new Kcp(1, () => {}, o)).toThrow(GamewireError);
    expect(() => new Kcp(-1, () => {})).toThrow(/conv/);
    const { k } = capture();
    expect(k.setMtu(49)).toBe(-1);
    expect(k.mtu).toBe(1400);
    expect(k.setMtu(576)).toBe(0);
    expect(k.mss).toBe(552);
    expect(() => k.update(Number.NaN)).toThrow(/now/);
    expect(() => k.send('hi' as unknown as Uint8Array)).toThrow(GamewireError);
    expect(k.setNoDelay(-1, 3, -1, -1)).toBe(0);
    expect(k.interval).toBe(10);
    expect(k.setUpdateInterval(9000)).toBe(0);
    expect(k.interval).toBe(5000);
  });

  it('flush before the first update sends nothing; input(data, now) moves the clock', () => {
    const { k, out } = capture({ nc: true });
    k.send(new Uint8Array(5));
    k.flush();
    expect(out).toHaveLength(0);
    k.update(100);
    expect(out).toHaveLength(1);
    k.input(datagram({ sn: 0, ts: 100 }), 160);
    expect(k.current).toBe(160);
    expect(k.rxSrtt).toBe(60);
    expect(k.waitSnd()).toBe(0);
  });
});

/** The segments of a datagram, each as its own bytes. WASK/WINS get sn/ts zeroed when `zeroProbeAck`. */
function segmentBytes(d: Uint8Array, zeroProbeAck = false): string[] {
  const out: string[] = [];
  for (let off = 0; off + KCP_OVERHEAD <= d.length;) {
    const len = d[off + 20]! | (d[off + 21]! << 8) | (d[off + 22]! << 16) | (d[off + 23]! << 24);
    const seg = d.slice(off, off + KCP_OVERHEAD + len);
    if (zeroProbeAck && (seg[4] === KcpCommand.WASK || seg[4] === KcpCommand.WINS)) seg.fill(0, 8, 16);
    out.push(Buffer.from(seg).toString('hex'));
    off += KCP_OVERHEAD + len;
  }
  return out;
}

/** Everything observable about a Kcp's state, for "touched nothing else" checks. */
function observable(k: Kcp, now: number): unknown {
  return {
    sndUna: k.sndUna, sndNxt: k.sndNxt, rcvNxt: k.rcvNxt, cwnd: k.cwnd, ssthresh: k.ssthresh, rmtWnd: k.rmtWnd,
    rxRto: k.rxRto, rxSrtt: k.rxSrtt, xmit: k.xmit, waitSnd: k.waitSnd(), sndQueue: k.sndQueueLength,
    sndBuf: k.sndBufLength, rcvQueue: k.rcvQueueLength, rcvBuf: k.rcvBufLength, peek: k.peekSize(),
    check: k.check(now), state: k.state,
  };
}

describe('Kcp: flushAcks (above C parity)', () => {
  it('emits exactly the ACK segments the next flush would have, packed the same way, and nothing else', () => {
    const seen = { acks: 0, multiDatagram: 0, probeAfterAcks: 0, dataAfterAcks: 0 };
    fc.assert(
      fc.property(
        fc.record({
          seed: fc.integer({ min: 1, max: 2 ** 30 }),
          mtu: fc.integer({ min: 50, max: 1500 }),
          preset: fc.constantFrom<KcpOptions>({}, { nodelay: 1, interval: 10, resend: 2, nc: true }, { nodelay: 2, interval: 20, resend: 1 }),
          stream: fc.boolean(),
          loss: fc.constantFrom(0, 0.2, 0.5),
          wask: fc.boolean(),
          start: fc.constantFrom(0, 0x7fffff00, 0xffffff00),
        }),
        (c) => {
          const opts: KcpOptions = { ...c.preset, mtu: c.mtu, stream: c.stream, sndWnd: 64 };
          const rng = new NonCryptoRng(c.seed);
          const fromA: Uint8Array[] = [];
          const a = new Kcp(7, (d) => fromA.push(d.slice()), opts);
          // x calls flushAcks first, y is its twin that only flushes; both see the same calls otherwise.
          const x = capture(opts, 7);
          const y = capture(opts, 7);
          let now: number = c.start;
          for (const k of [a, x.k, y.k]) k.update(now);
          for (const m of messages(c.seed, 40, 3 * c.mtu)) a.send(m);
          for (const m of messages(c.seed + 1, 5, 2 * c.mtu)) {
            x.k.send(m);
            y.k.send(m);
          }
          for (let step = 0; step < 12; step++) {
            now = u32(now + rng.nextRange(1, 40));
            a.update(now);
            const batch = fromA.splice(0).filter(() => !rng.chance(c.loss));
            if (c.wask && rng.chance(0.3)) batch.push(datagram({ conv: 7, cmd: KcpCommand.WASK, una: 0 }));
            for (let i = batch.length - 1; i > 0; i--) {
              const j = rng.nextInt(i + 1);
              [batch[i], batch[j]] = [batch[j]!, batch[i]!];
            }
            for (const d of batch) {
              expect(x.k.input(d, now)).toBe(y.k.input(d, now));
            }
            if (rng.chance(0.3)) {
              x.k.recvMessage();
              y.k.recvMessage();
            }
            const acks = x.k.pendingAckCount;
            expect(acks).toBe(y.k.pendingAckCount);
            x.out.length = 0;
            y.out.length = 0;
            const before = observable(y.k, now);
            x.k.flushAcks(now);
            expect(observable(x.k, now)).toEqual(before);
            expect(x.k.pendingAckCount).toBe(0);
            const early = x.out.splice(0);
            y.k.flush(now);
            const ySegs = y.out.flatMap((d) => segments(d));
            seen.acks += acks;
            if (early.length > 1) seen.multiDatagram++;
            if (acks > 0 && ySegs.some((h) => h.cmd === KcpCommand.WINS)) seen.probeAfterAcks++;
            if (acks > 0 && ySegs.some((h) => h.cmd === KcpCommand.PUSH)) seen.dataAfterAcks++;
            // Same ACK segments, same datagram boundaries: all but the last are equal, the last is a prefix.
            expect(early.flatMap((d) => segmentBytes(d))).toEqual(y.out.flatMap((d) => segmentBytes(d)).slice(0, acks));
            expect(early.every((d) => segments(d).every((h) => h.cmd === KcpCommand.ACK))).toBe(true);
            early.forEach((d, i) => {
              const full = y.out[i]!;
              if (i < early.length - 1) expect(d).toEqual(full);
              else expect(full.subarray(0, d.length)).toEqual(d);
            });
            // Nothing else moved: the flush that follows sends what y's flush sent after its ACKs.
            x.k.flush(now);
            expect(x.out.flatMap((d) => segmentBytes(d, true))).toEqual(y.out.flatMap((d) => segmentBytes(d, true)).slice(acks));
            expect(observable(x.k, now)).toEqual(observable(y.k, now));
          }
        },
      ),
      { numRuns: 80 },
    );
    for (const v of Object.values(seen)) expect(v).toBeGreaterThan(0);
  });

  it('sends no data or probes even when they are due, and nothing before the first update', () => {
    const { k, out } = capture({ nc: true, nodelay: 1, interval: 10 });
    k.input(datagram({ cmd: KcpCommand.PUSH, sn: 0, ts: 5 }));
    k.flushAcks(0);
    expect(out).toHaveLength(0);
    expect(k.pendingAckCount).toBe(1); // kept for the first flush, as C would
    k.update(0);
    expect(allSegments(out).map((h) => h.cmd)).toEqual([KcpCommand.ACK]);
    out.length = 0;
    k.send(new Uint8Array(100));
    k.input(datagram({ cmd: KcpCommand.PUSH, sn: 1, ts: 6, una: 0 }, { cmd: KcpCommand.WASK }), 3);
    expect(k.pendingAckCount).toBe(1);
    k.flushAcks(3);
    expect(allSegments(out).map((h) => [h.cmd, h.sn, h.ts])).toEqual([[KcpCommand.ACK, 1, 6]]);
    expect(k.counters().outputDatagrams).toBe(2);
    expect(k.sndQueueLength).toBe(1);
    k.flushAcks(3); // nothing pending: nothing sent
    expect(out).toHaveLength(1);
    k.flush(3);
    expect(allSegments(out.slice(1)).map((h) => h.cmd)).toEqual([KcpCommand.WINS, KcpCommand.PUSH]);
  });

  it('a pair that sends every ACK at once still delivers everything in order, with loss', () => {
    const msgs = messages(21, 300, 3000);
    for (const opts of [{ nodelay: 1, interval: 10, resend: 2, nc: true }, { interval: 40 }] as KcpOptions[]) {
      const r = runPair(opts, { start: 0, loss: 0.1, messages: msgs, seed: 4, flushAcks: true });
      expect(sameMessages(r.received, msgs)).toBe(true);
    }
  });
});

describe('Kcp: shared scratch buffers', () => {
  it('an output callback may flush other Kcps: every datagram view stays intact during its call', () => {
    const opts: KcpOptions = { nc: true, mtu: 200 };
    // Twins flushed one at a time give the expected datagrams.
    const expected: Uint8Array[][] = [];
    for (let i = 0; i < 3; i++) {
      const t = capture(opts, 10 + i);
      t.k.update(0);
      for (const m of messages(30 + i, 4, 500)) t.k.send(m);
      t.k.flush();
      expected.push(t.out);
    }
    const got: Uint8Array[][] = [[], [], []];
    const ks: Kcp[] = [];
    let clobbered = 0;
    for (let i = 0; i < 3; i++) {
      ks.push(new Kcp(10 + i, (d) => {
        const copy = d.slice();
        got[i]!.push(copy);
        // Nested: A's callback flushes B, whose callback flushes C.
        if (i < 2) ks[i + 1]!.flush();
        if (d.some((x, j) => x !== copy[j])) clobbered++;
      }, opts));
    }
    ks.forEach((k, i) => {
      k.update(0);
      for (const m of messages(30 + i, 4, 500)) k.send(m);
    });
    ks[0]!.flush();
    expect(clobbered).toBe(0);
    expect(got).toEqual(expected);
    expect(got.map((g) => g.length).every((n) => n > 3)).toBe(true);
  });

  it('a larger MTU and an oversize segment get a larger buffer; later small flushes are unaffected', () => {
    const big = capture({ nc: true, mtu: 9000 });
    big.k.update(0);
    big.k.send(new Uint8Array(8000).fill(3));
    big.k.setMtu(100); // the queued 8000-byte segment now exceeds the MTU: it goes out alone
    big.k.flush();
    expect(big.out.map((d) => d.length)).toEqual([8024]);
    expect(big.out[0]!.subarray(24).every((x) => x === 3)).toBe(true);
    const small = capture({ nc: true });
    small.k.update(0);
    small.k.send(new Uint8Array(10).fill(9));
    small.k.flush();
    expect(small.out.map((d) => d.length)).toEqual([34]);
  });
});
