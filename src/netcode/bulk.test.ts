// A client's block lane on a transport of its own (Server.claimBulk, Client.bindBulk, as a browser
// client's second WebSocket): only a fresh packet sealed with the client's key binds it; blocks then
// go there both ways while the other lanes keep the client's path; when it ends, blocks go on over
// that path. Sans-IO on a virtual clock: the two endpoints pumped by hand.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { nobleCrypto } from '../crypto/noble.js';
import type { LaneConfig } from '../connection/options.js';
import { FixedRate } from '../congestion/fixed.js';
import type { Path } from '../congestion/path.js';
import { netcodePair, PAIR_SERVER, pumpPair } from '../../test/harness/netcode.js';
import { type ClientEvent } from './client.js';
import { NETCODE_PACKET_OVERHEAD_BYTES, WEBSOCKET_TRANSPORT } from './options.js';
import { type ServerEvent } from './server.js';
import { BULK_SEQUENCE_BASE, NetcodePacketType as T, newNetcodePacket, readPacket, ReplayProtection, writePacket } from './wire.js';

const PROTOCOL = 0x42554c4bn;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i * 7 + 1);
const AT = '10.0.0.2:5000';
const BULK = 'ws:1';
const LANES: LaneConfig[] = [{ mode: 'reliable-ordered' }, { mode: 'block', maxMessageBytes: 1 << 20 }];

/**
 * A client and a server pumped every 5 ms of virtual time, `oneWayMs` apart on both transports. The
 * client's path loses every `lossEvery`-th datagram each way (0: none); the block lane's transport
 * (the client's `'bulk'`, the server's `BULK`) loses nothing and keeps order, as TCP, and holds its
 * packets `bulkExtraMs` longer (what is behind a held one waits for it). Bytes each transport carried
 * are counted per direction.
 */
function pair(lossEvery = 0, oneWayMs = 20, serverOptions: { migration?: boolean } = {}) {
  const { server, client } = netcodePair({
    protocolId: PROTOCOL, key: KEY, clientId: 9n, timeoutSeconds: 10, server: { lanes: LANES, ...serverOptions }, client: { lanes: LANES },
  });
  server.registerTransport('ws:', WEBSOCKET_TRANSPORT);
  const out = new Uint8Array(1500);
  type InFlight = { due: number; bytes: Uint8Array };
  // Per direction, the client's path and the block lane's transport.
  const up: [InFlight[], InFlight[]] = [[], []];
  const down: [InFlight[], InFlight[]] = [[], []];
  const deliver = (now: number, q: InFlight[], to: (b: Uint8Array) => void): void => {
    while (q.length > 0 && q[0]!.due <= now) to(q.shift()!.bytes);
  };
  let sentUp = 0;
  let sentDown = 0;
  const r = {
    server, client, now: 0, bulkOpen: true, bulkExtraMs: 0,
    bytes: { pathUp: 0, pathDown: 0, bulkUp: 0, bulkDown: 0 },
    fromClient: [] as { bulk: boolean; bytes: Uint8Array }[],
    serverEvents: [] as ServerEvent[], clientEvents: [] as ClientEvent[],
    step(ms: number): void {
      r.now = pumpPair(server, client, r.now, ms, (now) => {
        for (let t = client.pollTransmit(now, out); t !== undefined; t = client.pollTransmit(now, out)) {
          const bulk = t.to === 'bulk';
          const b = out.slice(0, t.length);
          r.fromClient.push({ bulk, bytes: b });
          if (bulk) r.bytes.bulkUp += b.length;
          else r.bytes.pathUp += b.length;
          if (bulk ? r.bulkOpen : lossEvery === 0 || ++sentUp % lossEvery !== 0) up[+bulk]!.push({ due: now + oneWayMs + (bulk ? r.bulkExtraMs : 0), bytes: b });
        }
        deliver(now, up[0], (b) => server.handleDatagram(now, AT, b));
        deliver(now, up[1], (b) => server.handleDatagram(now, BULK, b));
        for (let t = server.pollTransmit(now, out); t !== undefined; t = server.pollTransmit(now, out)) {
          const bulk = t.to === BULK;
          expect(t.to === AT || bulk).toBe(true);
          if (bulk) r.bytes.bulkDown += t.length;
          else r.bytes.pathDown += t.length;
          if (bulk ? r.bulkOpen : lossEvery === 0 || ++sentDown % lossEvery !== 0) {
            down[+bulk]!.push({ due: now + oneWayMs + (bulk ? r.bulkExtraMs : 0), bytes: out.slice(0, t.length) });
          }
        }
        deliver(now, down[0], (b) => client.handleDatagram(now, PAIR_SERVER, b));
        deliver(now, down[1], (b) => client.handleDatagram(now, 'bulk', b));
      }, r.serverEvents, r.clientEvents);
    },
    /** Open the block lane's transport: the server's claim, then the client's bind (its hello proves it). */
    bind(): void {
      r.bulkOpen = true;
      expect(server.claimBulk(BULK, server.clients()[0]!.clientIndex)).toBe(true);
      expect(client.bindBulk('bulk', WEBSOCKET_TRANSPORT, new FixedRate(2_000_000))).toBe(true);
    },
  };
  return r;
}

