import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../../src/core/rng.js';
import { defineSchema, float, int } from '../../src/state/schema.js';
import { stateWorld } from './harness.js';

const types = { player: { x: float(-1000, 1000, 0.001), y: float(-1000, 1000, 0.001), hp: int(0, 100) } };
const schema = defineSchema(types, { dx: int(-1, 1), dy: int(-1, 1) });
type P = { x: number; y: number; hp: number };
type In = { dx: number; dy: number };
const SPEED = 0.37; // metres per tick: not a multiple of the precision, so quantization matters
const step = (v: P, input: In): void => {
  v.x += input.dx * SPEED;
  v.y += input.dy * SPEED * 0.5;
};

function play(seed: number, loss: number, ms: number, inject?: number) {
  const sw = stateWorld({
    seed,
    link: { latencyMs: 30, jitterMs: 40, loss, duplicate: 0.01 },
    schema,
    server: { tickHz: 60 },
    client: { predict: step as never },
  });
  sw.server.on('join', (p) => {
    p.entity = sw.server.spawn('player', { x: 0, y: 0, hp: 100 });
  });
  sw.server.on('input', (p, _tick, input) => step(p.entity!.values as P, input));
  const rng = new NonCryptoRng(seed);
  let input: In = { dx: 1, dy: 0 };
  const client = sw.clients[0]!;
  const offsets: { t: number; d: number }[] = [];
  let injectedAt = -1;
  sw.run(ms, {
    beforeTick(tick) {
      if (inject !== undefined && tick === inject) {
        const p = [...sw.server.players()][0]!;
        (p.entity!.values as P).x += 1;
        injectedAt = sw.world.now;
      }
    },
    frame(now) {
      if (rng.nextFloat() < 0.02) input = { dx: rng.nextInt(3) - 1, dy: rng.nextInt(3) - 1 };
      client.input(now, input);
      const own = client.sample(now).find((e) => e.predicted);
      if (own !== undefined && injectedAt >= 0) offsets.push({ t: now - injectedAt, d: Math.abs((own.values as P).x - (client as never as { predictor: { state: Float64Array } }).predictor.state[0]!) });
    },
  });
  return { sw, client, offsets, server: [...sw.server.players()][0]! };
}

describe('prediction with reconciliation over the world', () => {
  for (const loss of [0, 0.1]) {
    it(`100 ms RTT, ${loss * 100} % loss, jitter: every input applied once, and no correction above 1 mm while the server agrees`, () => {
      const { client, server } = play(7, loss, 30_000);
      const s = client.stats(30_000);
      const ps = server.stats();
      expect(ps.inputsApplied).toBeGreaterThan(1700);
      expect(ps.inputsDropped).toBe(0);
      expect(s.corrections).toBe(0);
      expect(s.largestCorrection).toBeLessThanOrEqual(0.001);
      expect(s.inputsUnacked).toBeLessThan(32);
    });
  }

  it('a disagreement (the server moves the player 1 m) is one correction, and its offset fades within 100 ms without jumping', () => {
    const { client, offsets } = play(8, 0.1, 10_000, 300);
    const s = client.stats(10_000);
    expect(s.corrections).toBe(1);
    expect(s.largestCorrection).toBeGreaterThan(0.99);
    const visible = offsets.filter((o) => o.d > 1e-9);
    expect(visible.length).toBeGreaterThan(0);
    const first = visible[0]!.t;
    for (const o of offsets) if (o.t > first + 100) expect(o.d).toBeLessThan(0.001);
    for (let i = 1; i < visible.length; i++) expect(visible[i]!.d).toBeLessThanOrEqual(visible[i - 1]!.d + 1e-9);
  });
});

describe('input clock', () => {
  it('after a long pause (no frames for 3 s) the client sends at most 8 catch-up inputs, and prediction still agrees', () => {
    const sw = stateWorld({ seed: 9, link: { latencyMs: 50, jitterMs: 10, loss: 0.05 }, schema, server: { tickHz: 60 }, client: { predict: step as never } });
    sw.server.on('join', (p) => {
      p.entity = sw.server.spawn('player', { x: 0, y: 0, hp: 100 });
    });
    sw.server.on('input', (p, _tick, input) => step(p.entity!.values as P, input));
    const client = sw.clients[0]!;
    let applied = 0;
    sw.run(8000, {
      frame(now) {
        if (now > 3000 && now < 6000) return;
        client.input(now, { dx: 1, dy: 0 });
        client.sample(now);
      },
      afterTick() {
        applied = [...sw.server.players()][0]?.stats().inputsApplied ?? 0;
      },
    });
    expect(client.stats(8000).corrections).toBe(0);
    expect([...sw.server.players()][0]!.stats().inputsDropped).toBe(0);
    // about 5 s of frames at 60 input ticks a second, plus at most 8 for the pause
    expect(applied).toBeLessThanOrEqual(5 * 60 + 8 + 2);
    expect(applied).toBeGreaterThan(4.5 * 60);
  });
});
