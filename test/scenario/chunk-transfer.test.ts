import { describe, expect, it } from 'vitest';
import {
  ChunkReceiver, type ChunkReceiverOptions, type ChunkReceiverEvent, ChunkSender, type ChunkSenderOptions,
  type ChunkSenderEvent,
} from '../../src/chunk/index.js';
import type { LinkConfig } from '../../src/sim/index.js';
import { PairWorld, type PairWorldStats, sameBytes, randomBlocks } from '../harness/index.js';

/** One chunk transfer scenario: blocks from A (sender) to B (receiver) over seeded links. */
interface Scenario {
  seed: number;
  aToB: Partial<LinkConfig>;
  bToA?: Partial<LinkConfig>;
  sender?: ChunkSenderOptions;
  receiver?: ChunkReceiverOptions;
  blocks: Uint8Array[];
  maxTimeMs: number;
  /** Size of the datagram buffer the world hands to pollTransmit (its MTU). Default 1500. */
  mtu?: number;
  /** Called before each step with the virtual time (commands, e.g. cancel). */
  onStep?: (now: number, s: ChunkSender, r: ChunkReceiver) => void;
}

interface Outcome {
  ok: boolean;
  now: number;
  received: Uint8Array[];
  rxEvents: ChunkReceiverEvent[];
  txEvents: ChunkSenderEvent[];
  sender: ChunkSender;
  receiver: ChunkReceiver;
  stats: PairWorldStats;
  peakRxMemory: number;
  peakTxMemory: number;
}

const LINK: Partial<LinkConfig> = { latencyMs: 25, rateBitsPerSec: 40e6, queueBytes: 512 * 1024 };

/** Run until every block is delivered to B and reported delivered at A (or the time limit). */
function run(sc: Scenario): Outcome {
  const sender = new ChunkSender({ sessionId: 0x5eed0000 + sc.seed, rateBytesPerSec: 1_000_000, ...sc.sender });
  const receiver = new ChunkReceiver({ maxBlockBytes: 8 * 1024 * 1024, ...sc.receiver });
  const world = new PairWorld({
    seed: sc.seed, aToB: sc.aToB, bToA: sc.bToA ?? sc.aToB, a: sender, b: receiver, mtu: sc.mtu ?? 1500,
    reuseReceiveBuffer: true,
  });
  const received: Uint8Array[] = [];
  const rxEvents: ChunkReceiverEvent[] = [];
  const txEvents: ChunkSenderEvent[] = [];
  let next = 0;
  let peakRx = 0;
  let peakTx = 0;
  const rxLimit = receiver.config.maxMemoryBytes;
  const txLimit = sender.memoryLimitBytes();
  const pred = (): boolean => {
    while (next < sc.blocks.length && sender.progress(world.now).queuedBlocks < sender.config.maxQueuedBlocks &&
      sender.progress(world.now).queuedBytes + sc.blocks[next].length <= sender.config.maxQueuedBytes) {
      sender.sendBlock(sc.blocks[next++]);
    }
    sc.onStep?.(world.now, sender, receiver);
    peakRx = Math.max(peakRx, receiver.memoryBytes());
    peakTx = Math.max(peakTx, sender.memoryBytes());
    if (peakRx > rxLimit || peakTx > txLimit) throw new Error(`memory over limit: rx ${peakRx}/${rxLimit} tx ${peakTx}/${txLimit}`);
    for (let e = receiver.pollEvent(); e !== undefined; e = receiver.pollEvent()) {
      rxEvents.push(e);
      if (e.type === 'block') received.push(e.data.slice());
    }
    for (let e = sender.pollEvent(); e !== undefined; e = sender.pollEvent()) txEvents.push(e);
    const finished = txEvents.filter((e) => e.type !== 'stalled').length;
    return next === sc.blocks.length && finished === sc.blocks.length;
  };
  const r = world.runUntil(pred, { maxTimeMs: sc.maxTimeMs });
  return {
    ok: r.ok, now: r.now, received, rxEvents, txEvents, sender, receiver, stats: world.stats,
    peakRxMemory: peakRx, peakTxMemory: peakTx,
  };
}

