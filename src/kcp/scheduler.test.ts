import { describe, expect, it } from 'vitest';
import { createLinkPair } from '../sim/index.js';
import { Kcp, type KcpOptions } from './kcp.js';
import { KcpScheduler } from './scheduler.js';

const FAST: KcpOptions = { nodelay: 1, interval: 10, resend: 2, nc: true, sndWnd: 64, rcvWnd: 128 };

interface Trace {
  out: string[];
  received: number;
  updates: number;
}

/**
 * A→B messages over a lossy simulated path, echoed by B. `mode` 'every-ms' updates both KCPs every
 * millisecond (the reference); otherwise a KcpScheduler decides, and time jumps between events.
 */
function run(mode: 'every-ms' | 'check' | 'park', seed: number, messages: number): Trace {
  const links = createLinkPair({ latencyMs: 20, jitterMs: 15, jitterIntegerMs: true, reorder: true, loss: 0.1 }, seed);
  let now = 0;
  const out: string[] = [];
  const a = new Kcp(7, (d) => {
    out.push(`A ${now} ${Buffer.from(d).toString('hex')}`);
    links.aToB.send(now, d);
  }, FAST);
  const b = new Kcp(7, (d) => {
    out.push(`B ${now} ${Buffer.from(d).toString('hex')}`);
    links.bToA.send(now, d);
  }, FAST);
  const sched = mode === 'every-ms' ? undefined : new KcpScheduler<Kcp>({ parkIdle: mode === 'park' });
  sched?.add(a, 0);
  sched?.add(b, 0);
  let updates = 0;
  let sent = 0;
  let received = 0;
  const payload = new Uint8Array(100);
  const endAt = 20_000;
  while (now <= endAt) {
    // App: one message from A every 30 ms.
    if (now % 30 === 0 && sent < messages) {
      payload[0] = sent & 0xff;
      a.send(payload);
      sent++;
      sched?.touch(a, now);
    }
    for (let d = links.aToB.pollDeliver(now); d !== undefined; d = links.aToB.pollDeliver(now)) {
      b.input(d, now);
      sched?.touch(b, now);
    }
    for (let d = links.bToA.pollDeliver(now); d !== undefined; d = links.bToA.pollDeliver(now)) {
      a.input(d, now);
      sched?.touch(a, now);
    }
    for (let m = b.recvMessage(); m !== undefined; m = b.recvMessage()) {
      b.send(m);
      sched?.touch(b, now);
    }
    for (let m = a.recvMessage(); m !== undefined; m = a.recvMessage()) {
      received++;
      sched?.touch(a, now);
    }
    if (sched === undefined) {
      a.update(now);
      b.update(now);
      updates += 2;
      now++;
    } else {
      updates += sched.handleTimeout(now);
      // Jump to the next thing that can happen: a timer, a delivery or the next app send.
      let t = Math.min(
        sched.pollTimeout() ?? Infinity,
        links.aToB.pollTimeout() ?? Infinity,
        links.bToA.pollTimeout() ?? Infinity,
        sent < messages ? Math.ceil((now + 1) / 30) * 30 : Infinity,
      );
      t = Math.ceil(t);
      if (t === Infinity) break;
      now = Math.max(now + 1, t);
    }
  }
  return { out, received, updates };
}

describe('KcpScheduler', () => {
  it('check()-driven updates produce exactly the datagrams of updating every millisecond', () => {
    for (const seed of [1, 2, 3]) {
      const ref = run('every-ms', seed, 300);
      const sch = run('check', seed, 300);
      expect(ref.received).toBe(300);
      // Per direction (the order of two updates at one instant is free).
      expect(sch.out.filter((x) => x[0] === 'A')).toEqual(ref.out.filter((x) => x[0] === 'A'));
      expect(sch.out.filter((x) => x[0] === 'B')).toEqual(ref.out.filter((x) => x[0] === 'B'));
      expect(sch.received).toBe(300);
      expect(sch.updates).toBeLessThan(ref.updates / 5);
    }
  });

  it('parking idle objects delivers everything with far fewer updates', () => {
    const check = run('check', 4, 300);
    const park = run('park', 4, 300);
    expect(park.received).toBe(300);
    // After the last echo both ends go idle: 'check' keeps waking every interval, 'park' stops.
    expect(park.updates).toBeLessThan(check.updates);
  });

  it('an idle object parks after its update and wakes on touch', () => {
    const k = new Kcp(1, () => {}, FAST);
    const s = new KcpScheduler<Kcp>();
    s.add(k, 100);
    expect(s.pollTimeout()).toBe(100);
    expect(s.handleTimeout(100)).toBe(1);
    expect(s.pollTimeout()).toBeUndefined();
    expect(s.parked).toBe(1);
    k.send(new Uint8Array(5));
    s.touch(k, 105);
    expect(s.pollTimeout()).toBe(110); // the next flush on KCP's interval grid
    s.remove(k);
    s.add(k, 300);
    k.send(new Uint8Array(5));
    s.touch(k, 300);
    expect(s.pollTimeout()).toBe(300); // the flush schedule went stale while parked: due at once
    expect(s.handleTimeout(300)).toBe(1);
    expect(s.pollTimeout()).toBeGreaterThan(300); // waiting for the ACK / retransmit
    s.remove(k);
    expect(s.size).toBe(0);
    expect(s.pollTimeout()).toBeUndefined();
  });

  it('without parking, an object is updated once per interval while idle', () => {
    const k = new Kcp(1, () => {}, FAST);
    const s = new KcpScheduler<Kcp>({ parkIdle: false });
    s.add(k, 0);
    let n = 0;
    for (let t = 0; t <= 1000; t++) if ((s.pollTimeout() ?? Infinity) <= t) n += s.handleTimeout(t);
    expect(n).toBe(101);
  });

  it('rejects double add and touch of unknown objects', () => {
    const k = new Kcp(1, () => {}, FAST);
    const s = new KcpScheduler<Kcp>();
    s.add(k, 0);
    expect(() => s.add(k, 0)).toThrow(/invalid-state/);
    expect(() => s.touch(new Kcp(2, () => {}), 0)).toThrow(/invalid-state/);
  });
});