const block = (n: number, seed: number): Uint8Array => Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
const messages = (events: (ServerEvent | ClientEvent)[], lane: number): Uint8Array[] =>
  events.flatMap((e) => (e.type === 'message' && e.lane === lane ? [e.bytes] : []));

describe('a block lane on a transport of its own', () => {
  it('blocks go there both ways, the other lanes stay on the client\'s path, and nothing is dropped as old or replayed', () => {
    const r = pair(10);
    r.step(300);
    expect(r.client.state).toBe('connected');
    const sc = r.server.clients()[0]!;
    r.bind();
    r.step(100);
    expect(r.serverEvents.filter((e) => e.type === 'bulk')).toEqual([{ type: 'bulk', client: sc, address: BULK, previous: undefined }]);
    expect(sc.bulkAddress).toBe(BULK);
    expect(r.server.counters().bulkBound).toBe(1);

    const before = { ...r.bytes };
    const up = block(300_000, 1);
    const down = block(200_000, 2);
    r.client.send(1, up);
    sc.send(1, down);
    for (let i = 0; i < 100; i++) {
      r.client.send(0, Uint8Array.of(i));
      sc.send(0, Uint8Array.of(i));
      r.step(20);
    }
    r.step(3000);
    expect(messages(r.serverEvents, 1)).toEqual([up]);
    expect(messages(r.clientEvents, 1)).toEqual([down]);
    expect(messages(r.serverEvents, 0).map((b) => b[0])).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect(messages(r.clientEvents, 0).map((b) => b[0])).toEqual(Array.from({ length: 100 }, (_, i) => i));
    // The blocks' bytes crossed the block lane's transport; the client's path carried the messages and their acks.
    expect(r.bytes.bulkUp - before.bulkUp).toBeGreaterThan(up.length);
    expect(r.bytes.bulkDown - before.bulkDown).toBeGreaterThan(down.length);
    expect(r.bytes.pathUp - before.pathUp).toBeLessThan(30_000);
    expect(r.bytes.pathDown - before.pathDown).toBeLessThan(30_000);
    // Each transport numbers its packets apart: the far ones (8 sequence bytes) only on the block lane's.
    expect(r.fromClient.every((p) => (p.bytes[0]! >> 4 === 8) === p.bulk)).toBe(true);
    expect(r.server.counters().replayed).toBe(0);
    expect(r.client.counters().replayed).toBe(0);
    expect(sc.stats(r.now)!.lanes[1]).toMatchObject({ mode: 'block', delivered: 1, received: 1 });
    // At both ends the block lane's path is its own, with the transport's overhead and reliability.
    const bulkPath = (o: unknown): Path => (o as { session: { bulkPath: Path } }).session.bulkPath;
    for (const end of [sc, r.client]) {
      expect([bulkPath(end).overheadBytes, bulkPath(end).reliableTransport]).toEqual([WEBSOCKET_TRANSPORT.overheadBytes + NETCODE_PACKET_OVERHEAD_BYTES, true]);
    }
    expect(bulkPath(r.client).controller).toBeInstanceOf(FixedRate);
    expect(r.clientEvents.some((e) => e.type === 'disconnected')).toBe(false);
  });

  it('only a fresh packet sealed with the client\'s key binds the transport: a replayed one, a forged one and one of another client do not', () => {
    const r = pair();
    r.step(300);
    const sc = r.server.clients()[0]!;
    const old = r.fromClient.at(-1)!.bytes; // delivered already
    expect(r.server.claimBulk(BULK, sc.clientIndex)).toBe(true);
    r.server.handleDatagram(r.now, BULK, old);
    const forged = old.slice();
    forged[forged.length - 1]! ^= 1;
    r.server.handleDatagram(r.now, BULK, forged);
    expect(r.server.counters().bulkRefused).toBe(2);
    expect(sc.bulkAddress).toBeUndefined();
    // A claim naming a slot with no client binds nothing.
    expect(r.server.claimBulk('ws:2', sc.clientIndex + 1)).toBe(true);
    r.server.handleDatagram(r.now, 'ws:2', old);
    expect(r.server.counters().bulkRefused).toBe(3);
    // The client's own hello binds it; the client's address is unchanged (a bulk transport is no move).
    expect(r.client.bindBulk('bulk', WEBSOCKET_TRANSPORT)).toBe(true);
    r.step(100);
    expect(sc.bulkAddress).toBe(BULK);
    expect(sc.address).toBe(AT);
    expect(r.server.counters().migrations).toBe(0);
  });

  it('on its own path the lane paces and resends by that transport: nothing is resent while TCP holds its packets back', () => {
    const r = pair(0);
    r.step(300);
    // A block already under way when the transport binds: its sender moves to the new path.
    const up = block(300_000, 6);
    r.client.send(1, up);
    r.step(50);
    r.bind();
    r.step(150);
    r.bulkExtraMs = 600;
    r.step(600);
    r.bulkExtraMs = 0;
    r.step(4000);
    expect(messages(r.serverEvents, 1)).toEqual([up]);
    expect(r.client.stats(r.now)!.lanes[1]).toMatchObject({ mode: 'block', delivered: 1, resent: 0 });
  });

  it('a server made with migration: false binds it too: binding moves no client', () => {
    const r = pair(0, 20, { migration: false });
    r.step(300);
    const sc = r.server.clients()[0]!;
    r.bind();
    r.step(100);
    expect(sc.bulkAddress).toBe(BULK);
    expect(sc.address).toBe(AT);
    expect(r.server.claimAddress('ws:9', sc.clientIndex)).toBe(false);
  });

  it('when the transport ends mid-block, the block lane goes back to the client\'s path and the block arrives whole', () => {
    const r = pair(0);
    r.step(300);
    const sc = r.server.clients()[0]!;
    r.bind();
    r.step(100);
    const up = block(400_000, 3);
    r.client.send(1, up);
    r.step(100);
    const bulkSoFar = r.bytes.bulkUp;
    expect(bulkSoFar).toBeGreaterThan(50_000);
    // The WebSocket drops: whatever it held is lost, and both ends hear of it.
    r.bulkOpen = false;
    r.server.releaseClaim(BULK);
    r.client.unbindBulk();
    expect(sc.bulkAddress).toBeUndefined();
    r.step(8000);
    expect(messages(r.serverEvents, 1)).toEqual([up]);
    expect(r.bytes.bulkUp).toBe(bulkSoFar);
    expect(r.bytes.pathUp).toBeGreaterThan(up.length - bulkSoFar);
  });

  it('a block already under way when the transport is bound moves there and arrives whole', () => {
    const r = pair(0);
    r.step(300);
    const up = block(400_000, 5);
    r.client.send(1, up);
    r.step(200);
    expect(r.bytes.pathUp).toBeGreaterThan(20_000);
    r.bind();
    r.step(6000);
    expect(messages(r.serverEvents, 1)).toEqual([up]);
    expect(r.bytes.bulkUp).toBeGreaterThan(up.length / 2);
  });

  it('a client holding its block lane\'s transport (full) sends no slice there until released; acks still go', () => {
    const r = pair(0);
    r.step(300);
    r.bind();
    r.step(100);
    r.client.holdBulk(true);
    const sent = r.bytes.bulkUp;
    r.client.send(1, block(100_000, 4));
    r.step(500);
    expect(r.bytes.bulkUp).toBe(sent);
    // Released, it wakes its driver: slices are due at once, and no timer of its own says so.
    let woken = 0;
    r.client.setWaker(() => woken++);
    r.client.holdBulk(false);
    expect(woken).toBe(1);
    r.step(3000);
    expect(messages(r.serverEvents, 1)).toHaveLength(1);
  });

  it('the server does the same with its end (the gateway holds it while that WebSocket is full), and paces it at the transport\'s bulk rate', () => {
    const r = pair(0);
    r.step(300);
    r.bind();
    r.step(100);
    const sc = r.server.clients()[0]!;
    sc.holdBulk(true);
    const sent = r.bytes.bulkDown;
    const down = block(1_000_000, 5);
    sc.send(1, down);
    r.client.send(1, block(50_000, 6));
    r.step(500);
    expect(r.bytes.bulkDown - sent).toBeLessThan(500);
    expect(messages(r.serverEvents, 1)).toHaveLength(1);
    let woken = 0;
    r.server.setWaker(() => woken++);
    sc.holdBulk(false);
    expect(woken).toBeGreaterThan(0);
    const released = r.now;
    for (let t = 0; t < 3000 && messages(r.clientEvents, 1).length === 0; t += 50) r.step(50);
    expect(messages(r.clientEvents, 1)).toEqual([down]);
    // 1 MB over a 40 ms round trip at the WebSocket's bulk rate (TCP sets the rate there) takes about
    // 150 ms; the path's delay-based default, still probing up, needs longer.
    expect(r.now - released).toBeLessThanOrEqual(250);
  });
});

