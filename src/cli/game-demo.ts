#!/usr/bin/env node
import { createHash } from 'node:crypto';
import { sodiumCrypto } from '../crypto/sodium.js';
import { systemUnixTime, UdpDriver } from '../adapters/node/udp-driver.js';
import { UdpLinkProxy } from '../adapters/node/udp-proxy.js';
import type { LaneConfig } from '../connection/options.js';
import { cryptoRandom } from '../core/random.js';
import { NonCryptoRng } from '../core/rng.js';
import { Client, type ClientEvent } from '../netcode/client.js';
import { Server, type ServerClient, type ServerEvent } from '../netcode/server.js';
import { generateConnectToken } from '../netcode/wire.js';
import { StateClient } from '../state/client.js';
import { angle, bool, defineSchema, type Fields, float, int, type Schema, type SchemaTypes } from '../state/schema.js';
import { type Player, StateServer } from '../state/server.js';
import { STATE_LANES } from '../state/wire.js';
import { freeUdpPort } from './netcode.js';
import { describeLink } from './proxy.js';

/** The fastest AEAD (libsodium in WASM), loaded once when the CLI starts. */
const aead = await sodiumCrypto();

/**
 * `npm run demo`: a game in one process over real loopback UDP. A netcode server and N bots
 * (default 8), each bot behind its own link-conditioner proxy (100 ms RTT, 5 % loss each way, some
 * jitter). The game state goes through the state layer (`gamewire/state`): each bot's ship is spawned
 * when it joins and moved by its inputs (the bot predicts it with the same step the server runs);
 * every bot draws the others interpolated. Beside it, a chat line per bot every second
 * (reliable-ordered, relayed by the server to every bot) and a 4 MiB level on the block lane, all at
 * once. A live view while it runs (plain lines when stdout is not a terminal), then a summary and the
 * checks: exit 1 if any chat line or level byte was lost, duplicated, reordered or corrupted, a bot
 * does not end holding every ship as the server has it, or a prediction needed a correction.
 */

/** The state layer's three lanes first (0..2), then the demo's own. */
const LANE = { chat: STATE_LANES.length, level: STATE_LANES.length + 1 } as const;
const LANES: LaneConfig[] = [
  ...STATE_LANES,
  { mode: 'reliable-ordered', priority: 0 },
  { mode: 'block', maxMessageBytes: 8 << 20 },
];
const TICK_HZ = 20;
const TICK_MS = 1000 / TICK_HZ;
const FRAME_MS = 1000 / 60;
/** The arena is ±ARENA m on each axis. */
const ARENA = 100;
const schema = defineSchema(
  { ship: { x: float(-ARENA, ARENA, 0.01), y: float(-ARENA, ARENA, 0.01), heading: angle(12) } },
  { turn: int(-1, 1), thrust: bool() },
);
type Ship = { x: number; y: number; heading: number };
type Input = { turn: number; thrust: boolean };
/** Metres a ship moves per tick under thrust, and radians it turns per tick. */
const SPEED = 0.6;
const TURN = 0.12;

/** One tick of a ship under one input: the server runs it for every input, and each bot predicts its own ship with it. */
function step(s: Ship, input: Input): void {
  s.heading += input.turn * TURN;
  if (!input.thrust) return;
  s.x = Math.max(-ARENA, Math.min(ARENA, s.x + Math.cos(s.heading) * SPEED));
  s.y = Math.max(-ARENA, Math.min(ARENA, s.y + Math.sin(s.heading) * SPEED));
}

const LINK = { latencyMs: 50, jitterMs: 5, loss: 0.05 };
const LEVEL_BYTES = 4 * 1024 * 1024;
const PROTOCOL_ID = 0x67616d6564656d6fn; // "gamedemo"

interface Options {
  bots: number;
  seconds: number;
}

const USAGE = `usage: node dist/cli/game-demo.js [--bots N] [--seconds S]
  --bots N      bots, each behind its own link-conditioner proxy (1..64, default 8)
  --seconds S   how long the bots play (1..600, default 10)
`;

