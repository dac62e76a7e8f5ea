import { describe, expect, it } from 'vitest';
import { World } from 'gamewire/testing';
import { GameClient, GameServer } from './game.js';

/** Ten seconds of a three-player match; returns what everyone saw, with virtual times. */
function play(seed: number) {
  const world = new World({ seed, link: 'wifi' }); // every route not set otherwise: home Wi-Fi
  world.route('carol', 'server', { link: 'mobile' }); // carol plays over 4G, both ways
  world.route('server', 'carol', { link: 'mobile' });

  const server = new GameServer();
  world.add('server', server);
  const clients = new Map<string, GameClient>();
  for (const name of ['alice', 'bob', 'carol']) {
    const client = new GameClient();
    world.addPeer(name, client, 'server');
    clients.set(name, client);
  }

  // At 3 s bob's Wi-Fi goes silent for 2 s, both ways; what is already in flight still arrives.
  world.at(3000, () => {
    const outage = [{ startMs: 3000, endMs: 5000 }];
    world.link('bob', 'server').reconfigure(world.now, { outage });
    world.link('server', 'bob').reconfigure(world.now, { outage });
  });

  const log: string[] = [];
  const collect = (): boolean => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) log.push(`${world.now} server ${e}`);
    for (const [name, c] of clients) for (let e = c.pollEvent(); e !== undefined; e = c.pollEvent()) log.push(`${world.now} ${name} ${e}`);
    return false;
  };
  world.runUntil(collect, { maxTimeMs: 10_000 });
  return { log, clients, server, stats: world.stats };
}

describe('my game on a simulated network', () => {
  it('everyone joins; bob drops out during his outage and comes back', () => {
    const { log, clients, server } = play(42);
    const lines = (who: string) => log.filter((l) => l.includes(who)).map((l) => l.replace(/^[\d.]+ /, ''));
    expect(lines('alice')).toEqual(['server join alice', 'alice connected']);
    expect(lines('carol')).toEqual(['server join carol', 'carol connected']);
    expect(lines('bob')).toEqual(['server join bob', 'bob connected', 'bob lost', 'server leave bob', 'server join bob', 'bob connected']);
    const t = (line: string) => Number([...log].reverse().find((l) => l.endsWith(line))!.split(' ')[0]);
    expect(t('bob lost')).toBeGreaterThan(3000);
    expect(t('bob lost')).toBeLessThan(3600);
    expect(t('server leave bob')).toBeGreaterThan(4000);
    expect(t('server join bob')).toBeGreaterThanOrEqual(5000);
    // Alice never noticed: a snapshot from nearly every one of the 200 ticks.
    expect(clients.get('alice')!.snapshots).toBeGreaterThan(190);
    expect(server.tick).toBeGreaterThan(195);
  });

  it('is deterministic: same seed, same match; another seed, another match', () => {
    const a = play(7);
    expect(play(7).log).toEqual(a.log);
    expect(play(7).stats).toEqual(a.stats);
    expect(play(8).stats).not.toEqual(a.stats);
  });
});
