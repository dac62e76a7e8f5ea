import { describe, expect, it } from 'vitest';
import { ChunkSender } from '../chunk/sender.js';
import { GamewireError } from '../core/errors.js';
import { AdaptiveRate } from './adaptive.js';
import type { RateController } from './controller.js';
import { FixedRate } from './fixed.js';
import { Path, RELIABLE_RESEND_FLOOR_MS, UDP_IPV4_OVERHEAD_BYTES, UDP_IPV6_OVERHEAD_BYTES } from './path.js';

function expectConfigError(f: () => unknown): void {
  let err: unknown;
  try {
    f();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(GamewireError);
  expect((err as GamewireError).code).toBe('invalid-config');
}

describe('Path', () => {
  it('defaults: AdaptiveRate, UDP/IPv4 overhead, 100 ms initial RTT', () => {
    const p = new Path();
    expect(p.controller).toBeInstanceOf(AdaptiveRate);
    expect(p.overheadBytes).toBe(UDP_IPV4_OVERHEAD_BYTES);
    expect(p.wireBytes(1200)).toBe(1228);
    expect(new Path({ overheadBytes: UDP_IPV6_OVERHEAD_BYTES }).wireBytes(1200)).toBe(1248);
    expect(p.rtt.srttMs).toBe(100);
    expect(p.resendDelayMs(20)).toBe(125);
  });

  it('paces at the controller rate: starts with a full budget of two datagrams, then rate × dt', () => {
    const p = new Path({ rateController: new FixedRate(100_000), maxDatagramBytes: 1000 });
    p.update(0);
    expect(p.pacingRateBytesPerSec).toBe(100_000);
    expect(p.covers(2 * 1028)).toBe(true);
    p.spend(2 * 1028);
    expect(p.covers(1028)).toBe(false);
    expect(p.readyAt(1028)).toBeCloseTo(10.28, 9);
    p.update(10.28);
    expect(p.covers(1028)).toBe(true);
  });

  it('a datagram larger than maxDatagramBytes raises the budget cap instead of never being covered', () => {
    const p = new Path({ rateController: new FixedRate(1000), maxDatagramBytes: 100 });
    p.update(0);
    p.spend(1e9);
    expect(p.readyAt(5000)).toBe(5000);
    p.update(60_000);
    expect(p.covers(5000)).toBe(true);
  });

  it('feeds the controller: sent, acked (with the shared estimator) and lost wire bytes', () => {
    const calls: string[] = [];
    const rc: RateController = {
      pacingRate: () => 1e6,
      onSent: (_n, b) => calls.push(`sent ${b}`),
      onAck: (_n, b, ms, rtt) => calls.push(`ack ${b} ${ms} srtt ${rtt.srttMs}`),
      onLoss: (_n, b) => calls.push(`loss ${b}`),
    };
    const p = new Path({ rateController: rc });
    p.onSent(1, 1228);
    expect(p.onRttSample(40, 39)).toBe(true);
    p.onAck(40, 1228, true);
    expect(p.onRttSample(41, -5)).toBe(false);
    p.onAck(41, 100, false);
    p.onLoss(50, 1228);
    expect(calls).toEqual(['sent 1228', 'ack 1228 39 srtt 39', 'ack 100 undefined srtt 39', 'loss 1228']);
  });

  it('caps fresh data sent while the peer is silent at max(2 × rate × srtt, 64 KiB); hearing the peer lifts it', () => {
    const p = new Path({ rateController: new FixedRate(10_000_000) });
    p.onRttSample(0, 20);
    p.update(0);
    const cap = 2 * 10_000_000 * 0.02;
    p.onSent(0, cap, true);
    expect(p.freshAllowed()).toBe(true);
    p.onSent(0, 1, false);
    expect(p.freshAllowed()).toBe(true);
    p.onSent(0, 1, true);
    expect(p.freshAllowed()).toBe(false);
    p.onPeerHeard(5);
    expect(p.freshAllowed()).toBe(true);
    const slow = new Path({ rateController: new FixedRate(1000) });
    slow.update(0);
    slow.onSent(0, 65_536, true);
    expect(slow.freshAllowed()).toBe(true);
    slow.onSent(0, 1, true);
    expect(slow.freshAllowed()).toBe(false);
  });

  it('backs off probes while the peer is silent (×2 per probe, at most 16×), one probe per delay', () => {
    const p = new Path({ initialRttMs: 100 });
    expect(p.resendDelayMs(0)).toBe(125);
    expect(p.resendAt(0, 125)).toBe(125);
    p.onResend(125, 0);
    expect(p.resendDelayMs(0)).toBe(250);
    expect(p.resendAt(10, 250)).toBe(375);
    for (let i = 0; i < 10; i++) p.onResend(1000 + i, 100);
    expect(p.resendDelayMs(0)).toBe(16 * 125);
    p.onPeerHeard(2000);
    expect(p.resendDelayMs(0)).toBe(125);
    expect(p.resendAt(1500, 125)).toBe(1625);
    p.onResend(1700, 1500);
    expect(p.resendDelayMs(0)).toBe(125);
  });

  it('adds the peer ack holding time it learnt (a slowly decaying max, capped at maxAckDelayMs)', () => {
    const p = new Path({ maxAckDelayMs: 10 });
    p.onRttSample(0, 100, 50);
    expect(p.resendDelayMs(0)).toBeCloseTo(100 + 4 * 50 + 10, 9);
    p.onRttSample(1, 100, 0);
    expect(p.resendDelayMs(0)).toBeLessThan(100 + 4 * 50 + 10);
  });

  it('restart: a new network path starts its RTT, its own controller, budget, cap and backoff over; a given controller is kept', () => {
    const p = new Path({ initialRttMs: 50 });
    const first = p.controller;
    p.onRttSample(10, 200);
    p.onAck(10, 1228, true);
    p.onSent(11, 1228, true);
    p.onResend(500, 11);
    expect(p.rtt.samples).toBe(1);
    const delay = p.resendDelayMs(0);
    p.restart();
    expect(p.rtt.samples).toBe(0);
    expect(p.rtt.srttMs).toBe(50);
    expect(p.controller).not.toBe(first);
    expect(p.controller).toBeInstanceOf(AdaptiveRate);
    expect(p.resendDelayMs(0)).toBeLessThan(delay);
    const rc = new FixedRate(1000);
    const q = new Path({ rateController: rc });
    q.restart();
    expect(q.controller).toBe(rc);
  });

  it('restart onto another transport takes its overhead and reliability', () => {
    const p = new Path({ overheadBytes: 96 });
    expect([p.overheadBytes, p.reliableTransport]).toEqual([96, false]);
    p.restart({ overheadBytes: 60, reliableTransport: true });
    expect([p.overheadBytes, p.reliableTransport]).toEqual([60, true]);
    expect(p.wireBytes(100)).toBe(160);
    expect(p.resendDelayMs(0)).toBeGreaterThanOrEqual(RELIABLE_RESEND_FLOOR_MS);
    expectConfigError(() => p.restart({ overheadBytes: -1, reliableTransport: true }));
    expectConfigError(() => p.restart({ overheadBytes: 60, reliableTransport: 1 as unknown as boolean }));
  });

  it('rejects bad configuration with invalid-config', () => {
    for (const bad of [
      { overheadBytes: -1 }, { overheadBytes: 1.5 }, { maxDatagramBytes: 0 }, { pacingBurstMs: -1 },
      { unackedBdpMultiple: NaN }, { unackedFloorBytes: -1 }, { maxAckDelayMs: 5000 }, { initialRttMs: 0 },
      { rateController: {} as RateController }, { bogus: 1 } as object,
    ]) expectConfigError(() => new Path(bad));
  });
});

describe('ChunkSender on a Path', () => {
  it('builds a private path from its own options by default', () => {
    const s = new ChunkSender({ rateBytesPerSec: 50_000, initialRttMs: 40 });
    expect(s.path.controller).toBeInstanceOf(FixedRate);
    expect(s.config.rateController).toBe(s.path.controller);
    expect(s.path.rtt.srttMs).toBe(40);
  });

  it('takes a shared path: two senders pace from one budget (one rate for both lanes)', () => {
    const path = new Path({ rateController: new FixedRate(50_000) });
    const a = new ChunkSender({ path, sessionId: 1 });
    const b = new ChunkSender({ path, sessionId: 2 });
    expect(a.config.rateController).toBe(path.controller);
    a.sendBlock(new Uint8Array(200_000));
    b.sendBlock(new Uint8Array(200_000));
    const out = new Uint8Array(1500);
    let wire = 0;
    for (let now = 0; now <= 1000; now += 1) {
      // Which lane asks first is the connection's choice (here: alternate); the budget is one.
      for (const s of now % 2 === 0 ? [a, b] : [b, a]) {
        s.handleTimeout(now);
        for (let n = s.pollTransmit(now, out); n !== undefined; n = s.pollTransmit(now, out)) wire += path.wireBytes(n);
      }
    }
    // One second at 50 000 B/s plus the initial budget (two datagrams), shared (and under the 64 KiB in-flight cap).
    expect(wire).toBeGreaterThan(50_000 - 1228);
    expect(wire).toBeLessThanOrEqual(50_000 + 2 * 1228);
    expect(a.counters().datagramsSent).toBeGreaterThan(15);
    expect(b.counters().datagramsSent).toBeGreaterThan(15);
    const solo = new ChunkSender({ rateBytesPerSec: 50_000, sessionId: 3 });
    solo.sendBlock(new Uint8Array(200_000));
    let soloWire = 0;
    for (let now = 0; now <= 1000; now += 1) {
      solo.handleTimeout(now);
      for (let n = solo.pollTransmit(now, out); n !== undefined; n = solo.pollTransmit(now, out)) soloWire += n + 28;
    }
    expect(Math.abs(wire - soloWire)).toBeLessThanOrEqual(1228);
  });

  it('rejects a path together with options its path would hold', () => {
    const path = new Path();
    for (const k of ['rateBytesPerSec', 'initialRttMs', 'pacingBurstMs', 'unackedBdpMultiple', 'unackedFloorBytes'] as const) {
      expectConfigError(() => new ChunkSender({ path, [k]: 10 }));
    }
    expectConfigError(() => new ChunkSender({ path, rateController: new FixedRate() }));
    expectConfigError(() => new ChunkSender({ path: {} as Path }));
  });

  it('a reliable transport raises the resend floor (block slices wait for TCP) and takes only a boolean', () => {
    const udp = new Path();
    const tcp = new Path({ reliableTransport: true });
    for (const p of [udp, tcp]) p.onRttSample(0, 50);
    expect(udp.resendDelayMs(20)).toBeLessThan(200);
    expect(tcp.resendDelayMs(20)).toBeGreaterThanOrEqual(RELIABLE_RESEND_FLOOR_MS);
    expect(tcp.resendDelayMs(5000)).toBeGreaterThanOrEqual(5000);
    expectConfigError(() => new Path({ reliableTransport: 1 as never }));
  });
});