/** A bad argument: printed as one `error:` line and the usage hint, exit 2 (as `gamewire` does). */
class UsageError extends Error {}

/** The options, or `'help'` for `--help`/`-h`. */
function parseArgs(argv: string[]): Options | 'help' {
  const o: Options = { bots: 8, seconds: 10 };
  const ranges = { '--bots': [1, 64], '--seconds': [1, 600] } as const;
  for (let i = 0; i < argv.length; i += 2) {
    const flag = argv[i]!;
    if (flag === '--help' || flag === '-h') return 'help';
    if (flag !== '--bots' && flag !== '--seconds') throw new UsageError(`unknown argument '${flag}'`);
    const text = argv[i + 1];
    const v = Number(text);
    const [min, max] = ranges[flag];
    if (text === undefined || !/^\d+$/.test(text) || v < min || v > max) {
      throw new UsageError(`${flag}: expected a whole number in ${min}..${max}, got ${text === undefined ? 'nothing' : `"${text}"`}`);
    }
    if (flag === '--bots') o.bots = v;
    else o.seconds = v;
  }
  return o;
}

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const enc = new TextEncoder();
const dec = new TextDecoder();

type Types = typeof schema extends Schema<infer T, Fields> ? T : never;
type Inputs = typeof schema extends Schema<SchemaTypes, infer I> ? I : never;

/** What one bot saw, for the view and the checks. */
interface Bot {
  index: number;
  client: Client;
  driver: UdpDriver<ClientEvent>;
  proxy: UdpLinkProxy;
  view: StateClient<Types, Inputs>;
  /** Where the bot steers to next, and the seeded choice of the next one. */
  waypoint: { x: number; y: number };
  rng: NonCryptoRng;
  connectedAt: number | undefined;
  chatsSent: number;
  /** Per sender, the next chat number expected from it. */
  chatNext: number[];
  chatErrors: string[];
  levelMs: number | undefined;
  levelOk: boolean | undefined;
  failure: string | undefined;
  /** Send times (ms) of this bot's chat lines, and the time each took to come back relayed. */
  chatSentAt: number[];
  chatRtts: number[];
  /** Per frame once playback started: the newest snapshot's age and the interpolation delay (ms). */
  ageMs: number[];
  delayMs: number[];
  /** Other ships drawn (per frame), and how many of those were placed between two snapshots. */
  othersDrawn: number;
  othersInterpolated: number;
  /** Distance (m) from each ship drawn interpolated to the server's path at the render time: squares summed, count, largest. */
  errSq: number;
  errN: number;
  errMax: number;
}

/** The server's side: the state layer on the netcode server, each ship's state per tick, the snapshot bytes per tick. */
interface Game {
  world: StateServer<Types, Inputs>;
  /** The ships' values after each recent tick, by entity id. */
  truth: Map<number, Map<number, Ship>>;
  /** Snapshot bytes of each tick, all bots together; and per bot. */
  tickBytes: number[];
  botBytes: number[][];
}

