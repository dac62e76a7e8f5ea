/**
 * Large-block transfer on the simulator (virtual clock): gamewire's ChunkSender with its default
 * AdaptiveRate controller against the physical floor and three baselines. Prints a table, writes raw
 * figures to bench/results/chunk.json and the table into bench/README.md (section "## chunk").
 *
 *   npm run bench:chunk            full matrix (a few minutes at most)
 *   npm run bench:chunk -- --quick 1 seed per scenario, no 64 MiB baselines (smoke run)
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeReadmeSection } from './readme.js';
import { ChunkReceiver, ChunkSender, type ChunkSenderOptions, DEFAULT_SLICE_BYTES, SLICE_HEADER_BYTES } from '../src/chunk/index.js';
import { FixedRate } from '../src/congestion/fixed.js';
import { Link, type LinkConfig } from '../src/sim/index.js';
import { PairWorld } from '../src/sim/pair-world.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const QUICK = process.argv.includes('--quick');

/** UDP/IPv4 header bytes per datagram. */
const UDP_IP = 28;
/** Largest UDP payload every scheme uses (gamewire's conservative default). */
const DATAGRAM = 1200;
/** Bottleneck queue of every scenario, datagrams. */
const QUEUE = 100;

const KiB = 1024;
const MiB = 1024 * KiB;

interface Path { name: string; short: string; bitsPerSec: number; rttMs: number }
const PATHS: readonly Path[] = [
  { name: '10 Mbit/s, 100 ms RTT', short: '10M/100ms', bitsPerSec: 10e6, rttMs: 100 },
  { name: '100 Mbit/s, 20 ms RTT', short: '100M/20ms', bitsPerSec: 100e6, rttMs: 20 },
];
const LOSSES = [0, 0.01, 0.1] as const;
const SIZES = [256 * KiB, 4 * MiB, 64 * MiB] as const;
/** Without random loss or jitter the simulator draws nothing, so one seed is the whole story. */
const seedsFor = (loss: number): number[] => (loss === 0 || QUICK ? [1] : [1, 2, 3]);

function linkConfig(p: Path, loss: number): Partial<LinkConfig> {
  return { latencyMs: p.rttMs / 2, rateBitsPerSec: p.bitsPerSec, queueDatagrams: QUEUE, loss };
}

/**
 * The physical floor: the payload carried in full 1200-byte UDP datagrams with no protocol header at
 * all (only the 28 bytes of UDP/IPv4 each), serialised at the link rate, inflated by 1/(1 − loss),
 * plus the one-way delay of the last datagram.
 */
function floorMs(bytes: number, p: Path, loss: number): number {
  const datagrams = Math.max(1, Math.ceil(bytes / DATAGRAM));
  const wire = bytes + datagrams * UDP_IP;
  return ((wire * 8) / p.bitsPerSec) * 1000 / (1 - loss) + p.rttMs / 2;
}

interface Run {
  /** Virtual ms from the start until the receiver had the whole block, or undefined past the cap. */
  completionMs: number | undefined;
  capMs: number;
  /** Wire bytes (UDP/IPv4 headers included) of both directions per payload byte. */
  wirePerPayload: number;
  /** Datagrams dropped at the forward bottleneck queue, % of datagrams sent forward. */
  queueDropPct: number;
  /** Forward datagrams sent. */
  datagrams: number;
  /** Wall-clock ms this simulation took. */
  realMs: number;
}

const blocks = new Map<number, Uint8Array>();
function block(bytes: number): Uint8Array {
  let b = blocks.get(bytes);
  if (b === undefined) {
    b = new Uint8Array(bytes);
    for (let i = 0; i < bytes; i += 4096) b[i] = i & 0xff;
    blocks.set(bytes, b);
  }
  return b;
}

function wireOf(c: { sent: number; bytesSent: number }): number {
  return c.bytesSent + c.sent * UDP_IP;
}

