import { describe, it, expect } from 'vitest';
import fc from 'fast-check';
import { GamewireError } from '../../src/core/errors.js';
import type { SansIoPeer } from '../../src/core/peer.js';
import { PairWorld } from './index.js';

type LogEntry = [who: string, what: 'recv' | 'timeout', now: number];

/** Echoes every datagram back, unchanged, on the next drain. */
class EchoPeer implements SansIoPeer {
  pollEvent(): undefined {
    return undefined;
  }
  readonly queue: Uint8Array[] = [];
  received = 0;
  outSizes: number[] = [];
  constructor(private readonly log?: LogEntry[]) {}
  handleDatagram(now: number, bytes: Uint8Array): void {
    this.received++;
    this.log?.push(['echo', 'recv', now]);
    this.queue.push(bytes.slice());
  }
  handleTimeout(): void {}
  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    this.outSizes.push(out.length);
    const d = this.queue.shift();
    if (d === undefined) return undefined;
    out.set(d);
    return d.length;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
}

/** Sends `count` pings (u32 seq + f64 send time) every `intervalMs` from t=0 and records RTTs of echoes. */
class Pinger implements SansIoPeer {
  pollEvent(): undefined {
    return undefined;
  }
  readonly rtts: number[] = [];
  readonly echoes: [now: number, seq: number][] = [];
  private next = 0;
  private sent = 0;
  private pending = false;
  constructor(private readonly intervalMs: number, private readonly count: number, private readonly log?: LogEntry[]) {}
  handleDatagram(now: number, bytes: Uint8Array): void {
    this.log?.push(['pinger', 'recv', now]);
    if (bytes.length !== 12) return;
    const v = new DataView(bytes.buffer, bytes.byteOffset, 12);
    this.echoes.push([now, v.getUint32(0)]);
    this.rtts.push(now - v.getFloat64(4));
  }
  handleTimeout(now: number): void {
    this.log?.push(['pinger', 'timeout', now]);
    if (this.sent < this.count && now >= this.next) {
      this.pending = true;
      this.next += this.intervalMs;
    }
  }
  pollTransmit(now: number, out: Uint8Array): number | undefined {
    if (!this.pending) return undefined;
    this.pending = false;
    const v = new DataView(out.buffer, out.byteOffset, 12);
    v.setUint32(0, this.sent++);
    v.setFloat64(4, now);
    return 12;
  }
  pollTimeout(): number | undefined {
    return this.sent < this.count && !this.pending ? this.next : undefined;
  }
}

/** A broken peer whose timer is always overdue and whose handleTimeout does nothing. */
class StuckPeer implements SansIoPeer {
  pollEvent(): undefined {
    return undefined;
  }
  fired = 0;
  handleDatagram(): void {}
  handleTimeout(): void {
    this.fired++;
  }
  pollTransmit(): number | undefined {
    return undefined;
  }
  pollTimeout(): number | undefined {
    return 0;
  }
}

/** A peer that, whenever its (always overdue) timer fires, sends one datagram: progress, but forever at one instant. */
class BusyPeer implements SansIoPeer {
  pollEvent(): undefined {
    return undefined;
  }
  private pending = 0;
  handleDatagram(): void {}
  handleTimeout(): void {
    this.pending++;
  }
  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    if (this.pending === 0) return undefined;
    this.pending--;
    out[0] = 1;
    return 1;
  }
  pollTimeout(): number | undefined {
    return 0;
  }
}

/** A peer that always has something to transmit. */
class FloodPeer implements SansIoPeer {
  pollEvent(): undefined {
    return undefined;
  }
  handleDatagram(): void {}
  handleTimeout(): void {}
  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    out[0] = 7;
    return 1;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
}

