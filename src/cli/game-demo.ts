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
import { freeUdpPort } from './netcode.js';
import { describeLink } from './proxy.js';

/** The fastest AEAD (libsodium in WASM), loaded once when the CLI starts. */
const aead = await sodiumCrypto();

/**
 * `npm run demo`: a game's traffic in one process over real loopback UDP. A netcode server and N bots
 * (default 8), each bot behind its own link-conditioner proxy (100 ms RTT, 5 % loss each way, some
 * jitter). Every bot sends inputs at 60 Hz (notify lane) and a chat line every second
 * (reliable-ordered, relayed by the server to every bot); the server sends each bot its state at
 * 20 Hz (unreliable-sequenced) and a 4 MiB level on the block lane, all at once. A live view while it
 * runs (plain lines when stdout is not a terminal), then a summary and the checks: exit 1 if any chat
 * line or level byte was lost, duplicated, reordered or corrupted, or an input's outcome was missing.
 */

const LANE = { chat: 0, state: 1, input: 2, level: 3 } as const;
const LANES: LaneConfig[] = [
  { mode: 'reliable-ordered', priority: 0 },
  { mode: 'unreliable-sequenced', priority: 0 },
  { mode: 'notify', priority: 0 },
  { mode: 'block', maxMessageBytes: 8 << 20 },
];
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

/** What one bot saw, for the view and the checks. */
interface Bot {
  index: number;
  client: Client;
  driver: UdpDriver<ClientEvent>;
  proxy: UdpLinkProxy;
  connectedAt: number | undefined;
  inputsSent: number;
  inputsDelivered: number;
  inputsLost: number;
  statesReceived: number;
  newestState: number;
  stateErrors: number;
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
  /** Send times of inputs by their notify id, and the time to each delivered outcome. */
  inputSentAt: Map<number, number>;
  inputAckMs: number[];
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

