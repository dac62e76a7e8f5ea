import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { GamewireError } from '../core/errors.js';
import { Link, type LinkCounters } from './link.js';
import type { LinkConfig } from './config.js';
import { createLinkPair } from './pair.js';
import { presets } from './presets.js';

interface Delivery { t: number; id: number; len: number }

function packet(id: number, len = 8): Uint8Array {
  const b = new Uint8Array(Math.max(len, 4));
  new DataView(b.buffer).setUint32(0, id);
  return b.subarray(0, Math.max(len, 4));
}
function idOf(b: Uint8Array): number {
  return new DataView(b.buffer, b.byteOffset, b.byteLength).getUint32(0);
}

/** Send datagram i at `times[i]` (non-decreasing), delivering everything due before each send; returns deliveries in order. */
function drive(link: Link, times: readonly number[], len = 8): Delivery[] {
  const out: Delivery[] = [];
  const flush = (upTo: number): void => {
    for (;;) {
      const t = link.pollTimeout();
      if (t === undefined || t > upTo) return;
      const d = link.pollDeliver(t);
      if (d === undefined) throw new Error(`pollTimeout said ${t} but nothing was delivered`);
      out.push({ t, id: idOf(d), len: d.length });
    }
  };
  times.forEach((t, i) => {
    flush(t);
    link.send(t, packet(i, len));
  });
  flush(1e15);
  return out;
}

function range(n: number, spacing = 1): number[] {
  return Array.from({ length: n }, (_, i) => i * spacing);
}

function totalDropped(c: LinkCounters): number {
  return c.droppedLoss + c.droppedQueue + c.droppedMtu + c.droppedOutage + c.droppedInFlight;
}

describe('Link determinism', () => {
  const cfg: Partial<LinkConfig> = {
    ...presets.mobile,
    outage: [{ startMs: 500, endMs: 700 }],
    mtu: 1200,
  };
  const times = range(3000, 1);

  it('same config and seed give an identical delivery trace', () => {
    const a = drive(new Link(cfg, 42), times, 1000);
    const b = drive(new Link(cfg, 42), times, 1000);
    expect(a.length).toBeGreaterThan(2000);
    expect(b).toEqual(a);
  });

  it('a different seed gives a different trace', () => {
    const a = drive(new Link(cfg, 42), times, 1000);
    const b = drive(new Link(cfg, 43), times, 1000);
    expect(b).not.toEqual(a);
  });

  it('changing the loss knob does not shift jitter or duplicate draws of surviving datagrams', () => {
    const base: Partial<LinkConfig> = { latencyMs: 10, jitterMs: 30, duplicate: 0.1 };
    const lossless = drive(new Link(base, 7), range(2000));
    const lossy = drive(new Link({ ...base, loss: 0.3 }, 7), range(2000));
    const key = (d: Delivery): string => `${d.id}@${d.t}`;
    const all = new Set(lossless.map(key));
    expect(lossy.length).toBeLessThan(lossless.length * 0.8);
    for (const d of lossy) expect(all.has(key(d))).toBe(true);
  });

  it('the two directions of a pair are independent but reproducible', () => {
    const p1 = createLinkPair('lossy', 9);
    const p2 = createLinkPair('lossy', 9);
    const t = range(500);
    const ab1 = drive(p1.aToB, t);
    const ba1 = drive(p1.bToA, t);
    expect(drive(p2.aToB, t)).toEqual(ab1);
    expect(drive(p2.bToA, t)).toEqual(ba1);
    expect(ba1).not.toEqual(ab1);
  });
});

