/**
 * `npm run bench:netcode`: the cost of netcode 1.02 in gamewire. Writes the tables into the
 * "## netcode" section of bench/README.md and raw figures to bench/results/netcode.json.
 *
 * 1. Handshakes per second on one core (request → challenge → response → keep-alive, both ends'
 *    code, in memory, tokens made beforehand).
 * 2. Payload packets per second, sealed and opened, with the real ciphers (node:crypto, @noble) and
 *    the null cipher: protocol cost and crypto cost seen apart.
 * 3. Bytes of overhead per payload packet against the standard's minimum.
 * 4. Scale: 1,000 and 10,000 connected clients on one server at 20 Hz each way (real `Client`s,
 *    real `Server`; only the server's calls are timed): CPU share of one core, and memory per idle
 *    client on the server. Then the same traffic over real sockets (bench/netcode-udp.ts: the server on
 *    `UdpDriver` over loopback, the clients in another process), and where the server's time per
 *    packet goes on both paths (one CPU-profiled run of each, by layer).
 * NETCODE_BENCH_PARTS=12 (any of 1..4) runs only those parts and writes nothing; NETCODE_BENCH_SCALE=1000 sets
 * part 4's client counts, NETCODE_BENCH_CPU=0 skips its CPU runs (simulated and real), NETCODE_BENCH_UDP=250,1000
 * sets the real-socket rows' client counts (0: none), NETCODE_BENCH_PROFILE=0 skips the profiled runs and
 * NETCODE_BENCH_PROFILE=DIR also keeps their .cpuprofile files there (summarise one with bench/cpuprofile.ts).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { nodeCrypto } from '../src/adapters/node/node-crypto.js';
import { NonCryptoRng } from '../src/core/rng.js';
import { nobleCrypto } from '../src/crypto/noble.js';
import { nullCryptoForBenchmarks } from '../src/crypto/null.js';
import { sodiumCrypto } from '../src/crypto/sodium.js';
import type { CryptoProvider } from '../src/crypto/provider.js';
import { Client } from '../src/netcode/client.js';
import { Server } from '../src/netcode/server.js';
import { generateConnectToken, NetcodePacketType, newNetcodePacket, readPacket, writePacket } from '../src/netcode/wire.js';
import { type CpuProfile, type ProfileSummary, serverFrame, startProfile, summarise } from './cpuprofile.js';
import { udpRow, type UdpCrypto, type UdpRow } from './netcode-udp.js';
import { table, writeReadmeSection } from './readme.js';

const HERE = dirname(fileURLToPath(import.meta.url));
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const started = Date.now();
const load0 = loadavg()[0]!;
const ROUNDS = 5;
const sodium = await sodiumCrypto();

const PROTOCOL = 0x6761n;
const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 1);
const SERVER = '10.0.0.1:40000';
const UNIX0 = 1_800_000_000;
const unixTime = (now: number): number => UNIX0 + now / 1000;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const fmt = (x: number, d = 0): string => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });

function seeded(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

function tokenFor(clientId: number, crypto: CryptoProvider): Uint8Array {
  return generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId: BigInt(clientId), serverAddresses: [SERVER], nowUnixSeconds: UNIX0,
    expireSeconds: 3600, timeoutSeconds: 60, random: seeded(clientId), crypto,
  });
}

/**
 * A tiny in-memory drive loop between one server and many clients on a virtual clock (no links: every
 * datagram arrives at once). `timed` accumulates the wall time spent inside the server's methods.
 */
class Bench {
  server: Server;
  readonly clients: Client[] = [];
  readonly addr: string[] = [];
  now = 0;
  serverMs = 0;
  /** Sees every datagram a client sends. */
  onClientDatagram: ((b: Uint8Array) => void) | undefined;
  private readonly byAddr = new Map<string, Client>();
  private readonly out = new Uint8Array(1500);

  constructor(maxClients: number, crypto: CryptoProvider, raw = false) {
    this.server = new Server({
      protocolId: PROTOCOL, privateKey: KEY, addresses: [SERVER], unixTime, maxClients, crypto, random: seeded(1), ...(raw ? { raw } : {}),
    });
  }

  add(c: Client, addr: string): void {
    this.clients.push(c);
    this.addr.push(addr);
    this.byAddr.set(addr, c);
  }