describe('PairWorld: virtual time and step order', () => {
  it('drives a ping/echo pair in virtual time with exact RTTs', () => {
    const pinger = new Pinger(100, 10);
    const echo = new EchoPeer();
    const world = new PairWorld({ seed: 1, aToB: { latencyMs: 25 }, bToA: { latencyMs: 25 }, a: pinger, b: echo });
    const r = world.runUntil(() => pinger.rtts.length === 10, { maxTimeMs: 10_000 });
    expect(r).toEqual({ ok: true, now: 950, steps: 30, reason: 'pred' });
    expect(pinger.rtts).toEqual(new Array(10).fill(50));
    const s = world.stats;
    expect(s.a.datagramsSent).toBe(10);
    expect(s.a.bytesSent).toBe(120);
    expect(s.b.datagramsReceived).toBe(10);
    expect(s.b.datagramsSent).toBe(10);
    expect(s.a.datagramsReceived).toBe(10);
    expect(s.a.timeoutsFired).toBe(10);
    expect(s.aToB.delivered).toBe(10);
    expect(s.bToA.delivered).toBe(10);
    expect(s.steps).toBe(30);
    expect(world.step()).toBe(false);
    expect(world.now).toBe(950);
  });

  it('processes events in time order; at equal times deliveries come before timers', () => {
    const log: LogEntry[] = [];
    // Echo returns after 2 × 25 = 50 ms, exactly when the next ping timer is due.
    const world = new PairWorld({ seed: 1, aToB: { latencyMs: 25 }, a: new Pinger(50, 5, log), b: new EchoPeer(log) });
    world.runUntil(() => false, { maxTimeMs: 1000 });
    for (let i = 1; i < log.length; i++) expect(log[i][2]).toBeGreaterThanOrEqual(log[i - 1][2]);
    const at50 = log.filter((e) => e[2] === 50).map((e) => `${e[0]}:${e[1]}`);
    expect(at50).toEqual(['pinger:recv', 'pinger:timeout']);
  });

  it('hands pollTransmit a buffer of the configured mtu', () => {
    const echo = new EchoPeer();
    const world = new PairWorld({ seed: 1, mtu: 1200, a: new Pinger(10, 1), b: echo });
    world.runUntil(() => false, { maxTimeMs: 100 });
    expect(echo.outSizes.length).toBeGreaterThan(0);
    expect(echo.outSizes.every((n) => n === 1200)).toBe(true);
  });

  it('rounds event times up to whole ms with integerTime', () => {
    const log: LogEntry[] = [];
    const pinger = new Pinger(7, 50, log);
    const world = new PairWorld({ seed: 3, aToB: { latencyMs: 3.3, jitterMs: 4 }, integerTime: true, a: pinger, b: new EchoPeer(log) });
    world.runUntil(() => pinger.rtts.length === 50, { maxTimeMs: 10_000 });
    expect(pinger.rtts.length).toBe(50);
    expect(log.every((e) => Number.isInteger(e[2]))).toBe(true);
    expect(pinger.rtts.every((r) => Number.isInteger(r) && r >= 7 && r <= 16)).toBe(true);
  });

  it('is deterministic: same seed, same trace; another seed, another trace', () => {
    const trace = (seed: number): [number, number][] => {
      const pinger = new Pinger(10, 300);
      const world = new PairWorld({ seed, aToB: 'lossy', a: pinger, b: new EchoPeer() });
      world.runUntil(() => false, { maxTimeMs: 5000 });
      return pinger.echoes;
    };
    const t1 = trace(11);
    expect(t1.length).toBeGreaterThan(200);
    expect(t1.length).toBeLessThan(300 * 1.05);
    expect(trace(11)).toEqual(t1);
    expect(trace(12)).not.toEqual(t1);
  });
});