async function main(): Promise<number> {
  let parsed: Options | 'help';
  try {
    parsed = parseArgs(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`error: ${err.message}\n(run 'node dist/cli/game-demo.js --help' for usage)\n`);
    return 2;
  }
  if (parsed === 'help') {
    process.stdout.write(USAGE);
    return 0;
  }
  const o = parsed;
  const tty = process.stdout.isTTY === true;
  const key = new Uint8Array(32);
  cryptoRandom(key);
  const level = new NonCryptoRng(2024).fill(new Uint8Array(LEVEL_BYTES));
  const levelHash = sha256(level);

  // The server: the state layer's snapshots at 20 Hz to each bot, the level once, chat relayed to everyone.
  const port = await freeUdpPort('127.0.0.1');
  const serverAddress = `127.0.0.1:${port}`;
  const server = new Server({
    protocolId: PROTOCOL_ID, privateKey: key, addresses: [serverAddress], unixTime: systemUnixTime,
    maxClients: 64, crypto: aead, lanes: LANES,
  });
  const serverDriver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port });
  const world = new StateServer({ schema, tickHz: TICK_HZ });
  const game: Game = { world, truth: new Map(), tickBytes: [], botBytes: Array.from({ length: o.bots }, () => []) };
  world.on('join', (p) => {
    const i = botOf(p);
    const a = (2 * Math.PI * i) / o.bots;
    p.entity = world.spawn('ship', { x: Math.cos(a) * ARENA * 0.5, y: Math.sin(a) * ARENA * 0.5, heading: a + Math.PI });
  });
  world.on('input', (p, _tick, input) => {
    if (p.entity !== undefined) step(p.entity.values, input);
  });
  world.on('leave', (p) => {
    if (p.entity !== undefined) world.despawn(p.entity);
  });
  serverDriver.on('event', (e: ServerEvent) => {
    if (world.handle(e)) return;
    if (e.type === 'connected') e.client.send(LANE.level, level);
    else if (e.type === 'message' && e.lane === LANE.chat) for (const c of server.clients()) c.send(LANE.chat, e.bytes);
  });
  // Ticks on the clock, not on the timer's count: a late timer runs the ticks it owes.
  let nextTick = serverDriver.now() + TICK_MS;
  const tickTimer = setInterval(() => {
    const now = serverDriver.now();
    for (; now >= nextTick; nextTick += TICK_MS) {
      world.tick(now);
      record(game);
    }
  }, TICK_MS / 5);

  const bots: Bot[] = [];
  const started = performance.now();
  for (let i = 0; i < o.bots; i++) {
    const proxy = await UdpLinkProxy.open({ listenHost: '127.0.0.1', target: { host: '127.0.0.1', port }, toServer: LINK, seed: 100 + i });
    const client = new Client({ crypto: aead, lanes: LANES });
    const driver = await UdpDriver.openEndpoint(client, { host: '127.0.0.1', port: 0 });
    const view = new StateClient<Types, Inputs>(client, { schema, predict: (s, input) => step(s, input) });
    const rng = new NonCryptoRng(300 + i);
    const bot: Bot = {
      index: i, client, driver, proxy, view, waypoint: waypoint(rng), rng, connectedAt: undefined, chatsSent: 0,
      chatNext: new Array<number>(o.bots).fill(0), chatErrors: [], levelMs: undefined, levelOk: undefined, failure: undefined,
      chatSentAt: [], chatRtts: [], ageMs: [], delayMs: [], othersDrawn: 0, othersInterpolated: 0, errSq: 0, errN: 0, errMax: 0,
    };
    driver.on('event', (e: ClientEvent) => onBotEvent(bot, e, levelHash, started));
    // The token names the proxy (where the bot sends) and, privately, the server's own address.
    const token = generateConnectToken({
      protocolId: PROTOCOL_ID, privateKey: key, clientId: BigInt(i + 1),
      serverAddresses: [`127.0.0.1:${proxy.local.port}`], internalAddresses: [serverAddress],
      nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 60, timeoutSeconds: 10, crypto: aead,
    });
    client.connect(driver.now(), token);
    bots.push(bot);
  }
  process.stdout.write(`gamewire demo: ${o.bots} bots -> one proxy each (${describeLink(LINK)} each way) -> netcode server ${serverAddress}, ${o.seconds} s\n`);

  // Each bot's frame: draw (sample), steer, and hand the layer this frame's input (sent at the tick rate).
  let playing = true;
  const frameTimer = setInterval(() => {
    for (const b of bots) if (b.client.state === 'connected') frame(b, game, playing);
  }, FRAME_MS);
  const chatTimer = setInterval(() => {
    for (const b of bots) {
      if (b.client.state !== 'connected') continue;
      b.client.send(LANE.chat, enc.encode(`bot ${b.index} says ${b.chatsSent}`));
      b.chatSentAt.push(performance.now());
      b.chatsSent++;
    }
  }, 1000);

  const view = new View(bots, game, tty, started);
  const viewTimer = setInterval(() => view.draw(), tty ? 250 : 1000);
  await sleep(o.seconds * 1000);
  clearInterval(chatTimer);
  // The bots stop steering (their inputs go on, idle, so every input before rides until acknowledged);
  // let the ships come to rest at every bot, and the last chat lines and any level in flight arrive (bounded).
  playing = false;
  const graceEnd = performance.now() + 15_000;
  while (performance.now() < graceEnd && !bots.every((b) => settled(b, bots, world))) await sleep(100);
  clearInterval(viewTimer);
  clearInterval(frameTimer);
  clearInterval(tickTimer);
  view.draw(true);

  const failures = checks(bots, o.bots, world);
  process.stdout.write(summary(bots, game) + '\n');
  for (const b of bots) b.client.close();
  server.close();
  await Promise.all([...bots.flatMap((b) => [b.driver.close({ linger: true }), b.proxy.close()]), serverDriver.close({ linger: true })]);
  if (failures.length > 0) {
    process.stdout.write(`FAIL:\n  ${failures.join('\n  ')}\n`);
    return 1;
  }
  process.stdout.write(`OK: every chat line arrived once, intact and in order at every bot; every bot's 4 MiB level matches (sha256 ${levelHash.slice(0, 16)}…); `
    + `every bot holds every ship as the server has it, drew the others interpolated, and predicted its own with no correction\n`);
  return 0;
}