  // The server: state at 20 Hz to each bot, the level once, chat relayed to everyone.
  const port = await freeUdpPort('127.0.0.1');
  const serverAddress = `127.0.0.1:${port}`;
  const server = new Server({
    protocolId: PROTOCOL_ID, privateKey: key, addresses: [serverAddress], unixTime: systemUnixTime,
    maxClients: 64, crypto: aead, lanes: LANES,
  });
  const serverDriver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port });
  let inputsAtServer = 0;
  const tick = new Map<ServerClient, number>();
  serverDriver.on('event', (e: ServerEvent) => {
    if (e.type === 'connected') {
      tick.set(e.client, 0);
      e.client.send(LANE.level, level);
    } else if (e.type === 'message' && e.lane === LANE.input) {
      inputsAtServer++;
    } else if (e.type === 'message' && e.lane === LANE.chat) {
      for (const c of server.clients()) c.send(LANE.chat, e.bytes);
    } else if (e.type === 'disconnected') {
      tick.delete(e.client);
    }
  });
  const stateTimer = setInterval(() => {
    for (const [c, t] of tick) {
      const s = new Uint8Array(64);
      new DataView(s.buffer).setUint32(0, t, true);
      c.send(LANE.state, s);
      tick.set(c, t + 1);
    }
  }, 50);

  const bots: Bot[] = [];
  const started = performance.now();
  for (let i = 0; i < o.bots; i++) {
    const proxy = await UdpLinkProxy.open({ listenHost: '127.0.0.1', target: { host: '127.0.0.1', port }, toServer: LINK, seed: 100 + i });
    const client = new Client({ crypto: aead, lanes: LANES });
    const driver = await UdpDriver.openEndpoint(client, { host: '127.0.0.1', port: 0 });
    const bot: Bot = {
      index: i, client, driver, proxy, connectedAt: undefined, inputsSent: 0, inputsDelivered: 0, inputsLost: 0,
      statesReceived: 0, newestState: -1, stateErrors: 0, chatsSent: 0, chatNext: new Array<number>(o.bots).fill(0),
      chatErrors: [], levelMs: undefined, levelOk: undefined, failure: undefined, chatSentAt: [], chatRtts: [],
      inputSentAt: new Map(), inputAckMs: [],
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

  const inputTimer = setInterval(() => {
    for (const b of bots) {
      if (b.client.state !== 'connected') continue;
      const m = new Uint8Array(24);
      new DataView(m.buffer).setUint32(0, b.inputsSent, true);
      b.inputSentAt.set(b.client.send(LANE.input, m), performance.now());
      b.inputsSent++;
    }
  }, 1000 / 60);
  const chatTimer = setInterval(() => {
    for (const b of bots) {
      if (b.client.state !== 'connected') continue;
      b.client.send(LANE.chat, enc.encode(`bot ${b.index} says ${b.chatsSent}`));
      b.chatSentAt.push(performance.now());
      b.chatsSent++;
    }
  }, 1000);

  const view = new View(bots, tty, started);
  const viewTimer = setInterval(() => view.draw(), tty ? 250 : 1000);
  await sleep(o.seconds * 1000);
  clearInterval(inputTimer);
  clearInterval(chatTimer);
  // Let the last chat lines, input outcomes and any level still in flight finish (bounded).
  const graceEnd = performance.now() + 15_000;
  while (performance.now() < graceEnd && !bots.every((b) => settled(b, bots))) await sleep(100);
  clearInterval(viewTimer);
  clearInterval(stateTimer);
  view.draw(true);

  const failures = checks(bots, o.bots);
  process.stdout.write(summary(bots, inputsAtServer) + '\n');
  for (const b of bots) b.client.close();
  server.close();
  await Promise.all([...bots.flatMap((b) => [b.driver.close({ linger: true }), b.proxy.close()]), serverDriver.close({ linger: true })]);
  if (failures.length > 0) {
    process.stdout.write(`FAIL:\n  ${failures.join('\n  ')}\n`);
    return 1;
  }
  process.stdout.write(`OK: every chat line arrived once, intact and in order at every bot; every bot's 4 MiB level matches (sha256 ${levelHash.slice(0, 16)}…); every input got one outcome; no state arrived out of order\n`);
  return 0;
}

function onBotEvent(b: Bot, e: ClientEvent, levelHash: string, started: number): void {
  switch (e.type) {
    case 'connected':
      b.connectedAt = performance.now() - started;
      return;
    case 'delivery':
      if (e.lane === LANE.input) {
        const at = b.inputSentAt.get(e.id);
        b.inputSentAt.delete(e.id);
        if (e.delivered) {
          b.inputsDelivered++;
          if (at !== undefined) b.inputAckMs.push(performance.now() - at);
        } else b.inputsLost++;
      }
      return;
    case 'disconnected':
      b.failure ??= `disconnected (${e.reason})`;
      return;
    case 'message':
      break;
    default:
      return;
  }
  if (e.lane === LANE.state) {
    const t = new DataView(e.bytes.buffer, e.bytes.byteOffset, e.bytes.byteLength).getUint32(0, true);
    if (t <= b.newestState) b.stateErrors++;
    b.newestState = t;
    b.statesReceived++;
  } else if (e.lane === LANE.chat) {
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

/** True when bot `b` has everything it should: the level, every chat line sent by anyone, every input's outcome. */
function settled(b: Bot, bots: Bot[]): boolean {
  if (b.failure !== undefined) return true;
  return b.levelOk !== undefined && b.inputsDelivered + b.inputsLost === b.inputsSent && bots.every((s) => b.chatNext[s.index] === s.chatsSent);
}

function checks(bots: Bot[], n: number): string[] {
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
    if (b.inputsDelivered + b.inputsLost !== b.inputsSent) {
      out.push(`${who}: ${b.inputsDelivered + b.inputsLost} input outcomes for ${b.inputsSent} inputs`);
    }
    if (b.stateErrors > 0) out.push(`${who}: ${b.stateErrors} states older than one already received`);
  }
  return out;
}

function p50p99(xs: number[]): string {
  if (xs.length === 0) return '-';
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
  return `${at(50).toFixed(0)}/${at(99).toFixed(0)}`;
}

function pct(x: number): string {
  return `${(100 * x).toFixed(1)}%`;
}

function summary(bots: Bot[], inputsAtServer: number): string {
  const head = ['bot', 'srtt ms', 'loss', 'kbit/s out', 'inputs delivered', 'input ack ms p50/p99', 'states', 'chat lines', 'chat rtt ms p50/p99', 'level', 'level ms'];
  const rows = bots.map((b) => {
    const s = b.client.stats();
    const chats = b.chatNext.reduce((a, x) => a + x, 0);
    return [
      String(b.index), s === undefined ? '-' : s.srttMs.toFixed(0), s === undefined ? '-' : `${s.lossPercent.toFixed(1)}%`,
      s === undefined ? '-' : s.sentKbps.toFixed(0), b.inputsSent === 0 ? '-' : pct(b.inputsDelivered / b.inputsSent), p50p99(b.inputAckMs),
      String(b.statesReceived), `${chats}${b.chatErrors.length > 0 ? ' (errors)' : ''}`, p50p99(b.chatRtts),
      b.levelOk === true ? 'ok' : b.levelOk === false ? 'CORRUPT' : 'missing', b.levelMs === undefined ? '-' : b.levelMs.toFixed(0),
    ];
  });
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (r: string[]): string => r.map((x, i) => (i === 0 ? x.padEnd(w[i]!) : x.padStart(w[i]!))).join('  ');
  const inputs = bots.reduce((a, b) => a + b.inputsSent, 0);
  return [line(head), ...rows.map(line), `inputs: ${inputs} sent, ${inputsAtServer} arrived at the server (notify: lost ones are reported, not resent)`].join('\n');
}

/** The live view: a redrawn table on a terminal, a line per second otherwise. */
class View {
  private lines = 0;

  constructor(private readonly bots: Bot[], private readonly tty: boolean, private readonly started: number) {}

  draw(final = false): void {
    const t = ((performance.now() - this.started) / 1000).toFixed(1);
    const rows = this.bots.map((b) => {
      const s = b.client.stats();
      const p = b.client.blockProgress();
      const got = p?.receiving.deliveredBytes ?? 0;
      const partial = p?.receiving.blocks[0]?.receivedBytes ?? 0;
      const level = b.levelOk === undefined ? `${((100 * (got + partial)) / LEVEL_BYTES).toFixed(0)}%` : b.levelOk ? 'done' : 'BAD';
      return `bot ${b.index}: ${b.client.state.padEnd(16)} level ${level.padStart(4)}  srtt ${s === undefined ? '-' : s.srttMs.toFixed(0).padStart(3)} ms`
        + `  loss ${s === undefined ? '-' : s.lossPercent.toFixed(1).padStart(4)}%  in ${s === undefined ? '-' : s.receivedKbps.toFixed(0).padStart(5)} kbit/s`
        + `  inputs ${b.inputsDelivered}/${b.inputsSent}  states ${b.statesReceived}`;
    });
    if (!this.tty) {
      if (final) return;
      const done = this.bots.filter((b) => b.levelOk !== undefined).length;
      const srtt = this.bots.map((b) => b.client.stats()?.srttMs ?? 0);
      process.stdout.write(`t=${t}s  connected ${this.bots.filter((b) => b.client.state === 'connected').length}/${this.bots.length}`
        + `  levels done ${done}/${this.bots.length}  srtt ${Math.min(...srtt).toFixed(0)}..${Math.max(...srtt).toFixed(0)} ms\n`);
      return;
    }
    if (this.lines > 0) process.stdout.write(`\x1b[${this.lines}A`);
    const out = [`t=${t}s`, ...rows];
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
