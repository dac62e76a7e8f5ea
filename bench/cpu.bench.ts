/**
 * CPU benchmark over REAL loopback sockets (not a test): a 64 MiB chunk transfer between two
 * UdpDrivers in one process, against a raw `dgram` blast of 1200-byte datagrams of the same total
 * payload, interleaved run by run. Prints a table, writes bench/results/cpu.json and the
 * "## cpu (real loopback)" section of bench/README.md.
 *
 *   npm run bench:cpu                 (RUNS=5 SIZE_MIB=64 by default)
 *   RUNS=3 SIZE_MIB=16 npx tsx bench/cpu.bench.ts
 */
import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { cpus, loadavg, release, totalmem, type } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { UdpDriver } from '../src/adapters/node/udp-driver.js';
import { ChunkReceiver, type ChunkReceiverEvent } from '../src/chunk/receiver.js';
import { ChunkSender, type ChunkSenderEvent } from '../src/chunk/sender.js';
import { PacketType, peekPacketType } from '../src/chunk/wire.js';
import { AdaptiveRate } from '../src/congestion/adaptive.js';
import { NonCryptoRng } from '../src/core/rng.js';

const RUNS = Number(process.env.RUNS ?? 5);
const SIZE = Number(process.env.SIZE_MIB ?? 64) * 1024 * 1024;
const RAW_DATAGRAM = 1200;
const RAW_WINDOW = 256;
const IDLE_MS = 500;
const HERE = dirname(fileURLToPath(import.meta.url));

/** One measured phase. MB = 10^6 bytes. */
interface Phase {
  name: string;
  /** Payload bytes that arrived. */
  bytes: number;
  /** Fraction of the payload that arrived (1 for chunk: it is reliable). */
  fraction: number;
  /** First send to last payload byte received, s. */
  seconds: number;
  /** Payload MB per second received. */
  goodputMBps: number;
  /** process.cpuUsage user+system over the phase, s (both ends: same process). */
  cpuSeconds: number;
  /** CPU ms per MiB of payload. */
  cpuMsPerMiB: number;
  /** Datagrams sent by the data sender (slices incl. resends, or raw datagrams). */
  datagrams: number;
  /** Datagrams sent the other way (acks), 0 for raw. */
  reverseDatagrams: number;
  /** Chunk only: slices resent. */
  resent?: number;
}

function cpuNow(): number {
  const c = process.cpuUsage();
  return (c.user + c.system) / 1e6;
}

async function bound(): Promise<Socket> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return s;
}

/**
 * Raw reference: 1200-byte datagrams over a connected dgram socket, keeping at most RAW_WINDOW
 * unreceived (refilled from the receive handler), so it measures what Node moves, not buffer overflow.
 */
async function rawBlast(total: number): Promise<Phase> {
  const rx = await bound();
  const tx = await bound();
  rx.setRecvBufferSize(4 * 1024 * 1024);
  await new Promise<void>((r) => tx.connect(rx.address().port, '127.0.0.1', () => r()));
  tx.setSendBufferSize(4 * 1024 * 1024);
  const n = Math.ceil(total / RAW_DATAGRAM);
  const buf = Buffer.alloc(RAW_DATAGRAM, 0x5a);
  let sent = 0;
  let got = 0;
  let gotBytes = 0;
  let lastAt = 0;
  const cpu0 = cpuNow();
  const t0 = performance.now();
  const pump = (): void => {
    while (sent < n && sent - got < RAW_WINDOW) {
      tx.send(buf);
      sent++;
    }
  };
  await new Promise<void>((resolve) => {
    let idle = setTimeout(resolve, IDLE_MS);
    rx.on('message', (m: Buffer) => {
      got++;
      gotBytes += m.length;
      lastAt = performance.now();
      if (got >= n) {
        clearTimeout(idle);
        resolve();
        return;
      }
      if (sent - got < RAW_WINDOW / 2) pump();
      // A lost datagram would stall the window: the idle timer ends the phase and the fraction shows it.
      clearTimeout(idle);
      idle = setTimeout(resolve, IDLE_MS);
    });
    pump();
  });
  const cpu = cpuNow() - cpu0;
  rx.close();
  tx.close();
  const seconds = (lastAt - t0) / 1000;
  return {
    name: `raw dgram, ${RAW_DATAGRAM} B, window ${RAW_WINDOW}`,
    bytes: gotBytes,
    fraction: gotBytes / (n * RAW_DATAGRAM),
    seconds,
    goodputMBps: gotBytes / seconds / 1e6,
    cpuSeconds: cpu,
    cpuMsPerMiB: (cpu * 1000) / (gotBytes / 1048576),
    datagrams: sent,
    reverseDatagrams: 0,
  };
}