/** Every block arrived intact and in order, the sender saw every delivery, nothing leaked. */
function expectDelivered(o: Outcome, sent: Uint8Array[]): void {
  expect(o.ok).toBe(true);
  expect(o.received.length).toBe(sent.length);
  for (let i = 0; i < sent.length; i++) expect(sameBytes(o.received[i], sent[i]), `block ${i}`).toBe(true);
  const delivered = o.txEvents.filter((e) => e.type === 'delivered');
  expect(delivered.map((e) => e.id)).toEqual(sent.map((_, i) => i + 1));
  expect(o.peakRxMemory).toBeLessThanOrEqual(o.receiver.config.maxMemoryBytes);
  expect(o.peakTxMemory).toBeLessThanOrEqual(o.sender.memoryLimitBytes());
  expect(o.receiver.memoryBytes()).toBe(0);
  expect(o.sender.memoryBytes()).toBe(0);
  expect(o.stats.a.stalls + o.stats.b.stalls).toBe(0);
}

const MiB = 1024 * 1024;

describe('chunk scenarios: random loss (both directions)', () => {
  const cases: [string, number, number, number][] = [
    // name, loss, seed, time limit (ms)
    ['chunk-0pct-loss', 0, 1, 10_000],
    ['chunk-1pct-loss', 0.01, 2, 10_000],
    ['chunk-10pct-loss', 0.1, 3, 15_000],
    ['chunk-30pct-loss', 0.3, 4, 30_000],
    ['chunk-50pct-loss', 0.5, 5, 60_000],
  ];
  for (const [name, loss, seed, limit] of cases) {
    it(`${name} (seed ${seed}): 1 MiB + 3 small blocks arrive intact and in order`, () => {
      const sent = randomBlocks(seed, [MiB, 1, 5000, 0]);
      const o = run({ seed, aToB: { ...LINK, loss }, blocks: sent, maxTimeMs: limit });
      expectDelivered(o, sent);
      const c = o.sender.counters();
      // The resend delay tracks the RTT: at most a few spurious resends (duplicates at B)
      // relative to what the link lost.
      const lostSlices = o.stats.aToB.droppedLoss;
      expect(o.receiver.counters().duplicateSlices).toBeLessThanOrEqual(Math.max(10, 0.25 * c.slicesSent));
      if (loss === 0) {
        expect(c.slicesResent).toBe(0);
        expect(lostSlices).toBe(0);
      }
    });
  }
});

