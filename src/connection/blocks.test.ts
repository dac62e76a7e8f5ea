// The block lane of a connection: blocks intact over loss both ways, beside message lanes on one path
// (gameplay latency kept while a block flows; a saturating message lane leaves the block its share),
// every limit and misuse, and garbage BLOCK frames.
import { describe, expect, it } from 'vitest';
import type { LaneStats } from '../channels/index.js';
import { GamewireError } from '../core/errors.js';
import { NonCryptoRng } from '../core/rng.js';
import type { LinkConfig } from '../sim/config.js';
import { World } from '../sim/world.js';
import type { BlockLaneStats } from './blocks.js';
import type { Connection, ConnectionEvent } from './connection.js';
import { ConnectionHost } from './host.js';
import type { LaneConfig, ConnectionOptions } from './options.js';
import { FrameKind } from './wire.js';

const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'block', maxMessageBytes: 8 << 20 }];

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

function pattern(size: number, salt: number): Uint8Array {
  const b = new Uint8Array(size);
  const r = new NonCryptoRng(salt);
  r.fill(b);
  return b;
}

interface Rig {
  world: World;
  server: ConnectionHost;
  client: ConnectionHost;
  conn: Connection;
  serverEvents: ConnectionEvent[];
  clientEvents: ConnectionEvent[];
  pump: () => void;
  serverConn: () => Connection;
}

function rig(seed: number, link: Partial<LinkConfig>, opts: ConnectionOptions = {}, echoLane0 = true): Rig {
  const world = new World({ seed, link });
  const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(seed + 1), ...opts });
  const client = new ConnectionHost({ lanes: LANES, random: seeded(seed + 2), ...opts });
  world.add('server', server);
  world.add('client', client);
  const serverEvents: ConnectionEvent[] = [];
  const clientEvents: ConnectionEvent[] = [];
  const pump = (): void => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      serverEvents.push(e);
      if (echoLane0 && e.type === 'message' && e.lane === 0) e.connection.send(0, e.bytes);
    }
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) clientEvents.push(e);
  };
  const conn = client.connect(world.now, 'server');
  return { world, server, client, conn, serverEvents, clientEvents, pump, serverConn: () => server.connections()[0]! };
}

function connect(r: Rig): void {
  r.world.runUntil(() => (r.pump(), r.conn.state === 'connected' && r.server.connections()[0]?.state === 'connected'),
    { maxTimeMs: 5000 });
  expect(r.conn.state).toBe('connected');
  expect(r.serverConn().state).toBe('connected');
}

function messages(events: ConnectionEvent[], lane: number): Uint8Array[] {
  return events.flatMap((e) => (e.type === 'message' && e.lane === lane ? [e.bytes] : []));
}

/** Lengths and a checksum of each block: vitest's deep equality is slow on megabytes. */
function digest(blocks: Uint8Array[]): string[] {
  return blocks.map((b) => {
    let h = 0x811c9dc5;
    for (let i = 0; i < b.length; i++) h = Math.imul(h ^ b[i]!, 0x01000193);
    return `${b.length}:${(h >>> 0).toString(16)}`;
  });
}

function deliveries(events: ConnectionEvent[], lane: number): { id: number; delivered: boolean }[] {
  return events.flatMap((e) => (e.type === 'delivery' && e.lane === lane ? [{ id: e.id, delivered: e.delivered }] : []));
}