describe('Link loss models', () => {
  it('Bernoulli loss matches its probability', () => {
    const n = 20000;
    const link = new Link({ loss: 0.1 }, 1);
    const got = drive(link, range(n));
    const c = link.counters();
    expect(c.droppedLoss + got.length).toBe(n);
    expect(Math.abs(c.droppedLoss / n - 0.1)).toBeLessThan(0.012);
  });

  it('Gilbert-Elliott gives the stationary loss rate and geometric bursts of mean 1/pBadToGood', () => {
    const n = 60000;
    const ge = { pGoodToBad: 0.05, pBadToGood: 0.25, lossGood: 0, lossBad: 1 };
    const link = new Link({ gilbertElliott: ge }, 3);
    const got = new Set(drive(link, range(n)).map((d) => d.id));
    const bursts: number[] = [];
    let run = 0;
    for (let i = 0; i < n; i++) {
      if (!got.has(i)) run++;
      else if (run > 0) { bursts.push(run); run = 0; }
    }
    const meanLoss = (n - got.size) / n;
    const meanBurst = bursts.reduce((s, x) => s + x, 0) / bursts.length;
    expect(Math.abs(meanLoss - 0.05 / 0.3)).toBeLessThan(0.015);
    expect(Math.abs(meanBurst - 4)).toBeLessThan(0.3);
    expect(link.counters().droppedLoss).toBe(n - got.size);
  });

  it('Bernoulli loss of the same rate has short bursts (contrast with Gilbert-Elliott)', () => {
    const n = 30000;
    const got = new Set(drive(new Link({ loss: 1 / 6 }, 3), range(n)).map((d) => d.id));
    let bursts = 0;
    let lost = 0;
    for (let i = 0; i < n; i++) {
      if (!got.has(i)) { lost++; if (i === 0 || got.has(i - 1)) bursts++; }
    }
    expect(lost / bursts).toBeLessThan(1.4);
  });

  it('lossGood and lossBad apply in their states', () => {
    const n = 40000;
    const link = new Link({ gilbertElliott: { pGoodToBad: 0, pBadToGood: 1, lossGood: 0.2, lossBad: 1 } }, 5);
    drive(link, range(n));
    expect(Math.abs(link.counters().droppedLoss / n - 0.2)).toBeLessThan(0.012);
  });

  it('shuffle bag loses exactly `lost` of every aligned bag of datagrams', () => {
    for (const [lost, bagSize, seed] of [[5, 100, 1], [3, 10, 2], [0, 100, 3], [7, 7, 4], [1, 1, 5]] as const) {
      const n = bagSize * 50;
      const link = new Link({ shuffleBagLoss: { lost, bagSize } }, seed);
      const got = new Set(drive(link, range(n)).map((d) => d.id));
      for (let w = 0; w < n; w += bagSize) {
        let missing = 0;
        for (let i = w; i < w + bagSize; i++) if (!got.has(i)) missing++;
        expect(missing).toBe(lost);
      }
      expect(link.counters().droppedLoss).toBe(lost * 50);
    }
  });

  it('shuffle bag positions vary from bag to bag', () => {
    const got = new Set(drive(new Link({ shuffleBagLoss: { lost: 5 } }, 11), range(1000)).map((d) => d.id));
    const patterns = new Set<string>();
    for (let w = 0; w < 1000; w += 100) {
      const miss: number[] = [];
      for (let i = w; i < w + 100; i++) if (!got.has(i)) miss.push(i - w);
      patterns.add(miss.join(','));
    }
    expect(patterns.size).toBe(10);
  });
});

