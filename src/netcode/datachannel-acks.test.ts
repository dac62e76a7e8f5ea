// Over a data channel an ack-only datagram costs 96 bytes of headers and a SACK from the other end's
// SCTP. docs/browser.md (Limits) offers `acks: { maxAckDelayMs: 25 }` for fewer bytes: acks then wait
// for the next message, and a client echoing at 50 Hz sends one datagram per message, where the
// default 5 ms sends a second one to ack each echo (with riders of the lanes' redundancy, so the
// other end acks that one too). Sans-IO, 1 ms steps of virtual time, echoes arriving mid-way between
// two sends.
import { describe, expect, it } from 'vitest';
import type { LaneConfig } from '../connection/options.js';
import { NonCryptoRng } from '../core/rng.js';
import { pairUnixTime, PAIR_SERVER, seededRandom } from '../../test/harness/netcode.js';
import { Client } from './client.js';
import { type AckOptions } from '../ack/acks.js';
import { WEBRTC_SERVER_TRANSPORT, WEBRTC_TRANSPORT } from './options.js';
import { Server } from './server.js';
import { generateConnectToken } from './wire.js';

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 40);
const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }];
const AT = 'webrtc:1';
const COUNT = 300;

/**
 * `COUNT` messages of 100 bytes, one every 20 ms, echoed by the server; 57 ms up and 50 ms down, each
 * datagram lost with probability `loss` (seeded). Returns the datagrams each end sent per message
 * while the messages went, and the echoes in arrival order.
 */
function echo(loss: number, acks?: AckOptions) {
  const server = new Server({
    protocolId: 7n, privateKey: KEY, addresses: [PAIR_SERVER], unixTime: pairUnixTime, random: seededRandom(1), lanes: LANES,
    ...(acks === undefined ? {} : { acks }),
  });
  server.registerTransport('webrtc:', WEBRTC_SERVER_TRANSPORT);
  const client = new Client({ lanes: LANES, ...(acks === undefined ? {} : { acks }) }, WEBRTC_TRANSPORT);
  client.connect(0, generateConnectToken({
    protocolId: 7n, privateKey: KEY, clientId: 1n, serverAddresses: [PAIR_SERVER], nowUnixSeconds: Math.floor(pairUnixTime(0)),
    expireSeconds: 30, timeoutSeconds: 10, random: seededRandom(2),
  }));
  const rng = new NonCryptoRng(5);
  const out = new Uint8Array(1500);
  const up: { due: number; bytes: Uint8Array }[] = [];
  const down: { due: number; bytes: Uint8Array }[] = [];
  const echoes: number[] = [];
  let sent = 0;
  let start = -1;
  const counts = { client: 0, server: 0 };
  for (let now = 0; now < 30_000 && echoes.length < COUNT; now++) {
    client.handleTimeout(now);
    server.handleTimeout(now);
    while (up.length > 0 && up[0]!.due <= now) server.handleDatagram(now, AT, up.shift()!.bytes);
    while (down.length > 0 && down[0]!.due <= now) client.handleDatagram(now, PAIR_SERVER, down.shift()!.bytes);
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) if (e.type === 'message') e.client.send(e.lane, e.bytes);
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) if (e.type === 'message') echoes.push(e.bytes[0]! | (e.bytes[1]! << 8));
    if (client.state === 'connected' && start < 0) start = now + 200;
    const sending = start >= 0 && now >= start && sent < COUNT;
    if (sending && (now - start) % 20 === 0) {
      const m = new Uint8Array(100);
      m[0] = sent & 0xff;
      m[1] = sent >> 8;
      client.send(0, m);
      sent++;
    }
    for (let t = client.pollTransmit(now, out); t !== undefined; t = client.pollTransmit(now, out)) {
      if (sending) counts.client++;
      if (!rng.chance(loss)) up.push({ due: now + 57, bytes: out.slice(0, t.length) });
    }
    for (let t = server.pollTransmit(now, out); t !== undefined; t = server.pollTransmit(now, out)) {
      if (sending) counts.server++;
      if (!rng.chance(loss)) down.push({ due: now + 50, bytes: out.slice(0, t.length) });
    }
  }
  return { client: counts.client / COUNT, server: counts.server / COUNT, echoes };
}

describe('acks over a data channel', () => {
  const all = Array.from({ length: COUNT }, (_, i) => i);

  it('with maxAckDelayMs 25 ride on the next message: one datagram per message each way, where the default sends two from the client', () => {
    const slow = echo(0, { maxAckDelayMs: 25 });
    expect(slow.echoes).toEqual(all);
    expect(slow.client).toBeLessThanOrEqual(1.02);
    expect(slow.server).toBeLessThanOrEqual(1.02);
    const fast = echo(0);
    expect(fast.echoes).toEqual(all);
    expect(fast.client).toBeGreaterThan(1.9);
  });

  it('at 10 % loss each way every echo still arrives in order, with fewer datagrams each way than the default sends', () => {
    const slow = echo(0.1, { maxAckDelayMs: 25 });
    expect(slow.echoes).toEqual(all);
    const fast = echo(0.1);
    expect(fast.echoes).toEqual(all);
    expect(slow.client).toBeLessThan(fast.client - 0.5);
    expect(slow.server).toBeLessThan(fast.server);
  });
});