describe('chunk scenarios: impairments', () => {
  it('chunk-ack-loss-only (seed 11): 60% of acks lost, no slice lost', () => {
    const sent = randomBlocks(11, [2 * MiB, 777]);
    const o = run({ seed: 11, aToB: LINK, bToA: { ...LINK, loss: 0.6 }, blocks: sent, maxTimeMs: 20_000 });
    expectDelivered(o, sent);
    expect(o.stats.aToB.droppedLoss).toBe(0);
    // Fuse acks + rotating windows + duplicate acking keep resends low despite most acks lost.
    expect(o.sender.counters().slicesResent).toBeLessThan(0.2 * o.sender.counters().slicesSent);
  });

  it('chunk-burst-loss (seed 12): Gilbert-Elliott bursts both ways', () => {
    const sent = randomBlocks(12, [MiB, 3000]);
    const ge = { pGoodToBad: 0.02, pBadToGood: 0.15, lossGood: 0.005, lossBad: 0.7 };
    const o = run({ seed: 12, aToB: { ...LINK, gilbertElliott: ge }, blocks: sent, maxTimeMs: 20_000 });
    expectDelivered(o, sent);
    expect(o.stats.aToB.droppedLoss).toBeGreaterThan(20);
  });

  it('chunk-duplication (seed 13): 40% duplicates both ways, never counted twice', () => {
    const sent = randomBlocks(13, [MiB, 10]);
    const o = run({ seed: 13, aToB: { ...LINK, duplicate: 0.4 }, blocks: sent, maxTimeMs: 10_000 });
    expectDelivered(o, sent);
    const rc = o.receiver.counters();
    expect(rc.duplicateSlices).toBeGreaterThan(100);
    expect(rc.slicesAccepted).toBe(Math.ceil(MiB / 1173) + 1);
  });

  it('chunk-reorder-and-jitter (seed 14): 0–60 ms jitter with reordering plus 5% loss', () => {
    const sent = randomBlocks(14, [MiB, 2 * 1173, 1]);
    const o = run({ seed: 14, aToB: { ...LINK, jitterMs: 60, reorder: true, loss: 0.05 }, blocks: sent, maxTimeMs: 20_000 });
    expectDelivered(o, sent);
  });

  it('chunk-fifo-jitter (seed 15): 0–80 ms FIFO jitter, the RTT filter avoids spurious resends', () => {
    const sent = randomBlocks(15, [MiB]);
    const o = run({ seed: 15, aToB: { ...LINK, jitterMs: 80, reorder: false }, blocks: sent, maxTimeMs: 20_000 });
    expectDelivered(o, sent);
    expect(o.receiver.counters().duplicateSlices).toBeLessThan(0.05 * o.sender.counters().slicesSent);
  });

  it('chunk-outage-10s (seed 16): the link goes silent for 10 s mid-block, then the block completes', () => {
    const sent = randomBlocks(16, [3 * MiB, 100]);
    const outage = [{ startMs: 1000, endMs: 11_000 }];
    const o = run({ seed: 16, aToB: { ...LINK, outage }, blocks: sent, maxTimeMs: 30_000 });
    expectDelivered(o, sent);
    expect(o.now).toBeGreaterThan(11_000);
    expect(o.txEvents.some((e) => e.type === 'stalled' && !e.suspectMtu)).toBe(true);
  });

  it('chunk-congested-preset (seed 17): 2 Mbit/s thin path with its own loss, sender paced under it', () => {
    const sent = randomBlocks(17, [256 * 1024, 256 * 1024]);
    const o = run({ seed: 17, aToB: 'congested' as never, sender: { rateBytesPerSec: 200_000 }, blocks: sent, maxTimeMs: 20_000 });
    expectDelivered(o, sent);
  });

  it('chunk-burst-start (seed 18): burst mode over a fast path finishes a 200 KiB block in about one RTT', () => {
    const sent = randomBlocks(18, [200 * 1024]);
    const o = run({ seed: 18, aToB: { latencyMs: 50 }, sender: { burst: true, rateBytesPerSec: 10_000 }, blocks: sent, maxTimeMs: 5000 });
    expectDelivered(o, sent);
    expect(o.now).toBeLessThan(110);
  });

  it('chunk-long-rtt (seed 20): a 300 ms RTT against the 100 ms initial guess costs probes, not a second copy', () => {
    const sent = randomBlocks(20, [256 * 1024]);
    const o = run({ seed: 20, aToB: { latencyMs: 150 }, blocks: sent, maxTimeMs: 5000 });
    expectDelivered(o, sent);
    expect(o.sender.counters().slicesResent).toBeLessThanOrEqual(3);
    expect(o.receiver.counters().duplicateSlices).toBeLessThanOrEqual(3);
  });

  it('is deterministic: same (scenario, seed), same counters', () => {
    const make = (): Outcome => run({ seed: 19, aToB: { ...LINK, loss: 0.2, jitterMs: 10 }, blocks: randomBlocks(19, [300_000]), maxTimeMs: 10_000 });
    const a = make();
    const b = make();
    expect(a.sender.counters()).toEqual(b.sender.counters());
    expect(a.receiver.counters()).toEqual(b.receiver.counters());
    expect(a.now).toBe(b.now);
  });
});