describe('PairWorld: run limits', () => {
  it('stops at the deadline without processing later events, and leaves the clock there', () => {
    const pinger = new Pinger(100, 1000);
    const world = new PairWorld({ seed: 1, aToB: { latencyMs: 30 }, a: pinger, b: new EchoPeer() });
    const r = world.runUntil(() => false, { maxTimeMs: 1000 });
    expect(r.reason).toBe('deadline');
    expect(r.ok).toBe(false);
    expect(r.now).toBe(1000);
    expect(world.stats.a.timeoutsFired).toBe(11); // timers at 0, 100, …, 1000 (inclusive)
    expect(pinger.rtts.length).toBe(10);
    const r2 = world.runUntil(() => false, { maxTimeMs: 0 });
    expect(r2.reason).toBe('deadline');
    expect(r2.steps).toBe(0);
  });

  it('stops after maxSteps', () => {
    const world = new PairWorld({ seed: 1, aToB: { latencyMs: 5 }, a: new Pinger(10, 100), b: new EchoPeer() });
    const r = world.runUntil(() => false, { maxTimeMs: 100_000, maxSteps: 7 });
    expect(r).toMatchObject({ ok: false, steps: 7, reason: 'max-steps' });
    expect(world.stats.steps).toBe(7);
  });

  it('stops when idle, and returns at once when the predicate already holds', () => {
    const world = new PairWorld({ seed: 1, a: new EchoPeer(), b: new EchoPeer() });
    expect(world.runUntil(() => true, { maxTimeMs: 10 })).toEqual({ ok: true, now: 0, steps: 0, reason: 'pred' });
    expect(world.runUntil(() => false, { maxTimeMs: 10 })).toEqual({ ok: false, now: 0, steps: 0, reason: 'idle' });
    expect(world.step()).toBe(false);
  });

  it('runFor advances the clock by exactly the duration even when idle', () => {
    const pinger = new Pinger(100, 3);
    const world = new PairWorld({ seed: 1, aToB: { latencyMs: 10 }, a: pinger, b: new EchoPeer(), startMs: 1000 });
    const r = world.runFor(5000);
    expect(r.now).toBe(6000);
    expect(world.now).toBe(6000);
    expect(r.reason).toBe('idle');
    expect(pinger.rtts).toEqual([20, 20, 20]);
  });

  it('rejects bad limits', () => {
    const world = new PairWorld({ seed: 1, a: new EchoPeer(), b: new EchoPeer() });
    expect(() => world.runUntil(() => false, { maxTimeMs: Infinity })).toThrow(GamewireError);
    expect(() => world.runUntil(() => false, { maxTimeMs: -1 })).toThrow(GamewireError);
    expect(() => world.runUntil(() => false, { maxTimeMs: 1, maxSteps: -1 })).toThrow(GamewireError);
  });
});

describe('PairWorld: misbehaving peers cannot spin forever', () => {
  it('pushes back the timer of a peer that makes no progress, and counts it', () => {
    const stuck = new StuckPeer();
    const world = new PairWorld({ seed: 1, a: stuck, b: new EchoPeer() });
    const r = world.runUntil(() => false, { maxTimeMs: 100 });
    expect(r.reason).toBe('deadline');
    expect(r.now).toBe(100);
    expect(stuck.fired).toBe(101); // once per stallStepMs (1 ms), 0..100
    expect(world.stats.a.stalls).toBe(101);
  });

  it('honours stallStepMs', () => {
    const stuck = new StuckPeer();
    const world = new PairWorld({ seed: 1, a: new EchoPeer(), b: stuck, stallStepMs: 10 });
    world.runUntil(() => false, { maxTimeMs: 100 });
    expect(stuck.fired).toBe(11);
    expect(world.stats.b.stalls).toBe(11);
  });

  it('caps firings at one instant for a peer that makes progress forever', () => {
    const world = new PairWorld({ seed: 1, aToB: { latencyMs: 1 }, a: new BusyPeer(), b: new EchoPeer(), maxFiresPerInstant: 50 });
    const r = world.runUntil(() => false, { maxTimeMs: 10 });
    expect(r.reason).toBe('deadline');
    const s = world.stats;
    expect(s.a.timeoutsFired).toBe(11 * 50);
    expect(s.a.stalls).toBe(11);
    expect(s.a.datagramsSent).toBe(11 * 50);
  });

  it('cuts short the drain of a peer that always has something to send', () => {
    const world = new PairWorld({
      seed: 1, aToB: { latencyMs: 1, maxInFlight: 500 }, a: new FloodPeer(), b: new EchoPeer(), maxTransmitsPerDrain: 100,
    });
    const r = world.runUntil(() => false, { maxTimeMs: 5 });
    expect(r.reason).toBe('deadline');
    const s = world.stats;
    expect(s.a.drainCapHits).toBeGreaterThan(0);
    expect(s.a.datagramsSent).toBe(s.a.drainCapHits * 100);
    expect(s.aToB.droppedInFlight).toBeGreaterThan(0);
  });

  it('throws invalid-state on a pollTransmit length that does not fit, or a NaN timeout', () => {
    const liar: SansIoPeer = {
      pollEvent: () => undefined, handleDatagram() {}, handleTimeout() {}, pollTimeout: () => undefined,
      pollTransmit: (_now, out) => out.length + 1,
    };
    const world = new PairWorld({ seed: 1, a: liar, b: new EchoPeer() });
    expect(() => world.step()).toThrow(expect.objectContaining({ code: 'invalid-state' }));
    const nan: SansIoPeer = { pollEvent: () => undefined, handleDatagram() {}, handleTimeout() {}, pollTransmit: () => undefined, pollTimeout: () => Number.NaN };
    const w2 = new PairWorld({ seed: 1, a: new EchoPeer(), b: nan });
    expect(() => w2.step()).toThrow(expect.objectContaining({ code: 'invalid-state' }));
  });
});