describe('block lane: blocks arrive intact, in order, both ways', () => {
  for (const loss of [0, 0.1, 0.3]) {
    it(`three blocks each way at ${loss * 100} % loss with jitter, duplication and reordering`, () => {
      const r = rig(11 + loss * 100, { latencyMs: 30, jitterMs: 10, loss, duplicate: 0.02, rateBitsPerSec: 20e6 });
      connect(r);
      const up = [pattern(300_000, 1), pattern(0, 2), pattern(1_000_001, 3)];
      const down = [pattern(1, 4), pattern(700_000, 5), pattern(1169, 6)];
      const upIds = up.map((b) => r.conn.send(1, b, true));
      const downIds = down.map((b) => r.serverConn().send(1, b, true));
      expect(upIds).toEqual([1, 2, 3]);
      expect(downIds).toEqual([1, 2, 3]);
      const done = (): boolean => deliveries(r.clientEvents, 1).length === 3 && deliveries(r.serverEvents, 1).length === 3
        && messages(r.serverEvents, 1).length === 3 && messages(r.clientEvents, 1).length === 3;
      const res = r.world.runUntil(() => (r.pump(), done()), { maxTimeMs: 60_000 });
      expect(res.ok, `stopped at ${r.world.now} ms`).toBe(true);
      expect(digest(messages(r.serverEvents, 1))).toEqual(digest(up));
      expect(digest(messages(r.clientEvents, 1))).toEqual(digest(down));
      expect(deliveries(r.clientEvents, 1)).toEqual([1, 2, 3].map((id) => ({ id, delivered: true })));
      expect(deliveries(r.serverEvents, 1)).toEqual([1, 2, 3].map((id) => ({ id, delivered: true })));
      const s = r.conn.stats().lanes[1] as BlockLaneStats;
      expect(s).toMatchObject({ mode: 'block', queuedBytes: 0, queuedMessages: 0, delivered: 3, received: 3 });
      if (loss > 0) expect(s.resent).toBeGreaterThan(0);
      expect(r.conn.state).toBe('connected');
    });
  }

  it('a connection whose only lane is a block lane', () => {
    const lanes: LaneConfig[] = [{ mode: 'block' }];
    const r = rig(21, { latencyMs: 10, loss: 0.05 }, { lanes });
    connect(r);
    const b = pattern(200_000, 7);
    r.conn.send(0, b);
    const res = r.world.runUntil(() => (r.pump(), messages(r.serverEvents, 0).length === 1), { maxTimeMs: 20_000 });
    expect(res.ok).toBe(true);
    expect(digest(messages(r.serverEvents, 0))).toEqual(digest([b]));
    // Without a notice, no delivery event: the sender learns it from blockProgress.
    r.world.runFor(1000);
    r.pump();
    expect(deliveries(r.clientEvents, 0)).toEqual([]);
    expect(r.conn.blockProgress()!.sending.queuedBlocks).toBe(0);
  });
});

/** Gameplay echo RTTs of messages sent while the block was in transfer, and the block's completion time. */
function blockBesideGameplay(seed: number, hz: number, blockBytes: number): { rtts: number[]; completionMs: number; floorMs: number } {
  const rate = 10e6;
  const oneWay = 25;
  const r = rig(seed, { latencyMs: oneWay, rateBitsPerSec: rate, queueBytes: 125_000 });
  connect(r);
  const sentAt: number[] = [];
  const rttOf = new Map<number, number>();
  let blockStart = -1;
  let blockDone = -1;
  const tick = (): void => {
    if (blockDone >= 0) return;
    const m = new Uint8Array(64);
    new DataView(m.buffer).setUint32(0, sentAt.length, true);
    sentAt.push(r.world.now);
    r.conn.send(0, m);
    r.world.at(r.world.now + 1000 / hz, tick);
  };
  r.world.at(r.world.now, tick);
  r.world.at(r.world.now + 1000, () => {
    blockStart = r.world.now;
    r.conn.send(1, new Uint8Array(blockBytes));
  });
  const res = r.world.runUntil(() => {
    r.pump();
    while (r.serverEvents.length > 0) {
      const e = r.serverEvents.shift()!;
      if (e.type === 'message' && e.lane === 1) blockDone = r.world.now;
    }
    while (r.clientEvents.length > 0) {
      const e = r.clientEvents.shift()!;
      if (e.type === 'message' && e.lane === 0) {
        const i = new DataView(e.bytes.buffer, e.bytes.byteOffset).getUint32(0, true);
        rttOf.set(i, r.world.now - sentAt[i]!);
      }
    }
    return blockDone >= 0 && rttOf.size === sentAt.length;
  }, { maxTimeMs: 60_000 });
  expect(res.ok, `stopped at ${r.world.now} ms`).toBe(true);
  const rtts = sentAt.flatMap((t, i) => (t >= blockStart && t <= blockDone ? [rttOf.get(i)!] : []));
  const datagrams = Math.ceil(blockBytes / 1200);
  const floorMs = (((blockBytes + datagrams * 28) * 8) / rate) * 1000 + oneWay;
  return { rtts, completionMs: blockDone - blockStart, floorMs };
}

