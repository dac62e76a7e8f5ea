import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../../src/core/rng.js';
import { angle, defineSchema, float, int } from '../../src/state/schema.js';
import type { Entity } from '../../src/state/server.js';
import { stateWorld } from './harness.js';

const types = { unit: { x: float(-100, 100, 0.01), y: float(-100, 100, 0.01), a: angle(12), hp: int(0, 100) } };
const schema = defineSchema(types, { dx: int(-1, 1), dy: int(-1, 1) });
type S = typeof types;

/** Rough lines: 100 ms RTT, ±40 ms jitter (so reordering), duplicates, i.i.d. and bursty loss. */
function link(loss: number) {
  return { latencyMs: 10, jitterMs: 80, loss, duplicate: 0.02, gilbertElliott: loss > 0 ? { pGoodToBad: 0.01, pBadToGood: 0.3, lossGood: 0, lossBad: 0.8 } : undefined };
}

function churn(seed: number, loss: number, opts: { maxBytes?: number; entities?: number } = {}) {
  const sw = stateWorld({ seed, link: link(loss), schema, server: { budget: opts.maxBytes ? { maxBytes: opts.maxBytes, minBytes: Math.min(200, opts.maxBytes) } : undefined }, clients: 2 });
  const rng = new NonCryptoRng(seed);
  const alive: Entity<S>[] = [];
  const spawn = () => alive.push(sw.server.spawn('unit', { x: rng.nextFloat() * 200 - 100, y: rng.nextFloat() * 200 - 100, a: rng.nextFloat() * 7, hp: 100 }));
  for (let i = 0; i < (opts.entities ?? 40); i++) spawn();
  const truth = new Map<number, Map<number, string>>();
  let moving = true;
  const problems: string[] = [];
  let checked = 0;
  let overBudget = 0;
  const lastRender = [-Infinity, -Infinity];
  let skipped = 0;
  sw.run(12_000, {
    beforeTick() {
      if (!moving) return;
      for (const e of alive) {
        if (rng.nextFloat() < 0.3) {
          e.values.x = Math.max(-100, Math.min(100, e.values.x + rng.nextFloat() - 0.5));
          e.values.y += rng.nextFloat() * 0.2 - 0.1;
          e.values.a += 0.05;
          if (rng.nextFloat() < 0.1) e.values.hp = Math.floor(rng.nextFloat() * 101);
        }
      }
      if (rng.nextFloat() < 0.3 && alive.length > 0) sw.server.despawn(alive.splice(Math.floor(rng.nextFloat() * alive.length), 1)[0]!);
      if (rng.nextFloat() < 0.3) spawn();
    },
    afterTick(tick) {
      const m = new Map<number, string>();
      for (const e of alive) m.set(e.id, JSON.stringify(e.values));
      truth.set(tick, m);
      truth.delete(tick - 200);
      for (const p of sw.server.players()) {
        const s = p.stats();
        if (s.snapshotBytes > s.budgetBytes) overBudget++;
        skipped += s.skippedByBudget;
      }
    },
    frame() {
      if (sw.world.now > 9000) moving = false;
      sw.clients.forEach((c, i) => {
        c.sample(sw.world.now);
        const render = c.stats(sw.world.now).playback?.renderTick ?? -Infinity;
        if (render < lastRender[i]!) problems.push(`t=${sw.world.now} client ${i}: render time went back from ${lastRender[i]} to ${render}`);
        lastRender[i] = render;
      });
      for (const c of sw.clients) {
        for (const id of c.ids()) {
          const held = c.latest(id)!;
          const want = truth.get(held.tick)?.get(id);
          checked++;
          if (want === undefined) problems.push(`t=${sw.world.now} entity ${id} held at tick ${held.tick}, when it was not alive`);
          else if (want !== JSON.stringify(held.values)) problems.push(`t=${sw.world.now} entity ${id} at tick ${held.tick}: ${JSON.stringify(held.values)} != ${want}`);
        }
      }
    },
  });
  const final = [...alive].map((e) => e.id).sort((a, b) => a - b);
  return { sw, problems, checked, overBudget, skipped, final, alive };
}

