// Lanes of one connection under saturation, on a shared bottleneck: strict priority between levels,
// weighted shares within one, every lane through the one path (its rate and pacing), and the limits
// of a lane's queue hit on purpose.
import { describe, expect, it } from 'vitest';
import type { MessageLaneConfig, LaneStats } from '../../src/channels/index.js';
import { ConnectionHost } from '../../src/connection/host.js';
import type { LaneConfig } from '../../src/connection/options.js';
import { GamewireError } from '../../src/core/errors.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { World } from '../../src/sim/world.js';

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

function stamp(size: number, at: number): Uint8Array {
  const b = new Uint8Array(size);
  new DataView(b.buffer).setFloat64(0, at, true);
  return b;
}

describe('lanes under saturation (2 Mbit/s bottleneck, 40 ms RTT, 1 % loss, 2 ms jitter)', () => {
  for (const seed of [1, 2, 3]) {
    it(`seed ${seed}: a 20 Hz priority lane keeps its latency; two bulk lanes split the rest 1:3`, () => {
      const lanes: MessageLaneConfig[] = [
        { mode: 'reliable-ordered', priority: 0 },
        { mode: 'reliable-ordered', priority: 1, weight: 1 },
        { mode: 'reliable-ordered', priority: 1, weight: 3 },
      ];
      const world = new World({ seed, link: { latencyMs: 20, jitterMs: 2, loss: 0.01, rateBitsPerSec: 2e6, queueDatagrams: 60 } });
      const server = new ConnectionHost({ lanes, listen: true, random: seeded(seed) });
      const client = new ConnectionHost({ lanes, random: seeded(seed + 9) });
      world.add('server', server);
      world.add('client', client);
      const conn = client.connect(0, 'server');
      const got = [0, 0, 0];
      const gameplayRtt: number[] = [];
      const from = 5000;
      const until = 20_000;
      const feed = (): void => {
        if (conn.state === 'connected') {
          conn.send(0, stamp(100, world.now));
          for (const lane of [1, 2]) while (conn.stats().lanes[lane]!.queuedBytes < 64 * 1024) conn.send(lane, new Uint8Array(1000));
        }
        if (world.now < until) world.at(world.now + 50, feed);
      };
      world.at(0, feed);
      world.runUntil(() => {
        for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
          if (e.type !== 'message' || world.now < from) continue;
          got[e.lane]! += e.bytes.length;
          if (e.lane === 0) gameplayRtt.push(world.now - new DataView(e.bytes.buffer, e.bytes.byteOffset).getFloat64(0, true));
        }
        client.pollEvent();
        return false;
      }, { maxTimeMs: until });
      const seconds = (until - from) / 1000;
      const goodput = ((got[0]! + got[1]! + got[2]!) * 8) / seconds;
      const ratio = got[2]! / got[1]!;
      gameplayRtt.sort((a, b) => a - b);
      const p99 = gameplayRtt[Math.floor(gameplayRtt.length * 0.99)]!;
      // Tolerances: the weighted share within ±15 %, gameplay's one-way p99 within 20 ms + 60 ms of queue, and
      // at least 60 % of the link as payload (headers, acks and the controller's probing take the rest).
      expect(ratio, `lane 2 / lane 1 bytes = ${ratio.toFixed(2)}`).toBeGreaterThan(3 * 0.85);
      expect(ratio).toBeLessThan(3 * 1.15);
      expect(gameplayRtt.length).toBeGreaterThan(seconds * 20 * 0.95);
      expect(p99, `gameplay one-way p99 ${p99.toFixed(1)} ms`).toBeLessThan(80);
      expect(goodput, `goodput ${(goodput / 1e6).toFixed(2)} Mbit/s`).toBeGreaterThan(0.6 * 2e6);
    });
  }
});