/** The bot's index: its client id less one. */
function botOf(p: Player<Types, Inputs>): number {
  return Number((p.link as ServerClient).clientId) - 1;
}

function waypoint(rng: NonCryptoRng): { x: number; y: number } {
  return { x: (rng.nextFloat() * 2 - 1) * ARENA * 0.8, y: (rng.nextFloat() * 2 - 1) * ARENA * 0.8 };
}

/** After each server tick: every ship's values at that tick, and the snapshot bytes it sent. */
function record(g: Game): void {
  const t = g.world.tickNo;
  const ships = new Map<number, Ship>();
  for (const e of g.world.entities()) ships.set(e.id, { ...e.values });
  g.truth.set(t, ships);
  g.truth.delete(t - 100);
  let sum = 0;
  for (const p of g.world.players()) {
    const bytes = p.stats().snapshotBytes;
    sum += bytes;
    g.botBytes[botOf(p)]?.push(bytes);
  }
  if (sum > 0) g.tickBytes.push(sum);
}

/** One frame of bot `b`: draw every ship (measuring the others against the server's path), then steer its own. */
function frame(b: Bot, g: Game, playing: boolean): void {
  const now = b.driver.now();
  const drawn = b.view.sample(now);
  const st = b.view.stats(now);
  const pb = st.playback;
  let own: Ship | undefined;
  if (pb !== undefined && pb.renderTick > -Infinity) {
    b.ageMs.push(st.snapshotAgeMs);
    b.delayMs.push(pb.delayMs);
    const r = pb.renderTick;
    const before = g.truth.get(Math.floor(r));
    const after = g.truth.get(Math.floor(r) + 1);
    for (const e of drawn) {
      if (e.predicted) continue;
      b.othersDrawn++;
      if (e.placed !== 'interpolated') continue;
      b.othersInterpolated++;
      const s0 = before?.get(e.id);
      const s1 = after?.get(e.id);
      if (s0 === undefined || s1 === undefined) continue;
      const f = r - Math.floor(r);
      const err = Math.hypot(e.values.x - (s0.x + (s1.x - s0.x) * f), e.values.y - (s0.y + (s1.y - s0.y) * f));
      b.errSq += err * err;
      b.errN++;
      if (err > b.errMax) b.errMax = err;
    }
  }
  for (const e of drawn) if (e.predicted) own = e.values;
  b.view.input(now, steer(b, own, playing));
}

