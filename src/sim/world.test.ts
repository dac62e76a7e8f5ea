import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import type { Address, Endpoint, Transmit } from '../core/endpoint.js';
import { GamewireError } from '../core/errors.js';
import type { SansIoPeer } from '../core/peer.js';
import type { LinkCounters } from './link.js';
import { World } from './world.js';

/** An addressed server: echoes every datagram to whoever sent it. */
class EchoServer implements Endpoint {
  readonly queue: [Address, Uint8Array][] = [];
  readonly from: Address[] = [];
  private readonly tx: Transmit = { length: 0, to: '' };
  handleDatagram(_now: number, from: Address, bytes: Uint8Array): void {
    this.from.push(from);
    this.queue.push([from, bytes.slice()]);
  }
  handleTimeout(): void {}
  pollTransmit(_now: number, out: Uint8Array): Transmit | undefined {
    const d = this.queue.shift();
    if (d === undefined) return undefined;
    out.set(d[1]);
    this.tx.length = d[1].length;
    this.tx.to = d[0];
    return this.tx;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
}

/** Sends `count` pings (u32 seq + f64 send time) every `intervalMs` from `startMs`, and records RTTs of the echoes. */
class Pinger implements SansIoPeer {
  readonly rtts: number[] = [];
  readonly seqs: number[] = [];
  private next: number;
  private sent = 0;
  private pending = false;
  constructor(private readonly intervalMs: number, private readonly count: number, startMs = 0) {
    this.next = startMs;
  }
  handleDatagram(now: number, bytes: Uint8Array): void {
    if (bytes.length < 12) return;
    const v = new DataView(bytes.buffer, bytes.byteOffset, 12);
    this.seqs.push(v.getUint32(0));
    this.rtts.push(now - v.getFloat64(4));
  }
  handleTimeout(now: number): void {
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
  pollEvent(): undefined {
    return undefined;
  }
}

/** Sends `size`-byte datagrams at `bitsPerSec` (payload only) to one remote, forever; counts what it receives. */
class Stream implements SansIoPeer {
  sent = 0;
  received = 0;
  receivedBytes = 0;
  readonly arrivals: number[] = [];
  private next = 0;
  private due = false;
  constructor(private bitsPerSec: number, private readonly size = 1000, private readonly until = Infinity) {}
  setRate(bitsPerSec: number): void {
    this.bitsPerSec = bitsPerSec;
  }
  handleDatagram(now: number, bytes: Uint8Array): void {
    this.received++;
    this.receivedBytes += bytes.length;
    this.arrivals.push(now);
  }
  handleTimeout(now: number): void {
    if (now >= this.next && now < this.until) {
      this.due = true;
      this.next = now + (this.size * 8000) / this.bitsPerSec;
    }
  }
  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    if (!this.due) return undefined;
    this.due = false;
    new DataView(out.buffer, out.byteOffset).setUint32(0, this.sent++);
    return this.size;
  }
  pollTimeout(): number | undefined {
    return this.bitsPerSec > 0 && this.next < this.until ? this.next : undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
}

/** Receives and counts; never sends. */
class Sink implements Endpoint {
  readonly got = new Map<Address, number[]>();
  readonly bytes = new Map<Address, number>();
  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    let a = this.got.get(from);
    if (a === undefined) this.got.set(from, (a = []));
    a.push(now);
    this.bytes.set(from, (this.bytes.get(from) ?? 0) + bytes.length);
  }
  handleTimeout(): void {}
  pollTransmit(): Transmit | undefined {
    return undefined;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
  pollEvent(): undefined {
    return undefined;
  }
}

describe('World: N endpoints', () => {
  it('one server, three clients: routes are created on first use, each with its own config', () => {
    const server = new EchoServer();
    const pingers = [new Pinger(100, 5), new Pinger(100, 5), new Pinger(100, 5)];
    const world = new World({
      seed: 1, link: { latencyMs: 10 },
      routes: [{ from: 'c1', to: 'srv', link: { latencyMs: 40 } }],
    });
    world.add('srv', server);
    pingers.forEach((p, i) => world.addPeer(`c${i}`, p, 'srv'));
    const r = world.runUntil(() => pingers.every((p) => p.rtts.length === 5), { maxTimeMs: 10_000 });
    expect(r.ok).toBe(true);
    expect(pingers[0].rtts).toEqual([20, 20, 20, 20, 20]);
    expect(pingers[1].rtts).toEqual([50, 50, 50, 50, 50]);
    expect(pingers[2].rtts).toEqual([20, 20, 20, 20, 20]);
    const s = world.stats;
    expect(s.routes.map((x) => `${x.from}>${x.to}`).sort()).toEqual(['c0>srv', 'c1>srv', 'c2>srv', 'srv>c0', 'srv>c1', 'srv>c2']);
    expect(s.routes.every((x) => x.link.sent === 5 && x.link.delivered === 5)).toBe(true);
    expect(s.peers.srv).toMatchObject({ datagramsReceived: 15, datagramsSent: 15 });
    expect(world.addresses).toEqual(['srv', 'c0', 'c1', 'c2']);
    expect(new Set(server.from)).toEqual(new Set(['c0', 'c1', 'c2']));
  });

  it('a single-remote peer drops datagrams from anyone but its remote', () => {
    const world = new World({ seed: 1 });
    const pinger = new Pinger(10, 3);
    const ep = world.addPeer('c', pinger, 'srv');
    world.add('srv', new EchoServer());
    world.send('intruder', 'c', new Uint8Array(12));
    world.runUntil(() => false, { maxTimeMs: 1000 });
    expect(pinger.rtts).toEqual([0, 0, 0]);
    expect(ep.counters().foreignDatagrams).toBe(1);
  });

  it('is deterministic, and a route\'s randomness does not depend on which route was used first', () => {
    const trace = (seed: number, order: number[]): number[][] => {
      const world = new World({ seed, link: 'lossy' });
      world.add('srv', new EchoServer());
      const ps = [new Pinger(10, 200, order[0]), new Pinger(10, 200, order[1])];
      ps.forEach((p, i) => world.addPeer(`c${i}`, p, 'srv'));
      world.runUntil(() => false, { maxTimeMs: 5000 });
      return ps.map((p) => p.seqs);
    };
    const t = trace(5, [0, 5]);
    expect(t[0].length).toBeGreaterThan(100);
    expect(trace(5, [0, 5])).toEqual(t);
    expect(trace(6, [0, 5])).not.toEqual(t);
    // c1 starts first this time, so its routes are created first: same fates per route anyway.
    expect(trace(5, [5, 0]).map((s) => s.length)).toEqual(t.map((s) => s.length));
  });

  it('counts datagrams that arrive for nobody, and stops the timers of a removed endpoint', () => {
    const world = new World({ seed: 1, link: { latencyMs: 5 } });
    const pinger = new Pinger(10, 100);
    world.addPeer('c', pinger, 'srv');
    world.runFor(100);
    expect(world.stats.undeliverable).toBe(10); // pings at 0..90 arrived by 100; no server yet
    world.add('srv', new EchoServer());
    world.runFor(100);
    expect(pinger.rtts.length).toBeGreaterThan(5);
    world.remove('c');
    const fired = world.stats.steps;
    const r = world.runFor(1000);
    expect(r.steps).toBeLessThanOrEqual(2); // only what was in flight
    expect(world.stats.steps - fired).toBe(r.steps);
    expect(world.stats.peers.c).toBeUndefined();
    expect(() => world.remove('c')).toThrow(GamewireError);
    expect(() => world.endpoint('c')).toThrow(GamewireError);
  });

  it('rebind moves an endpoint to a new address (a NAT rebinding): it sends from there, and what was in flight to the old one is lost', () => {
    const world = new World({ seed: 1, link: { latencyMs: 5 } });
    const server = new EchoServer();
    world.add('srv', server);
    const pinger = new Pinger(10, 100);
    world.addPeer('c', pinger, 'srv');
    world.runFor(52); // pings at 0..50 sent (5 ms each way): the echoes of 0..40 are back, the ping of 50 is on its way
    expect(pinger.seqs).toEqual([0, 1, 2, 3, 4]);
    world.rebind('c', 'c2');
    world.runFor(100);
    expect(world.addresses).toEqual(['srv', 'c2']);
    expect(server.from.slice(0, 6)).toEqual(['c', 'c', 'c', 'c', 'c', 'c']);
    expect(server.from.slice(6).every((a) => a === 'c2')).toBe(true);
    expect(world.stats.undeliverable).toBe(1); // the echo of 50, sent to the old address
    expect(pinger.seqs.slice(0, 6)).toEqual([0, 1, 2, 3, 4, 6]);
    expect(() => world.rebind('c', 'c3')).toThrow(GamewireError);
    expect(() => world.rebind('c2', 'srv')).toThrow(GamewireError);
  });

  it('bounds the routes it creates: beyond maxRoutes datagrams are dropped as unroutable', () => {
    let n = 0;
    const sprayer: Endpoint = {
      handleDatagram() {}, handleTimeout() {}, pollTimeout: () => undefined, pollEvent: () => undefined,
      pollTransmit: (_now, out) => (n < 10 ? (out[0] = 1, { length: 1, to: `x${n++}` }) : undefined),
    };
    const world = new World({ seed: 1, maxRoutes: 4 });
    world.add('s', sprayer);
    world.runFor(10);
    expect(world.stats.routes.length).toBe(4);
    expect(world.stats.peers.s).toMatchObject({ datagramsSent: 10, unroutable: 6 });
    expect(world.stats.undeliverable).toBe(4);
    expect(() => world.send('s', 'x99', new Uint8Array(1))).toThrow(expect.objectContaining({ code: 'invalid-state' }));
    expect(() => world.route('s', 'x99')).toThrow(expect.objectContaining({ code: 'invalid-state' }));
    world.send('s', 'x0', new Uint8Array(1)); // an existing route is fine
  });

  it('rejects bad use', () => {
    const world = new World({ seed: 1 });
    world.add('a', new Sink());
    expect(() => world.add('a', new Sink())).toThrow(expect.objectContaining({ code: 'invalid-state' }));
    world.link('a', 'b');
    expect(() => world.route('a', 'b', { link: 'wifi' })).toThrow(expect.objectContaining({ code: 'invalid-state' }));
    expect(() => world.route('a', 'c', { via: 'nope' })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(() => world.route('a', 'c', { link: 'nope' })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(() => new World({ seed: 1, link: { loss: 2 } })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(() => new World({ seed: 1.5 })).toThrow(GamewireError);
    expect(() => world.at(-1, () => {})).toThrow(GamewireError);
    const bad: Endpoint = {
      handleDatagram() {}, handleTimeout() {}, pollTimeout: () => undefined, pollEvent: () => undefined,
      pollTransmit: () => ({ length: 1, to: 7 as unknown as string }),
    };
    world.add('bad', bad);
    expect(() => world.step()).toThrow(expect.objectContaining({ code: 'invalid-state' }));
  });

  it('a stuck endpoint is pushed back without holding up the others', () => {
    const stuck: Endpoint = {
      handleDatagram() {}, handleTimeout() {}, pollTransmit: () => undefined, pollTimeout: () => 0, pollEvent: () => undefined,
    };
    const world = new World({ seed: 1, link: { latencyMs: 5 } });
    world.add('stuck', stuck);
    world.add('srv', new EchoServer());
    const p = new Pinger(10, 10);
    world.addPeer('c', p, 'srv');
    world.runFor(200);
    expect(p.rtts.length).toBe(10);
    expect(world.stats.peers.stuck.stalls).toBe(201);
  });
});

describe('World: changing links mid-run', () => {
  it('a delay change mid-run loses nothing in flight and keeps FIFO order', () => {
    const world = new World({ seed: 3, link: { latencyMs: 50, jitterMs: 5, reorder: false } });
    const sink = new Sink();
    const tx = new Stream(8e6, 1000, 2000); // one datagram per ms for 2 s
    world.add('rx', sink);
    world.addPeer('tx', tx, 'rx');
    world.at(700, () => world.link('tx', 'rx').reconfigure(world.now, { latencyMs: 10 }));
    world.at(1400, () => world.link('tx', 'rx').reconfigure(world.now, { latencyMs: 90 }));
    world.runFor(3000);
    const got = sink.got.get('tx')!;
    expect(tx.sent).toBe(2000);
    expect(got.length).toBe(2000);
    for (let i = 1; i < got.length; i++) expect(got[i]).toBeGreaterThanOrEqual(got[i - 1]);
    // Datagram i was sent at i ms: each phase's one-way delay (+ 0–5 ms jitter) shows once FIFO lets it.
    expect(got[300] - 300).toBeGreaterThanOrEqual(50);
    expect(got[300] - 300).toBeLessThan(55);
    expect(got[900] - 900).toBeGreaterThanOrEqual(10);
    expect(got[900] - 900).toBeLessThan(15);
    expect(got[1700] - 1700).toBeGreaterThanOrEqual(90);
    expect(got[1700] - 1700).toBeLessThan(95);
    const c = world.stats.routes[0].link;
    expect(c.droppedLoss + c.droppedQueue + c.droppedOutage + c.droppedInFlight).toBe(0);
  });

  it('a rate change applies at once, to the backlog too; nothing in flight is dropped', () => {
    const world = new World({ seed: 4, link: { latencyMs: 20, rateBitsPerSec: 2e6, queueDatagrams: 1000 } });
    const sink = new Sink();
    const tx = new Stream(4e6, 1000); // twice the bottleneck until the change
    world.add('rx', sink);
    world.addPeer('tx', tx, 'rx');
    world.at(1000, () => world.link('tx', 'rx').reconfigure(world.now, { rateBitsPerSec: 8e6 }));
    world.runFor(999);
    const before = world.link('tx', 'rx').queueDelayMs;
    expect(before).toBeGreaterThan(1000); // ~257 datagrams of backlog at 2 Mbit/s
    world.runFor(1);
    const after = world.link('tx', 'rx').queueDelayMs;
    expect(after).toBeGreaterThan(before / 4 - 2); // the same backlog at 4× the rate
    expect(after).toBeLessThan(before / 4 + 2);
    world.runFor(2000);
    const got = sink.got.get('tx')!;
    const c = world.stats.routes[0].link;
    expect(c.droppedQueue).toBe(0);
    expect(got.length).toBe(c.sent - world.link('tx', 'rx').inFlight);
    // The backlog is gone by ~1.27 s; then throughput tracks the 4 Mbit/s sender (below the new 8 Mbit/s).
    const late = got.filter((t) => t >= 2000 && t < 3000).length;
    expect(late).toBeGreaterThanOrEqual(495);
    expect(late).toBeLessThanOrEqual(505);
    expect(world.link('tx', 'rx').queueDelayMs).toBeLessThan(2);
  });

  it('an outage set mid-run drops what is sent during it, delivers what was already in flight', () => {
    const world = new World({ seed: 5, link: { latencyMs: 30 } });
    const sink = new Sink();
    const tx = new Stream(8e6, 1000, 1000);
    world.add('rx', sink);
    world.addPeer('tx', tx, 'rx');
    world.at(400, () => world.link('tx', 'rx').reconfigure(world.now, { outage: [{ startMs: 400, endMs: 600 }] }));
    world.runFor(2000);
    const got = sink.got.get('tx')!;
    const c = world.stats.routes[0].link;
    expect(c.droppedOutage).toBe(200);
    expect(got.length).toBe(800);
    expect(got.filter((t) => t >= 400 && t < 430).length).toBe(30); // in flight when it began
  });
});

describe('World: shared bottleneck', () => {
  it('two routes via one bottleneck share its rate and queue; each keeps its own delay; other routes are unaffected', () => {
    const world = new World({
      seed: 6,
      bottlenecks: { core: { rateBitsPerSec: 10e6, queueDatagrams: 50 } },
      routes: [
        { from: 's1', to: 'rx', via: 'core', link: { latencyMs: 10 } },
        { from: 's2', to: 'rx', via: 'core', link: { latencyMs: 30 } },
      ],
    });
    const sink = new Sink();
    const s1 = new Stream(8e6);
    const s2 = new Stream(8e6);
    const s3 = new Stream(8e6);
    world.add('rx', sink);
    world.addPeer('s1', s1, 'rx');
    world.addPeer('s2', s2, 'rx');
    world.addPeer('s3', s3, 'rx');
    world.runFor(5000);
    const b = world.stats.bottlenecks.core;
    expect(b.droppedQueue).toBeGreaterThan(0);
    const n1 = sink.got.get('s1')!.length;
    const n2 = sink.got.get('s2')!.length;
    const wireMbit = ((n1 + n2) * 1028 * 8) / 5 / 1e6;
    expect(wireMbit).toBeGreaterThan(9.9); // the bottleneck is full…
    expect(wireMbit).toBeLessThanOrEqual(10); // …and never exceeded
    expect(Math.min(n1, n2)).toBeGreaterThan(0.1 * (n1 + n2)); // drop-tail: shares depend on phase, not fairness
    expect(sink.got.get('s2')![0] - sink.got.get('s1')![0]).toBeGreaterThanOrEqual(19); // 30 vs 10 ms after the bottleneck
    expect(sink.got.get('s3')!.length).toBe(s3.sent); // not via the bottleneck: a perfect link
    const bytes1 = sink.bytes.get('s1')!;
    const bytes2 = sink.bytes.get('s2')!;
    // The bottleneck can be reconfigured like any link: halve it, and the pair gets half.
    world.bottleneck('core').reconfigure(world.now, { rateBitsPerSec: 5e6 });
    const before = bytes1 + bytes2;
    world.runFor(5000);
    const after = sink.bytes.get('s1')! + sink.bytes.get('s2')! - before;
    expect((after * 8) / 5 / 1e6).toBeGreaterThan(4.5);
    expect((after * 8) / 5 / 1e6).toBeLessThan(5);
  });
});

describe('World: scheduled actions', () => {
  it('at() runs before deliveries and timers due at the same instant, in the order given', () => {
    const log: string[] = [];
    const world = new World({ seed: 1, link: { latencyMs: 10 } });
    const p = new Pinger(10, 3);
    world.add('srv', new EchoServer());
    world.addPeer('c', p, 'srv');
    world.onDeliver = (from, to, _b, now) => { log.push(`${from}>${to}@${now}`); };
    world.at(20, () => log.push('second@20'));
    world.at(10, () => log.push('first@10'));
    world.at(20, () => log.push('third@20'));
    world.runFor(100);
    // At 20 the ping sent at 10 and the echo of the first arrive together: routes in creation order.
    expect(log.slice(0, 6)).toEqual(['first@10', 'c>srv@10', 'second@20', 'third@20', 'c>srv@20', 'srv>c@20']);
  });
});

describe('World: one deadline heap', () => {
  /** Fires once at `at`, logging its name. */
  class Alarm implements Endpoint {
    constructor(private readonly name: string, private at: number | undefined, private readonly log: string[]) {}
    handleDatagram(): void {}
    handleTimeout(now: number): void {
      this.log.push(`${this.name}@${now}`);
      this.at = undefined;
    }
    pollTransmit(): Transmit | undefined {
      return undefined;
    }
    pollTimeout(): number | undefined {
      return this.at;
    }
    pollEvent(): undefined {
      return undefined;
    }
  }

  it('timers due together fire in the order endpoints were added, also after a removal frees an id', () => {
    const log: string[] = [];
    const world = new World({ seed: 1 });
    world.add('a', new Alarm('a', 5, log));
    world.add('b', new Alarm('b', 5, log));
    world.add('c', new Alarm('c', 5, log));
    world.remove('a');
    world.at(5, () => log.push('action@5')); // takes the id 'a' had
    world.add('d', new Alarm('d', 5, log)); // added last: fires last, whatever id it gets
    world.add('a', new Alarm('a2', 5, log));
    world.runFor(10);
    expect(log).toEqual(['action@5', 'b@5', 'c@5', 'd@5', 'a2@5']);
  });

  it('deliveries moved earlier by a rate change are taken at their new times', () => {
    const world = new World({ seed: 1, link: { rateBitsPerSec: 8000 } });
    const sink = new Sink();
    world.add('srv', sink);
    for (let i = 0; i < 3; i++) world.send('x', 'srv', new Uint8Array(100));
    world.runFor(10); // at 1 byte/ms the first would arrive at 128 ms
    world.link('x', 'srv').reconfigure(world.now, { rateBitsPerSec: 80_000 });
    world.runFor(400);
    const got = sink.got.get('x')!;
    expect(got).toHaveLength(3);
    expect(got[0]).toBeCloseTo(21.8, 9);
    expect(got[2]).toBeCloseTo(47.4, 9);
  });
});

describe('World: property', () => {
  it('for any mix of routes, bottlenecks and changes: time never goes backwards and every datagram is accounted for', () => {
    const linkArb = fc.record({
      latencyMs: fc.integer({ min: 0, max: 40 }),
      jitterMs: fc.integer({ min: 0, max: 20 }),
      reorder: fc.boolean(),
      loss: fc.double({ min: 0, max: 0.3, noNaN: true }),
      duplicate: fc.double({ min: 0, max: 0.1, noNaN: true }),
      rateBitsPerSec: fc.option(fc.integer({ min: 100_000, max: 10_000_000 }), { nil: undefined }),
    }, { requiredKeys: [] });
    const arb = fc.record({
      seed: fc.integer(),
      clients: fc.integer({ min: 1, max: 5 }),
      link: linkArb,
      via: fc.array(fc.boolean(), { minLength: 5, maxLength: 5 }),
      bottleneck: linkArb,
      changes: fc.array(fc.tuple(fc.integer({ min: 0, max: 1500 }), fc.integer({ min: 0, max: 4 }), linkArb), { maxLength: 4 }),
      integerTime: fc.boolean(),
    });
    fc.assert(fc.property(arb, (o) => {
      const world = new World({ seed: o.seed, link: o.link, bottlenecks: { core: o.bottleneck }, integerTime: o.integerTime });
      const names = Array.from({ length: o.clients }, (_, i) => `c${i}`);
      names.forEach((n, i) => { if (o.via[i]) world.route(n, 'srv', { via: 'core' }); });
      world.add('srv', new EchoServer());
      const ps = names.map((n, i) => { const p = new Pinger(7 + i, 100); world.addPeer(n, p, 'srv'); return p; });
      for (const [at, who, cfg] of o.changes) world.at(at, () => world.link(`c${who % o.clients}`, 'srv').reconfigure(world.now, cfg));
      let last = world.now;
      let monotonic = true;
      world.onDeliver = (_f, _t, _b, now) => { if (now < last) monotonic = false; last = now; };
      const r = world.runUntil(() => false, { maxTimeMs: 60_000 });
      if (r.reason !== 'idle' || !monotonic) return false;
      const s = world.stats;
      let sent = 0;
      let received = 0;
      for (const p of Object.values(s.peers)) { sent += p.datagramsSent; received += p.datagramsReceived; }
      let linkIn = 0;
      let linkOut = 0;
      let created = 0;
      let dropped = 0;
      const drops = (c: LinkCounters): number => c.droppedLoss + c.droppedQueue + c.droppedMtu + c.droppedOutage + c.droppedInFlight;
      for (const x of s.routes) {
        if (x.via === undefined) linkIn += x.link.sent;
        linkOut += x.link.delivered;
        created += x.link.duplicated;
        dropped += drops(x.link);
      }
      const b = s.bottlenecks.core;
      linkIn += b.sent;
      created += b.duplicated;
      dropped += drops(b);
      // Everything sent entered a route or the bottleneck; everything the bottleneck passed on entered a route.
      return sent === linkIn && s.undeliverable === 0 && received === linkOut && ps.every((p) => p.rtts.every((x) => x >= 0)) &&
        sent + created === received + dropped && Object.values(s.peers).every((p) => p.stalls === 0 && p.unroutable === 0);
    }), { numRuns: 80 });
  });
});