describe('lane limits at the connection', () => {
  it('a reliable lane throws queue-full at maxQueuedBytes; an unreliable one drops its oldest', () => {
    const lanes: MessageLaneConfig[] = [{ mode: 'reliable-ordered', maxQueuedBytes: 20_000 }, { mode: 'unreliable', maxQueuedBytes: 20_000 }];
    const host = new ConnectionHost({ lanes });
    const conn = host.connect(0, 'nowhere');
    let accepted = 0;
    let err: unknown;
    try {
      for (;;) {
        conn.send(0, new Uint8Array(1000));
        accepted++;
      }
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(GamewireError);
    expect((err as GamewireError).code).toBe('queue-full');
    expect(accepted).toBeGreaterThan(15);
    expect(accepted).toBeLessThan(20);
    for (let i = 0; i < 100; i++) conn.send(1, new Uint8Array(1000));
    const s = conn.stats().lanes[1] as LaneStats;
    expect(s.queuedBytes).toBeLessThanOrEqual(20_000);
    expect(s.dropped).toBeGreaterThan(75);
  });
});

describe('a 64 MiB block lane beside a 60 Hz gameplay lane (100 Mbit/s, 40 ms RTT, 0.5 % loss)', () => {
  it('gameplay keeps its latency while the block flows, and the block completes near the link rate', () => {
    const lanes: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'block', maxMessageBytes: 64 << 20 }];
    const rate = 100e6;
    const world = new World({ seed: 64, link: { latencyMs: 20, loss: 0.005, rateBitsPerSec: rate, queueBytes: 500_000 } });
    const server = new ConnectionHost({ lanes, listen: true, random: seeded(65) });
    const client = new ConnectionHost({ lanes, random: seeded(66) });
    world.add('server', server);
    world.add('client', client);
    const conn = client.connect(0, 'server');
    const blockBytes = 64 << 20;
    const sentAt: number[] = [];
    const rtts: number[] = [];
    let blockStart = -1;
    let blockDone = -1;
    let blockLen = 0;
    const tick = (): void => {
      if (blockDone >= 0) return;
      if (conn.state === 'connected') {
        sentAt.push(world.now);
        conn.send(0, stamp(64, sentAt.length - 1));
        if (blockStart < 0 && world.now >= 1000) {
          blockStart = world.now;
          conn.send(1, new Uint8Array(blockBytes));
        }
      }
      world.at(world.now + 1000 / 60, tick);
    };
    world.at(0, tick);
    const r = world.runUntil(() => {
      for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
        if (e.type !== 'message') continue;
        if (e.lane === 0) e.connection.send(0, e.bytes);
        else {
          blockDone = world.now;
          blockLen = e.bytes.length;
        }
      }
      for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) {
        if (e.type !== 'message') continue;
        const i = new DataView(e.bytes.buffer, e.bytes.byteOffset).getFloat64(0, true);
        if (blockStart >= 0 && sentAt[i]! >= blockStart) rtts.push(world.now - sentAt[i]!);
      }
      return blockDone >= 0;
    }, { maxTimeMs: 60_000 });
    expect(r.ok, `stopped at ${world.now} ms`).toBe(true);
    expect(blockLen).toBe(blockBytes);
    const floorMs = (((blockBytes + Math.ceil(blockBytes / 1200) * 28) * 8) / rate) * 1000 + 20;
    const took = blockDone - blockStart;
    rtts.sort((a, b) => a - b);
    const p99 = rtts[Math.floor(rtts.length * 0.99)]!;
    expect(rtts.length).toBeGreaterThan((took / 1000) * 60 * 0.9);
    // Tolerances: gameplay RTT p99 within RTT + 50 ms (the bound); the block within 1.3× its floor at 0.5 % loss.
    expect(p99, `gameplay RTT p99 ${p99.toFixed(1)} ms`).toBeLessThanOrEqual(40 + 50);
    expect(took / floorMs, `block took ${took.toFixed(0)} ms, floor ${floorMs.toFixed(0)} ms`).toBeLessThan(1.3);
  }, 60_000);
});