describe('block lane beside message lanes on one path', () => {
  for (const seed of [1, 2]) {
    it(`seed ${seed}: a 4 MiB block beside a 60 Hz gameplay lane on 10 Mbit/s, 50 ms RTT: gameplay p99 within RTT + 50 ms, block within 1.3× its floor`, () => {
      const { rtts, completionMs, floorMs } = blockBesideGameplay(seed, 60, 4 << 20);
      rtts.sort((a, b) => a - b);
      const p99 = rtts[Math.floor(rtts.length * 0.99)]!;
      expect(rtts.length).toBeGreaterThan((completionMs / 1000) * 60 * 0.95);
      expect(p99, `gameplay p99 ${p99} ms`).toBeLessThanOrEqual(50 + 50);
      expect(completionMs / floorMs, `completion ${completionMs} ms, floor ${floorMs.toFixed(0)} ms`).toBeLessThanOrEqual(1.3);
    });
  }

  it('a message lane that saturates the path leaves the block lane its minShare', () => {
    const lanes: LaneConfig[] = [{ mode: 'reliable-ordered', maxQueuedBytes: 1 << 20 }, { mode: 'block', minShare: 0.25 }];
    const r = rig(3, { latencyMs: 20, rateBitsPerSec: 4e6, queueBytes: 60_000 }, { lanes }, false);
    connect(r);
    let blockBytes = 0;
    let bulkBytes = 0;
    const from = 3000;
    const until = 13_000;
    const feed = (): void => {
      while ((r.conn.stats().lanes[0] as LaneStats).queuedBytes < 256 * 1024) r.conn.send(0, new Uint8Array(1000));
      if ((r.conn.stats().lanes[1] as BlockLaneStats).queuedMessages < 2) r.conn.send(1, new Uint8Array(100_000));
      if (r.world.now < until) r.world.at(r.world.now + 20, feed);
    };
    r.world.at(r.world.now, feed);
    r.world.runUntil(() => {
      r.pump();
      for (const e of r.serverEvents.splice(0)) {
        if (e.type !== 'message' || r.world.now < from) continue;
        if (e.lane === 0) bulkBytes += e.bytes.length;
        else blockBytes += e.bytes.length;
      }
      return false;
    }, { maxTimeMs: until });
    const share = blockBytes / (blockBytes + bulkBytes);
    // Tolerance: whole 100 kB blocks are counted when they complete, so the share is sampled coarsely.
    expect(share, `block share ${share.toFixed(3)}`).toBeGreaterThan(0.25 * 0.8);
    expect(share).toBeLessThan(0.4);
    expect(bulkBytes).toBeGreaterThan(0);
  });
});

