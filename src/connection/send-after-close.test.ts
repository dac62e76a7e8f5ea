// A message and a DISCONNECT that arrive together: the message event comes first, and answering it
// on the connection that has just closed is a counted drop (send returns −1), never a throw.
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../core/rng.js';
import { World } from '../sim/world.js';
import { ConnectionHost } from './host.js';

const LANES = [{ mode: 'reliable-ordered' }, { mode: 'block' }] as const;

function seeded(seed: number): (out: Uint8Array) => void {
  const rng = new NonCryptoRng(seed);
  return (out) => void rng.fill(out);
}

describe('Connection: send after close', () => {
  it('a message and a DISCONNECT in one batch: message first, the echo returns -1 and is counted; cancel returns false', () => {
    const world = new World({ seed: 1, link: { latencyMs: 10 } });
    const server = new ConnectionHost({ lanes: LANES, listen: true, random: seeded(2) });
    const client = new ConnectionHost({ lanes: LANES, random: seeded(3) });
    world.add('server', server);
    world.add('client', client);
    const conn = client.connect(world.now, 'server');
    world.runUntil(() => {
      for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent());
      return conn.state === 'connected' && server.connections().length === 1;
    }, { maxTimeMs: 1000 });
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent());
    conn.send(0, Uint8Array.of(1, 2, 3));
    world.drain();
    conn.close();
    world.runFor(100);
    const seen: string[] = [];
    const echoed: number[] = [];
    let peer;
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      seen.push(e.type);
      peer = e.connection;
      if (e.type === 'message') echoed.push(e.connection.send(e.lane, e.bytes));
    }
    expect(seen).toEqual(['connected', 'message', 'disconnected']);
    expect(echoed).toEqual([-1]);
    expect(peer!.counters().sendsAfterClose).toBe(1);
    expect(conn.send(1, new Uint8Array(10))).toBe(-1);
    expect(conn.cancel(1, 1)).toBe(false);
    expect(conn.counters().sendsAfterClose).toBe(1);
  });
});