describe('chunk scenarios: MTU', () => {
  it('chunk-mtu-1200 (seed 21): every slice fits a 1200-byte datagram buffer and a 1200-byte path', () => {
    const sent = randomBlocks(21, [500_000]);
    let biggest = 0;
    const o = run({ seed: 21, aToB: { ...LINK, mtu: 1200 }, mtu: 1200, blocks: sent, maxTimeMs: 10_000 });
    biggest = o.stats.a.bytesSent / o.stats.a.datagramsSent;
    expectDelivered(o, sent);
    expect(o.stats.aToB.droppedMtu).toBe(0);
    expect(biggest).toBeLessThanOrEqual(1200);
  });

  it('chunk-mtu-buffer-too-small (seed 22): a 1000-byte transmit buffer fails the block with a clear reason', () => {
    const sent = randomBlocks(22, [100_000, 500]);
    const o = run({
      seed: 22, aToB: LINK, mtu: 1000, sender: { sliceBytes: 1173 }, blocks: sent, maxTimeMs: 5000,
    });
    expect(o.ok).toBe(true);
    expect(o.txEvents.filter((e) => e.type !== 'stalled')).toEqual([
      { type: 'cancelled', id: 1, reason: 'datagram-too-large' },
      { type: 'delivered', id: 2, bytes: 500, durationMs: expect.any(Number) },
    ]);
    expect(o.received.length).toBe(1);
    expect(sameBytes(o.received[0], sent[1])).toBe(true);
    expect(o.sender.counters().outTooSmall).toBeGreaterThan(0);
  });

  it('chunk-mtu-path-drops-big (seed 23): a path that drops datagrams over 1000 bytes raises stalled with suspectMtu', () => {
    const sent = randomBlocks(23, [10 * 1173 + 100]);
    const o = run({ seed: 23, aToB: { ...LINK, mtu: 1000 }, sender: { stallTimeoutMs: 2000 }, blocks: sent, maxTimeMs: 6000 });
    expect(o.ok).toBe(false);
    expect(o.txEvents).toContainEqual({ type: 'stalled', id: 1, sinceMs: expect.any(Number), suspectMtu: true });
    expect(o.stats.aToB.droppedMtu).toBeGreaterThan(0);
    expect(o.peakRxMemory).toBeLessThanOrEqual(o.receiver.config.maxMemoryBytes);
    // The fix the event points to: smaller slices.
    const fixed = run({ seed: 23, aToB: { ...LINK, mtu: 1000 }, sender: { sliceBytes: 900 }, blocks: sent, maxTimeMs: 6000 });
    expectDelivered(fixed, sent);
  });
});

