/**
 * Server CPU of the state layer on S1, apart from the network: a `StateServer` replays the trace with
 * `clients` joined clients on fake connections (each snapshot acknowledged two ticks later, as a
 * 100 ms round trip at 20 Hz does), and the time of each `tick` is split into the part every server
 * pays once (reading and quantizing 900 entities) and the part each client adds (its snapshot:
 * candidates, priorities, delta encoding), from runs with 1 and with `clients` clients.
 */
import type { ConnectionStats } from '../../src/connection/session.js';
import { StateServer, type StateLink } from '../../src/state/server.js';
import { Kind } from '../../src/state/wire.js';
import { S1_SCHEMA } from './gamewire.js';
import { TraceState, type Trace } from './trace.js';

class FakeLink implements StateLink {
  next = 0;
  pending: number[] = [];
  send(lane: number): number {
    if (lane === 1) this.pending.push(this.next);
    return this.next++;
  }
  stats(): ConnectionStats {
    return { pacingRateBytesPerSec: 1_000_000 } as ConnectionStats;
  }
}

/** Median µs per tick of `server.tick` with `clients` clients, over the trace's ticks after `warm` of them. */
export function tickMicros(trace: Trace, clients: number, warm = 100): number[] {
  const server = new StateServer({ schema: S1_SCHEMA, tickHz: trace.tickHz, lagCompensation: { historyMs: 0, maxRewindMs: 0 } });
  const replay = new TraceState(trace);
  const byTrace = new Map<number, { values: Record<string, number> }>();
  for (const [id, v] of replay.entities) byTrace.set(id, server.spawn('unit', { x: v[0]!, y: v[1]!, angle: v[2]! }) as never);
  const links = Array.from({ length: clients }, () => new FakeLink());
  const hello = Uint8Array.of(Kind.Hello, 0, 0, 0, 0);
  new DataView(hello.buffer).setUint32(1, S1_SCHEMA.hash, true);
  for (const l of links) server.handle({ type: 'message', connection: l, lane: 0, bytes: hello });
  const times: number[] = [];
  for (let k = 0; k < trace.ticks.length; k++) {
    const step = replay.apply();
    step.changed.forEach((id, i) => {
      const e = byTrace.get(id)!.values;
      e.x = step.values[i * 3]!;
      e.y = step.values[i * 3 + 1]!;
      e.angle = step.values[i * 3 + 2]!;
    });
    for (const l of links) {
      while (l.pending.length > 2) server.handle({ type: 'delivery', connection: l, lane: 1, id: l.pending.shift()!, delivered: true });
    }
    const t0 = performance.now();
    server.tick(k * trace.tickMs);
    const t1 = performance.now();
    if (k >= warm) times.push((t1 - t0) * 1000);
  }
  return times;
}
