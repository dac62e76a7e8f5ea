import { describe, expect, it } from 'vitest';
import { ChunkReceiver, ChunkSender } from '../../src/chunk/index.js';
import { AdaptiveRate } from '../../src/congestion/adaptive.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import type { LinkConfig, LinkCounters } from '../../src/sim/index.js';
import { type PeerStats, World } from '../../src/sim/world.js';
import { sameBytes, randomBlocks } from '../harness/index.js';

// The chunk sender with its DEFAULT rate controller (AdaptiveRate: no rateBytesPerSec given) over
// paths with a real bottleneck. Bounds were set from measurements over 10–40 seeds per scenario, with
// margin, and checked to fail with deliberately broken controllers (tiny rate, acks ignored, no delay
// response, loss-driven backoff, no loss compensation, slow downward tracking, no start-up, a rate that
// stays low after silence, and the controller before the start-up / baseline fixes).

const MiB = 1024 * 1024;
/** Slice header + UDP/IPv4 bytes that every slice adds on the wire. */
const PER_SLICE_WIRE = 27 + 28;
const SLICE = 1173;

/** One direction of a path: `mbit` Mbit/s bottleneck with a 100-datagram drop-tail queue, `oneWayMs` delay. */
function bottleneck(mbit: number, oneWayMs: number, extra: Partial<LinkConfig> = {}): Partial<LinkConfig> {
  return { rateBitsPerSec: mbit * 1e6, queueDatagrams: 100, latencyMs: oneWayMs, ...extra };
}

const P10 = bottleneck(10, 20);
const P50 = bottleneck(50, 10);
const P100 = bottleneck(100, 10);
/** 10 Mbit/s with the same 10 ms one-way delay as P50 (a rate change that does not change the RTT). */
const P10_SHORT = bottleneck(10, 10);

/** A stretch of the run; at `untilMs` both links are reconfigured to the next phase's (datagrams in flight keep going). */
interface Phase {
  aToB: Partial<LinkConfig>;
  bToA?: Partial<LinkConfig>;
  untilMs?: number;
}

interface Scenario {
  seed: number;
  phases: Phase[];
  blocks: Uint8Array[];
  maxTimeMs: number;
  mtu?: number;
}

/** What happened during one phase: counter differences over it. */
interface PhaseStats {
  aToB: LinkCounters;
  a: PeerStats;
  b: PeerStats;
}

function minus<T extends object>(x: T, y: T): T {
  const r = { ...x } as Record<string, number>;
  for (const [k, v] of Object.entries(y)) r[k] -= v as number;
  return r as T;
}

interface Outcome {
  ok: boolean;
  now: number;
  received: Uint8Array[];
  deliveredIds: number[];
  sender: ChunkSender;
  receiver: ChunkReceiver;
  /** Per phase. */
  stats: PhaseStats[];
  peakRx: number;
  peakTx: number;
  /** (time ms, slices accepted by the receiver) whenever that count moved, at most every 5 ms. */
  trace: number[];
}

/** Run the default sender (only a session id set) against a default receiver until every block is delivered and reported. */
function run(sc: Scenario): Outcome {
  const sender = new ChunkSender({ sessionId: 0xada00000 + sc.seed });
  const receiver = new ChunkReceiver();
  const received: Uint8Array[] = [];
  const deliveredIds: number[] = [];
  const trace: number[] = [0, 0];
  let finished = 0;
  let next = 0;
  let peakRx = 0;
  let peakTx = 0;
  const first = sc.phases[0];
  const world = new World({
    seed: sc.seed, mtu: sc.mtu ?? 1500, reuseReceiveBuffer: true,
    routes: [{ from: 'a', to: 'b', link: first.aToB }, { from: 'b', to: 'a', link: first.bToA ?? first.aToB }],
  });
  world.addPeer('a', sender, 'b');
  world.addPeer('b', receiver, 'a');
  const snap = (): PhaseStats => ({ aToB: world.link('a', 'b').counters(), a: world.peerStats('a'), b: world.peerStats('b') });
  const snaps = [snap()];
  for (let i = 1; i < sc.phases.length; i++) {
    const at = sc.phases[i - 1].untilMs!;
    const ph = sc.phases[i];
    world.at(at, () => {
      snaps.push(snap());
      world.link('a', 'b').reconfigure(at, ph.aToB);
      world.link('b', 'a').reconfigure(at, ph.bToA ?? ph.aToB);
    });
  }
  const pred = (): boolean => {
    const now = world.now;
    while (next < sc.blocks.length && sender.progress(now).queuedBytes + sc.blocks[next].length <= sender.config.maxQueuedBytes) {
      sender.sendBlock(sc.blocks[next++]);
    }
    peakRx = Math.max(peakRx, receiver.memoryBytes());
    peakTx = Math.max(peakTx, sender.memoryBytes());
    for (let e = receiver.pollEvent(); e !== undefined; e = receiver.pollEvent()) if (e.type === 'block') received.push(e.data.slice());
    for (let e = sender.pollEvent(); e !== undefined; e = sender.pollEvent()) {
      if (e.type === 'stalled') continue;
      finished++;
      if (e.type === 'delivered') deliveredIds.push(e.id);
    }
    const acc = receiver.counters().slicesAccepted;
    if (acc !== trace[trace.length - 1] && now - trace[trace.length - 2] >= 5) trace.push(now, acc);
    return next === sc.blocks.length && finished === sc.blocks.length;
  };
  const ok = world.runUntil(pred, { maxTimeMs: sc.maxTimeMs }).ok;
  snaps.push(snap());
  const stats = snaps.slice(1).map((x, i) => ({ aToB: minus(x.aToB, snaps[i].aToB), a: minus(x.a, snaps[i].a), b: minus(x.b, snaps[i].b) }));
  trace.push(world.now, receiver.counters().slicesAccepted);
  return { ok, now: world.now, received, deliveredIds, sender, receiver, stats, peakRx, peakTx, trace };
}