describe('Link delay, jitter and reordering', () => {
  it('fixed latency delays every datagram exactly and keeps ties FIFO', () => {
    const times = [0, 0, 0, 5, 5, 9.5];
    const got = drive(new Link({ latencyMs: 12.5 }, 1), times);
    expect(got.map((d) => d.id)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(got.map((d) => d.t)).toEqual(times.map((t) => t + 12.5));
  });

  it('jitter is uniform in [0, jitterMs]', () => {
    const n = 20000;
    const got = drive(new Link({ latencyMs: 20, jitterMs: 10 }, 2), range(n));
    const delays = got.map((d) => d.t - d.id);
    const min = Math.min(...delays);
    const max = Math.max(...delays);
    const mean = delays.reduce((s, x) => s + x, 0) / n;
    expect(min).toBeGreaterThanOrEqual(20);
    expect(min).toBeLessThan(20.05);
    expect(max).toBeLessThanOrEqual(30);
    expect(max).toBeGreaterThan(29.95);
    expect(Math.abs(mean - 25)).toBeLessThan(0.15);
  });

  it('integer jitter draws every value of {0..floor(jitterMs)}', () => {
    const got = drive(new Link({ latencyMs: 30, jitterMs: 31, jitterIntegerMs: true }, 2), range(5000, 100));
    const delays = new Set(got.map((d) => d.t - d.id * 100));
    expect([...delays].sort((a, b) => a - b)).toEqual(Array.from({ length: 32 }, (_, i) => 30 + i));
  });

  it('with reorder=true, jitter larger than the send spacing reorders', () => {
    const got = drive(new Link({ latencyMs: 5, jitterMs: 20, reorder: true }, 4), range(2000));
    let inversions = 0;
    for (let i = 1; i < got.length; i++) if (got[i].id < got[i - 1].id) inversions++;
    expect(inversions).toBeGreaterThan(200);
  });

  it('with reorder=false, delivery order equals send order and delays stay within [latency, latency+jitter]', () => {
    const link = new Link({ latencyMs: 5, jitterMs: 20, reorder: false, duplicate: 0.05, loss: 0.05 }, 4);
    const got = drive(link, range(2000));
    for (let i = 1; i < got.length; i++) {
      expect(got[i].id).toBeGreaterThanOrEqual(got[i - 1].id);
      expect(got[i].t).toBeGreaterThanOrEqual(got[i - 1].t);
    }
    for (const d of got) {
      expect(d.t - d.id).toBeGreaterThanOrEqual(5);
      expect(d.t - d.id).toBeLessThanOrEqual(25);
    }
  });

  it('pollDeliver returns nothing before the delivery time and pollTimeout reports it', () => {
    const link = new Link({ latencyMs: 10 }, 1);
    expect(link.pollTimeout()).toBeUndefined();
    link.send(3, packet(1));
    expect(link.pollTimeout()).toBe(13);
    expect(link.pollDeliver(12.999)).toBeUndefined();
    expect(idOf(link.pollDeliver(13)!)).toBe(1);
    expect(link.pollDeliver(13)).toBeUndefined();
    expect(link.pollTimeout()).toBeUndefined();
  });
});

describe('Link duplication', () => {
  it('duplicates at the configured rate; the copy is an equal but separate buffer', () => {
    const n = 20000;
    const link = new Link({ duplicate: 0.1, latencyMs: 1, jitterMs: 3 }, 6);
    const seen = new Map<number, Uint8Array[]>();
    const times = range(n);
    let i = 0;
    const flush = (upTo: number): void => {
      for (;;) {
        const t = link.pollTimeout();
        if (t === undefined || t > upTo) return;
        const d = link.pollDeliver(t)!;
        const list = seen.get(idOf(d)) ?? [];
        list.push(d);
        seen.set(idOf(d), list);
      }
    };
    for (const t of times) { flush(t); link.send(t, packet(i++, 16)); }
    flush(1e9);
    const c = link.counters();
    expect(c.delivered).toBe(n + c.duplicated);
    expect(Math.abs(c.duplicated / n - 0.1)).toBeLessThan(0.012);
    let doubles = 0;
    let bad = 0;
    for (const list of seen.values()) {
      if (list.length === 2) {
        doubles++;
        const [x, y] = list;
        if (x.buffer === y.buffer || x.length !== y.length || x.some((v, k) => v !== y[k])) bad++;
      } else if (list.length !== 1) bad++;
    }
    expect(bad).toBe(0);
    expect(doubles).toBe(c.duplicated);
    expect(seen.size).toBe(n);
  });

  it('duplicate=1 doubles every datagram', () => {
    const link = new Link({ duplicate: 1 }, 1);
    expect(drive(link, range(100)).length).toBe(200);
  });
});

describe('Link bottleneck (rate and queue)', () => {
  // 97 payload + 28 overhead = 125 wire bytes = 1000 bits = exactly 1 ms at 1 Mbit/s.
  const rate = { rateBitsPerSec: 1e6 };

  it('spaces back-to-back datagrams by wireBytes*8/rate', () => {
    const got = drive(new Link({ ...rate, latencyMs: 10 }, 1), [0, 0, 0, 0, 0], 97);
    expect(got.map((d) => d.t)).toEqual([11, 12, 13, 14, 15]);
  });

  it('counts overheadBytes against the rate', () => {
    const got = drive(new Link({ ...rate, overheadBytes: 0 }, 1), [0, 0], 125);
    expect(got.map((d) => d.t)).toEqual([1, 2]);
  });

  it('an idle link serialises from the arrival time, not the last departure', () => {
    const got = drive(new Link(rate, 1), [0, 100, 100.5], 97);
    expect(got.map((d) => d.t)).toEqual([1, 101, 102]);
  });

  it('drop-tail at queueDatagrams', () => {
    const link = new Link({ ...rate, queueDatagrams: 5 }, 1);
    for (let i = 0; i < 8; i++) link.send(0, packet(i, 97));
    expect(link.queuedDatagrams).toBe(5);
    expect(link.queuedBytes).toBe(625);
    const c = link.counters();
    expect(c.droppedQueue).toBe(3);
    expect(c.queuedPeakDatagrams).toBe(5);
    const got: number[] = [];
    let d: Uint8Array | undefined;
    while ((d = link.pollDeliver(100)) !== undefined) got.push(idOf(d));
    expect(got).toEqual([0, 1, 2, 3, 4]);
  });

  it('drop-tail at queueBytes (wire bytes)', () => {
    const link = new Link({ ...rate, queueBytes: 300 }, 1);
    for (let i = 0; i < 4; i++) link.send(0, packet(i, 97));
    expect(link.counters().droppedQueue).toBe(2);
    expect(link.queuedBytes).toBe(250);
  });

  it('the queue drains as time passes and accepts again', () => {
    const link = new Link({ ...rate, queueDatagrams: 2 }, 1);
    for (let i = 0; i < 3; i++) link.send(0, packet(i, 97));
    expect(link.counters().droppedQueue).toBe(1);
    link.send(1, packet(3, 97)); // first left at t=1: room for one
    link.send(1, packet(4, 97));
    expect(link.counters().droppedQueue).toBe(2);
    expect(link.pollDeliver(1.5)).toBeDefined();
    expect(link.queuedDatagrams).toBe(2);
    link.send(10, packet(5, 97));
    expect(link.queuedDatagrams).toBe(1);
  });

  it('queue delay grows while the sender outpaces the rate, then drops hold it at the limit', () => {
    // 2 datagrams per ms into a 1 datagram per ms bottleneck with a 50-datagram queue.
    const link = new Link({ ...rate, queueDatagrams: 50 }, 1);
    const got = drive(link, range(400, 0.5), 97);
    const delays = got.map((d) => d.t - d.id * 0.5);
    expect(delays[10]).toBeGreaterThan(delays[0]);
    expect(delays[40]).toBeGreaterThan(delays[10]);
    expect(Math.max(...delays)).toBeLessThanOrEqual(50 + 1e-9);
    expect(delays[delays.length - 1]).toBeGreaterThan(49);
    expect(link.counters().droppedQueue).toBeGreaterThan(100);
    expect(link.counters().queuedPeakDatagrams).toBe(50);
  });

  it('defaults to a 1000-datagram queue when only a rate is given', () => {
    const link = new Link(rate, 1);
    expect(link.config.queueDatagrams).toBe(1000);
    for (let i = 0; i < 1005; i++) link.send(0, packet(i, 97));
    expect(link.counters().droppedQueue).toBe(5);
  });
});

describe('Link MTU, outage and in-flight cap', () => {
  it('drops datagrams longer than mtu and counts them', () => {
    const link = new Link({ mtu: 100 }, 1);
    link.send(0, new Uint8Array(100));
    link.send(0, new Uint8Array(101));
    link.send(0, new Uint8Array(0));
    expect(link.counters().droppedMtu).toBe(1);
    expect(link.inFlight).toBe(2);
  });

  it('is silent during outage windows: sends in a window and arrivals in a window are dropped', () => {
    const link = new Link({ latencyMs: 10, outage: [{ startMs: 100, endMs: 200 }, { startMs: 300, endMs: 301 }] }, 1);
    const got = drive(link, range(400));
    const ids = new Set(got.map((d) => d.id));
    for (let i = 0; i < 400; i++) {
      const silent = (i >= 90 && i < 200) || i === 290 || i === 300;
      expect(ids.has(i)).toBe(!silent);
    }
    expect(link.counters().droppedOutage).toBe(110 + 2);
  });

  it('caps datagrams in flight and counts the overflow', () => {
    const link = new Link({ latencyMs: 100, maxInFlight: 10, duplicate: 0 }, 1);
    for (let i = 0; i < 15; i++) link.send(0, packet(i));
    expect(link.inFlight).toBe(10);
    expect(link.counters().droppedInFlight).toBe(5);
    expect(link.pollDeliver(100)).toBeDefined();
    link.send(100, packet(99));
    expect(link.inFlight).toBe(10);
    expect(link.counters().inFlightPeak).toBe(10);
  });

  it('caps bytes in flight', () => {
    const link = new Link({ latencyMs: 100, maxInFlightBytes: 1000 }, 1);
    for (let i = 0; i < 5; i++) link.send(0, new Uint8Array(300));
    expect(link.inFlightBytes).toBe(900);
    expect(link.counters().droppedInFlight).toBe(2);
  });

  it('the in-flight cap also bounds duplicates', () => {
    const link = new Link({ latencyMs: 100, maxInFlight: 3, duplicate: 1 }, 1);
    for (let i = 0; i < 3; i++) link.send(0, packet(i));
    expect(link.inFlight).toBe(3);
    // #0 and its copy, #1 (its copy is made and dropped), #2 dropped before any copy.
    expect(link.counters().duplicated).toBe(2);
    expect(link.counters().droppedInFlight).toBe(2);
  });
});

describe('Link input handling', () => {
  it('copies the bytes on send', () => {
    const link = new Link({ latencyMs: 1 }, 1);
    const buf = new Uint8Array([1, 2, 3]);
    link.send(0, buf);
    buf[0] = 9;
    expect([...link.pollDeliver(1)!]).toEqual([1, 2, 3]);
  });

  it('pollDeliverInto copies into the caller buffer, and keeps the datagram when the buffer is too small', () => {
    const link = new Link({ latencyMs: 1 }, 1);
    link.send(0, new Uint8Array([1, 2, 3, 4, 5]));
    link.send(0, new Uint8Array(0));
    link.send(0, new Uint8Array(70_000).fill(9)); // beyond the pooled size classes
    expect(link.peekLength()).toBe(5);
    expect(link.pollDeliverInto(0.5, new Uint8Array(8))).toBeUndefined();
    expect(() => link.pollDeliverInto(1, new Uint8Array(4))).toThrow(expect.objectContaining({ code: 'buffer-too-small' }));
    expect(link.inFlight).toBe(3);
    const out = new Uint8Array(8);
    expect(link.pollDeliverInto(1, out)).toBe(5);
    expect([...out.subarray(0, 5)]).toEqual([1, 2, 3, 4, 5]);
    expect(link.pollDeliverInto(1, out)).toBe(0);
    const big = new Uint8Array(70_000);
    expect(link.pollDeliverInto(1, big)).toBe(70_000);
    expect(big.every((v) => v === 9)).toBe(true);
    expect(link.counters()).toMatchObject({ delivered: 3, bytesDelivered: 70_005 });
    expect(link.peekLength()).toBeUndefined();
  });

  it('recycled storage never leaks old bytes into shorter datagrams', () => {
    const link = new Link({}, 1);
    link.send(0, new Uint8Array(100).fill(0xaa));
    expect(link.pollDeliver(0)!.length).toBe(100);
    link.send(0, new Uint8Array([1, 2]));
    expect([...link.pollDeliver(0)!]).toEqual([1, 2]);
    link.send(0, new Uint8Array(100).fill(0xbb));
    link.pollDeliverInto(0, new Uint8Array(100));
    link.send(0, new Uint8Array([3]));
    const out = new Uint8Array(100);
    expect(link.pollDeliverInto(0, out)).toBe(1);
    expect(out[0]).toBe(3);
  });

  it('throws invalid-argument when time goes backwards or is not finite', () => {
    const link = new Link({}, 1);
    link.send(10, packet(1));
    const code = (f: () => unknown): string | undefined => {
      try { f(); } catch (e) { return e instanceof GamewireError ? e.code : 'other'; }
      return undefined;
    };
    expect(code(() => link.send(9, packet(2)))).toBe('invalid-argument');
    expect(code(() => link.pollDeliver(5))).toBe('invalid-argument');
    expect(code(() => link.send(Number.NaN, packet(2)))).toBe('invalid-argument');
    expect(code(() => link.send(Infinity, packet(2)))).toBe('invalid-argument');
    expect(code(() => link.send(11, 'x' as unknown as Uint8Array))).toBe('invalid-argument');
    expect(code(() => new Link({}, 1.5))).toBe('invalid-argument');
    expect(code(() => link.send(10, packet(3)))).toBeUndefined();
  });

  it('keeps its counters consistent and delivers in time order for any config and traffic', () => {
    const cfgArb = fc.record({
      latencyMs: fc.double({ min: 0, max: 50, noNaN: true }),
      jitterMs: fc.double({ min: 0, max: 50, noNaN: true }),
      jitterIntegerMs: fc.boolean(),
      reorder: fc.boolean(),
      loss: fc.double({ min: 0, max: 1, noNaN: true }),
      duplicate: fc.double({ min: 0, max: 1, noNaN: true }),
      rateBitsPerSec: fc.option(fc.integer({ min: 10_000, max: 100_000_000 }), { nil: undefined }),
      queueDatagrams: fc.option(fc.integer({ min: 1, max: 50 }), { nil: undefined }),
      mtu: fc.option(fc.integer({ min: 1, max: 1500 }), { nil: undefined }),
      maxInFlight: fc.integer({ min: 1, max: 200 }),
    }, { requiredKeys: [] });
    const trafficArb = fc.array(fc.tuple(fc.double({ min: 0, max: 20, noNaN: true }), fc.integer({ min: 0, max: 1600 })), { maxLength: 300 });
    fc.assert(fc.property(cfgArb, trafficArb, fc.integer(), (raw, traffic, seed) => {
      const cfg: Partial<LinkConfig> = { ...raw };
      if (cfg.rateBitsPerSec === undefined) delete cfg.queueDatagrams;
      const link = new Link(cfg, seed);
      let now = 0;
      let lastT = -Infinity;
      let delivered = 0;
      for (const [gap, len] of traffic) {
        now += gap;
        for (;;) {
          const t = link.pollTimeout();
          if (t === undefined || t > now) break;
          if (t < lastT) return false;
          lastT = t;
          if (link.pollDeliver(Math.max(t, lastT)) === undefined) return false;
          delivered++;
        }
        link.send(now, new Uint8Array(len));
        if (link.inFlight > (cfg.maxInFlight ?? 100_000)) return false;
      }
      const c = link.counters();
      return c.delivered === delivered && c.sent === traffic.length &&
        c.sent + c.duplicated === c.delivered + totalDropped(c) + link.inFlight;
    }), { numRuns: 150 });
  });
});

describe('Link.reconfigure', () => {
  it('an empty change changes nothing: the trace is the one without it', () => {
    const cfg: Partial<LinkConfig> = { latencyMs: 10, jitterMs: 20, loss: 0.2, duplicate: 0.1, rateBitsPerSec: 1e6 };
    const plain = drive(new Link(cfg, 9), range(500, 0.5));
    const link = new Link(cfg, 9);
    const times = range(500, 0.5);
    const out: Delivery[] = [];
    times.forEach((t, i) => {
      for (let d = link.pollDeliver(t); d !== undefined; d = link.pollDeliver(t)) out.push({ t: -1, id: idOf(d), len: d.length });
      if (i % 50 === 0) link.reconfigure(t, {});
      link.send(t, packet(i));
    });
    for (let d = link.pollDeliver(1e9); d !== undefined; d = link.pollDeliver(1e9)) out.push({ t: -1, id: idOf(d), len: d.length });
    expect(out.map((d) => d.id)).toEqual(plain.map((d) => d.id));
  });

  it('a new delay applies to datagrams sent from then on; those in flight keep their delivery time', () => {
    const link = new Link({ latencyMs: 100 }, 1);
    link.send(0, packet(0));
    link.send(10, packet(1));
    link.reconfigure(20, { latencyMs: 10 });
    expect(link.config.latencyMs).toBe(10);
    link.send(20, packet(2));
    const got: [number, number][] = [];
    for (let t = link.pollTimeout(); t !== undefined; t = link.pollTimeout()) got.push([t, idOf(link.pollDeliver(t)!)]);
    expect(got).toEqual([[30, 2], [100, 0], [110, 1]]); // reorder: true lets the faster route overtake

    const fifo = new Link({ latencyMs: 100, reorder: false }, 1);
    fifo.send(0, packet(0));
    fifo.reconfigure(20, { latencyMs: 10 });
    fifo.send(20, packet(1));
    const t0 = fifo.pollTimeout()!;
    expect([t0, idOf(fifo.pollDeliver(t0)!)]).toEqual([100, 0]);
    const t1 = fifo.pollTimeout()!;
    expect([t1, idOf(fifo.pollDeliver(t1)!)]).toEqual([100, 1]); // FIFO: held behind the older one
  });

  it('merges onto the settings given so far; undefined restores a default; a bad change throws and leaves the link as it was', () => {
    const link = new Link({ latencyMs: 5, rateBitsPerSec: 1e6, queueBytes: 10_000 }, 2);
    link.reconfigure(0, { loss: 0.5 });
    expect(link.config).toMatchObject({ latencyMs: 5, rateBitsPerSec: 1e6, queueBytes: 10_000, loss: 0.5 });
    expect(link.config.queueDatagrams).toBeUndefined(); // not the default of a rate without limits
    const before = link.config;
    expect(() => link.reconfigure(1, { rateBitsPerSec: undefined })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(() => link.reconfigure(1, { loss: 2 })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(() => link.reconfigure(1, { bogus: 1 } as Partial<LinkConfig>)).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(link.config).toBe(before);
    link.reconfigure(1, { rateBitsPerSec: undefined, queueBytes: undefined, loss: undefined });
    expect(link.config).toMatchObject({ latencyMs: 5, loss: 0 });
    expect(link.config.rateBitsPerSec).toBeUndefined();
    expect(() => link.reconfigure(0, {})).toThrow(expect.objectContaining({ code: 'invalid-argument' }));
  });

  it('a new rate applies to the queue from now on: the backlog and the datagram on the wire speed up or slow down', () => {
    // 1000 wire bytes = 8 ms at 1 Mbit/s, 1 ms at 8 Mbit/s, 16 ms at 0.5 Mbit/s; 10 ms of propagation after.
    const run = (bitsPerSec: number): { times: number[]; delayAt4: number } => {
      const link = new Link({ rateBitsPerSec: 1e6, overheadBytes: 0, latencyMs: 10, reorder: false }, 3);
      for (let i = 0; i < 5; i++) link.send(0, new Uint8Array(1000));
      expect(link.queueDelayMs).toBe(40);
      link.reconfigure(4, { rateBitsPerSec: bitsPerSec }); // half of the first datagram is on the wire
      const delayAt4 = link.queueDelayMs;
      link.send(4, new Uint8Array(1000));
      const times: number[] = [];
      for (let t = link.pollTimeout(); t !== undefined; t = link.pollTimeout()) { link.pollDeliver(t); times.push(t - 10); }
      expect(link.counters().droppedQueue).toBe(0);
      return { times, delayAt4 };
    };
    expect(run(8e6)).toEqual({ times: [4.5, 5.5, 6.5, 7.5, 8.5, 9.5], delayAt4: 4.5 });
    expect(run(0.5e6)).toEqual({ times: [12, 28, 44, 60, 76, 92], delayAt4: 72 });
    expect(run(1e6).times).toEqual([8, 16, 24, 32, 40, 48]); // unchanged rate, unchanged schedule
  });

  it('removing the rate lets the whole backlog go at once; jittered and duplicated datagrams move with it', () => {
    const link = new Link({ rateBitsPerSec: 1e6, overheadBytes: 0, latencyMs: 5, jitterMs: 3, duplicate: 0.5 }, 11);
    for (let i = 0; i < 20; i++) link.send(0, packet(i, 1000)); // 160 ms of backlog
    const copies = link.inFlight;
    expect(copies).toBeGreaterThan(25);
    link.reconfigure(1, { rateBitsPerSec: undefined });
    expect(link.queueDelayMs).toBe(0);
    for (let n = 0; n < copies; n++) expect(link.pollDeliver(9)).toBeDefined(); // all due by 1 + 5 + 3
    expect(link.pollTimeout()).toBeUndefined();
    expect(link.counters().delivered).toBe(copies);
  });

  it('outage windows set mid-run drop sends inside them, not datagrams already in flight', () => {
    const link = new Link({ latencyMs: 50 }, 4);
    link.send(0, packet(0));
    link.reconfigure(10, { outage: [{ startMs: 10, endMs: 20 }] });
    link.send(15, packet(1));
    link.send(20, packet(2));
    expect(link.counters().droppedOutage).toBe(1);
    expect([idOf(link.pollDeliver(50)!), idOf(link.pollDeliver(70)!)]).toEqual([0, 2]);
  });

  it('switching loss models on and off mid-run keeps the shuffle bag exact', () => {
    const link = new Link({}, 5);
    link.reconfigure(0, { shuffleBagLoss: { lost: 10, bagSize: 20 } });
    for (let i = 0; i < 40; i++) link.send(0, packet(i));
    expect(link.counters().droppedLoss).toBe(20);
    link.reconfigure(0, { shuffleBagLoss: undefined });
    for (let i = 0; i < 40; i++) link.send(0, packet(i));
    expect(link.counters().droppedLoss).toBe(20);
    link.reconfigure(0, { shuffleBagLoss: { lost: 1, bagSize: 10 } });
    for (let i = 0; i < 30; i++) link.send(0, packet(i));
    expect(link.counters().droppedLoss).toBe(23);
  });

  it('keeps its counters consistent under random reconfigurations', () => {
    const cfgArb = fc.record({
      latencyMs: fc.double({ min: 0, max: 50, noNaN: true }),
      jitterMs: fc.double({ min: 0, max: 50, noNaN: true }),
      reorder: fc.boolean(),
      loss: fc.double({ min: 0, max: 1, noNaN: true }),
      duplicate: fc.double({ min: 0, max: 1, noNaN: true }),
      rateBitsPerSec: fc.option(fc.integer({ min: 10_000, max: 100_000_000 }), { nil: undefined }),
      maxInFlight: fc.integer({ min: 1, max: 200 }),
    }, { requiredKeys: [] });
    const stepArb = fc.oneof(
      fc.tuple(fc.double({ min: 0, max: 20, noNaN: true }), fc.integer({ min: 0, max: 1600 })),
      cfgArb,
    );
    fc.assert(fc.property(cfgArb, fc.array(stepArb, { maxLength: 300 }), fc.integer(), (cfg, steps, seed) => {
      const link = new Link(cfg, seed);
      let now = 0;
      let lastT = -Infinity;
      let delivered = 0;
      let sent = 0;
      for (const s of steps) {
        if (!Array.isArray(s)) { link.reconfigure(now, s); continue; }
        now += s[0];
        for (let t = link.pollTimeout(); t !== undefined && t <= now; t = link.pollTimeout()) {
          if (t < lastT) return false;
          lastT = t;
          if (link.pollDeliver(Math.max(t, now)) === undefined) return false;
          delivered++;
        }
        link.send(now, new Uint8Array(s[1]));
        sent++;
        if (link.inFlight > 200) return false; // a lower maxInFlight evicts nothing, so 200 (the largest) bounds it
      }
      const c = link.counters();
      return c.delivered === delivered && c.sent === sent && c.sent + c.duplicated === c.delivered + totalDropped(c) + link.inFlight;
    }), { numRuns: 150 });
  });
});

describe('Link.watch (the World\'s hook)', () => {
  it('is called by every operation after which pollTimeout() changed', () => {
    const cfgArb = fc.record({
      latencyMs: fc.double({ min: 0, max: 30, noNaN: true }),
      jitterMs: fc.double({ min: 0, max: 30, noNaN: true }),
      reorder: fc.boolean(),
      duplicate: fc.double({ min: 0, max: 0.5, noNaN: true }),
      rateBitsPerSec: fc.option(fc.integer({ min: 10_000, max: 10_000_000 }), { nil: undefined }),
    }, { requiredKeys: [] });
    const opArb = fc.oneof(
      fc.tuple(fc.constant('send' as const), fc.double({ min: 0, max: 5, noNaN: true }), fc.integer({ min: 1, max: 1500 })),
      fc.tuple(fc.constant('poll' as const), fc.double({ min: 0, max: 20, noNaN: true }), fc.boolean()),
      fc.tuple(fc.constant('cfg' as const), cfgArb),
    );
    fc.assert(fc.property(cfgArb, fc.array(opArb, { minLength: 20, maxLength: 200, size: 'max' }), fc.integer(), (cfg, ops, seed) => {
      const link = new Link(cfg, seed);
      let calls = 0;
      link.watch(() => calls++);
      const out = new Uint8Array(1500);
      let now = 0;
      for (const op of ops) {
        const before = link.pollTimeout();
        calls = 0;
        if (op[0] === 'send') {
          now += op[1];
          link.send(now, new Uint8Array(op[2]));
        } else if (op[0] === 'poll') {
          now += op[1];
          if (op[2]) link.pollDeliver(now);
          else link.pollDeliverInto(now, out);
        } else {
          link.reconfigure(now, op[1]);
        }
        if (link.pollTimeout() !== before && calls === 0) return false;
      }
      link.watch(undefined);
      calls = 0;
      link.send(now, new Uint8Array(10));
      return calls === 0;
    }), { numRuns: 100 });
  });
});

describe('Link tags', () => {
  it('a tag travels with its datagram (and its copies) through reordering', () => {
    const link = new Link({ latencyMs: 5, jitterMs: 30, duplicate: 0.3 }, 6);
    for (let i = 0; i < 300; i++) link.send(i * 0.1, packet(i), i * 3);
    let n = 0;
    for (let d = link.pollDeliver(1000); d !== undefined; d = link.pollDeliver(1000)) {
      expect(link.lastTag).toBe(idOf(d) * 3);
      n++;
    }
    expect(n).toBe(300 + link.counters().duplicated);
  });
});
