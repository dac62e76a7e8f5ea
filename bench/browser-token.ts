import type { ServerResponse } from 'node:http';
import { systemUnixTime } from '../src/adapters/node/udp-driver.js';
import { generateConnectToken } from '../src/netcode/wire.js';

/**
 * The `/token` answer of the browser benches' page servers (bench/browser-server.ts,
 * bench/stall-probe-server.ts): a fresh connect token for `serverAddress`, base64, client ids
 * counting up from 1; valid 300 s, timeout 10 s.
 */
export function tokenAnswer(protocolId: bigint, privateKey: Uint8Array, serverAddress: string): (res: ServerResponse) => void {
  let nextClient = 1n;
  return (res) => {
    const token = generateConnectToken({
      protocolId, privateKey, clientId: nextClient++, serverAddresses: [serverAddress],
      nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 300, timeoutSeconds: 10,
    });
    res.writeHead(200, { 'content-type': 'text/plain' }).end(Buffer.from(token).toString('base64'));
  };
}
