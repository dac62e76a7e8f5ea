// The fleet's matchmaker and token issuer: it knows each game server's address and load, and answers
// `POST /join` (after your own authentication) with a connect token for the least-loaded server.
import { createServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http';
import { generateConnectToken } from 'gamewire';
import { nodeCrypto } from 'gamewire/node';
import { FLEET_PROTOCOL_ID } from './shared.ts';

/** One game server as the matchmaker sees it. */
export interface FleetServer {
  address: string;
  players: number;
  /** Players sent there whose connection the server has not reported yet. */
  pending: number;
  maxPlayers: number;
}

export class Matchmaker {
  private nextClientId = 1n;

  constructor(private readonly key: Uint8Array, readonly servers: FleetServer[]) {}

  /** The least-loaded server with room (players + pending), or undefined when every one is full. */
  pick(): FleetServer | undefined {
    let best: FleetServer | undefined;
    for (const s of this.servers) {
      const load = s.players + s.pending;
      if (load < s.maxPlayers && (best === undefined || load < best.players + best.pending)) best = s;
    }
    return best;
  }

  /** A token for a new player on the least-loaded server. */
  join(nowUnixSeconds: number): { server: string; clientId: bigint; token: Uint8Array } | undefined {
    const s = this.pick();
    if (s === undefined) return undefined;
    s.pending++;
    const clientId = this.nextClientId++;
    const token = generateConnectToken({
      protocolId: FLEET_PROTOCOL_ID, privateKey: this.key, clientId, serverAddresses: [s.address],
      nowUnixSeconds: Math.floor(nowUnixSeconds), expireSeconds: 30, timeoutSeconds: 5, crypto: nodeCrypto,
    });
    return { server: s.address, clientId, token };
  }

  /** A game server reported its player count: pending players have arrived (or given up). */
  report(address: string, players: number): void {
    const s = this.servers.find((x) => x.address === address);
    if (s === undefined) return;
    s.pending = Math.max(0, s.pending - Math.max(0, players - s.players));
    s.players = players;
  }

  /** `POST /join` → `{ server, clientId, token }` (token in base64); 503 when the fleet is full. */
  listen(port: number, host = '127.0.0.1'): Promise<HttpServer> {
    const http = createServer((req: IncomingMessage, res: ServerResponse) => {
      if (req.method !== 'POST' || req.url !== '/join') {
        res.writeHead(404).end();
        return;
      }
      // A real backend authenticates the player here and picks the client id from its account.
      const j = this.join(Date.now() / 1000);
      if (j === undefined) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"fleet full"}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        server: j.server, clientId: j.clientId.toString(), token: Buffer.from(j.token).toString('base64'),
      }));
    });
    return new Promise((resolve) => http.listen(port, host, () => resolve(http)));
  }
}