/** The chunk protocol: one block, AdaptiveRate (defaults, 1 Gbit/s ceiling), receiver acking every `ackEveryNew` new slices. */
async function chunkTransfer(block: Uint8Array, ackEveryNew: number): Promise<Phase> {
  const receiver = new ChunkReceiver({ maxBlockBytes: block.length, ackEveryNew });
  const rx = await UdpDriver.open<ChunkReceiverEvent>(receiver, {
    host: '127.0.0.1',
    acceptFirst: (b) => peekPacketType(b) === PacketType.Slice,
  });
  const sender = new ChunkSender({ rateController: new AdaptiveRate(), sessionId: 0xbe7c4, maxQueuedBytes: block.length });
  const cpu0 = cpuNow();
  const t0 = performance.now();
  sender.sendBlock(block);
  const tx = await UdpDriver.open<ChunkSenderEvent>(sender, { host: '127.0.0.1', remote: { host: '127.0.0.1', port: rx.local.port } });
  const delivered = once(tx, 'event');
  const [ev] = (await once(rx, 'event')) as [ChunkReceiverEvent];
  const t1 = performance.now();
  await delivered;
  const cpu = cpuNow() - cpu0;
  await tx.close();
  await rx.close();
  if (ev.type !== 'block' || Buffer.compare(Buffer.from(ev.data.buffer, ev.data.byteOffset, ev.data.length), Buffer.from(block.buffer, block.byteOffset, block.length)) !== 0) {
    throw new Error('chunk transfer delivered wrong bytes');
  }
  const seconds = (t1 - t0) / 1000;
  const c = sender.counters();
  return {
    name: `chunk, AdaptiveRate, ack every ${ackEveryNew}`,
    bytes: block.length,
    fraction: 1,
    seconds,
    goodputMBps: block.length / seconds / 1e6,
    cpuSeconds: cpu,
    cpuMsPerMiB: (cpu * 1000) / (block.length / 1048576),
    datagrams: c.datagramsSent,
    reverseDatagrams: receiver.counters().acksSent,
    resent: c.slicesResent,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 === 1 ? s[m] : (s[m - 1] + s[m]) / 2;
}

interface Row {
  name: string;
  goodputMBps: number;
  cpuSeconds: number;
  cpuMsPerMiB: number;
  seconds: number;
  fraction: number;
  datagrams: number;
  reverseDatagrams: number;
  resent?: number;
  goodputRatio: number;
  cpuRatio: number;
}

async function main(): Promise<void> {
  const block = new NonCryptoRng(64).fill(new Uint8Array(SIZE));
  const load0 = loadavg();
  const scenarios: { key: string; run: () => Promise<Phase> }[] = [
    { key: 'raw', run: () => rawBlast(SIZE) },
    { key: 'chunk-ack2', run: () => chunkTransfer(block, 2) },
    { key: 'chunk-ack8', run: () => chunkTransfer(block, 8) },
  ];
  const runs: Record<string, Phase[]> = Object.fromEntries(scenarios.map((s) => [s.key, []]));
  // Warm-up (JIT, socket paths), not recorded.
  await rawBlast(Math.min(SIZE, 8 * 1024 * 1024));
  await chunkTransfer(block.subarray(0, Math.min(SIZE, 8 * 1024 * 1024)), 2);
  for (let i = 0; i < RUNS; i++) {
    // Rotate the order so a noisy neighbour does not always hit the same scenario.
    for (let j = 0; j < scenarios.length; j++) {
      const s = scenarios[(i + j) % scenarios.length];
      const p = await s.run();
      runs[s.key].push(p);
      process.stderr.write(`run ${i + 1}/${RUNS} ${p.name}: ${p.goodputMBps.toFixed(1)} MB/s, cpu ${p.cpuSeconds.toFixed(3)} s\n`);
    }
  }
  const load1 = loadavg();
  const raw = runs.raw;
  const rawGoodput = median(raw.map((p) => p.goodputMBps));
  const rawCpu = median(raw.map((p) => p.cpuSeconds));
  const rows: Row[] = scenarios.map((s) => {
    const ps = runs[s.key];
    const goodput = median(ps.map((p) => p.goodputMBps));
    const cpu = median(ps.map((p) => p.cpuSeconds));
    const resent = ps[0].resent === undefined ? undefined : median(ps.map((p) => p.resent ?? 0));
    return {
      name: ps[0].name,
      goodputMBps: goodput,
      cpuSeconds: cpu,
      cpuMsPerMiB: median(ps.map((p) => p.cpuMsPerMiB)),
      seconds: median(ps.map((p) => p.seconds)),
      fraction: median(ps.map((p) => p.fraction)),
      datagrams: median(ps.map((p) => p.datagrams)),
      reverseDatagrams: median(ps.map((p) => p.reverseDatagrams)),
      resent,
      goodputRatio: goodput / rawGoodput,
      cpuRatio: rawCpu / cpu,
    };
  });

  const header = `| scenario (${SIZE / 1048576} MiB, medians of ${RUNS}) | goodput MB/s | ratio vs raw | CPU s | CPU ms/MiB | raw CPU / CPU | wall s | received | datagrams out | datagrams back | slices resent |`;
  const sep = '|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|';
  const lines = rows.map(
    (r) =>
      `| ${r.name} | ${r.goodputMBps.toFixed(1)} | ${r.goodputRatio.toFixed(2)} | ${r.cpuSeconds.toFixed(3)} | ${r.cpuMsPerMiB.toFixed(1)} | ${r.cpuRatio.toFixed(2)} | ${r.seconds.toFixed(3)} | ${(r.fraction * 100).toFixed(1)}% | ${r.datagrams} | ${r.reverseDatagrams} | ${r.resent ?? '–'} |`,
  );
  const table = [header, sep, ...lines].join('\n');
  const cpu0 = cpus()[0];
  const machine = `${cpu0?.model ?? 'unknown CPU'} × ${cpus().length} logical, ${(totalmem() / 2 ** 30).toFixed(1)} GiB, ${type()} ${release()}`;
  const date = new Date().toISOString();
  process.stdout.write(`\n${table}\n\nmachine: ${machine}; Node ${process.version}; load average ${load0[0].toFixed(2)} → ${load1[0].toFixed(2)}\n`);

  const target = 0.7;
  const headline = rows.find((r) => r.name.includes('ack every 2'))!;
  const result = {
    date,
    node: process.version,
    machine,
    loadAverage: { start: load0, end: load1 },
    sizeBytes: SIZE,
    runs: RUNS,
    rawDatagramBytes: RAW_DATAGRAM,
    rawWindow: RAW_WINDOW,
    target: { goodputRatio: target, met: headline.goodputRatio >= target },
    medians: rows,
    samples: runs,
  };
  const resultsDir = join(HERE, 'results');
  mkdirSync(resultsDir, { recursive: true });
  writeFileSync(join(resultsDir, 'cpu.json'), JSON.stringify(result, null, 2) + '\n');

  const section = [
    '## cpu (real loopback)',
    '',
    `\`npm run bench:cpu\` (bench/cpu.bench.ts; raw figures in bench/results/cpu.json). One process, both ends on 127.0.0.1,`,
    `no loss, no proxy. The chunk rows send one ${SIZE / 1048576} MiB block with \`AdaptiveRate\` (default tuning: 1 Gbit/s ceiling) between`,
    'two `UdpDriver`s, timed from `sendBlock` to the complete block at the receiver, byte-exact check after. The raw row sends',
    `${RAW_DATAGRAM}-byte datagrams of the same total payload over a connected \`dgram\` socket, at most ${RAW_WINDOW} unreceived at a time.`,
    'Scenarios are interleaved run by run; figures are medians. CPU = `process.cpuUsage()` user+system over the phase',
    '(both ends, same process). MB = 10^6 bytes.',
    '',
    table,
    '',
    `Machine: ${machine}; Node ${process.version}; ${date.slice(0, 10)}; load average ${load0[0].toFixed(2)} at start, ${load1[0].toFixed(2)} at end`,
    '(the machine is shared, so absolute figures move from run to run; the ratios are the point).',
    `Target: chunk goodput ≥ ${target} × raw: ${headline.goodputRatio >= target ? 'met' : 'missed'} (${headline.goodputRatio.toFixed(2)}).`,
    '',
    '',
  ].join('\n');
  const readme = join(HERE, 'README.md');
  let text = '';
  try {
    text = readFileSync(readme, 'utf8');
  } catch {
    text = '# gamewire benchmarks\n\n';
  }
  const start = text.indexOf('## cpu (real loopback)\n');
  if (start >= 0) {
    const next = text.indexOf('\n## ', start + 1);
    text = text.slice(0, start) + section + (next >= 0 ? text.slice(next + 1) : '');
  } else {
    text = text.replace(/\n*$/, '\n\n') + section;
  }
  writeFileSync(readme, text);
}

await main();
