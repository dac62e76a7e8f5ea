// 'auto' redundancy buys latency where loss is measured, not bytes on a clean path. The case that
// showed it (issue 21): a 1,672-byte reliable-ordered message every 50 ms (two datagrams each), 50 ms
// one way, between two ConnectionHosts on the world.
import { describe, expect, it } from 'vitest';
import { AUTO_CLEAN_OUTCOMES } from '../../src/channels/index.js';
import { ConnectionHost } from '../../src/connection/host.js';
import type { LaneConfig } from '../../src/connection/options.js';
import { seededRandom } from '../../src/core/random.js';
import { World } from '../../src/sim/world.js';

const MESSAGE_BYTES = 1672;
const TICK_MS = 50;

interface Run {
  ticks: number;
  /** Redundant frame bytes of the lane per tick, and pieces that rode again, over the measured ticks. */
  redundantBytesPerTick: number;
  redundant: number;
  /** Wire bytes (whole datagrams, the connection's wire counts) the sender sent per tick. */
  bytesPerTick: number;
  lossPercent: number;
  /** Server tick to the message's arrival (ms), every measured message. */
  ages: number[];
}

/**
 * `seconds` of ticks from a client to a server; the first 2 s (handshake, start) are not measured.
 * `redundancy` as the channels option (undefined: the default, 'auto').
 */
function run(seed: number, loss: number, redundancy: number | 'auto' | undefined, seconds = 12): Run {
  const lanes: LaneConfig[] = [{ mode: 'reliable-ordered' }];
  const world = new World({ seed, link: { latencyMs: 50, loss } });
  const channels = redundancy === undefined ? undefined : { redundancy };
  const server = new ConnectionHost({ lanes, listen: true, random: seededRandom(seed), ...(channels && { channels }) });
  const client = new ConnectionHost({ lanes, random: seededRandom(seed + 7), ...(channels && { channels }) });
  world.add('server', server);
  world.add('client', client);
  const conn = client.connect(0, 'server');
  const from = 2000;
  const until = from + seconds * 1000;
  let base: ReturnType<typeof conn.stats> | undefined;
  let ticks = 0;
  const tick = (): void => {
    if (world.now >= from && base === undefined) base = conn.stats();
    if (conn.state === 'connected') {
      const m = new Uint8Array(MESSAGE_BYTES);
      new DataView(m.buffer).setFloat64(0, world.now, true);
      conn.send(0, m);
      if (base !== undefined) ticks++;
    }
    if (world.now + TICK_MS < until) world.at(world.now + TICK_MS, tick);
  };
  world.at(0, tick);
  const ages: number[] = [];
  world.runUntil(() => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      if (e.type !== 'message') continue;
      const sentAt = new DataView(e.bytes.buffer, e.bytes.byteOffset).getFloat64(0, true);
      if (sentAt >= from) ages.push(world.now - sentAt);
    }
    client.pollEvent();
    return false;
  }, { maxTimeMs: until + 2000 });
  const end = conn.stats();
  const lane = end.lanes[0]!;
  const lane0 = base!.lanes[0]!;
  if (lane.mode === 'block' || lane0.mode === 'block') throw new Error('a message lane');
  return {
    ticks,
    redundantBytesPerTick: (lane.redundantBytes - lane0.redundantBytes) / ticks,
    redundant: lane.redundant - lane0.redundant,
    bytesPerTick: (end.bytesSent - base!.bytesSent) / ticks,
    lossPercent: end.lossPercent,
    ages: ages.sort((a, b) => a - b),
  };
}

const p99 = (xs: number[]): number => xs[Math.ceil(xs.length * 0.99) - 1]!;

