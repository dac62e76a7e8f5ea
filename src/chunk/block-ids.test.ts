import { describe, expect, it } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { type ChunkReceiverEvent, ChunkReceiver } from './receiver.js';
import { type ChunkSenderEvent, ChunkSender } from './sender.js';

const seeded = (seed: number) => (out: Uint8Array): void => {
  new NonCryptoRng(seed).fill(out);
};

interface Run {
  world: World;
  tx: ChunkSender;
  rx: ChunkReceiver;
  sent: ChunkSenderEvent[];
  got: ChunkReceiverEvent[];
  poll(): void;
}

/** A sender at 'tx' and a receiver at 'rx' on a seeded world with 5 % loss both ways and jitter. */
function setup(seed: number, firstChunkId = 0): Run {
  const world = new World({ seed, link: { latencyMs: 20, jitterMs: 5, loss: 0.05 } });
  const tx = new ChunkSender({ random: seeded(seed), rateBytesPerSec: 2e6, sliceBytes: 500, firstChunkId });
  const rx = new ChunkReceiver({ firstChunkId });
  world.addPeer('tx', tx, 'rx');
  world.addPeer('rx', rx, 'tx');
  const sent: ChunkSenderEvent[] = [];
  const got: ChunkReceiverEvent[] = [];
  const poll = (): void => {
    for (let e = tx.pollEvent(); e !== undefined; e = tx.pollEvent()) sent.push(e);
    for (let e = rx.pollEvent(); e !== undefined; e = rx.pollEvent()) got.push(e);
  };
  return { world, tx, rx, sent, got, poll };
}

const outcome = (sent: ChunkSenderEvent[], id: number): string | undefined =>
  sent.find((e) => e.id === id && e.type !== 'stalled')?.type;

describe('block ids: both ends name a block the same way', () => {
  for (const seed of [1, 2, 3]) {
    it(`matches ids across queued and in-flight cancels and a chunk-id wrap (seed ${seed})`, () => {
      const r = setup(seed, 65534);
      const rng = new NonCryptoRng(seed);
      const blocks = [3000, 100, 2500, 40_000, 0, 700, 1200].map((n) => rng.fill(new Uint8Array(n)));
      const ids = blocks.map((b) => r.tx.sendBlock(b));
      expect(ids).toEqual([1, 2, 3, 4, 5, 6, 7]);
      expect(r.tx.cancel(2)).toBe(true);
      expect(r.tx.cancel(6)).toBe(true);
      r.world.at(80, () => r.tx.cancel(4));
      const done = r.world.runUntil(() => {
        r.poll();
        return r.sent.filter((e) => e.type !== 'stalled').length === 7 && r.got.length >= 4;
      }, { maxTimeMs: 30_000 });
      expect(done.ok).toBe(true);
      // Blocks cancelled while queued never reach the receiver; the rest arrive with the sender's ids.
      expect(outcome(r.sent, 2)).toBe('cancelled');
      expect(outcome(r.sent, 6)).toBe('cancelled');
      const delivered = r.got.filter((e) => e.type === 'block');
      expect(delivered.map((e) => e.id)).toEqual(ids.filter((id) => outcome(r.sent, id) === 'delivered'));
      for (const e of delivered) expect(e.type === 'block' && e.data).toEqual(blocks[e.id - 1]);
      for (const e of r.got) if (e.type === 'cancelled') expect(outcome(r.sent, e.id)).toBe('cancelled');
      expect(r.got.some((e) => e.id === 2 || e.id === 6)).toBe(false);
      expect(delivered.map((e) => e.id)).toContain(7);
      // Every id the receiver never heard of was cancelled while queued, and skipped (2, 6, and 4 if it had not started).
      const unseen = ids.filter((id) => !r.got.some((e) => e.id === id));
      expect(unseen.every((id) => outcome(r.sent, id) === 'cancelled')).toBe(true);
      expect(r.rx.counters().skippedIds).toBe(unseen.length);
    });
  }

  it('reports progress of the block being assembled, by the sender’s id', () => {
    const r = setup(7);
    const data = new NonCryptoRng(7).fill(new Uint8Array(20_000));
    r.tx.sendBlock(new Uint8Array(10));
    r.tx.cancel(1);
    const id = r.tx.sendBlock(data);
    const seen: number[] = [];
    const done = r.world.runUntil(() => {
      r.poll();
      const p = r.rx.progress();
      if (p.blocks.length > 0) {
        expect(p.blocks[0]).toMatchObject({ id, totalBytes: 20_000 });
        seen.push(p.blocks[0]!.receivedBytes);
      }
      return r.got.length === 1;
    }, { maxTimeMs: 10_000 });
    expect(done.ok).toBe(true);
    expect(seen.length).toBeGreaterThan(3);
    expect(seen.every((b, i) => b <= 20_000 && (i === 0 || b >= seen[i - 1]!))).toBe(true);
    expect(r.rx.progress()).toEqual({ blocks: [], deliveredBlocks: 1, deliveredBytes: 20_000 });
    expect(r.got).toMatchObject([{ type: 'block', id: 2 }]);
  });

  it('refuses to hand out ids a receiver could not skip to (32 768 since the newest block on the wire)', () => {
    const tx = new ChunkSender({ sessionId: 1 });
    for (let i = 0; i < 0x8000; i++) tx.cancel(tx.sendBlock(new Uint8Array(1)));
    expect(() => tx.sendBlock(new Uint8Array(1))).toThrow(GamewireError);
  });
});

describe('session ids', () => {
  it('are drawn from the injected random source by default, else from crypto.getRandomValues', () => {
    expect(new ChunkSender({ random: seeded(5) }).config.sessionId).toBe(new ChunkSender({ random: seeded(5) }).config.sessionId);
    expect(new ChunkSender({ random: seeded(5) }).config.sessionId).not.toBe(new ChunkSender({ random: seeded(6) }).config.sessionId);
    const drawn = new Set(Array.from({ length: 8 }, () => new ChunkSender().config.sessionId));
    expect(drawn.size).toBeGreaterThan(1);
    expect(new ChunkSender({ sessionId: 9, random: seeded(5) }).config.sessionId).toBe(9);
  });
});