/** The bot's input: turn towards its waypoint and thrust when facing it; a new waypoint once there. Idle when not playing. */
function steer(b: Bot, own: Ship | undefined, playing: boolean): Input {
  if (!playing || own === undefined) return { turn: 0, thrust: false };
  let dx = b.waypoint.x - own.x;
  let dy = b.waypoint.y - own.y;
  if (Math.hypot(dx, dy) < 5) {
    b.waypoint = waypoint(b.rng);
    dx = b.waypoint.x - own.x;
    dy = b.waypoint.y - own.y;
  }
  let d = Math.atan2(dy, dx) - own.heading;
  d -= 2 * Math.PI * Math.round(d / (2 * Math.PI));
  return { turn: Math.abs(d) < TURN / 2 ? 0 : Math.sign(d), thrust: Math.abs(d) < Math.PI / 2 };
}

function onBotEvent(b: Bot, e: ClientEvent, levelHash: string, started: number): void {
  if (b.view.handle(b.driver.now(), e)) return;
  switch (e.type) {
    case 'connected':
      b.connectedAt = performance.now() - started;
      return;
    case 'disconnected':
      b.failure ??= `disconnected (${e.reason})`;
      return;
    case 'message':
      break;
    default:
      return;
  }
  if (e.lane === LANE.chat) {
    const m = /^bot (\d+) says (\d+)$/.exec(dec.decode(e.bytes));
    const from = m === null ? -1 : Number(m[1]);
    if (m === null || from >= b.chatNext.length) b.chatErrors.push(`corrupt chat line (${e.bytes.length} bytes)`);
    else if (Number(m[2]) !== b.chatNext[from]) b.chatErrors.push(`chat from bot ${from}: got ${m[2]}, expected ${b.chatNext[from]}`);
    else {
      if (from === b.index) b.chatRtts.push(performance.now() - b.chatSentAt[b.chatNext[from]!]!);
      b.chatNext[from]!++;
    }
  } else if (e.lane === LANE.level) {
    b.levelMs = performance.now() - started - (b.connectedAt ?? 0);
    b.levelOk = e.bytes.length === LEVEL_BYTES && sha256(e.bytes) === levelHash;
  }
}

/** What bot `b` holds that differs from the server's ships (empty when it holds exactly them). */
function stateDiffers(b: Bot, world: StateServer<Types, Inputs>): string[] {
  const out: string[] = [];
  const want = new Set<number>();
  for (const e of world.entities()) {
    want.add(e.id);
    const held = b.view.latest(e.id);
    const v = e.values;
    if (held === undefined) out.push(`ship ${e.id & 0xffff} missing`);
    else if (held.values.x !== v.x || held.values.y !== v.y || held.values.heading !== v.heading) {
      out.push(`ship ${e.id & 0xffff} at (${fmt(held.values)}) where the server has (${fmt(v)})`);
    }
  }
  for (const id of b.view.ids()) if (!want.has(id)) out.push(`ship ${id & 0xffff} held but not alive at the server`);
  return out;
}

function fmt(s: Ship): string {
  return `${s.x.toFixed(2)}, ${s.y.toFixed(2)}, ${s.heading.toFixed(4)} rad`;
}

/** True when bot `b` has everything it should: the level, every chat line sent by anyone, every ship as the server has it. */
function settled(b: Bot, bots: Bot[], world: StateServer<Types, Inputs>): boolean {
  if (b.failure !== undefined) return true;
  return b.levelOk !== undefined && bots.every((s) => b.chatNext[s.index] === s.chatsSent) && stateDiffers(b, world).length === 0;
}

