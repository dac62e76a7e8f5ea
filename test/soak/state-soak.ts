// The state layer's soak: a StateServer and a StateClient over a lossy, reordering pipe (no world,
// to reach 10^6 ticks in minutes), entities spawned, changed and despawned at random every tick.
// Every `calmEvery` ticks the churn and the loss pause for 30 ticks, and the client must then hold
// exactly the server's entities with exactly its values; the client's memory must stay bounded.
import { NonCryptoRng } from '../../src/core/rng.js';
import type { ConnectionStats } from '../../src/connection/session.js';
import { StateClient } from '../../src/state/client.js';
import { angle, bool, defineSchema, float, int } from '../../src/state/schema.js';
import { type Entity, StateServer, type StateLink } from '../../src/state/server.js';

const types = {
  unit: { x: float(-200, 200, 0.01), y: float(-200, 200, 0.01), a: angle(12), hp: int(0, 100) },
  flag: { up: bool(), team: int(0, 3) },
};
const schema = defineSchema(types, { dx: int(-1, 1) });

interface Msg { at: number; lane: number; bytes: Uint8Array; id: number }

export interface StateSoakResult {
  seed: number;
  ticks: number;
  calmChecks: number;
  spawned: number;
  despawned: number;
  snapshots: number;
  lost: number;
  maxAlive: number;
  maxClientRecords: number;
  maxClientVisible: number;
  failures: string[];
}

export function runStateSoak(seed: number, ticks: number, progress?: (done: number) => void, calmEvery = 5000): StateSoakResult {
  const rng = new NonCryptoRng(seed);
  const toClient: Msg[] = [];
  const toServer: Msg[] = [];
  const outcomes: { at: number; id: number; delivered: boolean }[] = [];
  let tick = 0;
  let loss = 0.1;
  let nextId = 0;
  const delay = (): number => 1 + rng.nextInt(4);
  const link: StateLink = {
    send(lane, bytes) {
      const id = nextId++;
      const lost = lane !== 0 && rng.nextFloat() < loss;
      const at = tick + delay();
      if (!lost) toClient.push({ at, lane, bytes: bytes.slice(), id });
      if (lane === 1) outcomes.push({ at: at + delay(), id, delivered: !lost });
      return id;
    },
    stats: () => ({ pacingRateBytesPerSec: 200_000 }) as ConnectionStats,
  };
  const clientLink: StateLink = {
    send(lane, bytes) {
      if (lane === 0 || rng.nextFloat() >= loss) toServer.push({ at: tick + delay(), lane, bytes: bytes.slice(), id: 0 });
      return 0;
    },
    stats: () => undefined,
  };
  const server = new StateServer({ schema, maxEntities: 512, lagCompensation: { historyMs: 0, maxRewindMs: 0 } });
  const client = new StateClient(clientLink, { schema });
  client.handle(0, { type: 'connected' });
  const alive: Entity<typeof types>[] = [];
  const r: StateSoakResult = { seed, ticks, calmChecks: 0, spawned: 0, despawned: 0, snapshots: 0, lost: 0, maxAlive: 0, maxClientRecords: 0, maxClientVisible: 0, failures: [] };
  const due = <T extends { at: number }>(q: T[]): T[] => {
    const out: T[] = [];
    for (let i = 0; i < q.length; ) {
      if (q[i]!.at <= tick) out.push(q.splice(i, 1)[0]!);
      else i++;
    }
    return out;
  };
  for (tick = 1; tick <= ticks && r.failures.length < 5; tick++) {
    const now = tick * 50;
    const calm = tick % calmEvery >= calmEvery - 30;
    loss = calm ? 0 : 0.1;
    for (const m of due(toServer)) server.handle({ type: 'message', connection: link, lane: m.lane, bytes: m.bytes });
    for (const o of due(outcomes)) {
      server.handle({ type: 'delivery', connection: link, lane: 1, id: o.id, delivered: o.delivered });
      if (!o.delivered) r.lost++;
    }
    for (const m of due(toClient)) client.handle(now, { type: 'message', lane: m.lane, bytes: m.bytes });
    if (!calm) {
      for (const e of alive) {
        if (e.type === 'unit' && rng.nextFloat() < 0.2) {
          const v = e.values as { x: number; y: number; a: number; hp: number };
          v.x += rng.nextFloat() * 2 - 1;
          v.y += rng.nextFloat() * 2 - 1;
          v.a += 0.1;
          if (rng.nextFloat() < 0.05) v.hp = rng.nextInt(101);
        } else if (e.type === 'flag' && rng.nextFloat() < 0.05) (e.values as { up: boolean }).up = !(e.values as { up: boolean }).up;
      }
      const churn = rng.nextInt(6);
      for (let i = 0; i < churn && alive.length > 0; i++) {
        if (rng.nextFloat() < 0.5) {
          server.despawn(alive.splice(rng.nextInt(alive.length), 1)[0]!);
          r.despawned++;
        }
      }
      for (let i = 0; i < churn && server.entityCount < 400; i++) {
        if (rng.nextFloat() < 0.5) {
          alive.push(rng.nextFloat() < 0.8
            ? server.spawn('unit', { x: rng.nextFloat() * 100, y: rng.nextFloat() * 100, a: 0, hp: 100 })
            : server.spawn('flag', { up: false, team: rng.nextInt(4) }));
          r.spawned++;
        }
      }
    }
    server.tick(now);
    client.sample(now);
    r.maxAlive = Math.max(r.maxAlive, alive.length);
    const recs = (client as never as { records: Map<number, unknown> }).records.size;
    const vis = (client as never as { visible: Map<number, unknown> }).visible.size;
    r.maxClientRecords = Math.max(r.maxClientRecords, recs);
    r.maxClientVisible = Math.max(r.maxClientVisible, vis);
    if (recs > 128) r.failures.push(`tick ${tick}: the client keeps ${recs} snapshots (bound 128)`);
    if (vis > 2 * 512) r.failures.push(`tick ${tick}: the client draws ${vis} entities (bound 1024)`);
    if (tick % calmEvery === calmEvery - 1) {
      r.calmChecks++;
      const want = alive.map((e) => e.id).sort((a, b) => a - b);
      const got = client.ids().sort((a, b) => a - b);
      if (JSON.stringify(want) !== JSON.stringify(got)) r.failures.push(`tick ${tick}: client holds ${got.length} entities, server ${want.length} (first difference: ${want.find((x) => !got.includes(x)) ?? got.find((x) => !want.includes(x))})`);
      for (const e of alive) {
        const held = client.latest(e.id);
        if (held !== undefined && JSON.stringify(held.values) !== JSON.stringify(e.values)) r.failures.push(`tick ${tick}: entity ${e.id}: client ${JSON.stringify(held.values)}, server ${JSON.stringify(e.values)}`);
      }
      progress?.(tick);
    }
  }
  r.snapshots = client.stats(ticks * 50).snapshots;
  const c = client.counters();
  if (c.malformed + c.missingBaseline > 0) r.failures.push(`client counters: ${JSON.stringify(c)}`);
  return r;
}