/** Wire bytes of the blocks (datagram payload + UDP/IPv4 overhead, one transmission of every slice). */
function wireBytes(sent: Uint8Array[]): number {
  let n = 0;
  for (const b of sent) n += b.length + Math.max(1, Math.ceil(b.length / SLICE)) * PER_SLICE_WIRE;
  return n;
}

/**
 * The path's physical floor (ms): every slice once through the bottleneck, plus one-way delay. The
 * simulator drops random loss before the bottleneck, so lost copies cost no bottleneck time and loss
 * does not lengthen this floor; the bounds' factors absorb the recovery tail.
 */
function floorMs(sent: Uint8Array[], path: Partial<LinkConfig>): number {
  return (wireBytes(sent) * 8000) / path.rateBitsPerSec! + path.latencyMs!;
}

/** Share of the sender's datagrams that the bottleneck queue dropped (all phases). */
function queueDropShare(o: Outcome): number {
  let drops = 0;
  let sent = 0;
  for (const s of o.stats) {
    drops += s.aToB.droppedQueue;
    sent += s.a.datagramsSent;
  }
  return drops / sent;
}

/** Slices the receiver had accepted by `t` (ms). */
function acceptedAt(o: Outcome, t: number): number {
  let n = 0;
  for (let i = 0; i < o.trace.length && o.trace[i] <= t; i += 2) n = o.trace[i + 1];
  return n;
}

/** Floor (ms) of what the receiver still lacked at `t`: its wire bytes through the bottleneck of `path`. */
function restFloorMs(o: Outcome, sent: Uint8Array[], t: number, path: Partial<LinkConfig>): number {
  const left = sent.reduce((n, b) => n + b.length, 0) - acceptedAt(o, t) * SLICE;
  return ((left + Math.ceil(left / SLICE) * PER_SLICE_WIRE) * 8000) / path.rateBitsPerSec!;
}

/** First time after `t` at which the receiver accepted a new slice. */
function firstProgressAfter(o: Outcome, t: number): number {
  const base = acceptedAt(o, t);
  for (let i = 0; i < o.trace.length; i += 2) if (o.trace[i] > t && o.trace[i + 1] > base) return o.trace[i];
  return Infinity;
}

/** Every block intact and in order at B, reported delivered in order at A, memory within limits and freed, no stalls. */
function expectSound(o: Outcome, sent: Uint8Array[]): void {
  expect(o.ok).toBe(true);
  expect(o.received.length).toBe(sent.length);
  for (let i = 0; i < sent.length; i++) expect(sameBytes(o.received[i], sent[i]), `block ${i}`).toBe(true);
  expect(o.deliveredIds).toEqual(sent.map((_, i) => i + 1));
  expect(o.peakRx).toBeLessThanOrEqual(o.receiver.config.maxMemoryBytes);
  expect(o.peakTx).toBeLessThanOrEqual(o.sender.memoryLimitBytes());
  expect(o.receiver.memoryBytes()).toBe(0);
  expect(o.sender.memoryBytes()).toBe(0);
  for (const s of o.stats) {
    expect(s.a.stalls + s.b.stalls).toBe(0);
    expect(s.a.drainCapHits + s.b.drainCapHits).toBe(0);
  }
}