function checks(bots: Bot[], n: number, world: StateServer<Types, Inputs>): string[] {
  const out: string[] = [];
  for (const b of bots) {
    const who = `bot ${b.index}`;
    if (b.failure !== undefined) out.push(`${who}: ${b.failure}`);
    if (b.connectedAt === undefined) out.push(`${who}: never connected`);
    if (b.levelOk !== true) out.push(`${who}: level ${b.levelOk === false ? 'corrupted' : 'not received'}`);
    out.push(...b.chatErrors.slice(0, 5).map((x) => `${who}: ${x}`));
    for (let s = 0; s < n; s++) {
      if (b.chatNext[s] !== bots[s]!.chatsSent) out.push(`${who}: ${b.chatNext[s]} of bot ${s}'s ${bots[s]!.chatsSent} chat lines`);
    }
    if (!b.view.joined) out.push(`${who}: never joined the state layer${b.view.mismatch !== undefined ? ' (schema mismatch)' : ''}`);
    out.push(...stateDiffers(b, world).slice(0, 3).map((x) => `${who}: ${x}`));
    const st = b.view.stats(b.driver.now());
    if (st.corrections > 0) out.push(`${who}: ${st.corrections} corrections of its predicted ship (largest ${st.largestCorrection.toFixed(3)} m), though the server runs the same step`);
    const c = b.view.counters();
    if (c.malformed > 0 || c.missingBaseline > 0) out.push(`${who}: ${c.malformed} malformed snapshots, ${c.missingBaseline} without their baseline`);
    if (n > 1 && b.othersInterpolated < b.othersDrawn / 2) {
      out.push(`${who}: drew the other ships between two snapshots in ${b.othersInterpolated} of ${b.othersDrawn} cases (at least half expected)`);
    }
  }
  const c = world.counters();
  if (c.malformed > 0) out.push(`server: ${c.malformed} malformed state messages`);
  return out;
}

