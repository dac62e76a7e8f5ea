// The snapshot budget and the priority accumulator, on a server fed through fake connections whose
// measured rate the test sets, and a client decoding what it sends (every snapshot delivered at once).
import { describe, expect, it } from 'vitest';
import type { ConnectionStats } from '../../src/connection/session.js';
import { StateClient } from '../../src/state/client.js';
import { defineSchema, float } from '../../src/state/schema.js';
import { StateServer, type StateLink, type SnapshotBudget, WindowMin } from '../../src/state/server.js';
import { Kind } from '../../src/state/wire.js';

const types = { low: { x: float(0, 1000, 0.01) }, mid: { x: float(0, 1000, 0.01) }, high: { x: float(0, 1000, 0.01) } };
const schema = defineSchema(types);

/** A server with one joined client behind a link whose pacing rate is `rate.value`; snapshots reach the client and are acknowledged at once. */
function rig(options: { tickHz: number; priorities?: Record<string, number>; budget: SnapshotBudget }) {
  const rate = { value: 1_000_000 };
  let client: StateClient | undefined;
  let next = 0;
  const link: StateLink = {
    send(lane, bytes) {
      const id = next++;
      if (lane === 1) {
        client!.handle(0, { type: 'message', lane, bytes });
        queueDelivery.push(id);
      }
      return id;
    },
    stats: () => ({ pacingRateBytesPerSec: rate.value }) as ConnectionStats,
  };
  const queueDelivery: number[] = [];
  const server = new StateServer({ ...options, schema });
  client = new StateClient({ send: () => 0, stats: () => undefined }, { schema: schema as never });
  const hello = Uint8Array.of(Kind.Hello, 0, 0, 0, 0);
  new DataView(hello.buffer).setUint32(1, schema.hash, true);
  server.handle({ type: 'message', connection: link, lane: 0, bytes: hello });
  const tick = (now: number): void => {
    server.tick(now);
    for (const id of queueDelivery.splice(0)) server.handle({ type: 'delivery', connection: link, lane: 1, id, delivered: true });
  };
  return { server, client: client!, rate, tick, player: () => [...server.players()][0]! };
}

describe('snapshot budget', () => {
  it('WindowMin gives the smallest value of the last second', () => {
    const w = new WindowMin(1000);
    expect(w.add(0, 5)).toBe(5);
    expect(w.add(400, 9)).toBe(5);
    expect(w.add(900, 7)).toBe(5);
    expect(w.add(1200, 8)).toBe(7); // 5 (at 0) left the window
    expect(w.add(1500, 3)).toBe(3);
    expect(w.add(2600, 10)).toBe(10);
  });

  it('follows the pacing rate down at once, and up only after a second of the higher rate (a probe does not count)', () => {
    const r = rig({ tickHz: 20, budget: { share: 0.5, minBytes: 100, maxBytes: 100_000 } });
    r.server.spawn('low', { x: 1 });
    r.rate.value = 20_000;
    for (let t = 0; t < 1000; t += 50) r.tick(t);
    const steady = r.player().stats().budgetBytes;
    expect(steady).toBeLessThanOrEqual((0.5 * 20_000) / 20);
    r.rate.value = 200_000; // a probe: ten times the rate for one tick
    r.tick(1000);
    expect(r.player().stats().budgetBytes).toBe(steady);
    r.rate.value = 10_000; // the path got slower: the budget follows at once
    r.tick(1050);
    expect(r.player().stats().budgetBytes).toBeLessThan(steady);
  });

  it('under a binding budget, update rates follow the priorities (1 : 2 : 4), and a snapshot that left entities out says so', () => {
    const r = rig({ tickHz: 20, priorities: { low: 1, mid: 2, high: 4 }, budget: { minBytes: 90, maxBytes: 90 } });
    const all = (['low', 'mid', 'high'] as const).flatMap((type) => Array.from({ length: 40 }, (_, i) => ({ type, e: r.server.spawn(type, { x: i }) })));
    for (let t = 0; t < 40; t++) r.tick(t * 50); // the join: every create through the budget
    const updates = { low: 0, mid: 0, high: 0 };
    for (let t = 40; t < 440; t++) {
      for (const { e } of all) e.values.x = (e.values.x + 1.37) % 1000;
      r.tick(t * 50);
      for (const { type, e } of all) if (r.client.latest(e.id)?.tick === r.server.tickNo) updates[type]++;
    }
    expect(updates.low).toBeGreaterThan(100);
    expect(updates.mid / updates.low).toBeGreaterThan(1.8);
    expect(updates.mid / updates.low).toBeLessThan(2.2);
    expect(updates.high / updates.low).toBeGreaterThan(3.6);
    expect(updates.high / updates.low).toBeLessThan(4.4);
    const held = r.client as never as { completeTick: number };
    expect(held.completeTick).toBeLessThan(r.server.tickNo - 100);
    for (const { e } of all) e.values.x = 0;
    for (let t = 440; t < 500; t++) r.tick(t * 50); // nothing changes any more: everything catches up
    expect(held.completeTick).toBe(r.server.tickNo);
  });
});