  /** Move the clock to `until` in steps of `stepMs`, settling at each (timers fire at step granularity, as on an event loop). */
  runTo(until: number, stepMs: number): void {
    while (this.now + stepMs <= until) {
      this.now += stepMs;
      this.settle();
    }
  }

  /** Deliver everything both ways until quiet, running due timers at `now`. */
  settle(): void {
    for (let round = 0; round < 50; round++) {
      let moved = false;
      for (let i = 0; i < this.clients.length; i++) {
        const c = this.clients[i]!;
        const t = c.pollTimeout();
        if (t !== undefined && t <= this.now) c.handleTimeout(this.now);
        for (let tx = c.pollTransmit(this.now, this.out); tx !== undefined; tx = c.pollTransmit(this.now, this.out)) {
          const b = this.out.subarray(0, tx.length);
          this.onClientDatagram?.(b);
          const t0 = performance.now();
          this.server.handleDatagram(this.now, this.addr[i]!, b);
          this.serverMs += performance.now() - t0;
          moved = true;
        }
        while (c.pollEvent() !== undefined);
      }
      const t0 = performance.now();
      const st = this.server.pollTimeout();
      if (st !== undefined && st <= this.now) this.server.handleTimeout(this.now);
      const sent: { to: string; b: Uint8Array }[] = [];
      for (let tx = this.server.pollTransmit(this.now, this.out); tx !== undefined; tx = this.server.pollTransmit(this.now, this.out)) {
        sent.push({ to: tx.to, b: this.out.slice(0, tx.length) });
      }
      while (this.server.pollEvent() !== undefined);
      this.serverMs += performance.now() - t0;
      for (const s of sent) {
        this.byAddr.get(s.to)?.handleDatagram(this.now, s.to === SERVER ? s.to : SERVER, s.b);
        moved = true;
      }
      if (!moved) return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Handshakes per second

function handshakes(n: number, crypto: CryptoProvider): { perSec: number; serverPerSec: number } {
  const tokens = Array.from({ length: n }, (_, i) => tokenFor(i + 1, crypto));
  const b = new Bench(n, crypto);
  const t0 = performance.now();
  for (let i = 0; i < n; i++) {
    const c = new Client({ crypto });
    b.add(c, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:5000`);
    c.connect(b.now, tokens[i]!);
  }
  for (let step = 0; step < 5 && b.server.size < n; step++) {
    b.settle();
    b.now += 100;
  }
  const ms = performance.now() - t0;
  if (b.server.size !== n) throw new Error(`only ${b.server.size} of ${n} clients connected`);
  return { perSec: (n * 1000) / ms, serverPerSec: (n * 1000) / b.serverMs };
}

function part1(): { data: unknown; text: string } {
  const n = 2000;
  const rows: (string | number)[][] = [];
  const data: Record<string, { perSec: number[]; serverPerSec: number[] }> = {};
  for (const [name, crypto] of [['sodium (WASM)', sodium], ['node:crypto', nodeCrypto], ['@noble/ciphers', nobleCrypto]] as const) {
    const runs = Array.from({ length: ROUNDS }, () => handshakes(n, crypto));
    data[name] = { perSec: runs.map((r) => r.perSec), serverPerSec: runs.map((r) => r.serverPerSec) };
    rows.push([name, fmt(median(data[name].perSec)), fmt(median(data[name].serverPerSec))]);
  }
  const text = [
    '### 1. Handshakes per second, one core',
    '',
    `${n} clients connect to one server in memory (virtual clock, no loss); tokens made beforehand. "both ends" counts`,
    'the clients\' work too (request, response); "server only" times the server\'s calls (decrypting the private token',
    `with XChaCha20-Poly1305, the challenge, the response). Medians of ${ROUNDS} runs.`,
    '',
    table(['crypto', 'handshakes/s, both ends', 'handshakes/s, server only'], rows),
  ].join('\n');
  return { data, text };
}

// ---------------------------------------------------------------------------------------------
// 2. Payload packets per second

function packetsPerSec(crypto: CryptoProvider, size: number): { seal: number; open: number } {
  const key = KEY;
  const body = new Uint8Array(size).fill(7);
  const out = new Uint8Array(1300);
  const n = 200_000;
  let t0 = performance.now();
  let len = 0;
  for (let i = 0; i < n; i++) len = writePacket(out, NetcodePacketType.Payload, BigInt(i), body, PROTOCOL, key, crypto);
  const seal = (n * 1000) / (performance.now() - t0);
  const pkt = out.slice(0, len);
  const scratch = new Uint8Array(1300);
  const packet = newNetcodePacket();
  t0 = performance.now();
  let ok = 0;
  for (let i = 0; i < n; i++) {
    if (readPacket(pkt, PROTOCOL, key, 1 << NetcodePacketType.Payload, undefined, crypto, packet, scratch) >= 0) ok++;
  }
  const open = (n * 1000) / (performance.now() - t0);
  if (ok !== n) throw new Error(`${crypto.name}: ${n - ok} packets failed to open`);
  return { seal, open };
}

function part2(): { data: unknown; text: string } {
  const nul = nullCryptoForBenchmarks('I understand this disables encryption');
  const rows: (string | number)[][] = [];
  const data: Record<string, { size: number; seal: number[]; open: number[] }[]> = {};
  for (const [name, crypto] of [['sodium (WASM)', sodium], ['node:crypto', nodeCrypto], ['@noble/ciphers', nobleCrypto], ['null (no crypto)', nul]] as const) {
    data[name] = [];
    for (const size of [100, 1200]) {
      const runs = Array.from({ length: ROUNDS }, () => packetsPerSec(crypto, size));
      data[name].push({ size, seal: runs.map((r) => r.seal), open: runs.map((r) => r.open) });
      rows.push([name, size, fmt(median(runs.map((r) => r.seal))), fmt(median(runs.map((r) => r.open)))]);
    }
  }
  const text = [
    '### 2. Payload packets per second, one core',
    '',
    'One payload packet written (prefix, sequence, ChaCha20-Poly1305-IETF with the standard\'s nonce and 22-byte AD) and',
    `read (the standard's read order, decryption); 200,000 per run, medians of ${ROUNDS}. The null cipher copies bytes and`,
    'writes a zero tag: the difference to it is the crypto\'s cost, the rest is the protocol\'s.',
    '',
    table(['crypto', 'payload bytes', 'sealed/s', 'opened/s'], rows),
  ].join('\n');
  return { data, text };
}

// ---------------------------------------------------------------------------------------------
// 3. Overhead per payload packet

/** Bytes a client's payload packets carry beyond one `size`-byte message (median over 200), raw or on a reliable-ordered lane. */
function overheadPerMessage(raw: boolean, size: number): number {
  const b = new Bench(4, nodeCrypto, raw);
  const c = new Client({ crypto: nodeCrypto, ...(raw ? { raw: true } : {}) });
  b.add(c, '10.0.0.2:5000');
  c.connect(0, tokenFor(1, nodeCrypto));
  for (let i = 0; i < 5 && c.state !== 'connected'; i++) {
    b.settle();
    b.now += 100;
  }
  const sizes: number[] = [];
  b.onClientDatagram = (d) => {
    if ((d[0]! & 0x0f) === NetcodePacketType.Payload && d.length > size) sizes.push(d.length - size);
  };
  const msg = new Uint8Array(size);
  for (let i = 0; i < 200; i++) {
    if (raw) c.sendRaw(msg);
    else c.send(0, msg);
    b.settle();
    b.runTo(b.now + 50, 1);
  }
  return median(sizes);
}

function part3(): { data: unknown; text: string } {
  const out = new Uint8Array(1300);
  const body = new Uint8Array(100);
  const rows: (string | number)[][] = [];
  const framing: { sequence: string; bytes: number }[] = [];
  for (const seq of [0n, 255n, 256n, 65_536n, 1n << 24n, 1n << 32n, (1n << 63n) - 1n]) {
    const n = writePacket(out, NetcodePacketType.Payload, seq, body, PROTOCOL, KEY, nobleCrypto) - body.length;
    framing.push({ sequence: seq.toString(), bytes: n });
    rows.push([`netcode framing at sequence ${seq}`, n, n - 18]);
  }
  const raw = overheadPerMessage(true, 100);
  const lane = overheadPerMessage(false, 100);
  rows.push(['raw mode: one 100-byte payload per packet (sequence < 256)', raw, raw - 18]);
  rows.push(['gamewire lanes: one 100-byte reliable-ordered message per packet (sequence < 256)', lane, lane - 18]);
  const text = [
    '### 3. Bytes of overhead per payload packet',
    '',
    "The standard's framing around a payload is a prefix byte, the packet sequence in as few bytes as it needs, and the",
    "16-byte MAC: at least 18 bytes (a one-byte sequence), and ours is byte for byte the standard's (the vectors in",
    "test/vectors check it). A connection's sequence grows by one per packet: at 60 packets a second it needs 3 bytes",
    "after 18 minutes, 4 after 78 hours. With gamewire's lanes a payload also carries one byte (DATA or BLOCK), the",
    "packet layer's header (sequence, ack, ack bits, ack delay; [ack.md](../docs/ack.md)) and the frame header of",
    'each message. Measured rows: the median over 200 packets of (payload packet bytes - 100), a client sending one',
    '100-byte message every 50 ms to a server in memory (every packet acked before the next).',
    '',
    table(['what', 'bytes beyond the payload', 'above the standard minimum (18)'], rows),
  ].join('\n');
  return { data: { framing, rawMode: raw, lanes: lane }, text };
}

// ---------------------------------------------------------------------------------------------
// 4. Scale

function memoryAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
}

/** A server with `n` clients connected through the handshake (tokens made beforehand). */
function connected(n: number, crypto: CryptoProvider, raw = false): Bench {
  const tokens = Array.from({ length: n }, (_, i) => tokenFor(i + 1, crypto));
  const b = new Bench(n, crypto, raw);
  for (let i = 0; i < n; i++) {
    const c = new Client({ crypto, ...(raw ? { raw } : {}) });
    b.add(c, `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}:5000`);
    c.connect(0, tokens[i]!);
  }
  for (let step = 0; step < 10 && b.server.size < n; step++) {
    b.settle();
    b.now += 100;
  }
  if (b.server.size !== n) throw new Error(`only ${b.server.size} of ${n} clients connected`);
  return b;
}

/** Bytes the server holds per client of `b`: memory with the server minus memory without it (clients kept). */
function serverBytesPerClient(b: Bench): number {
  const n = b.clients.length;
  const withServer = memoryAfterGc();
  b.server = undefined as unknown as Server;
  return (withServer - memoryAfterGc()) / n;
}

/**
 * Server CPU share of one core with `n` clients at 20 Hz each way for 5 s of virtual time; then the server's
 * bytes per client. With `profile`, the traffic (not the handshakes) is CPU-profiled, which slows it.
 */
function traffic(n: number, crypto: CryptoProvider, profile = false): { share: number; bench: Bench; profile?: CpuProfile } {
  const b = connected(n, crypto);
  const input = new Uint8Array(40);
  const state = new Uint8Array(100);
  const t0 = b.now;
  b.serverMs = 0;
  const stop = profile ? startProfile() : undefined;
  const sc = b.server.clients();
  for (let tick = 0; tick < 100; tick++) {
    for (const c of b.clients) c.send(0, input);
    const s0 = performance.now();
    for (const c of sc) c.send(0, state);
    b.serverMs += performance.now() - s0;
    b.settle();
    b.runTo(b.now + 50, 5);
  }
  const p = stop?.();
  sc.length = 0;
  return { share: b.serverMs / (b.now - t0), bench: b, ...(p === undefined ? {} : { profile: p }) };
}

/**
 * What the CPU rows mean per packet, and why 10,000 clients at 20 Hz cannot fit one core here: the
 * target's budget per packet against what sealing one costs alone (measured now, same process).
 */
function floor(data: { clients: number; crypto: string; cpuShare: number[] }[], udp: readonly UdpRow[]): string[] {
  const body = new Uint8Array(100);
  const out = new Uint8Array(1300);
  const n = 100_000;
  const times = Array.from({ length: 3 }, () => {
    const t0 = performance.now();
    for (let i = 0; i < n; i++) writePacket(out, NetcodePacketType.Payload, BigInt(i), body, PROTOCOL, KEY, sodium);
    return ((performance.now() - t0) * 1000) / n;
  });
  const seal = median(times);
  const budget = 1e6 / (3 * 20 * 10_000);
  const us = (name: string): string => data.filter((d) => d.crypto === name)
    .map((d) => `${fmt((median(d.cpuShare) * 1e6) / (60 * d.clients), 1)} µs (${fmt(d.clients)} clients)`).join(', ');
  const top = data.filter((d) => d.crypto === 'sodium').at(-1);
  const perCore = top === undefined ? 0 : top.clients / median(top.cpuShare);
  return [
    `Server time per packet: ${us('sodium')} with sodium; ${us('null (packets not encrypted)')} with packets not encrypted,`,
    `which is the protocol's own cost (packet layer, lanes, host, netcode framing). 10,000 clients at 20 Hz each way are`,
    `600,000 packets a second: within one core that leaves ${fmt(budget, 2)} µs per packet for everything, while writing one`,
    `sealed 100-byte payload packet alone takes ${fmt(seal, 2)} µs with the fastest provider (median of 3 × 100,000, this run).`,
    `**Target missed**: at this run's rate one core carries about ${fmt(Math.round(perCore / 100) * 100)} clients at 20 Hz each way.`,
    ...udpFloor(udp, us),
  ];
}

const UDP_CRYPTO_NAME: Record<UdpCrypto, string> = { sodium: 'sodium', null: 'null (packets not encrypted)' };

/** The real-socket rows' reading: what real sockets cost per datagram, and the clients one core carries. */
function udpFloor(udp: readonly UdpRow[], sim: (name: string) => string): string[] {
  const lines: string[] = [];
  for (const name of ['sodium', 'null'] as const) {
    const parts: string[] = [];
    for (const n of [...new Set(udp.filter((r) => r.crypto === name).map((r) => r.clients))]) {
      const rs = udp.filter((r) => r.crypto === name && r.clients === n);
      const m = (f: (r: UdpRow) => number): number => median(rs.map(f));
      if (rs.some((r) => r.saturated)) {
        parts.push(`at ${fmt(n)} clients the server could not keep up: it read ${fmt(m((r) => r.readFraction) * 100, 0)} % of the ` +
          'datagrams the clients sent (the rest overflowed its socket\'s receive buffer), with its loop busy ' +
          `${fmt(m((r) => r.server.loopBusy) * 100, 0)} % of the window`);
      } else {
        parts.push(`${fmt(m((r) => r.usPerPacket), 1)} µs per datagram at ${fmt(n)} clients, ${fmt(m((r) => r.packetsPerClientSecond), 0)} ` +
          'datagrams per client per second through the server\'s socket (the simulator counts 60: here an input and a state ' +
          'that do not meet within `maxAckDelayMs` are acked by separate packets), so about ' +
          `${fmt(Math.round(n / m((r) => r.share) / 50) * 50)} clients within one core`);
      }
    }
    if (parts.length === 0) continue;
    lines.push('', `Over real sockets with ${UDP_CRYPTO_NAME[name]}: ${parts.join('; ')}. The simulator's figure: ${sim(UDP_CRYPTO_NAME[name])}.`);
  }
  return lines;
}

/** Part 4's real-socket rows: `counts` clients with sodium and with null crypto; 3 runs below 1,000 clients, 1 from 1,000 on. */
async function udpRows(counts: readonly number[]): Promise<UdpRow[]> {
  const rows: UdpRow[] = [];
  for (const n of counts) {
    for (const crypto of ['sodium', 'null'] as const) {
      for (let run = 0; run < (n >= 1000 ? 1 : 3); run++) rows.push(await udpRow({ clients: n, crypto, warmupMs: 2000, windowMs: 4000 }));
    }
  }
  return rows;
}

/** Self time by layer in µs per packet: each profile's shares times the unprofiled rows' µs per packet. */
function layerTable(cols: { head: string; summary: ProfileSummary; usPerPacket: number }[]): string {
  const layers = [...new Set(cols.flatMap((c) => c.summary.layers.map((l) => l.layer)))];
  const at = (c: (typeof cols)[number], layer: string): number => c.summary.layers.find((l) => l.layer === layer)?.share ?? 0;
  layers.sort((a, b) => Math.max(...cols.map((c) => at(c, b))) - Math.max(...cols.map((c) => at(c, a))));
  const rows = layers.map((layer) => [layer, ...cols.map((c) => `${fmt(at(c, layer) * c.usPerPacket, 2)} µs (${fmt(at(c, layer) * 100, 1)} %)`)]);
  rows.push(['total', ...cols.map((c) => `${fmt(c.usPerPacket, 2)} µs`)]);
  return table(['layer (self time)', ...cols.map((c) => c.head)], rows);
}

const topFunctions = (s: ProfileSummary, n: number): string =>
  s.functions.slice(0, n).map((f) => `\`${f.fn.replace(/ (src|bench)\/.*$/, '')}\` (${f.layer}) ${fmt(f.share * 100, 1)} %`).join(', ');

async function part4(): Promise<{ data: unknown; text: string }> {
  // Packets unencrypted, connect tokens still sealed (a null tag would make every token's MAC the same: "reused").
  const nul = { ...nullCryptoForBenchmarks('I understand this disables encryption'), xseal: sodium.xseal, xopen: sodium.xopen };
  const counts = (process.env.NETCODE_BENCH_SCALE ?? '1000,10000').split(',').map(Number);
  const cases: { n: number; name: string; crypto: CryptoProvider }[] = counts.flatMap((n) => n <= 1000
    ? [{ n, name: 'sodium', crypto: sodium }, { n, name: 'node:crypto', crypto: nodeCrypto }, { n, name: 'null (packets not encrypted)', crypto: nul }]
    : [{ n, name: 'sodium', crypto: sodium }]);
  const rows: (string | number)[][] = [];
  const data: { clients: number; crypto: string; cpuShare: number[]; activeBytesPerClient: number[] }[] = [];
  for (const { n, name, crypto } of process.env.NETCODE_BENCH_CPU === '0' ? [] : cases) {
    const rounds = n > 5000 ? 1 : 3;
    const runs = Array.from({ length: rounds }, () => {
      const r = traffic(n, crypto);
      return { share: r.share, activeBytes: serverBytesPerClient(r.bench) };
    });
    const cpu = median(runs.map((r) => r.share));
    data.push({ clients: n, crypto: name, cpuShare: runs.map((r) => r.share), activeBytesPerClient: runs.map((r) => r.activeBytes) });
    rows.push([fmt(n), name, `${fmt(cpu * 100, 1)} %`, cpu <= 1 ? 'yes' : '**no**', fmt(median(runs.map((r) => r.activeBytes))), rounds]);
  }
  const cpuRuns = process.env.NETCODE_BENCH_CPU !== '0';
  const udpCounts = cpuRuns ? (process.env.NETCODE_BENCH_UDP ?? '250,1000').split(',').map(Number).filter((n) => n > 0) : [];
  const udp = await udpRows(udpCounts);
  for (const n of udpCounts) {
    for (const name of ['sodium', 'null'] as const) {
      const rs = udp.filter((r) => r.clients === n && r.crypto === name);
      const cpu = median(rs.map((r) => r.share));
      const saturated = rs.some((r) => r.saturated);
      rows.push([fmt(n), `${UDP_CRYPTO_NAME[name]}, UdpDriver over loopback`, `${fmt(cpu * 100, 1)} %${saturated ? ' (could not keep up)' : ''}`,
        cpu <= 1 && !saturated ? 'yes' : '**no**', '–', rs.length]);
    }
  }
  const udpDetail = table(
    ['clients', 'crypto', 'server CPU (user + system)', 'µs per datagram', 'datagrams per client per s', 'server read / clients sent', 'server loop busy', 'client process CPU', 'other processes\' CPU', 'runs'],
    udpCounts.flatMap((n) => (['sodium', 'null'] as const).map((name) => {
      const rs = udp.filter((r) => r.clients === n && r.crypto === name);
      const m = (f: (r: UdpRow) => number): number => median(rs.map(f));
      return [fmt(n), UDP_CRYPTO_NAME[name], `${fmt(m((r) => r.share) * 100, 1)} % (${fmt(m((r) => r.server.userMs / r.server.wallMs) * 100, 1)} + ${fmt(m((r) => r.server.systemMs / r.server.wallMs) * 100, 1)})`,
        fmt(m((r) => r.usPerPacket), 1), fmt(m((r) => r.packetsPerClientSecond), 1), `${fmt(m((r) => r.readFraction) * 100, 1)} %`,
        `${fmt(m((r) => r.server.loopBusy) * 100, 0)} %`, `${fmt(m((r) => (r.clientProcess.userMs + r.clientProcess.systemMs) / r.clientProcess.wallMs) * 100, 0)} %`,
        `${fmt(m((r) => r.othersCores) * 100, 0)} %`, rs.length];
    })),
  );

  // Where the time goes: one profiled run of each path with packets not encrypted (not in the figures above).
  const profiles: { head: string; summary: ProfileSummary; usPerPacket: number }[] = [];
  const simNull = data.find((d) => d.crypto.startsWith('null') && d.clients === 1000);
  const steadyNull = udp.filter((r) => r.crypto === 'null' && !r.saturated);
  const keepProfiles = process.env.NETCODE_BENCH_PROFILE === undefined || process.env.NETCODE_BENCH_PROFILE === '0' ? undefined : process.env.NETCODE_BENCH_PROFILE;
  if (cpuRuns && process.env.NETCODE_BENCH_PROFILE !== '0') {
    if (simNull !== undefined) {
      const p = traffic(1000, nul, true).profile!;
      if (keepProfiles !== undefined) writeFileSync(join(keepProfiles, 'simulator-server.cpuprofile'), JSON.stringify(p));
      profiles.push({ head: 'simulator, 1,000 clients (the server\'s calls)', summary: summarise(p, serverFrame), usPerPacket: (median(simNull.cpuShare) * 1e6) / (60 * 1000) });
    }
    if (steadyNull.length > 0) {
      const n = steadyNull[0]!.clients;
      const dir = mkdtempSync(join(tmpdir(), 'gamewire-prof-'));
      try {
        const file = join(dir, 'server.cpuprofile');
        await udpRow({ clients: n, crypto: 'null', warmupMs: 2000, windowMs: 4000, profile: file });
        const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
        if (keepProfiles !== undefined) writeFileSync(join(keepProfiles, 'udp-server.cpuprofile'), JSON.stringify(p));
        profiles.push({ head: `UdpDriver over loopback, ${fmt(n)} clients (the server process)`, summary: summarise(p), usPerPacket: median(steadyNull.filter((r) => r.clients === n).map((r) => r.usPerPacket)) });
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  }
  const memRows: (string | number)[][] = [];
  const mem: { clients: number; lanes: number[]; raw: number[] }[] = [];
  for (const n of counts) {
    const rounds = n > 5000 ? 1 : 3;
    const lanes = Array.from({ length: rounds }, () => serverBytesPerClient(connected(n, sodium)));
    const raw = Array.from({ length: rounds }, () => serverBytesPerClient(connected(n, sodium, true)));
    mem.push({ clients: n, lanes, raw });
    const l = median(lanes);
    memRows.push([fmt(n), fmt(l), l <= 8192 ? 'yes' : '**no**', fmt(median(raw)), rounds]);
  }
  const text = [
    '### 4. Scale: connected clients on one server process',
    '',
    'One `Server` (one reliable-ordered lane) and N real `Client`s in one process on a virtual clock, no loss. Each',
    'client sends a 40-byte input at 20 Hz and the server a 100-byte state to each client at 20 Hz, for 5 s of virtual',
    'time, delivered at once and settled every 5 ms (timers fire at that granularity); only the server\'s calls are timed',
    '(handleDatagram, handleTimeout, pollTransmit, pollEvent, send). CPU share = server time / virtual time (1.0 = one',
    'core). Each client sends two packets per tick (its input, and 5 ms later the ack of the state: `maxAckDelayMs`), so',
    'N clients put 3 × 20 × N packets a second through the server. Memory = the heap and array buffers the server holds',
    'per connected client: memory with the server and its clients minus memory with the clients alone (garbage',
    'collected both times); "after traffic" is measured at the end of the CPU run, "idle" right after the handshake.',
    'Targets: 10,000 clients within one core, at most 8 KiB per idle client.',
    '',
    table(['clients', 'crypto', 'server CPU, share of one core', 'within one core', 'server bytes per client after traffic', 'runs'], rows),
    '',
    table(['clients', 'server bytes per idle client (lanes)', '≤ 8 KiB', 'the same in raw mode (netcode only)', 'runs'], memRows),
    '',
    ...floor(data, udp),
    ...(udp.length === 0 ? [] : [
      '',
      '#### Over real sockets',
      '',
      'Rows "UdpDriver over loopback": the same traffic between two processes (bench/netcode-udp.ts). The server process',
      'runs the `Server` on `UdpDriver.openEndpoint` at 127.0.0.1 and sends every client its state in one 20 Hz tick; the',
      'client process runs N `Client`s, each on its own `UdpDriver` socket (N addresses, as N players), sending inputs at',
      '20 Hz in phases spread over the period. Once every client is connected and after 2 s of traffic, both processes',
      'measure the same 4 s: server CPU = process.cpuUsage (user + system, all threads) / wall time; µs per datagram = that',
      'CPU / the datagrams through the server\'s socket (in + out, the driver\'s counters). A server that read under 90 %',
      'of what the clients sent could not keep up. No memory figure: the server process\'s growth from before the first',
      'client to after the window also holds the code compiled meanwhile (results/netcode.json keeps it, bytesPerClient).',
      'Both processes share the machine\'s cores with whatever else runs: each run first waits (up to 20 s) for the',
      'machine to be under 15 % busy; "other processes\' CPU" is what the rest of the machine used during the window.',
      '',
      udpDetail,
    ]),
    ...(profiles.length === 0 ? [] : [
      '',
      '#### Where the server\'s time per packet goes',
      '',
      'Packets not encrypted; one CPU-profiled run of each path (V8\'s sampler through node:inspector, every 100 µs; its',
      'figures are not in the tables above), self time by layer (a native call or builtin is charged to the layer that',
      'called it: "dgram + send syscall" includes the kernel\'s sendmsg, which on loopback also delivers the datagram into',
      'the receiving socket), scaled to the µs per packet of the unprofiled rows. The simulator column keeps only samples',
      'under the server\'s calls; the real-socket column is the server process\'s main thread, idle left out.',
      '',
      layerTable(profiles),
      '',
      ...profiles.map((p) => `Top functions, ${p.head}: ${topFunctions(p.summary, 8)}.`),
    ]),
  ].join('\n');
  return {
    data: {
      cpu: data, idleMemory: mem, udp,
      profiles: profiles.map((p) => ({ path: p.head, usPerPacket: p.usPerPacket, layers: p.summary.layers, functions: p.summary.functions.slice(0, 30) })),
    },
    text,
  };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const t0 = Date.now();
  const only = process.env.NETCODE_BENCH_PARTS;
  const wants = (p: string): boolean => only === undefined || only.includes(p);
  const parts: { key: string; run: () => { data: unknown; text: string } | Promise<{ data: unknown; text: string }> }[] = [
    { key: '1', run: part1 }, { key: '2', run: part2 }, { key: '3', run: part3 }, { key: '4', run: part4 },
  ];
  const texts: string[] = [];
  const data: Record<string, unknown> = {};
  for (const p of parts) {
    if (!wants(p.key)) continue;
    const r = await p.run();
    texts.push(r.text);
    data[`part${p.key}`] = r.data;
    console.log(r.text + '\n');
  }
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  const machine =
    `Machine: ${cpu} × ${cpus().length} logical, ${(totalmem() / 2 ** 30).toFixed(1)} GiB; Node ${process.version}; ` +
    `${new Date(started).toISOString().slice(0, 10)}; load average ${load0.toFixed(2)} at start, ${loadavg()[0]!.toFixed(2)} at end; ` +
    `bench took ${((Date.now() - t0) / 1000).toFixed(0)} s.`;
  console.log(machine);
  if (only !== undefined) return;
  const round = (_k: string, v: unknown): unknown => (typeof v === 'number' && !Number.isInteger(v) ? Math.round(v * 1000) / 1000 : v);
  writeFileSync(join(HERE, 'results', 'netcode.json'), JSON.stringify({ date: new Date(started).toISOString(), machine: { cpu, node: process.version }, ...data }, round) + '\n');
  writeReadmeSection('## netcode', ['## netcode', '', '`npm run bench:netcode` (bench/netcode.bench.ts; raw figures in bench/results/netcode.json).', '', ...texts.flatMap((t) => [t, '']), machine, ''].join('\n'));
}

await main();
