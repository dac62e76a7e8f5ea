import { ConnectionHost, type Connection, type ConnectionEvent } from '../../src/connection/index.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import type { LinkConfig } from '../../src/sim/config.js';
import { World } from '../../src/sim/world.js';
import { StateClient, type StateClientOptions } from '../../src/state/client.js';
import type { Fields, Schema, SchemaTypes } from '../../src/state/schema.js';
import { StateServer, type StateServerOptions } from '../../src/state/server.js';
import { STATE_LANES } from '../../src/state/wire.js';

/** A server and `clients` clients of the state layer on unsecured connections over a seeded world. */
export interface StateWorld<T extends SchemaTypes, I extends Fields> {
  world: World;
  server: StateServer<T, I>;
  clients: StateClient<T, I>[];
  /** Connections as the server sees them, by client index (filled as they connect). */
  serverLinks: Connection[];
  /** Run for `ms` of virtual time: server ticks at its rate, clients sample and send inputs every `frameMs`. */
  run(ms: number, hooks?: { beforeTick?(tick: number): void; afterTick?(tick: number): void; frame?(now: number, i: number): void }): void;
}

export function stateWorld<T extends SchemaTypes, I extends Fields>(opts: {
  seed: number;
  link: Partial<LinkConfig>;
  schema: Schema<T, I>;
  server?: Omit<StateServerOptions<T, I>, 'schema'>;
  client?: Omit<StateClientOptions<T, I>, 'schema'>;
  clients?: number;
  frameMs?: number;
  random?: (out: Uint8Array) => void;
}): StateWorld<T, I> {
  const rng = new NonCryptoRng(opts.seed ^ 0x5eed);
  const random = opts.random ?? ((out: Uint8Array) => { for (let i = 0; i < out.length; i++) out[i] = rng.nextU32() & 0xff; });
  const world = new World({ seed: opts.seed, link: opts.link });
  const lanes = [...STATE_LANES];
  const serverHost = new ConnectionHost({ lanes, listen: true, random });
  world.add('server', serverHost);
  const server = new StateServer<T, I>({ schema: opts.schema, ...opts.server });
  const clients: StateClient<T, I>[] = [];
  const hosts: ConnectionHost[] = [];
  const serverLinks: Connection[] = [];
  const n = opts.clients ?? 1;
  for (let i = 0; i < n; i++) {
    const host = new ConnectionHost({ lanes, random });
    world.add(`c${i}`, host);
    const conn = host.connect(0, 'server');
    hosts.push(host);
    clients.push(new StateClient<T, I>(conn, { schema: opts.schema, ...opts.client }));
  }
  const drain = (): void => {
    for (let e = serverHost.pollEvent(); e !== undefined; e = serverHost.pollEvent()) {
      const ev = e as ConnectionEvent;
      if (ev.type === 'connected') {
        const idx = Number(ev.connection.address.slice(1));
        serverLinks[idx] = ev.connection;
      }
      server.handle(ev);
    }
    hosts.forEach((h, i) => {
      for (let e = h.pollEvent(); e !== undefined; e = h.pollEvent()) clients[i]!.handle(world.now, e);
    });
  };
  const frameMs = opts.frameMs ?? 1000 / 60;
  const tickMs = 1000 / server.tickHz;
  let nextTick = tickMs;
  let nextFrame = frameMs;
  let frames = 0;
  return {
    world,
    server,
    clients,
    serverLinks,
    run(ms, hooks = {}) {
      const end = world.now + ms;
      while (world.now < end) {
        const at = Math.min(nextTick, nextFrame, end);
        world.runFor(at - world.now);
        drain();
        if (world.now >= nextTick) {
          hooks.beforeTick?.(server.tickNo + 1);
          server.tick(world.now);
          hooks.afterTick?.(server.tickNo);
          nextTick += tickMs;
          world.drain();
          drain();
        }
        if (world.now >= nextFrame) {
          hooks.frame?.(world.now, frames++);
          nextFrame += frameMs;
          world.drain();
          drain();
        }
      }
    },
  };
}