describe('PairWorld: traffic hooks', () => {
  function pair(): { world: PairWorld; pinger: Pinger; echo: EchoPeer } {
    const pinger = new Pinger(10, 10);
    const echo = new EchoPeer();
    const world = new PairWorld({ seed: 2, aToB: { latencyMs: 5 }, a: pinger, b: echo });
    return { world, pinger, echo };
  }

  it('onDeliver returning null drops the datagram and counts it', () => {
    const { world, pinger, echo } = pair();
    world.onDeliver = (dir) => (dir === 'bToA' ? null : undefined);
    world.runUntil(() => false, { maxTimeMs: 1000 });
    expect(echo.received).toBe(10);
    expect(pinger.rtts.length).toBe(0);
    expect(world.stats.a.droppedByHook).toBe(10);
    expect(world.stats.bToA.delivered).toBe(10);
  });

  it('onDeliver can mutate in place, replace, or multiply datagrams', () => {
    const { world, pinger } = pair();
    world.onDeliver = (dir, bytes) => {
      if (dir === 'aToB') { bytes[3] ^= 0x80; return undefined; }
      return [bytes, bytes.subarray(0, 5)];
    };
    world.runUntil(() => false, { maxTimeMs: 1000 });
    expect(pinger.echoes.map((e) => e[1])).toEqual(Array.from({ length: 10 }, (_, i) => i + 0x80));
    expect(world.stats.a.datagramsReceived).toBe(20);
  });

  it('inject hands bytes to the peer at once; onTransmit sees every datagram sent', () => {
    const { world, echo } = pair();
    const seen: string[] = [];
    world.onTransmit = (dir, bytes, now) => seen.push(`${dir}:${bytes.length}@${now}`);
    world.inject('aToB', new Uint8Array([1, 2, 3]));
    expect(echo.received).toBe(1);
    expect(seen).toEqual(['bToA:3@0']);
    world.runUntil(() => false, { maxTimeMs: 1000 });
    expect(seen.length).toBe(world.stats.a.datagramsSent + world.stats.b.datagramsSent);
  });

  it('traffic sent straight into a link crosses it', () => {
    const { world, echo } = pair();
    world.links.aToB.send(world.now, new Uint8Array([9]));
    const r = world.runUntil(() => echo.received === 1, { maxTimeMs: 100 });
    expect(r).toMatchObject({ ok: true, now: 5, steps: 2 }); // ping timer at 0, then the injected datagram at 5
    expect(world.stats.bToA.bytesSent).toBe(1);
    expect(world.stats.aToB.sent).toBe(2);
  });
});

