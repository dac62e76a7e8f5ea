// A netcode Server and a Client already connecting to it with a token for it, for sans-IO tests that
// pump the two by hand: fixed keys, seeded randomness, virtual time 0.
import { NonCryptoRng } from '../../src/core/rng.js';
import { Client, type ClientEvent, type ClientOptions } from '../../src/netcode/client.js';
import { Server, type ServerEvent, type ServerOptions } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';

/** The server's address in every pair's token. */
export const PAIR_SERVER = '10.0.0.1:40000';

/** Unix seconds at virtual time `now` (ms). */
export const pairUnixTime = (now: number): number => 1_800_000_000 + now / 1000;

/** A seeded `RandomSource`. */
export const seededRandom = (seed: number) => {
  const r = new NonCryptoRng(seed);
  return (out: Uint8Array): void => void r.fill(out);
};

/**
 * A `Server` at `PAIR_SERVER` (with `server` options over the fixed ones) and a `Client` (with
 * `client` options) whose `connect(0, token)` has been called; the token lasts 30 s, with a timeout
 * of `timeoutSeconds`.
 */
export function netcodePair(o: {
  protocolId: bigint; key: Uint8Array; clientId: bigint; timeoutSeconds: number;
  server?: Partial<ServerOptions>; client?: ClientOptions;
}): { server: Server; client: Client } {
  const server = new Server({
    protocolId: o.protocolId, privateKey: o.key, addresses: [PAIR_SERVER], unixTime: pairUnixTime, random: seededRandom(1), ...o.server,
  });
  const client = new Client(o.client);
  client.connect(0, generateConnectToken({
    protocolId: o.protocolId, privateKey: o.key, clientId: o.clientId, serverAddresses: [PAIR_SERVER],
    nowUnixSeconds: Math.floor(pairUnixTime(0)), expireSeconds: 30, timeoutSeconds: o.timeoutSeconds, random: seededRandom(3),
  }));
  return { server, client };
}

/**
 * Pump a pair by hand for `ms` of virtual time from `from`, every 5 ms: both ends' timers, then
 * `exchange(now)` (the caller's transmits and deliveries), then every event into the lists. Returns
 * the time it stopped at.
 */
export function pumpPair(
  server: Server, client: Client, from: number, ms: number, exchange: (now: number) => void,
  serverEvents: ServerEvent[], clientEvents: ClientEvent[],
): number {
  let now = from;
  for (const end = from + ms; now < end; now += 5) {
    client.handleTimeout(now);
    server.handleTimeout(now);
    exchange(now);
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) serverEvents.push(e);
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) clientEvents.push(e);
  }
  return now;
}