/** Sound, within `factor` × the floor, and at most `maxDropShare` of datagrams dropped by the bottleneck queue. */
function expectEfficient(o: Outcome, sent: Uint8Array[], path: Partial<LinkConfig>, factor: number, maxDropShare = 0.02): void {
  expectSound(o, sent);
  const floor = floorMs(sent, path);
  expect(o.now, `took ${o.now.toFixed(0)} ms, floor ${floor.toFixed(0)} ms`).toBeLessThanOrEqual(factor * floor);
  expect(queueDropShare(o)).toBeLessThanOrEqual(maxDropShare);
}

describe('chunk + default AdaptiveRate: random loss both ways, 100-datagram bottleneck', () => {
  it('the default sender really runs AdaptiveRate', () => {
    expect(new ChunkSender().config.rateController).toBeInstanceOf(AdaptiveRate);
  });

  const cases: [string, Partial<LinkConfig>, number, number, number, number][] = [
    // name, path, loss, seed, block MiB, factor of the floor
    ['10 Mbit/s, 40 ms RTT', P10, 0, 101, 4, 1.06],
    ['10 Mbit/s, 40 ms RTT', P10, 0.01, 102, 4, 1.08],
    ['10 Mbit/s, 40 ms RTT', P10, 0.1, 103, 4, 1.15],
    ['10 Mbit/s, 40 ms RTT', P10, 0.3, 104, 4, 1.3],
    ['50 Mbit/s, 20 ms RTT', P50, 0, 105, 8, 1.06],
    ['50 Mbit/s, 20 ms RTT', P50, 0.01, 106, 8, 1.1],
    ['50 Mbit/s, 20 ms RTT', P50, 0.1, 107, 8, 1.2],
    ['50 Mbit/s, 20 ms RTT', P50, 0.3, 108, 8, 1.3],
  ];
  for (const [name, path, loss, seed, mib, factor] of cases) {
    it(`${name}, ${loss * 100}% loss (seed ${seed}): fills the bottleneck (≤ ${factor} × floor), ≤ 2% queue drops`, () => {
      const sent = randomBlocks(seed, [mib * MiB]);
      const o = run({ seed, phases: [{ aToB: { ...path, loss } }], blocks: sent, maxTimeMs: 30_000 });
      expectEfficient(o, sent, path, factor);
      // Resends follow real losses: few duplicates reach the receiver.
      expect(o.receiver.counters().duplicateSlices).toBeLessThanOrEqual(0.01 * o.sender.counters().slicesSent + 5);
      if (loss === 0) expect(o.sender.counters().slicesResent).toBe(0);
    });
  }
});