function quantile(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

/** "p/q" of two percentiles, rounded to `digits`; "-" without samples. */
function pp(xs: number[], p: number, q: number, digits = 0): string {
  if (xs.length === 0) return '-';
  return `${quantile(xs, p).toFixed(digits)}/${quantile(xs, q).toFixed(digits)}`;
}

function table(head: string[], rows: string[][]): string[] {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((x, i) => (i === 0 ? x.padEnd(w[i]!) : x.padStart(w[i]!))).join('  ');
  return [line(head), ...rows.map(line)];
}

function summary(bots: Bot[], g: Game): string {
  const connection = bots.map((b) => {
    const s = b.client.stats();
    const chats = b.chatNext.reduce((a, x) => a + x, 0);
    return [
      String(b.index), s === undefined ? '-' : s.srttMs.toFixed(0), s === undefined ? '-' : `${s.lossPercent.toFixed(1)}%`,
      s === undefined ? '-' : s.sentKbps.toFixed(0), s === undefined ? '-' : s.receivedKbps.toFixed(0),
      `${chats}${b.chatErrors.length > 0 ? ' (errors)' : ''}`, pp(b.chatRtts, 50, 99),
      b.levelOk === true ? 'ok' : b.levelOk === false ? 'CORRUPT' : 'missing', b.levelMs === undefined ? '-' : b.levelMs.toFixed(0),
    ];
  });
  const state = bots.map((b) => {
    const st = b.view.stats(b.driver.now());
    return [
      String(b.index), String(st.snapshots), pp(g.botBytes[b.index]!, 50, 95), pp(b.ageMs, 50, 99),
      b.delayMs.length === 0 ? '-' : `${quantile(b.delayMs, 50).toFixed(0)}/${Math.max(...b.delayMs).toFixed(0)}`,
      b.othersDrawn === 0 ? '-' : `${((100 * b.othersInterpolated) / b.othersDrawn).toFixed(1)}%`,
      b.errN === 0 ? '-' : `${(1000 * Math.sqrt(b.errSq / b.errN)).toFixed(1)}/${(1000 * b.errMax).toFixed(0)}`,
      String(st.corrections),
    ];
  });
  let applied = 0;
  let dropped = 0;
  for (const p of g.world.players()) {
    applied += p.stats().inputsApplied;
    dropped += p.stats().inputsDropped;
  }
  const all = g.tickBytes.length === 0 ? '-' : `p50 ${quantile(g.tickBytes, 50)}, p95 ${quantile(g.tickBytes, 95)}`;
  return [
    ...table(['bot', 'srtt ms', 'loss', 'kbit/s out', 'kbit/s in', 'chat lines', 'chat rtt ms p50/p99', 'level', 'level ms'], connection),
    '',
    ...table(['bot', 'snapshots', 'snapshot B p50/p95', 'age ms p50/p99', 'delay ms p50/max', 'others interpolated', 'error mm rms/max', 'corrections'], state),
    `state: ${g.world.tickNo} ticks at ${TICK_HZ} Hz; snapshot bytes per tick, all bots: ${all}; inputs applied ${applied}, dropped ${dropped}`,
    '(age: since the newest snapshot arrived, per frame; delay: the interpolation delay; error: from a ship drawn interpolated to the server\'s path at the render time)',
  ].join('\n');
}

/** The live view: a redrawn table on a terminal, a line per second otherwise. */
class View {
  private lines = 0;

  constructor(private readonly bots: Bot[], private readonly game: Game, private readonly tty: boolean, private readonly started: number) {}

  draw(final = false): void {
    const t = ((performance.now() - this.started) / 1000).toFixed(1);
    const stats = this.bots.map((b) => b.view.stats(b.driver.now()));
    const tickBytes = this.game.tickBytes.at(-1) ?? 0;
    const ages = stats.map((s) => s.snapshotAgeMs).filter((x) => x >= 0);
    const delays = stats.map((s) => s.playback?.delayMs).filter((x): x is number => x !== undefined);
    const corrections = stats.reduce((a, s) => a + s.corrections, 0);
    const range = (xs: number[]): string => (xs.length === 0 ? '-' : `${Math.min(...xs).toFixed(0)}..${Math.max(...xs).toFixed(0)}`);
    if (!this.tty) {
      if (final) return;
      const done = this.bots.filter((b) => b.levelOk !== undefined).length;
      const srtt = this.bots.map((b) => b.client.stats()?.srttMs ?? 0);
      process.stdout.write(`t=${t}s  connected ${this.bots.filter((b) => b.client.state === 'connected').length}/${this.bots.length}`
        + `  levels done ${done}/${this.bots.length}  srtt ${Math.min(...srtt).toFixed(0)}..${Math.max(...srtt).toFixed(0)} ms`
        + `  snapshots ${tickBytes} B/tick  age ${range(ages)} ms  delay ${range(delays)} ms  corrections ${corrections}\n`);
      return;
    }
    const rows = this.bots.map((b, i) => {
      const s = b.client.stats();
      const st = stats[i]!;
      const p = b.client.blockProgress();
      const got = p?.receiving.deliveredBytes ?? 0;
      const partial = p?.receiving.blocks[0]?.receivedBytes ?? 0;
      const level = b.levelOk === undefined ? `${((100 * (got + partial)) / LEVEL_BYTES).toFixed(0)}%` : b.levelOk ? 'done' : 'BAD';
      return `bot ${b.index}: ${b.client.state.padEnd(10)} level ${level.padStart(4)}  srtt ${s === undefined ? '-' : s.srttMs.toFixed(0).padStart(3)} ms`
        + `  loss ${s === undefined ? '-' : s.lossPercent.toFixed(1).padStart(4)}%  in ${s === undefined ? '-' : s.receivedKbps.toFixed(0).padStart(5)} kbit/s`
        + ` | ships ${st.entities}  snap ${String(st.lastSnapshotBytes).padStart(3)} B  age ${st.snapshotAgeMs < 0 ? '-' : st.snapshotAgeMs.toFixed(0).padStart(3)} ms`
        + `  delay ${st.playback === undefined ? '-' : st.playback.delayMs.toFixed(0).padStart(3)} ms  corr ${st.corrections}`;
    });
    if (this.lines > 0) process.stdout.write(`\x1b[${this.lines}A`);
    const out = [`t=${t}s  tick ${this.game.world.tickNo}: snapshots ${tickBytes} B/tick to ${this.bots.length} bots`, ...rows];
    process.stdout.write(out.map((l) => `\x1b[2K${l}`).join('\n') + '\n');
    this.lines = out.length;
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stdout.write(`FAIL: ${(err as Error).message ?? String(err)}\n`);
    process.exit(1);
  },
);
