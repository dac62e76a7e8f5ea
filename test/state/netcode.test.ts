// The state layer over netcode's Server and Client (encrypted), as it runs over the unsecured
// ConnectionHost in the other tests: same StateServer, same StateClient, only the events' shape differs.
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../../src/core/rng.js';
import { seededRandom } from '../../src/core/random.js';
import { Client } from '../../src/netcode/client.js';
import { Server } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';
import { World } from '../../src/sim/world.js';
import { StateClient } from '../../src/state/client.js';
import { defineSchema, float, int } from '../../src/state/schema.js';
import { StateServer } from '../../src/state/server.js';
import { STATE_LANES } from '../../src/state/wire.js';

const PROTOCOL = 0x5157415445n;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 3 + 5);
const SERVER = '10.0.0.1:40000';
const unixTime = (now: number): number => 1_800_000_000 + now / 1000;
const types = { ship: { x: float(-100, 100, 0.01), y: float(-100, 100, 0.01) } };
const schema = defineSchema(types, { dx: int(-1, 1) });
type In = { dx: number };
const step = (v: { x: number }, i: In): void => {
  v.x += i.dx * 0.25;
};

describe('the state layer over netcode 1.02', () => {
  it('two clients join, predict their own ship, see the other one, and end holding the server state', () => {
    const world = new World({ seed: 4, link: { latencyMs: 30, jitterMs: 40, loss: 0.1 } });
    const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, random: seededRandom(4), lanes: [...STATE_LANES] });
    world.add(SERVER, server);
    const state = new StateServer({ schema, tickHz: 30 });
    state.on('join', (p) => {
      p.entity = state.spawn('ship', { x: 0, y: state.entityCount * 10 });
    });
    state.on('input', (p, _t, input) => step(p.entity!.values, input));
    const rocks = Array.from({ length: 20 }, (_, i) => state.spawn('ship', { x: i, y: -50 }));
    const clients = [1n, 2n].map((id) => {
      const c = new Client({ lanes: [...STATE_LANES] });
      world.add(`10.0.0.${1 + Number(id)}:5000`, c);
      c.connect(0, generateConnectToken({ protocolId: PROTOCOL, privateKey: KEY, clientId: id, serverAddresses: [SERVER], nowUnixSeconds: unixTime(0), expireSeconds: 60, timeoutSeconds: 5, userData: new Uint8Array(256), random: seededRandom(Number(id)) }));
      return { c, view: new StateClient(c, { schema, predict: step as never }) };
    });
    const rng = new NonCryptoRng(4);
    let moving = true;
    for (let t = 0; t < 12_000; t += 1000 / 60) {
      world.runFor(1000 / 60);
      for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) state.handle(e);
      for (const { c, view } of clients) for (let e = c.pollEvent(); e !== undefined; e = c.pollEvent()) view.handle(world.now, e);
      if (Math.floor(t / (1000 / 30)) !== Math.floor((t + 1000 / 60) / (1000 / 30))) {
        if (moving) for (const r of rocks) if (rng.nextFloat() < 0.2) r.values.y = Math.max(-100, r.values.y - 0.3);
        state.tick(world.now);
      }
      if (world.now > 10_000) moving = false;
      for (const { view } of clients) {
        view.input(world.now, { dx: moving ? 1 : 0 });
        view.sample(world.now);
      }
    }
    const all = [...state.entities()];
    expect(all.length).toBe(22);
    for (const { view } of clients) {
      expect(view.ids().sort((a, b) => a - b)).toEqual(all.map((e) => e.id).sort((a, b) => a - b));
      for (const e of all) expect(view.latest(e.id)!.values).toEqual(e.values);
      const s = view.stats(world.now);
      expect(s.corrections).toBe(0);
      expect(s.missingBaseline + s.malformed).toBe(0);
    }
    for (const p of state.players()) expect(p.stats().inputsApplied).toBeGreaterThan(250);
  });
});
