// The connection soak: a client and a server on the seeded simulator with loss, duplication,
// reordering, jitter and bursty loss; the client sends messages on all five modes with mixed sizes
// (one in fifty split across many packets), and one in a thousand as a block of up to 300 kB on the
// block lane, and the server echoes them on the same lane. Checked: every reliable message and block
// arrives exactly once and intact (in order on the ordered lane and the block lane), in both
// directions; nothing unreliable arrives twice, corrupted or (sequenced) out of order; every notify
// message and every block gets exactly one outcome, and "delivered" ones really arrived at the server. Used by
// `test/soak/soak.test.ts` (≥ 10^5 messages, in `npm test`) and `npm run soak` (≥ 10^7).
import type { ConnectionEvent } from '../../src/connection/connection.js';
import { ConnectionHost } from '../../src/connection/host.js';
import type { LaneConfig } from '../../src/connection/options.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { World } from '../../src/sim/world.js';

export const SOAK_LANES: LaneConfig[] = [
  { mode: 'reliable-ordered' },
  { mode: 'reliable-unordered' },
  { mode: 'unreliable' },
  { mode: 'unreliable-sequenced' },
  { mode: 'notify' },
  { mode: 'block', maxMessageBytes: 300_004 },
];
const BLOCK_LANE = 5;

/** Lanes whose every message must come back: the reliable ones and the block lane. */
const reliableLane = (lane: number): boolean => lane <= 1 || lane === BLOCK_LANE;
/** Lanes delivered in order. */
const orderedLane = (lane: number): boolean => lane === 0 || lane === BLOCK_LANE;

/** What a soak run checked. */
export interface SoakReport {
  seed: number;
  messages: number;
  virtualMs: number;
  reliableEchoed: number;
  unreliableEchoed: number;
  unreliableSent: number;
  notifyDelivered: number;
  notifyLost: number;
  blocksDelivered: number;
  failures: string[];
}

/** Message `i`: its number in the first 4 bytes (u32 LE), then bytes derived from it. */
function body(i: number, size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let k = 4; k < size; k++) b[k] = (i * 131 + k * 7) & 0xff;
  b[0] = i;
  b[1] = i >>> 8;
  b[2] = i >>> 16;
  b[3] = i >>> 24;
  return b;
}

function numberOf(b: Uint8Array): number {
  return (b[0]! | (b[1]! << 8) | (b[2]! << 16) | (b[3]! << 24)) >>> 0;
}

function intact(b: Uint8Array): boolean {
  const i = numberOf(b);
  for (let k = 4; k < b.length; k++) if (b[k] !== ((i * 131 + k * 7) & 0xff)) return false;
  return true;
}

