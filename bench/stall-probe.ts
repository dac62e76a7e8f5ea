/**
 * Stall probe (root; an experiment, not a benchmark of record): Chromium in namespace gwst-a, the
 * Node server (bench/stall-probe-server.ts) in gwst-b, linkem.py between (50 ms one way, 10 % loss
 * each way, 10 Mbit/s: bench:browser's link). Each run: a fresh Chromium connects over WebRTC and
 * echoes STALL_COUNT 100-byte messages every 20 ms (bench/stall-probe-client.ts). Per run it reports
 * the echo's p50/p99/max, the stalls (no echo for more than 300 ms while messages were out: where
 * they began, how long, which direction held the messages), the page channel's bufferedAmount, IP
 * packets and bytes per message sent by each namespace, the packets each end sent by kind (told by
 * size: DATA, SACK, FORWARD-TSN) and the connect phases. Waits while a bench:browser
 * (namespace gwbr-a) runs.
 *   STALL_RUNS (3), STALL_COUNT (1000), STALL_LOSS (0.1), STALL_SCTP (JSON for setSctpSettings),
 *   STALL_REDUNDANCY (server's channels.redundancy), STALL_ACK_DELAY (both ends' acks.maxAckDelayMs), STALL_FAVOR (the gateway's webrtcFavor), STALL_NDC_LOG (libdatachannel log level),
 *   STALL_TAG (name of the result file /tmp/stall/TAG.json), STALL_SEED (linkem's seed, default 1);
 *   what bench/stall-probe-server.ts and bench/stall-probe-client.ts read is passed on. With
 *   DEBUG=pw:browser STALL_CHROME_LOG=1 Chromium's log goes to /tmp/stall/TAG-chrome-RUN.log, with
 *   every SCTP packet the browser sent and received: bench/stall-sctp-log.py decodes it.
 * Packet kinds by size (the SCTP inside DTLS is encrypted): `small` is under 129 IP bytes (SACKs,
 * FORWARD-TSNs, our ack-only datagrams), `data` the rest. Each run's per-message times go to
 * /tmp/stall/TAG-legs-RUN.json.
 */
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ADDR_B, ipOut, LinkedNamespaces, sh, sleep } from './linkem.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const NS_A = 'gwst-a';
const NS_B = 'gwst-b';
const RUNS = Number(process.env.STALL_RUNS ?? 3);
const COUNT = Number(process.env.STALL_COUNT ?? 1000);
const LOSS = process.env.STALL_LOSS ?? '0.1';
const TAG = process.env.STALL_TAG ?? 'probe';
const OUT = '/tmp/stall';

interface Page {
  error?: string;
  phases: Array<[string, number]>;
  rtts: Array<[number, number, number]>;
  missing: number[];
  buffered: Array<[number, number]>;
  stats: Array<Record<string, number>>;
  statsBefore: { datagramsSent: number; bytesSent: number };
  statsAfter: { datagramsSent: number; bytesSent: number };
}

const pct = (s: readonly number[], p: number): number => s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
const r0 = (x: number): number => Math.round(x);

function kinds(file: string, from: number, to: number): Record<string, number> {
  const k: Record<string, number> = { data: 0, small: 0, stun: 0, other: 0, dataBytes: 0, smallBytes: 0 };
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const [t, dir, len, proto, first] = line.split(' ');
    if (dir !== 'o' || Number(t) * 1000 < from || Number(t) * 1000 > to) continue;
    const n = Number(len);
    if (proto !== '17') k.other++;
    else if (first === '0' || first === '1') k.stun++;
    else if (n < 129) k.small++;
    else k.data++;
    if (proto === '17' && first === '23') k[n < 129 ? 'smallBytes' : 'dataBytes']! += n;
  }
  return k;
}

async function waitForBench(): Promise<void> {
  for (;;) {
    const ns = sh('ip', ['netns', 'list']);
    if (!/^gwbr-a\b/m.test(ns)) return;
    console.error(`${new Date().toISOString()} gwbr-a present (bench:browser running): waiting 30 s`);
    await sleep(30_000);
  }
}