describe('PairWorld: construction', () => {
  it('attaches peers once and guards access before that', () => {
    const world = new PairWorld({ seed: 1 });
    expect(() => world.a).toThrow(GamewireError);
    expect(world.step()).toBe(false);
    const a = new EchoPeer();
    world.attach(a, new EchoPeer());
    expect(world.a).toBe(a);
    expect(() => world.attach(new EchoPeer(), new EchoPeer())).toThrow(GamewireError);
    expect(() => new PairWorld({ seed: 1, a })).toThrow(GamewireError);
    expect(() => new PairWorld({ seed: 1, mtu: 0 })).toThrow(GamewireError);
    expect(() => new PairWorld({ seed: 1, aToB: { loss: 2 } })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
  });
});

describe('PairWorld: reused receive buffer', () => {
  it('gives the same results as fresh copies, and grows for oversized datagrams', () => {
    const run = (reuse: boolean): [number, number][] => {
      const pinger = new Pinger(5, 200);
      const world = new PairWorld({ seed: 4, aToB: 'mobile', a: pinger, b: new EchoPeer(), mtu: 64, reuseReceiveBuffer: reuse });
      world.runUntil(() => false, { maxTimeMs: 5000 });
      return pinger.echoes;
    };
    const fresh = run(false);
    expect(fresh.length).toBeGreaterThan(150);
    expect(run(true)).toEqual(fresh);

    const seen: number[] = [];
    const sink: SansIoPeer = {
      handleDatagram: (_now, bytes) => { seen.push(bytes.length); },
      pollEvent: () => undefined, handleTimeout() {}, pollTransmit: () => undefined, pollTimeout: () => undefined,
    };
    const world = new PairWorld({ seed: 1, a: new EchoPeer(), b: sink, mtu: 16, reuseReceiveBuffer: true });
    world.links.aToB.send(0, new Uint8Array(100));
    world.links.aToB.send(0, new Uint8Array(3));
    expect(world.runUntil(() => seen.length === 2, { maxTimeMs: 10 }).ok).toBe(true);
    expect(seen).toEqual([100, 3]);
  });
});

describe('PairWorld: property', () => {
  it('for any links and ping rate: time never goes backwards, RTTs respect latency, counts add up', () => {
    const linkArb = fc.record({
      latencyMs: fc.integer({ min: 0, max: 40 }),
      jitterMs: fc.integer({ min: 0, max: 40 }),
      reorder: fc.boolean(),
      loss: fc.double({ min: 0, max: 0.5, noNaN: true }),
      duplicate: fc.double({ min: 0, max: 0.2, noNaN: true }),
      rateBitsPerSec: fc.option(fc.integer({ min: 20_000, max: 10_000_000 }), { nil: undefined }),
    });
    fc.assert(fc.property(linkArb, linkArb, fc.integer({ min: 1, max: 30 }), fc.integer(), fc.boolean(), (ab, ba, interval, seed, intTime) => {
      const log: LogEntry[] = [];
      const pinger = new Pinger(interval, 60, log);
      const echo = new EchoPeer(log);
      const world = new PairWorld({ seed, aToB: ab, bToA: ba, a: pinger, b: echo, integerTime: intTime });
      // Generous: at 20 kbit/s, 60 pings, their duplicates and the echoes take over a second to serialise; the run must end idle.
      const r = world.runUntil(() => false, { maxTimeMs: 600_000 });
      if (r.reason !== 'idle') return false;
      for (let i = 1; i < log.length; i++) if (log[i][2] < log[i - 1][2]) return false;
      const minRtt = ab.latencyMs + ba.latencyMs;
      if (!pinger.rtts.every((x) => x >= minRtt)) return false;
      const s = world.stats;
      return s.a.datagramsSent === 60 && s.aToB.sent === 60 && echo.received === s.aToB.delivered &&
        s.b.datagramsSent === echo.received && pinger.rtts.length === s.bToA.delivered && s.a.stalls === 0;
    }), { numRuns: 60 });
  });
});

describe('PairWorld: links changed mid-run', () => {
  it('reconfiguring a link at a set time keeps every datagram in flight', () => {
    const pinger = new Pinger(1, 2000);
    const echo = new EchoPeer();
    const world = new PairWorld({ seed: 8, aToB: { latencyMs: 40, reorder: false }, a: pinger, b: echo });
    world.at(500, () => world.links.aToB.reconfigure(world.now, { latencyMs: 5 }));
    world.at(1200, () => {
      world.links.aToB.reconfigure(world.now, { latencyMs: 80 });
      world.links.bToA.reconfigure(world.now, { latencyMs: 80 });
    });
    const r = world.runUntil(() => pinger.rtts.length === 2000, { maxTimeMs: 10_000 });
    expect(r.ok).toBe(true);
    expect(pinger.echoes.map((e) => e[1])).toEqual(Array.from({ length: 2000 }, (_, i) => i));
    expect(pinger.rtts[0]).toBe(80);
    expect(pinger.rtts[600]).toBe(45);
    expect(pinger.rtts[1999]).toBe(160);
    expect(world.stats.aToB.droppedOutage + world.stats.aToB.droppedLoss).toBe(0);
  });
});