/** gamewire: ChunkSender → sim Link → ChunkReceiver (acks back over the reverse Link), in a PairWorld. */
function runChunk(p: Path, loss: number, bytes: number, seed: number, sender: ChunkSenderOptions, capMs: number): Run {
  const t0 = performance.now();
  const tx = new ChunkSender({ ...sender, maxQueuedBytes: Math.max(bytes, 1) });
  const rx = new ChunkReceiver({ maxBlockBytes: Math.max(bytes, 1) });
  const cfg = linkConfig(p, loss);
  const world = new PairWorld({ seed, aToB: cfg, bToA: cfg, a: tx, b: rx });
  tx.sendBlock(block(bytes));
  let done = false;
  const r = world.runUntil(() => {
    for (let e = rx.pollEvent(); e !== undefined; e = rx.pollEvent()) if (e.type === 'block') done = true;
    return done;
  }, { maxTimeMs: capMs });
  const st = world.stats;
  return {
    completionMs: r.ok ? r.now : undefined,
    capMs,
    wirePerPayload: (wireOf(st.aToB) + wireOf(st.bToA)) / bytes,
    queueDropPct: (100 * st.aToB.droppedQueue) / Math.max(1, st.aToB.sent),
    datagrams: st.aToB.sent,
    realMs: performance.now() - t0,
  };
}

/**
 * Baseline 1, naive fragmentation (the seed's 92.4% example): the whole block goes as fragments of
 * one packet, paced at exactly the link rate (an oracle rate: no queueing); reassembly needs every
 * fragment of one copy, so the sender repeats the whole block until a copy arrives intact. 1200-byte
 * datagrams with an 8-byte fragment header. Completion = last fragment of the first intact copy.
 */
function runNaive(p: Path, loss: number, bytes: number, seed: number, capMs: number): Run {
  const t0 = performance.now();
  const per = DATAGRAM - 8;
  const n = Math.max(1, Math.ceil(bytes / per));
  const link = new Link(linkConfig(p, loss), seed);
  const spacing = ((DATAGRAM + UDP_IP) * 8000) / p.bitsPerSec;
  const buf = new Uint8Array(DATAGRAM);
  const dv = new DataView(buf.buffer);
  const got = new Map<number, number>();
  let sent = 0;
  let completion: number | undefined;
  const drain = (upTo: number): void => {
    for (let t = link.pollTimeout(); t !== undefined && t <= upTo; t = link.pollTimeout()) {
      const d = link.pollDeliver(t)!;
      const copy = new DataView(d.buffer, d.byteOffset).getUint32(0);
      const c = (got.get(copy) ?? 0) + 1;
      got.set(copy, c);
      if (c === n && completion === undefined) completion = t;
    }
  };
  for (let copy = 0; completion === undefined; copy++) {
    for (let f = 0; f < n && completion === undefined; f++) {
      const t = sent * spacing;
      if (t > capMs) break;
      drain(t);
      dv.setUint32(0, copy);
      link.send(t, buf.subarray(0, f === n - 1 ? bytes - f * per + 8 : DATAGRAM));
      sent++;
      if (got.size > 2) for (const k of got.keys()) if (k < copy - 2) got.delete(k);
    }
    if (sent * spacing > capMs) break;
  }
  drain(capMs);
  const c = link.counters();
  return {
    completionMs: completion !== undefined && completion <= capMs ? completion : undefined,
    capMs,
    wirePerPayload: wireOf(c) / bytes,
    queueDropPct: (100 * c.droppedQueue) / Math.max(1, c.sent),
    datagrams: c.sent,
    realMs: performance.now() - t0,
  };
}

/**
 * Baseline 3, a yojimbo-like block lane (gaffer.md §2.10): both ends tick at 60 Hz; each sender tick
 * carries one 1 KiB fragment (the first not acked and not sent in the last 250 ms; fixed resend),
 * as one 1044-byte datagram (generous: real yojimbo defaults split it into two); each receiver tick
 * acks everything received so far (48-byte ack packet).
 */
