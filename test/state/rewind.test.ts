import { describe, expect, it } from 'vitest';
import { defineSchema, float, int } from '../../src/state/schema.js';
import type { Entity } from '../../src/state/server.js';
import { stateWorld } from './harness.js';

const types = { dummy: { x: float(-1000, 1000, 0.01), y: float(-1000, 1000, 0.01) }, player: { x: float(-1000, 1000, 0.01), y: float(-1000, 1000, 0.01) } };
const schema = defineSchema(types, { fire: int(0, 1) });

function play(seed: number, oneWayMs: number, jitterMs: number, loss: number) {
  const sw = stateWorld({ seed, link: { latencyMs: oneWayMs - jitterMs / 2, jitterMs, loss }, schema, server: { tickHz: 30, lagCompensation: { maxRewindMs: 400 } } });
  let target: Entity<typeof types> | undefined;
  sw.server.on('join', (p) => {
    p.entity = sw.server.spawn('player', { x: 0, y: 0 });
    target = sw.server.spawn('dummy', { x: -300, y: 5 });
  });
  const rendered = new Map<number, number>();
  const results: { at: number; server: number; client: number | undefined }[] = [];
  sw.server.on('input', (p, _tick, input) => {
    if (input.fire !== 1 || target === undefined) return;
    sw.server.rewind(p, (past) => {
      const v = past.get(target!);
      if (v !== undefined) results.push({ at: past.tick, server: v.x, client: rendered.get(Math.round(past.tick * 256)) });
    });
  });
  const client = sw.clients[0]!;
  sw.run(12_000, {
    beforeTick() {
      if (target !== undefined) target.values.x += 0.23;
    },
    frame(now, i) {
      for (const e of client.sample(now)) if (e.type === 'dummy' && e.placed === 'interpolated') rendered.set(Math.round((client as never as { renderTick: number }).renderTick * 256), (e.values as { x: number }).x);
      client.input(now, { fire: i % 3 === 0 ? 1 : 0 });
    },
  });
  return results;
}

describe('lag compensation: rewind returns what the client drew', () => {
  for (const [oneWay, jitter, loss] of [[50, 20, 0.05], [100, 40, 0.1]] as const) {
    it(`RTT ${oneWay * 2} ms, jitter ${jitter} ms, loss ${loss * 100} %: the rewound target is within one quantization step of the drawn one, for every shot fired at an interpolated frame`, () => {
      const results = play(11, oneWay, jitter, loss);
      const matched = results.filter((r) => r.client !== undefined);
      if (process.env.STATE_DEBUG) console.log(matched.filter((r) => Math.abs(r.server - r.client!) > 0.01).slice(0, 8), matched.length);
      expect(matched.length).toBeGreaterThan(50);
      for (const r of matched) expect(Math.abs(r.server - r.client!)).toBeLessThanOrEqual(0.01 + 1e-9);
    });
  }
});
