// A client that moves from its very first input, under loss and jitter: its prediction starts with
// the first state of its entity and never needs a correction (no input reaches the server that the
// prediction did not apply).
import { describe, expect, it } from 'vitest';
import { defineSchema, float, int } from '../../src/state/schema.js';
import { stateWorld } from './harness.js';

const types = { player: { x: float(-1000, 1000, 0.01) } };
const schema = defineSchema(types, { dx: int(-1, 1) });
const step = (v: { x: number }, input: { dx: number }): void => {
  v.x += input.dx * 0.5;
};

describe('prediction from the first input', () => {
  it('100 ms RTT, ±30 ms jitter, 20 % loss, seeds 1-40: no correction, and the prediction ends where the server is', () => {
    const corrected: string[] = [];
    for (let seed = 1; seed <= 40; seed++) {
      const sw = stateWorld({ seed, link: { latencyMs: 50, jitterMs: 30, loss: 0.2 }, schema, client: { predict: step as never } });
      sw.server.on('join', (p) => {
        p.entity = sw.server.spawn('player', { x: 0 });
      });
      sw.server.on('input', (p, _tick, input) => step(p.entity!.values, input));
      const c = sw.clients[0]!;
      let input = { dx: 1 };
      sw.run(3000, {
        frame(now) {
          if (now > 2500) input = { dx: 0 };
          c.input(now, input);
          c.sample(now);
        },
      });
      const s = c.stats(sw.world.now);
      if (s.corrections > 0) corrected.push(`seed ${seed}: ${s.corrections} corrections, largest ${s.largestCorrection}`);
      const player = [...sw.server.players()][0]!;
      expect(player.stats().inputsApplied).toBeGreaterThan(20);
      expect(player.entity!.values.x).toBeGreaterThan(5);
      const own = c.sample(sw.world.now).find((e) => e.predicted)!;
      expect(own.values.x, `seed ${seed}`).toBe(player.entity!.values.x);
    }
    expect(corrected).toEqual([]);
  });

  it('a first snapshot acknowledging an input tick never sent is not adopted: input() goes on without throwing', () => {
    const sw = stateWorld({ seed: 1, link: { latencyMs: 50 }, schema, client: { predict: step as never } });
    sw.server.on('join', (p) => {
      p.entity = sw.server.spawn('player', { x: 0 });
      (p as unknown as { s: { lastInputTick: number } }).s.lastInputTick = 4_000_000_000; // a server that lies
    });
    const c = sw.clients[0]!;
    expect(() => sw.run(1000, { frame(now) { c.input(now, { dx: 1 }); c.sample(now); } })).not.toThrow();
  });
});