describe("'auto' redundancy on a clean path and under loss", () => {
  it('0 % loss: no redundant copy, and the same bytes on the wire as redundancy 0', () => {
    const auto = run(1, 0, undefined);
    const none = run(1, 0, 0);
    expect(auto.ticks).toBeGreaterThanOrEqual(239);
    expect(auto.lossPercent).toBe(0);
    expect(auto.ages.length).toBe(auto.ticks);
    expect(auto.redundant).toBe(0);
    expect(auto.redundantBytesPerTick).toBe(0);
    expect(auto.bytesPerTick).toBe(none.bytesPerTick);
    // Two datagrams per tick: the message and the framing, well under the +32 % riders once added.
    expect(auto.bytesPerTick).toBeLessThan(MESSAGE_BYTES * 1.1);
  });

  it('10 % loss: pieces still ride again, and they keep the p99 arrival time low', () => {
    const auto = run(2, 0.1, undefined);
    const none = run(2, 0.1, 0);
    expect(auto.lossPercent).toBeGreaterThan(5);
    // The message's second piece rides in the spare room of its second datagram (the only packet
    // with room that goes anyway here): about one rider per tick.
    expect(auto.redundant).toBeGreaterThan(auto.ticks * 0.9);
    expect(auto.redundantBytesPerTick).toBeGreaterThan(400);
    expect(none.redundant).toBe(0);
    expect(auto.ages.length).toBe(auto.ticks);
    expect(none.ages.length).toBe(none.ticks);
    expect(p99(auto.ages), `p99 ${p99(auto.ages)} ms with 'auto', ${p99(none.ages)} ms without`).toBeLessThan(p99(none.ages) - 30);
  });

  it('riders stop once AUTO_CLEAN_OUTCOMES outcomes in a row were deliveries: 10 % loss for 4 s, then a clean path', () => {
    const lanes: LaneConfig[] = [{ mode: 'reliable-ordered' }];
    const world = new World({ seed: 3, link: { latencyMs: 50, loss: 0.1 } });
    const server = new ConnectionHost({ lanes, listen: true, random: seededRandom(3) });
    const client = new ConnectionHost({ lanes, random: seededRandom(10) });
    world.add('server', server);
    world.add('client', client);
    const conn = client.connect(0, 'server');
    const tick = (): void => {
      if (conn.state === 'connected') conn.send(0, new Uint8Array(MESSAGE_BYTES));
      if (world.now < 45_000) world.at(world.now + TICK_MS, tick);
    };
    world.at(0, tick);
    world.at(4000, () => {
      world.link('client', 'server').reconfigure(world.now, { loss: 0 });
      world.link('server', 'client').reconfigure(world.now, { loss: 0 });
    });
    const at = (t: number): { redundant: number; lossPercent: number; delivered: number } => {
      world.runUntil(() => {
        for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent());
        client.pollEvent();
        return false;
      }, { maxTimeMs: t - world.now });
      expect(world.now).toBe(t);
      const s = conn.stats();
      const l = s.lanes[0]!;
      if (l.mode === 'block') throw new Error('a message lane');
      return { redundant: l.redundant, lossPercent: s.lossPercent, delivered: s.packetsDelivered };
    };
    const at4 = at(4000);
    expect(at4.redundant).toBeGreaterThan(0);
    expect(at4.lossPercent).toBeGreaterThan(0);
    // The loss window (256 outcomes) is clean within ~7 s at ~40 packets a second, but the path
    // has not been clean for AUTO_CLEAN_OUTCOMES outcomes yet: pieces still ride once each.
    const at12 = at(12_000);
    expect(at12.lossPercent).toBe(0);
    const at20 = at(20_000);
    expect(at20.redundant - at12.redundant).toBeGreaterThan(140); // 160 ticks
    // By 40 s well over AUTO_CLEAN_OUTCOMES deliveries have come since the last loss: no rider since.
    const at36 = at(36_000);
    expect(at36.delivered - at4.delivered).toBeGreaterThan(AUTO_CLEAN_OUTCOMES + 100);
    const at45 = at(45_000);
    expect(at45.redundant).toBe(at36.redundant);
  });
});
