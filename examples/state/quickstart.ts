import { ConnectionHost } from 'gamewire';
import { angle, defineSchema, float, int, STATE_LANES, StateClient, StateServer } from 'gamewire/state';
import { seededRandom, World } from 'gamewire/testing';

// The game's state, declared once for server and client.
const schema = defineSchema(
  { ship: { x: float(-500, 500, 0.01), y: float(-500, 500, 0.01), heading: angle(10) } },
  { turn: int(-1, 1), thrust: int(0, 1) },
);
type Ship = { x: number; y: number; heading: number };
type Input = { turn: number; thrust: number };

/** One tick of a ship under one input: the server runs it, and the client to predict its own ship. */
function step(ship: Ship, input: Input): void {
  ship.heading += input.turn * 0.1;
  ship.x += Math.cos(ship.heading) * input.thrust * 0.5;
  ship.y += Math.sin(ship.heading) * input.thrust * 0.5;
}

// A simulated network: 100 ms round trip, 5 % loss each way, seeded, so every run prints the same.
const world = new World({ seed: 1, link: { latencyMs: 50, loss: 0.05 } });
const serverHost = new ConnectionHost({ lanes: [...STATE_LANES], listen: true, random: seededRandom(1) });
const clientHost = new ConnectionHost({ lanes: [...STATE_LANES], random: seededRandom(2) });
world.add('server', serverHost);
world.add('alice', clientHost);

const server = new StateServer({ schema, tickHz: 20 });
server.on('join', (player) => {
  player.entity = server.spawn('ship', { x: 0, y: 0, heading: 0 });
});
server.on('input', (player, _tick, input) => step(player.entity!.values, input));
const asteroid = server.spawn('ship', { x: 100, y: 0, heading: 0 });

const view = new StateClient(clientHost.connect(0, 'server'), { schema, predict: step });

for (let frame = 1; frame <= 180; frame++) {
  // 60 frames a second for 3 s; the server ticks every third frame (20 Hz).
  world.runFor(1000 / 60);
  const now = world.now;
  for (let e = serverHost.pollEvent(); e !== undefined; e = serverHost.pollEvent()) server.handle(e);
  for (let e = clientHost.pollEvent(); e !== undefined; e = clientHost.pollEvent()) view.handle(now, e);
  if (frame % 3 === 0) {
    asteroid.values.y += 1;
    server.tick(now);
  }
  view.input(now, { turn: 1, thrust: 1 });
  const drawn = view.sample(now);
  if (frame % 60 !== 0) continue;
  const s = view.stats(now);
  console.log(`t=${now.toFixed(0)} ms: interpolation delay ${s.playback!.delayMs.toFixed(0)} ms, last snapshot ${s.lastSnapshotBytes} B`);
  for (const e of drawn) {
    const v = e.values as Ship;
    console.log(`  ship ${e.id} ${e.placed} at (${v.x.toFixed(2)}, ${v.y.toFixed(2)})`);
  }
}
const me = [...server.players()][0]!;
console.log(`server: ${me.stats().inputsApplied} inputs applied; client: ${view.stats(world.now).corrections} corrections`);
