import { describe, expect, it } from 'vitest';
import { ChunkReceiver, ChunkSender } from '../../src/chunk/index.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { PairWorld, sameBytes } from '../harness/index.js';

const MiB = 1024 * 1024;

describe('chunk scenarios: size and count extremes', () => {
  it('chunk-64mib (seed 41): a 64 MiB block (57 212 slices, windowed acks) over a fast clean path', () => {
    const data = new NonCryptoRng(41).fill(new Uint8Array(64 * MiB));
    const sender = new ChunkSender({ sessionId: 41, rateBytesPerSec: 500e6, maxQueuedBytes: 64 * MiB });
    const receiver = new ChunkReceiver({ maxBlockBytes: 64 * MiB });
    const world = new PairWorld({ seed: 41, aToB: { latencyMs: 2, loss: 0.001 }, a: sender, b: receiver, reuseReceiveBuffer: true });
    sender.sendBlock(data);
    let got: Uint8Array | undefined;
    let peakRx = 0;
    let delivered = false;
    const r = world.runUntil(() => {
      peakRx = Math.max(peakRx, receiver.memoryBytes());
      const e = receiver.pollEvent();
      if (e?.type === 'block') got = e.data;
      for (let s = sender.pollEvent(); s !== undefined; s = sender.pollEvent()) if (s.type === 'delivered') delivered = true;
      return got !== undefined && delivered;
    }, { maxTimeMs: 10_000 });
    expect(r.ok).toBe(true);
    expect(sameBytes(got!, data)).toBe(true);
    expect(peakRx).toBeLessThanOrEqual(receiver.config.maxMemoryBytes);
    expect(peakRx).toBe(64 * MiB + Math.ceil(57_212 / 8));
    expect(sender.memoryBytes()).toBe(0);
    const c = sender.counters();
    expect(c.slicesSent - c.slicesResent).toBe(57_212);
    // The link lost ~57 slices; nearly nothing else was resent.
    expect(c.slicesResent).toBeLessThan(3 * world.stats.aToB.droppedLoss + 20);
    // Ack overhead (payload bytes) stays around 2 % of the block (measured 2.1 % at this loss).
    expect(receiver.counters().ackBytesSent).toBeLessThan(0.03 * 64 * MiB);
    expect(world.stats.a.stalls + world.stats.b.stalls).toBe(0);
  });

  it('chunk-id-wrap (seed 42): 70 000 tiny blocks in a row, chunk ids wrap past 65535, all in order', () => {
    const total = 70_000;
    const sender = new ChunkSender({ sessionId: 42, rateBytesPerSec: 100e6, maxQueuedBlocks: 64 });
    const receiver = new ChunkReceiver({ maxBlockBytes: 64 });
    const world = new PairWorld({ seed: 42, aToB: { latencyMs: 1, loss: 0.02, duplicate: 0.02, jitterMs: 1 }, a: sender, b: receiver, reuseReceiveBuffer: true });
    const payload = (i: number): Uint8Array => {
      const b = new Uint8Array(i % 50);
      for (let k = 0; k < b.length; k++) b[k] = (i * 31 + k) & 0xff;
      return b;
    };
    let queued = 0;
    let got = 0;
    let bad = 0;
    let delivered = 0;
    const r = world.runUntil(() => {
      while (queued < total && sender.progress(world.now).queuedBlocks < 64) sender.sendBlock(payload(queued++));
      for (let e = receiver.pollEvent(); e !== undefined; e = receiver.pollEvent()) {
        if (e.type !== 'block' || !sameBytes(e.data, payload(got))) bad++;
        if (e.type === 'block' && e.id !== got + 1) bad++;
        got++;
      }
      for (let e = sender.pollEvent(); e !== undefined; e = sender.pollEvent()) if (e.type === 'delivered') delivered++;
      return got === total && delivered === total;
    }, { maxTimeMs: 600_000 });
    expect(r.ok).toBe(true);
    expect(bad).toBe(0);
    expect(receiver.expectedBlockId).toBe(total + 1);
    expect(receiver.memoryBytes()).toBe(0);
    expect(world.stats.a.stalls + world.stats.b.stalls).toBe(0);
  });
});