/** Run one soak of `messages` messages (spread over the five lanes) with `seed`. */
export function runSoak(seed: number, messages: number, onProgress?: (done: number) => void): SoakReport {
  const rng = new NonCryptoRng(seed);
  const world = new World({
    seed,
    link: {
      latencyMs: 20, jitterMs: 15, reorder: true, loss: 0.05, duplicate: 0.02,
      gilbertElliott: { pGoodToBad: 0.01, pBadToGood: 0.3, lossGood: 0, lossBad: 0.5 },
    },
    reuseReceiveBuffer: true,
  });
  const random = (s: number) => {
    const r = new NonCryptoRng(s);
    return (out: Uint8Array) => void r.fill(out);
  };
  const server = new ConnectionHost({ lanes: SOAK_LANES, listen: true, random: random(seed + 1), timeoutMs: 60_000 });
  const client = new ConnectionHost({ lanes: SOAK_LANES, random: random(seed + 2), timeoutMs: 60_000 });
  world.add('server', server);
  world.add('client', client);
  const conn = client.connect(0, 'server');
  const failures: string[] = [];
  const fail = (why: string): void => {
    if (failures.length < 20) failures.push(why);
  };

  const laneOf = new Uint8Array(messages);
  const sizeOf = new Uint32Array(messages);
  const atServer = new Uint8Array(messages);
  const echoed = new Uint8Array(messages);
  const notifyOutcome = new Int8Array(messages);
  const notifyIdToMsg = new Map<number, number>();
  const blockIdToMsg = new Map<number, number>();
  let blocksSent = 0;
  let blocksDelivered = 0;
  let newestSeqServer = -1;
  let newestSeqClient = -1;
  let sent = 0;
  let reliableSent = 0;
  let reliableEchoed = 0;
  let unreliableEchoed = 0;
  let notifyDelivered = 0;
  let notifyLost = 0;
  let notifySent = 0;
  // Per lane, the newest message delivered in order (−1 before any).
  const lastOrderedServer = [-1, -1, -1, -1, -1, -1];
  const lastOrderedClient = [-1, -1, -1, -1, -1, -1];

  const onServer = (e: ConnectionEvent): void => {
    if (e.type !== 'message') return;
    const b = e.bytes;
    const i = numberOf(b);
    if (i >= sent || laneOf[i] !== e.lane || sizeOf[i] !== b.length || !intact(b)) return fail(`server got a bad message ${i} on lane ${e.lane}`);
    if (atServer[i] === 1) return fail(`server got message ${i} twice (lane ${e.lane})`);
    atServer[i] = 1;
    if (orderedLane(e.lane)) {
      if (lastOrderedServer[e.lane]! > i) fail(`server: ordered ${i} after ${lastOrderedServer[e.lane]} on lane ${e.lane}`);
      lastOrderedServer[e.lane] = i;
    }
    if (e.lane === 3) {
      if (i <= newestSeqServer) fail(`server: sequenced ${i} after ${newestSeqServer}`);
      newestSeqServer = i;
    }
    e.connection.send(e.lane, b);
  };
  const onClient = (e: ConnectionEvent): void => {
    if (e.type === 'delivery' && e.lane === BLOCK_LANE) {
      const i = blockIdToMsg.get(e.id);
      if (i === undefined) return fail(`delivery event for unknown block ${e.id}`);
      blockIdToMsg.delete(e.id);
      if (!e.delivered || atServer[i] !== 1) return fail(`block ${i} reported ${e.delivered ? 'delivered before the server had it' : 'not delivered'}`);
      blocksDelivered++;
      return;
    }
    if (e.type === 'delivery') {
      const i = notifyIdToMsg.get(e.id);
      if (i === undefined || e.lane !== 4) return fail(`delivery event for unknown id ${e.id} lane ${e.lane}`);
      if (notifyOutcome[i] !== 0) return fail(`second outcome for notify message ${i}`);
      notifyOutcome[i] = e.delivered ? 1 : -1;
      notifyIdToMsg.delete(e.id);
      if (e.delivered) {
        notifyDelivered++;
        if (atServer[i] !== 1) fail(`notify ${i} reported delivered but the server never got it`);
      } else notifyLost++;
      return;
    }
    if (e.type === 'disconnected') return fail(`client disconnected: ${e.reason}`);
    if (e.type !== 'message') return;
    const b = e.bytes;
    const i = numberOf(b);
    if (i >= sent || laneOf[i] !== e.lane || sizeOf[i] !== b.length || !intact(b)) return fail(`client got a bad echo ${i} on lane ${e.lane}`);
    if (echoed[i] === 1) return fail(`client got echo ${i} twice`);
    echoed[i] = 1;
    if (reliableLane(e.lane)) reliableEchoed++;
    else unreliableEchoed++;
    if (orderedLane(e.lane)) {
      if (lastOrderedClient[e.lane]! > i) fail(`client: ordered echo ${i} after ${lastOrderedClient[e.lane]} on lane ${e.lane}`);
      lastOrderedClient[e.lane] = i;
    }
    if (e.lane === 3) {
      if (i <= newestSeqClient) fail(`client: sequenced echo ${i} after ${newestSeqClient}`);
      newestSeqClient = i;
    }
  };

  // A burst of 1–20 messages every 10 ms while fewer than 2000 reliable messages await their echo.
  const tick = (): void => {
    if (conn.state === 'connected' && reliableSent - reliableEchoed < 2000) {
      for (let n = 1 + rng.nextInt(20); n > 0 && sent < messages; n--) {
        const i = sent;
        const lane = rng.nextInt(1000) === 0 ? BLOCK_LANE : rng.nextInt(5);
        const size = 4 + (lane === BLOCK_LANE ? rng.nextInt(300_001)
          : rng.nextInt(50) === 0 ? rng.nextInt(lane <= 1 ? 20_000 : 3000) : rng.nextInt(200));
        laneOf[i] = lane;
        sizeOf[i] = size;
        sent++;
        const id = conn.send(lane, body(i, size), lane === BLOCK_LANE);
        if (reliableLane(lane)) reliableSent++;
        if (lane === 4) {
          notifyIdToMsg.set(id, i);
          notifySent++;
        }
        if (lane === BLOCK_LANE) {
          blockIdToMsg.set(id, i);
          blocksSent++;
        }
      }
      onProgress?.(sent);
    }
    if (sent < messages) world.at(world.now + 10, tick);
  };
  world.at(0, tick);

  const r = world.runUntil(() => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) onServer(e);
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) onClient(e);
    return failures.length > 0 || (sent === messages && reliableEchoed === reliableSent && notifyDelivered + notifyLost === notifySent
      && blocksDelivered === blocksSent);
  }, { maxTimeMs: messages * 2 + 120_000 });
  if (!r.ok && failures.length === 0) {
    fail(`did not finish: ${reliableEchoed}/${reliableSent} reliable echoes, ${notifyDelivered + notifyLost}/${notifySent} notify outcomes, `
      + `${blocksDelivered}/${blocksSent} blocks delivered at ${r.now} ms (${r.reason})`);
  }
  return {
    seed, messages: sent, virtualMs: world.now, reliableEchoed, unreliableEchoed, unreliableSent: sent - reliableSent,
    notifyDelivered, notifyLost, blocksDelivered, failures,
  };
}