describe('block lane: limits, misuse and garbage', () => {
  it('throws message-too-large above maxMessageBytes, queue-full at maxQueuedBytes and maxQueuedBlocks', () => {
    const lanes: LaneConfig[] = [{ mode: 'block', maxMessageBytes: 1000, maxQueuedBytes: 2500, maxQueuedBlocks: 3 }];
    const host = new ConnectionHost({ lanes });
    const conn = host.connect(0, 'nowhere');
    const code = (f: () => unknown): string | undefined => {
      try {
        f();
      } catch (e) {
        return e instanceof GamewireError ? e.code : 'other';
      }
      return undefined;
    };
    expect(code(() => conn.send(0, new Uint8Array(1001)))).toBe('message-too-large');
    conn.send(0, new Uint8Array(1000));
    conn.send(0, new Uint8Array(1000));
    expect(code(() => conn.send(0, new Uint8Array(501)))).toBe('queue-full');
    conn.send(0, new Uint8Array(10));
    expect(code(() => conn.send(0, new Uint8Array(1)))).toBe('queue-full');
    expect(code(() => conn.send(1, new Uint8Array(1)))).toBe('invalid-argument');
    expect(code(() => conn.cancel(0, 1.5))).toBe('invalid-argument');
  });

  it('rejects bad block lane configs', () => {
    const bad: LaneConfig[][] = [
      [{ mode: 'block' }, { mode: 'block' }],
      [{ mode: 'block', priority: 1 } as unknown as LaneConfig],
      [{ mode: 'block', maxMessageBytes: 2 ** 32 }],
      [{ mode: 'block', maxMessageBytes: 100, maxQueuedBytes: 99 }],
      [{ mode: 'block', minShare: 1 }],
    ];
    for (const lanes of bad) expect(() => new ConnectionHost({ lanes }), JSON.stringify(lanes)).toThrow(GamewireError);
  });

  it('peers whose block lanes differ in maxMessageBytes are refused (the lanes hash covers it)', () => {
    const world = new World({ seed: 5 });
    const server = new ConnectionHost({ lanes: [{ mode: 'block', maxMessageBytes: 1000 }], listen: true });
    const client = new ConnectionHost({ lanes: [{ mode: 'block', maxMessageBytes: 1001 }] });
    world.add('server', server);
    world.add('client', client);
    client.connect(0, 'server');
    world.runFor(500);
    expect(client.pollEvent()).toMatchObject({ type: 'disconnected', reason: 'refused-lanes' });
  });

  it('cancel: a queued block is dropped with a delivery event (delivered false); cancel on a message lane throws', () => {
    const r = rig(6, { latencyMs: 20, rateBitsPerSec: 2e6 });
    connect(r);
    const a = r.conn.send(1, new Uint8Array(2_000_000), true);
    const b = r.conn.send(1, new Uint8Array(50_000), true);
    r.world.runFor(200);
    expect(r.conn.cancel(1, a)).toBe(true);
    expect(r.conn.cancel(1, 99)).toBe(false);
    expect(() => r.conn.cancel(0, a)).toThrow(GamewireError);
    r.world.runUntil(() => (r.pump(), deliveries(r.clientEvents, 1).length === 2), { maxTimeMs: 10_000 });
    expect(deliveries(r.clientEvents, 1)).toEqual([{ id: a, delivered: false }, { id: b, delivered: true }]);
    expect(messages(r.serverEvents, 1).map((m) => m.length)).toEqual([50_000]);
    expect(r.conn.blockProgress()!.sending.queuedBlocks).toBe(0);
  });

  it('garbage BLOCK frames are counted and dropped; the lane keeps working', () => {
    const r = rig(7, { latencyMs: 5 });
    connect(r);
    const sc = r.serverConn();
    const id = sc.localId;
    const rng = new NonCryptoRng(8);
    for (let i = 0; i < 300; i++) {
      const b = new Uint8Array(5 + (i % 60));
      rng.fill(b);
      b[0] = FrameKind.Block;
      new DataView(b.buffer).setUint32(1, id, true);
      if (i % 3 === 0) b[5] = 0xc1; // the chunk magic, so the chunk decoders see it
      r.world.inject('client', 'server', b);
    }
    r.world.runFor(100);
    const c = sc.counters().blocks!;
    expect(c.stray + (c.receiver?.malformed ?? 0)).toBeGreaterThan(0);
    const blk = pattern(50_000, 9);
    r.conn.send(1, blk);
    r.world.runUntil(() => (r.pump(), messages(r.serverEvents, 1).length === 1), { maxTimeMs: 5000 });
    expect(digest(messages(r.serverEvents, 1))).toEqual(digest([blk]));
    expect(sc.state).toBe('connected');
  });

  it('an idle connection with a block lane builds neither half, and its stats say so', () => {
    const r = rig(8, { latencyMs: 5 });
    connect(r);
    r.world.runFor(2000);
    expect(r.conn.counters().blocks).toEqual({ sender: undefined, receiver: undefined, stray: 0 });
    expect(r.conn.stats().lanes[1]).toEqual({
      mode: 'block', queuedBytes: 0, queuedMessages: 0, sentWireBytes: 0, resent: 0, delivered: 0, received: 0,
    });
    expect(r.conn.blockProgress()!.receiving).toEqual({ blocks: [], deliveredBlocks: 0, deliveredBytes: 0 });
  });
});