describe('chunk + default AdaptiveRate: impairments', () => {
  it('ack loss only (seeds 111–115): 50% of acks lost on 10 Mbit/s, no slice lost, rate not mistaken for congestion', () => {
    // The end of a block waits on whichever acks survive, so one seed can end late by luck: over seeds
    // 111–120 the median is 1.05 × the floor, the worst 1.16 × (seed 111), and 1.28 × (seed 118) with
    // the controller before the path work. Hence the median of five, and a looser bound for each.
    const times: number[] = [];
    for (const seed of [111, 112, 113, 114, 115]) {
      const sent = randomBlocks(seed, [4 * MiB]);
      const o = run({ seed, phases: [{ aToB: P10, bToA: { ...P10, loss: 0.5 } }], blocks: sent, maxTimeMs: 30_000 });
      expectEfficient(o, sent, P10, 1.2);
      expect(o.stats[0].aToB.droppedLoss).toBe(0);
      expect(o.sender.counters().slicesResent).toBeLessThan(0.03 * o.sender.counters().slicesSent);
      times.push(o.now / floorMs(sent, P10));
    }
    times.sort((x, y) => x - y);
    expect(times[2], 'median of the ratio to the floor').toBeLessThanOrEqual(1.1);
  });

  it('ack loss only (seed 112): 50% of acks lost on 50 Mbit/s', () => {
    const sent = randomBlocks(112, [8 * MiB]);
    const o = run({ seed: 112, phases: [{ aToB: P50, bToA: { ...P50, loss: 0.5 } }], blocks: sent, maxTimeMs: 30_000 });
    expectEfficient(o, sent, P50, 1.2);
  });

  it('Gilbert-Elliott bursts both ways (seed 113, ~9% loss in bursts of ~7): ≤ 1.2 × floor at 50 Mbit/s', () => {
    const ge = { pGoodToBad: 0.02, pBadToGood: 0.15, lossGood: 0.005, lossBad: 0.7 };
    const sent = randomBlocks(113, [8 * MiB]);
    const o = run({ seed: 113, phases: [{ aToB: { ...P50, gilbertElliott: ge } }], blocks: sent, maxTimeMs: 30_000 });
    expectEfficient(o, sent, P50, 1.2);
    expect(o.stats[0].aToB.droppedLoss).toBeGreaterThan(400);
  });

  it('Gilbert-Elliott bursts both ways (seed 114) on 10 Mbit/s', () => {
    const ge = { pGoodToBad: 0.02, pBadToGood: 0.15, lossGood: 0.005, lossBad: 0.7 };
    const sent = randomBlocks(114, [4 * MiB]);
    const o = run({ seed: 114, phases: [{ aToB: { ...P10, gilbertElliott: ge } }], blocks: sent, maxTimeMs: 30_000 });
    expectEfficient(o, sent, P10, 1.2);
  });

  it('duplication (seed 115): 20% duplicates both ways are neither counted twice nor slow it down', () => {
    const sent = randomBlocks(115, [8 * MiB]);
    const o = run({ seed: 115, phases: [{ aToB: { ...P50, duplicate: 0.2 } }], blocks: sent, maxTimeMs: 30_000 });
    expectEfficient(o, sent, P50, 1.06);
    const rc = o.receiver.counters();
    expect(rc.duplicateSlices).toBeGreaterThan(1000);
    expect(rc.slicesAccepted).toBe(Math.ceil((8 * MiB) / SLICE));
  });

  it('reordering jitter (seeds 1–10): 0–10 ms per datagram both ways on 10 Mbit/s, ≤ 2% queue drops on 9 of 10', () => {
    // Regression (src/congestion/adaptive.ts): before an earlier fix one seed dropped 27.7% at the queue: a
    // burst of reordered acks read as a 100+ Mbit/s start-up sample, and the overflow was then learnt as
    // random loss. On this world seed 5 still draws a start-up sample 3.6 × too high (a known limit,
    // docs/congestion.md): 5.3% drops, 7.0% with the controller before the path work.
    const path = { ...P10, jitterMs: 10, reorder: true };
    let over = 0;
    for (let seed = 1; seed <= 10; seed++) {
      const sent = randomBlocks(seed, [4 * MiB]);
      const o = run({ seed, phases: [{ aToB: path }], blocks: sent, maxTimeMs: 30_000 });
      expectEfficient(o, sent, P10, 1.1, 0.06);
      if (queueDropShare(o) > 0.02) over++;
    }
    expect(over).toBeLessThanOrEqual(1);
  });

  it('FIFO jitter (seed 11): 0–10 ms head-of-line jitter both ways on 10 Mbit/s, ≥ 80% of the link', () => {
    // Regression: before the fix this seed dropped 54% at the queue (bunched acks faked a start-up sample).
    const path = { ...P10, jitterMs: 10, reorder: false };
    const sent = randomBlocks(11, [4 * MiB]);
    const o = run({ seed: 11, phases: [{ aToB: path }], blocks: sent, maxTimeMs: 30_000 });
    expectEfficient(o, sent, P10, 1.25);
  });

  it('MTU 1200 (seed 117): a 1200-byte path and transmit buffer, every default slice fits, 50 Mbit/s filled', () => {
    const path = { ...P50, mtu: 1200 };
    const sent = randomBlocks(117, [8 * MiB]);
    const o = run({ seed: 117, phases: [{ aToB: path }], blocks: sent, maxTimeMs: 30_000, mtu: 1200 });
    expectEfficient(o, sent, P50, 1.06);
    expect(o.stats[0].aToB.droppedMtu).toBe(0);
    expect(o.stats[0].a.bytesSent / o.stats[0].a.datagramsSent).toBeLessThanOrEqual(1200);
  });
});