describe('chunk scenarios: pipelining, cancel, refusal, sessions', () => {
  it('chunk-pipeline (seed 31): the next block does not wait an idle RTT (2 blocks per RTT, in order)', () => {
    const sent = randomBlocks(31, Array.from({ length: 10 }, () => 20_000));
    const link = { latencyMs: 100 };
    const piped = run({ seed: 31, aToB: link, sender: { rateBytesPerSec: 50e6 }, blocks: sent, maxTimeMs: 10_000 });
    const serial = run({ seed: 31, aToB: link, sender: { rateBytesPerSec: 50e6, pipeline: false }, blocks: sent, maxTimeMs: 10_000 });
    expectDelivered(piped, sent);
    expectDelivered(serial, sent);
    // Serial: one block per 200 ms RTT; pipelined: two.
    expect(serial.now).toBeGreaterThan(1900);
    expect(piped.now).toBeLessThan(0.6 * serial.now);
    expect(piped.peakRxMemory).toBeLessThanOrEqual(2 * (20_000 + 3) + 20_000 * 10);
  });

  it('chunk-cancel-mid-block (seed 32): the receiver frees the partial block, later blocks still arrive', () => {
    const sent = randomBlocks(32, [4 * MiB, 70_000]);
    let cancelled = false;
    const o = run({
      seed: 32, aToB: { ...LINK, loss: 0.1 }, blocks: sent, maxTimeMs: 20_000,
      onStep: (now, s) => {
        if (!cancelled && now > 1500) cancelled = s.cancel(1);
      },
    });
    expect(o.ok).toBe(true);
    expect(o.txEvents.filter((e) => e.type !== 'stalled').map((e) => `${e.type}:${e.id}`)).toEqual(['cancelled:1', 'delivered:2']);
    expect(o.rxEvents.map((e) => e.type)).toEqual(['cancelled', 'block']);
    expect(o.received.length).toBe(1);
    expect(sameBytes(o.received[0], sent[1])).toBe(true);
    expect(o.receiver.memoryBytes()).toBe(0);
    expect(o.receiver.counters().cancelledBlocks).toBe(1);
  });

  it('chunk-refused-too-large (seed 33): an oversize block is refused with an event, the next one delivered', () => {
    const sent = randomBlocks(33, [300_000, 20_000]);
    const o = run({ seed: 33, aToB: { ...LINK, loss: 0.1 }, receiver: { maxBlockBytes: 100_000 }, blocks: sent, maxTimeMs: 10_000 });
    expect(o.ok).toBe(true);
    expect(o.txEvents.filter((e) => e.type !== 'stalled')).toEqual([
      { type: 'refused', id: 1, reason: 'too-large', limitBytes: 100_000 },
      { type: 'delivered', id: 2, bytes: 20_000, durationMs: expect.any(Number) },
    ]);
    expect(o.received.length).toBe(1);
    expect(sameBytes(o.received[0], sent[1])).toBe(true);
    expect(o.peakRxMemory).toBeLessThanOrEqual(2 * (20_000 + 40));
  });

  it('chunk-memory-backpressure (seed 34): a receiver with room for one block still gets ten, in order', () => {
    const sent = randomBlocks(34, Array.from({ length: 10 }, () => 100_000));
    const o = run({
      seed: 34, aToB: { ...LINK, loss: 0.05 }, receiver: { maxBlockBytes: 100_000, maxMemoryBytes: 100_300 },
      blocks: sent, maxTimeMs: 30_000,
    });
    expectDelivered(o, sent);
    expect(o.peakRxMemory).toBeLessThanOrEqual(100_300);
  });

  it('chunk-sender-restart (seed 35): a new sender session takes over after the old one dies, stale slices ignored', () => {
    const rx = new ChunkReceiver({ sessionIdleMs: 1000 });
    const old = new ChunkSender({ sessionId: 1, rateBytesPerSec: 1e6 });
    const w1 = new PairWorld({ seed: 35, aToB: LINK, a: old, b: rx });
    const stale: Uint8Array[] = [];
    w1.onTransmit = (dir, bytes) => {
      if (dir === 'aToB' && stale.length < 50) stale.push(bytes.slice());
    };
    old.sendBlock(randomBlocks(35, [500_000])[0]);
    w1.runFor(200);
    expect(rx.memoryBytes()).toBeGreaterThan(0);
    // The old process dies; a new one (new session, chunk ids from 0 again) starts later.
    const fresh = new ChunkSender({ sessionId: 2, rateBytesPerSec: 1e6 });
    const w2 = new PairWorld({ seed: 36, aToB: LINK, a: fresh, b: rx, startMs: 2000 });
    const data = randomBlocks(36, [300_000, 10]);
    fresh.sendBlock(data[0]);
    fresh.sendBlock(data[1]);
    const got: Uint8Array[] = [];
    const r = w2.runUntil(() => {
      for (let e = rx.pollEvent(); e !== undefined; e = rx.pollEvent()) if (e.type === 'block') got.push(e.data.slice());
      if (got.length === 1) for (const s of stale.splice(0)) w2.inject('aToB', s);
      return got.length === 2;
    }, { maxTimeMs: 10_000 });
    expect(r.ok).toBe(true);
    expect(got.length).toBe(2);
    expect(sameBytes(got[0], data[0]) && sameBytes(got[1], data[1])).toBe(true);
    expect(rx.counters().sessionSwitches).toBe(1);
    expect(rx.counters().wrongSession).toBeGreaterThanOrEqual(50);
  });
});