describe('docs/netcode.md block-lane transport vectors', () => {
  it('each encodes to its hex and decodes back, numbered from BULK_SEQUENCE_BASE', () => {
    const doc = readFileSync(new URL('../../docs/netcode.md', import.meta.url), 'utf8');
    const m = /<!-- bulk-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- bulk-vectors:end -->/.exec(doc);
    const vs = JSON.parse(m![1]!) as { packet: string; sequence: string; body: string; hex: string }[];
    expect(vs.map((v) => v.packet)).toEqual(['keep-alive', 'payload']);
    const key = Uint8Array.from({ length: 32 }, (_, i) => i);
    const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
    const unhex = (t: string): Uint8Array => Uint8Array.from(t.match(/../g) ?? [], (x) => parseInt(x, 16));
    for (const v of vs) {
      const type = v.packet === 'payload' ? T.Payload : T.KeepAlive;
      expect(BigInt(v.sequence) >= BULK_SEQUENCE_BASE).toBe(true);
      const out = new Uint8Array(64);
      const n = writePacket(out, type, BigInt(v.sequence), unhex(v.body), 0x1234567890abcdefn, key, nobleCrypto);
      expect(hex(out.subarray(0, n))).toBe(v.hex);
      const p = newNetcodePacket();
      const replay = new ReplayProtection();
      replay.advance(5000n); // the connection's own window is far behind or ahead: no matter
      expect(readPacket(unhex(v.hex), 0x1234567890abcdefn, key, 1 << type, replay, nobleCrypto, p)).toBe(v.body.length / 2);
      expect([p.type, p.sequence, hex(p.body)]).toEqual([type, BigInt(v.sequence), v.body]);
    }
  });
});

describe('ReplayProtection keeps the block lane transport\'s sequences apart', () => {
  it('a window of its own from BULK_SEQUENCE_BASE: neither range makes the other look old', () => {
    const r = new ReplayProtection();
    r.advance(5n);
    r.advance(BULK_SEQUENCE_BASE + 10_000n);
    expect(r.alreadyReceived(6n)).toBe(false);
    expect(r.alreadyReceived(5n)).toBe(true);
    r.advance(1000n);
    expect(r.alreadyReceived(BULK_SEQUENCE_BASE + 9_999n)).toBe(false);
    expect(r.alreadyReceived(BULK_SEQUENCE_BASE + 10_000n)).toBe(true);
    expect(r.alreadyReceived(BULK_SEQUENCE_BASE + 10_000n - 256n)).toBe(true);
    r.reset();
    expect(r.alreadyReceived(BULK_SEQUENCE_BASE + 10_000n)).toBe(false);
  });
});