describe('snapshots over lossy, jittery, reordering, duplicating links', () => {
  for (const loss of [0, 0.1, 0.2]) {
    for (const seed of [1, 2]) {
      it(`loss ${loss * 100} % seed ${seed}: every held state equals the server's at its tick, nothing applies to another entity, render time never goes back, and both clients converge`, () => {
        const r = churn(seed, loss);
        if (process.env.STATE_DEBUG) console.log(loss, seed, r.checked, r.skipped, r.final.length, JSON.stringify(r.sw.clients[0]!.counters()), JSON.stringify([...r.sw.server.players()][0]!.stats()), JSON.stringify(r.sw.server.counters()));
        expect(r.problems.slice(0, 5)).toEqual([]);
        expect(r.checked).toBeGreaterThan(10_000);
        expect(r.overBudget).toBe(0);
        for (const c of r.sw.clients) {
          expect(c.ids().sort((a, b) => a - b)).toEqual(r.final);
          for (const e of r.alive) expect(c.latest(e.id)!.values).toEqual(e.values);
          expect(c.counters().malformed).toBe(0);
        }
        expect(r.sw.server.counters().malformed).toBe(0);
      });
    }
  }

  it('a tight budget is never exceeded, skips entities, and every entity still gets through (priority accumulates)', () => {
    const r = churn(3, 0.05, { maxBytes: 120, entities: 120 });
    expect(r.problems.slice(0, 5)).toEqual([]);
    expect(r.overBudget).toBe(0);
    expect(r.skipped).toBeGreaterThan(100);
    for (const c of r.sw.clients) {
      expect(c.ids().sort((a, b) => a - b)).toEqual(r.final);
      for (const e of r.alive) expect(c.latest(e.id)!.values).toEqual(e.values);
    }
  });
});

describe('interest', () => {
  it('a grid interest creates entities entering a client view and destroys those leaving it, over loss; each client ends holding exactly what it sees', async () => {
    const { GridInterest } = await import('../../src/state/interest.js');
    const sw = stateWorld({ seed: 5, link: link(0.1), schema, clients: 2 });
    const grid = new GridInterest(sw.server, { radius: 30, hysteresis: 0 });
    sw.server.interest(grid.relevant);
    const rng = new NonCryptoRng(5);
    const all: Entity<S>[] = [];
    for (let i = 0; i < 200; i++) all.push(sw.server.spawn('unit', { x: rng.nextFloat() * 200 - 100, y: rng.nextFloat() * 200 - 100, a: 0, hp: 1 }));
    let joined = 0;
    sw.server.on('join', (p) => {
      p.entity = sw.server.spawn('unit', { x: joined++ === 0 ? -50 : 50, y: 0, a: 0, hp: 100 });
    });
    let moving = true;
    let created = 0;
    let destroyed = 0;
    let before = [new Set<number>(), new Set<number>()];
    sw.run(15_000, {
      beforeTick() {
        if (!moving) return;
        for (const p of sw.server.players()) p.entity!.values.y = Math.max(-100, Math.min(100, p.entity!.values.y + 0.5));
        for (const e of all) if (rng.nextFloat() < 0.2) e.values.x = Math.max(-100, Math.min(100, e.values.x + rng.nextFloat() * 2 - 1));
      },
      frame() {
        if (sw.world.now > 12_000) moving = false;
        const now = sw.clients.map((c) => new Set(c.ids()));
        now.forEach((s, i) => {
          for (const id of s) if (!before[i]!.has(id)) created++;
          for (const id of before[i]!) if (!s.has(id)) destroyed++;
        });
        before = now;
      },
    });
    expect(created).toBeGreaterThan(60);
    expect(destroyed).toBeGreaterThan(30);
    const players = [...sw.server.players()];
    for (let i = 0; i < 2; i++) {
      const c = sw.clients[i]!;
      const me = players.find((p) => c.ids().includes(p.entity!.id))!;
      const want = [...sw.server.entities()]
        .filter((e) => e === me.entity || Math.hypot(e.values.x - me.entity!.values.x, e.values.y - me.entity!.values.y) <= 30)
        .map((e) => e.id)
        .sort((a, b) => a - b);
      expect(c.ids().sort((a, b) => a - b)).toEqual(want);
    }
  });
});