function runYojimbo(p: Path, loss: number, bytes: number, seed: number, capMs: number): Run {
  const t0 = performance.now();
  const frag = 1024;
  const ackBits = 33;
  const n = Math.max(1, Math.ceil(bytes / frag));
  const cfg = linkConfig(p, loss);
  const fwd = new Link(cfg, seed * 2 + 1);
  const rev = new Link(cfg, seed * 2 + 2);
  const tick = 1000 / 60;
  const acked = new Uint8Array(n);
  const lastSent = new Float64Array(n);
  const received = new Uint8Array(n);
  let receivedCount = 0;
  // Receiver: fragment ids that arrived in each of the last `ackBits` ticks (yojimbo's ack bits
  // cover 33 packets, so one lost ack costs nothing); the ack datagram names its tick.
  const arrivals: number[][] = [];
  const ackBuf = new Uint8Array(20);
  const pkt = new Uint8Array(frag + 20);
  const outstanding: number[] = [];
  let nextFresh = 0;
  let completion: number | undefined;
  for (let k = 0; completion === undefined; k++) {
    const now = k * tick;
    if (now > capMs) break;
    const fresh: number[] = [];
    for (let t = fwd.pollTimeout(); t !== undefined && t <= now; t = fwd.pollTimeout()) {
      const d = fwd.pollDeliver(t)!;
      const id = new DataView(d.buffer, d.byteOffset).getUint32(0);
      fresh.push(id);
      if (received[id] === 0) {
        received[id] = 1;
        if (++receivedCount === n) completion = t;
      }
    }
    if (completion !== undefined) break;
    for (let t = rev.pollTimeout(); t !== undefined && t <= now; t = rev.pollTimeout()) {
      const d = rev.pollDeliver(t)!;
      const at = new DataView(d.buffer, d.byteOffset).getUint32(0);
      for (let j = Math.max(0, at - ackBits + 1); j <= at; j++) for (const id of arrivals[j]) acked[id] = 1;
    }
    arrivals.push(fresh);
    if (arrivals.length > ackBits + 64) arrivals[arrivals.length - ackBits - 65] = [];
    new DataView(ackBuf.buffer).setUint32(0, arrivals.length - 1);
    rev.send(now, ackBuf);
    // Sender: the lowest-id fragment not acked and not sent in the last 250 ms (resends are always
    // below the next fresh one), one per tick.
    let w = 0;
    for (const id of outstanding) if (acked[id] === 0) outstanding[w++] = id;
    outstanding.length = w;
    let pick = -1;
    for (let i = 0; i < outstanding.length; i++) {
      if (now - lastSent[outstanding[i]] >= 250) {
        pick = outstanding[i];
        break;
      }
    }
    if (pick < 0 && nextFresh < n) {
      pick = nextFresh++;
      outstanding.push(pick);
    }
    if (pick >= 0) {
      lastSent[pick] = now;
      new DataView(pkt.buffer).setUint32(0, pick);
      fwd.send(now, pkt.subarray(0, Math.min(frag, bytes - pick * frag) + 20));
    }
  }
  const f = fwd.counters();
  const r = rev.counters();
  return {
    completionMs: completion,
    capMs,
    wirePerPayload: (wireOf(f) + wireOf(r)) / bytes,
    queueDropPct: (100 * f.droppedQueue) / Math.max(1, f.sent),
    datagrams: f.sent,
    realMs: performance.now() - t0,
  };
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

interface Summary {
  /** Median completion (ms) over seeds, undefined if any run hit its cap. */
  medianMs: number | undefined;
  minMs: number | undefined;
  maxMs: number | undefined;
  ratio: number | undefined;
  wirePerPayload: number;
  maxQueueDropPct: number;
  capMs: number;
  runs: Run[];
}

function summarise(runs: Run[], floor: number): Summary {
  const done = runs.every((r) => r.completionMs !== undefined);
  const ts = runs.map((r) => r.completionMs ?? Infinity);
  const med = done ? median(ts) : undefined;
  return {
    medianMs: med,
    minMs: done ? Math.min(...ts) : undefined,
    maxMs: done ? Math.max(...ts) : undefined,
    ratio: med === undefined ? undefined : med / floor,
    wirePerPayload: median(runs.map((r) => r.wirePerPayload)),
    maxQueueDropPct: Math.max(...runs.map((r) => r.queueDropPct)),
    capMs: runs[0].capMs,
    runs,
  };
}

interface Row {
  path: string;
  lossPct: number;
  blockBytes: number;
  seeds: number[];
  floorMs: number;
  /** The floor without the 1/(1 − loss) term: src/sim drops before the bottleneck, so this is its real limit. */
  floorLosslessMs: number;
  gamewire: Summary;
  naive: Summary;
  seedFixed: Summary | undefined;
  yojimbo: Summary | undefined;
}

const fmtSize = (b: number): string => (b >= MiB ? `${b / MiB} MiB` : `${b / KiB} KiB`);
function fmtMs(ms: number | undefined, cap?: number): string {
  if (ms === undefined) return cap === undefined ? 'n/a' : `> ${fmtDur(cap)} (cap)`;
  return fmtDur(ms);
}
function fmtDur(ms: number): string {
  return ms >= 10_000 ? `${(ms / 1000).toFixed(1)} s` : ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(0)} ms`;
}
const fmtRatio = (x: number | undefined): string => (x === undefined ? '—' : `${x.toFixed(3)}×`);

const NAIVE_CAP = 10;
const BASELINE_CAP_MS = 1_500_000;

const rows: Row[] = [];
const started = performance.now();
for (const p of PATHS) {
  for (const loss of LOSSES) {
    for (const bytes of SIZES) {
      const seeds = seedsFor(loss);
      const floor = floorMs(bytes, p, loss);
      const ours = seeds.map((s) => runChunk(p, loss, bytes, s, {}, 50 * floor + 10_000));
      const naive = seeds.map((s) => runNaive(p, loss, bytes, s, NAIVE_CAP * floor));
      const heavy = QUICK && bytes === 64 * MiB;
      const seedFixed = heavy ? undefined : seeds.map((s) => runChunk(p, loss, bytes, s,
        { rateController: new FixedRate(125_000), minResendMs: 100, burst: false }, BASELINE_CAP_MS));
      const yojimbo = heavy ? undefined : seeds.map((s) => runYojimbo(p, loss, bytes, s, BASELINE_CAP_MS));
      const row: Row = {
        path: p.name, lossPct: loss * 100, blockBytes: bytes, seeds, floorMs: floor, floorLosslessMs: floorMs(bytes, p, 0),
        gamewire: summarise(ours, floor), naive: summarise(naive, floor),
        seedFixed: seedFixed && summarise(seedFixed, floor), yojimbo: yojimbo && summarise(yojimbo, floor),
      };
      rows.push(row);
      process.stderr.write(`${p.short} loss ${loss * 100}% ${fmtSize(bytes)}: gamewire ${fmtMs(row.gamewire.medianMs)} `
        + `(${fmtRatio(row.gamewire.ratio)}) [${((performance.now() - started) / 1000).toFixed(0)} s]\n`);
    }
  }
}
const elapsedS = (performance.now() - started) / 1000;

// ---- targets --------------------------------------------------------------------------------
const misses: string[] = [];
for (const r of rows) {
  const where = `${r.path}, ${r.lossPct}% loss, ${fmtSize(r.blockBytes)}`;
  if (r.blockBytes >= 4 * MiB && (r.lossPct === 0 || r.lossPct === 10)) {
    const limit = r.lossPct === 0 ? 1.1 : 1.25;
    if (r.gamewire.ratio === undefined || r.gamewire.ratio > limit) misses.push(`${where}: ${fmtRatio(r.gamewire.ratio)} > ${limit}×`);
  }
  if (r.lossPct === 0 && r.gamewire.maxQueueDropPct > 2) misses.push(`${where}: queue drops ${r.gamewire.maxQueueDropPct.toFixed(2)}% > 2%`);
}

// ---- table ------------------------------------------------------------------------------------
const lines: string[] = [];
lines.push('| path | loss | block | floor | gamewire (median) | min–max | ratio | wire/payload | queue drops | naive fragments | seed fixed 1 Mbit/s | yojimbo-like |');
lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of rows) {
  const g = r.gamewire;
  const base = (s: Summary | undefined): string => (s === undefined ? 'not run'
    : s.medianMs === undefined ? fmtMs(undefined, s.capMs) : `${fmtMs(s.medianMs)} (${fmtRatio(s.ratio)})`);
  const spread = g.runs.length > 1 ? `${fmtMs(g.minMs)}–${fmtMs(g.maxMs)}` : '—';
  lines.push(`| ${r.path} | ${r.lossPct}% | ${fmtSize(r.blockBytes)} | ${fmtMs(r.floorMs)} | ${fmtMs(g.medianMs)} | ${spread} | `
    + `**${fmtRatio(g.ratio)}** | ${g.wirePerPayload.toFixed(3)} | ${g.maxQueueDropPct.toFixed(2)}% | ${base(r.naive)} | `
    + `${base(r.seedFixed)} | ${base(r.yojimbo)} |`);
}
const table = lines.join('\n');
const machine = `${cpus()[0]?.model ?? 'unknown CPU'} × ${cpus().length}, Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`;
console.log(`chunk transfer on the simulator (${machine}); ${elapsedS.toFixed(0)} s wall clock\n`);
console.log(table);
console.log(misses.length === 0 ? '\nall targets met' : `\ntargets missed:\n- ${misses.join('\n- ')}`);

// ---- raw figures --------------------------------------------------------------------------------
if (!QUICK) {
  const resultsDir = join(HERE, 'results');
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, 'chunk.json'), JSON.stringify({
    machine, node: process.version, date: new Date().toISOString(), wallClockSeconds: elapsedS,
    floor: 'payload in 1200-byte UDP datagrams with only 28 B UDP/IPv4 each, / link rate / (1 - loss) + one-way delay',
    queueDatagrams: QUEUE, targetsMissed: misses, rows,
  }, null, 1) + '\n');

  const section = [
    '## chunk',
    '',
    `Large-block transfer in virtual time on \`src/sim\` (\`npm run bench:chunk\`, ${elapsedS.toFixed(0)} s wall clock). ${machine}.`,
    '',
    `Each scenario: one block from \`ChunkSender\` (default config: \`AdaptiveRate\`, ${DEFAULT_SLICE_BYTES}-byte slices in ${DEFAULT_SLICE_BYTES + SLICE_HEADER_BYTES}-byte datagrams) to`,
    `\`ChunkReceiver\` over one \`Link\` per direction with the path's rate, half the RTT as latency, a ${QUEUE}-datagram drop-tail`,
    'queue and the given random loss in each direction. Completion = virtual time at which the receiver has the whole block.',
    'Runs with loss repeat over seeds 1–3 (median, min–max); without loss the simulator draws nothing, so one run.',
    '',
    '**Floor** = payload carried in full 1200-byte UDP datagrams with *no* protocol header (28 B UDP/IPv4 each), serialised at',
    `the link rate, ÷ (1 − loss), + one-way delay. It is strict for our header (${SLICE_HEADER_BYTES} B per slice costs ${(100 * (DATAGRAM / DEFAULT_SLICE_BYTES - 1)).toFixed(1)}%) but, since \`src/sim\` drops`,
    'randomly-lost datagrams *before* the bottleneck (they never occupy it), the ÷ (1 − loss) term makes it looser than this',
    'simulator\'s true limit at 10% loss, which is why ratios below 1 appear there (chunk.json also gives the floor without',
    'the loss term, `floorLosslessMs`, which nothing can beat on `src/sim`).',
    '**wire/payload**: bytes of both directions incl. 28 B per datagram, per block byte. **queue drops**: forward datagrams',
    'dropped by the bottleneck queue (worst seed).',
    '',
    'Baselines, same links and seeds (time and ratio to the floor):',
    `- **naive fragments**: the whole block as fragments of one packet, paced at exactly the link rate (an oracle), resent whole`,
    `  until one copy arrives with every fragment (the seed's 92.4% example); run time capped at ${NAIVE_CAP}× the floor.`,
    '- **seed fixed 1 Mbit/s**: our `ChunkSender` with the seed\'s settings: `FixedRate` 125 000 B/s, `minResendMs` 100, no burst.',
    '- **yojimbo-like**: one 1 KiB fragment per 60 Hz tick, fixed 250 ms resend, first-unacked-first, acks every receiver tick',
    '  (gaffer.md §2.10; one datagram per fragment, which is kinder than yojimbo\'s default split into two).',
    '',
    table,
    '',
    'Notes. Start-up costs gamewire about one RTT on every path (the first ack round measures the bottleneck before the',
    'rate jumps to it), which dominates 256 KiB blocks; the naive baseline is paced at the true link rate from the first',
    'datagram, so it wins when nothing is lost, and is hopeless once a 4 MiB copy must cross 1% loss intact. Under loss the',
    'last slices of a block wait for resend timers (≥ 1.25 × srtt each round), which is most of what small blocks lose at 10%.',
    '',
    misses.length === 0
      ? 'Targets (≤ 1.10× floor at 0% loss and ≤ 1.25× at 10% loss for 4 MiB and 64 MiB; ≤ 2% queue drops at 0% loss): all met.'
      : `Targets missed:\n- ${misses.join('\n- ')}`,
    '',
  ].join('\n');
  writeReadmeSection('## chunk', section);
}