async function main(): Promise<void> {
  mkdirSync(OUT, { recursive: true });
  await waitForBench();
  const seconds = RUNS * (COUNT * 0.02 + 45) + 30;
  const link = await LinkedNamespaces.open(NS_A, NS_B, ['--delay-ms', '50', '--loss', LOSS, '--rate-mbit', '10', '--seed', process.env.STALL_SEED ?? '1'], seconds);
  const capA = join(OUT, `${TAG}-a.cap`);
  const capB = join(OUT, `${TAG}-b.cap`);
  const report: object[] = [];
  try {
    // Chromium gathers host candidates only on the interface of its default route.
    await link.run(NS_A, ['ip', 'route', 'add', 'default', 'via', ADDR_B], 5000);
    link.start(NS_A, ['python3', join(HERE, 'stall-capture.py'), 'lka', capA, String(seconds)]);
    link.start(NS_B, ['python3', join(HERE, 'stall-capture.py'), 'lkb', capB, String(seconds)]);
    let ready = false;
    let recv = new Map<number, number>();
    let serverLines: string[] = [];
    const server = link.start(NS_B, ['node', '--import', 'tsx', join(HERE, 'stall-probe-server.ts'), ADDR_B], (l) => {
      if (l.startsWith('ready')) ready = true;
      else if (l.startsWith('R ')) {
        const [, id, t] = l.split(' ');
        if (!recv.has(Number(id))) recv.set(Number(id), Number(t));
      } else serverLines.push(l);
    });
    for (let i = 0; !ready; i++) {
      if (server.exitCode !== null || i > 600) throw new Error('stall-probe-server did not start');
      await sleep(100);
    }
    for (let run = 0; run < RUNS; run++) {
      recv = new Map();
      serverLines = [];
      let marks: Record<string, { t: number; a: ReturnType<typeof ipOut>; b: ReturnType<typeof ipOut> }> = {};
      const lines: string[] = [];
      await new Promise<void>((resolve, reject) => {
        const p = link.start(NS_A, ['node', '--import', 'tsx', join(HERE, 'stall-probe-client.ts'), ADDR_B, String(COUNT)], (l) => {
          if (l.startsWith('MARK ')) marks[l.slice(5)] = { t: Date.now(), a: ipOut(NS_A), b: ipOut(NS_B) };
          else lines.push(l);
        });
        let err = '';
        p.stderr!.on('data', (d: Buffer) => {
          if (process.env.STALL_CHROME_LOG) appendFileSync(join(OUT, `${TAG}-chrome-${run}.log`), d);
          else err += d.toString();
        });
        p.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`client exited ${code}: ${err.slice(-2000)}`))));
      });
      const page = JSON.parse(lines.at(-1)!) as Page;
      if (page.error !== undefined) {
        report.push({ run, error: page.error, phases: page.phases });
        console.error(`run ${run + 1}: ${page.error}`);
        continue;
      }
      const rtt = page.rtts.map(([, s, e]) => e - s).sort((x, y) => x - y);
      // Stalls: gaps in echo arrivals longer than 300 ms while messages were out.
      const arrivals = page.rtts.map(([id, s, e]) => ({ id, s, e })).sort((x, y) => x.e - y.e);
      const stalls: object[] = [];
      for (let i = 1; i < arrivals.length; i++) {
        const gap = arrivals[i]!.e - arrivals[i - 1]!.e;
        if (gap <= 300) continue;
        // The messages sent in the gap: how long they took up (page → server) and down.
        const held = page.rtts.filter(([, s]) => s >= arrivals[i - 1]!.e - 100 && s < arrivals[i]!.e);
        const up = held.map(([id, s]) => (recv.get(id) ?? NaN) - s).filter(Number.isFinite);
        const down = held.map(([id, , e]) => e - (recv.get(id) ?? NaN)).filter(Number.isFinite);
        const buf = page.buffered.filter(([t]) => t >= arrivals[i - 1]!.e && t <= arrivals[i]!.e).map(([, b]) => b);
        stalls.push({
          at: r0(arrivals[i - 1]!.e - marks.start!.t), gap: r0(gap), upMax: r0(Math.max(...up, 0)), downMax: r0(Math.max(...down, 0)),
          bufferedMax: Math.max(0, ...buf),
        });
      }
      const up = page.rtts.map(([id, s]) => (recv.get(id) ?? NaN) - s).filter(Number.isFinite).sort((x, y) => x - y);
      const down = page.rtts.map(([id, , e]) => e - (recv.get(id) ?? NaN)).filter(Number.isFinite).sort((x, y) => x - y);
      const n = COUNT;
      const ipA = { packets: (marks.end!.a.packets - marks.start!.a.packets) / n, bytes: (marks.end!.a.octets - marks.start!.a.octets) / n };
      const ipB = { packets: (marks.end!.b.packets - marks.start!.b.packets) / n, bytes: (marks.end!.b.octets - marks.start!.b.octets) / n };
      const kA = kinds(capA, marks.start!.t, marks.end!.t);
      const kB = kinds(capB, marks.start!.t, marks.end!.t);
      const per = (k: Record<string, number>): Record<string, number> => Object.fromEntries(Object.entries(k).map(([x, v]) => [x, Math.round((v / n) * 100) / 100]));
      const t0 = page.phases.find(([w]) => w === 'connect')![1];
      const phases = page.phases.filter(([w]) => !w.startsWith('candidate ')).map(([w, t]) => `${w}@${r0(t - t0)}`).join(' ');
      const srv = serverLines.filter((l) => l.startsWith('H ') || l.startsWith('L ')).map((l) => {
        const [, t, ...rest] = l.split(' ');
        return `${r0(Number(t) - t0)} ${rest.join(' ')}`;
      }).filter((l) => Number(l.split(' ')[0]) < 10_000);
      const gwClient = page.statsAfter.datagramsSent - page.statsBefore.datagramsSent;
      const row = {
        run, startUnixMs: marks.start!.t, p50: r0(pct(rtt, 0.5)), p99: r0(pct(rtt, 0.99)), max: r0(rtt.at(-1) ?? NaN), missing: page.missing.length,
        upP99: r0(pct(up, 0.99)), upMax: r0(up.at(-1) ?? NaN), downP99: r0(pct(down, 0.99)), downMax: r0(down.at(-1) ?? NaN),
        stalls, bufferedMax: Math.max(0, ...page.buffered.map(([, b]) => b)),
        msBufferedAbove2400: r0(page.buffered.reduce((acc, [t, b], i, a) => acc + (b > 2400 ? ((a[i + 1]?.[0] ?? t) - t) : 0), 0)),
        ipPerMsgA: { packets: +ipA.packets.toFixed(2), bytes: r0(ipA.bytes) }, ipPerMsgB: { packets: +ipB.packets.toFixed(2), bytes: r0(ipB.bytes) },
        kindsA: per(kA), kindsB: per(kB), clientDatagramsPerMsg: +(gwClient / n).toFixed(2),
        connectMs: r0(page.phases.find(([w]) => w === 'connected')![1] - t0), phases,
      };
      report.push({ ...row, server: srv });
      // Each message: [id, sent (page), received by the server, echo back (page)], ms on one clock.
      writeFileSync(join(OUT, `${TAG}-legs-${run}.json`), JSON.stringify(page.rtts.map(([id, s, e]) => [id, r0(s), recv.get(id) ?? null, r0(e)])));
      console.error(JSON.stringify(row));
    }
  } finally {
    link.cleanup();
  }
  writeFileSync(join(OUT, `${TAG}.json`), JSON.stringify({ env: { COUNT, RUNS, LOSS, SCTP: process.env.STALL_SCTP, RED: process.env.STALL_REDUNDANCY, ACK_DELAY: process.env.STALL_ACK_DELAY, FAVOR: process.env.STALL_FAVOR, CLIENT_RED: process.env.STALL_CLIENT_REDUNDANCY }, report }, null, 1));
}

await main();
