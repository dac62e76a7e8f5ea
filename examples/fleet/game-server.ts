// One game server process of the fleet: a netcode `Server` on PORT that echoes every message, and
// reports its load on stdout ("ready PORT", then "players N" whenever it changes) for the matchmaker.
// Servers share nothing but the private key (GAMEWIRE_KEY, 64 hex digits): scaling out is more of these.
import { Server, type ServerEvent } from 'gamewire';
import { nodeCrypto, systemUnixTime, UdpDriver } from 'gamewire/node';
import { FLEET_PROTOCOL_ID, keyFromEnv } from './shared.ts';

const port = Number(process.argv[2]);
const host = '127.0.0.1';
const server = new Server({
  protocolId: FLEET_PROTOCOL_ID, privateKey: keyFromEnv(), addresses: [`${host}:${port}`], unixTime: systemUnixTime,
  maxClients: 64, crypto: nodeCrypto,
});
const driver = await UdpDriver.openEndpoint(server, { host, port });
let players = -1;
const report = (): void => {
  if (server.size === players) return;
  players = server.size;
  process.stdout.write(`players ${players}\n`);
};
driver.on('event', (e: ServerEvent) => {
  if (e.type === 'message') e.client.send(e.lane, e.bytes);
  report();
});
process.stdout.write(`ready ${port}\n`);
report();
process.on('SIGTERM', () => {
  server.close();
  void driver.close({ linger: true }).then(() => process.exit(0));
});