describe('chunk + default AdaptiveRate: outage and path changes', () => {
  it('outage (seed 121): 10 Mbit/s goes silent both ways for 10 s mid-block, then the rate recovers in full', () => {
    const outage = [{ startMs: 1000, endMs: 11_000 }];
    const sent = randomBlocks(121, [6 * MiB]);
    const o = run({ seed: 121, phases: [{ aToB: { ...P10, outage } }], blocks: sent, maxTimeMs: 40_000 });
    expectSound(o, sent);
    expect(queueDropShare(o)).toBeLessThanOrEqual(0.02);
    const resumed = firstProgressAfter(o, 11_000);
    // The sender probes with a backed-off timer (≤ 16 × the resend delay) while the path is silent.
    expect(resumed - 11_000).toBeLessThan(1500);
    // Then the remaining bytes go at (nearly) the bottleneck rate: no collapsed rate after the outage.
    expect(o.now - resumed).toBeLessThanOrEqual(1.15 * restFloorMs(o, sent, 11_000, P10) + 100);
    const t0 = resumed + 500;
    const goodput = ((acceptedAt(o, o.now) - acceptedAt(o, t0)) * SLICE * 8000) / (o.now - t0);
    expect(goodput).toBeGreaterThan(0.85 * P10.rateBitsPerSec!);
  });

  // The rate changes on the links themselves (Link.reconfigure): datagrams in flight at the switch keep
  // going. Same one-way delay on both paths.
  it('rate change to a 5× slower bottleneck mid-block (seed 122): 50 → 10 Mbit/s, the rate follows it down', () => {
    const sent = randomBlocks(122, [8 * MiB]);
    const o = run({ seed: 122, phases: [{ aToB: P50, untilMs: 800 }, { aToB: P10_SHORT }], blocks: sent, maxTimeMs: 30_000 });
    expectSound(o, sent);
    expect(o.stats.length).toBe(2);
    const [, slow] = o.stats;
    // Overshoot into the new 100-datagram queue until the controller has measured the new rate.
    expect(slow.aToB.droppedQueue / slow.a.datagramsSent).toBeLessThanOrEqual(0.02);
    expect(o.now - 800).toBeLessThanOrEqual(1.15 * restFloorMs(o, sent, 800, P10_SHORT) + 100);
  });

  it('rate change to a 5× faster bottleneck mid-block (seed 123): 10 → 50 Mbit/s, the rate finds the new capacity', () => {
    const sent = randomBlocks(123, [12 * MiB]);
    const o = run({ seed: 123, phases: [{ aToB: P10_SHORT, untilMs: 2000 }, { aToB: P50 }], blocks: sent, maxTimeMs: 30_000 });
    expectSound(o, sent);
    expect(queueDropShare(o)).toBeLessThanOrEqual(0.02);
    expect(o.now - 2000).toBeLessThanOrEqual(1.3 * restFloorMs(o, sent, 2000, P50) + 100);
  });
});

describe('chunk + default AdaptiveRate: sizes', () => {
  for (const [path, name, seed] of [[P10, '10 Mbit/s', 131], [P50, '50 Mbit/s', 132]] as const) {
    it(`200 small blocks in a row (seed ${seed}, 0–30 KB each, ${name}): paced by the pipeline, not by a collapsed rate`, () => {
      const rng = new NonCryptoRng(seed);
      const sent = randomBlocks(seed, Array.from({ length: 200 }, () => rng.nextInt(30_001)));
      const o = run({ seed, phases: [{ aToB: path }], blocks: sent, maxTimeMs: 30_000 });
      expectSound(o, sent);
      expect(queueDropShare(o)).toBeLessThanOrEqual(0.02);
      // At most two blocks are in flight and a block retires one RTT after its last slice, so a
      // stream of small blocks takes about (serialisation + blocks × RTT) / 2.
      const rtt = 2 * path.latencyMs!;
      const pipelineFloor = (floorMs(sent, path) + sent.length * rtt) / 2;
      expect(o.now, `took ${o.now.toFixed(0)} ms, pipeline floor ${pipelineFloor.toFixed(0)} ms`).toBeLessThanOrEqual(1.15 * pipelineFloor);
    });
  }

  it('16 MiB on 100 Mbit/s, 20 ms RTT (seed 141): ≤ 1.06 × floor, no queue drops', () => {
    const sent = randomBlocks(141, [16 * MiB]);
    const o = run({ seed: 141, phases: [{ aToB: P100 }], blocks: sent, maxTimeMs: 30_000 });
    expectEfficient(o, sent, P100, 1.06, 0);
    expect(o.peakRx).toBe(16 * MiB + Math.ceil(Math.ceil((16 * MiB) / SLICE) / 8));
  });

  it('is deterministic: same (scenario, seed), same outcome', () => {
    const make = (): Outcome => run({ seed: 151, phases: [{ aToB: { ...P10, loss: 0.05, jitterMs: 3 } }], blocks: randomBlocks(151, [MiB]), maxTimeMs: 30_000 });
    const a = make();
    const b = make();
    expect(a.now).toBe(b.now);
    expect(a.sender.counters()).toEqual(b.sender.counters());
    expect(a.receiver.counters()).toEqual(b.receiver.counters());
  });
});
