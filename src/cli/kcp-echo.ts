import type { Command } from 'commander';
import { performance } from 'node:perf_hooks';
import { KcpUdpClient, KcpUdpServer } from '../adapters/node/kcp.js';
import type { KcpOptions } from '../kcp/kcp.js';
import type { KcpSession } from '../kcp/session.js';
import {
  aborted, arg, durationOption, EXIT_FAILURE, EXIT_INTERRUPTED, parseHostPort, parsePort, parseSizeFor, parseUint, resolveHostPort, untilStopped,
  UsageError, type HostPort,
} from './units.js';

/** KCP settings of test.cpp's modes (kcp.md §2.1). */
export type KcpEchoMode = 'default' | 'normal' | 'fast';

/**
 * `Kcp` options of a mode, for the side that sends first (`client`, test.cpp's kcp1) or echoes
 * (`server`, kcp2). Windows 128/128 and interval 10 in every mode; fast mode's kcp1 also has
 * rx_minrto 10 and fastresend 1, as in test.cpp.
 */
export function kcpModeOptions(mode: KcpEchoMode, side: 'client' | 'server', stream: boolean): Omit<KcpOptions, 'mtu'> {
  const base = { sndWnd: 128, rcvWnd: 128, interval: 10, stream };
  if (mode === 'default') return { ...base, nodelay: 0, resend: 0, nc: false };
  if (mode === 'normal') return { ...base, nodelay: 0, resend: 0, nc: true };
  if (side === 'client') return { ...base, nodelay: 2, resend: 1, nc: true, minRto: 10 };
  return { ...base, nodelay: 2, resend: 2, nc: true };
}

/** Options of `gamewire kcp-echo --listen`. */
export interface KcpEchoServerOptions {
  port: number;
  host: string;
  conv?: number;
  mode: KcpEchoMode;
  mtu: number;
  stream: boolean;
  /** Sessions silent this long are dropped, ms. */
  idleTimeoutMs: number;
  quiet: boolean;
}

/** Options of `gamewire kcp-echo --connect`. */
export interface KcpEchoClientOptions {
  to: HostPort;
  conv?: number;
  mode: KcpEchoMode;
  mtu: number;
  stream: boolean;
  count: number;
  intervalMs: number;
  size: number;
  /** Fail when no echo progress for this long, ms. */
  timeoutMs: number;
}

/** Byte `j` of message `i`: the index (u32 LE) in the first 4 bytes, then a pattern of (i, j). */
export function echoPayload(i: number, size: number): Uint8Array {
  const b = new Uint8Array(size);
  for (let j = 0; j < size; j++) b[j] = j < 4 ? (i >>> (8 * j)) & 0xff : (i * 31 + j * 7 + 1) & 0xff;
  return b;
}

/**
 * Run the echo server until SIGINT/SIGTERM: raw KCP, any number of senders (demultiplexed by
 * address + conv), every message echoed on its own session. Resolves to 130 once stopped.
 */
export async function runKcpEchoServer(o: KcpEchoServerOptions): Promise<number> {
  return untilStopped((signal) => serveUntil(o, signal));
}

async function serveUntil(o: KcpEchoServerOptions, signal: AbortSignal): Promise<number> {
  const server = await KcpUdpServer.open({
    port: o.port,
    host: o.host,
    mtu: o.mtu,
    mode: 'raw',
    kcp: kcpModeOptions(o.mode, 'server', o.stream),
    keepAliveMs: 0,
    idleTimeoutMs: o.idleTimeoutMs,
    acceptConv: o.conv === undefined ? undefined : (c) => c === o.conv,
  });
  const echoed = new Map<KcpSession, number>();
  let dropped = 0;
  server.on('open', (s) => {
    echoed.set(s, 0);
    if (!o.quiet) process.stderr.write(`session ${s.address} conv=${s.conv} open\n`);
  });
  server.on('message', (s, data) => {
    if (s.state !== 'open') return;
    try {
      s.send(data);
      echoed.set(s, (echoed.get(s) ?? 0) + 1);
    } catch {
      dropped++; // queue-full: the sender sees a missing echo
    }
  });
  server.on('closed', (s, reason) => {
    if (s !== undefined && !o.quiet) process.stderr.write(`session ${s.address} conv=${s.conv} closed (${reason}), ${echoed.get(s) ?? 0} messages echoed\n`);
    if (s !== undefined) echoed.delete(s);
  });
  process.stderr.write(
    `kcp-echo listening on ${server.local.host}:${server.local.port} (raw KCP, mode ${o.mode}${o.stream ? ', stream' : ''}, mtu ${o.mtu}` +
      `${o.conv === undefined ? '' : `, conv ${o.conv}`})\n`,
  );
  await aborted(signal);
  const c = server.server.counters();
  process.stderr.write(`kcp-echo: ${c.sessionsOpened} sessions, ${c.datagramsIn} datagrams in, ${c.datagramsOut} out, ${c.droppedMalformed} malformed, ${dropped} echoes dropped\n`);
  await server.close();
  return EXIT_INTERRUPTED;
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** The summary line of a client run (RTTs in ms; bytes and datagrams the client sent, per message). */
export function formatEchoSummary(rtts: readonly number[], bytesOut: number, datagramsOut: number, count: number): string {
  const s = [...rtts].sort((a, b) => a - b);
  const avg = s.reduce((a, b) => a + b, 0) / Math.max(1, s.length);
  const f = (x: number): string => x.toFixed(2);
  return (
    `rtt_ms avg=${f(avg)} p50=${f(percentile(s, 50))} p99=${f(percentile(s, 99))} max=${f(s[s.length - 1] ?? NaN)} ` +
    `bytes_per_msg=${(bytesOut / count).toFixed(1)} datagrams_per_msg=${(datagramsOut / count).toFixed(2)}`
  );
}

/**
 * Call `send(i)` for i = 0 … count − 1: the first at once, then one every `intervalMs` (0: all the
 * rest on the first tick). `send` returns false to stop early (a failure). Returns a stop function.
 */
export function sendOnSchedule(count: number, intervalMs: number, send: (i: number) => boolean): () => void {
  let i = 0;
  const one = (): boolean => i < count && send(i++);
  one();
  const ticker = setInterval(() => {
    if (intervalMs > 0) one();
    else while (one());
    if (i >= count) clearInterval(ticker);
  }, Math.max(1, intervalMs));
  return () => clearInterval(ticker);
}

/**
 * Send `count` messages every `intervalMs`, check each echo (content and order) and print the
 * summary line. Resolves to 0 when every echo came back intact, 1 on mismatch or timeout, 130 on
 * SIGINT/SIGTERM (raw KCP has no disconnect to send).
 */
export async function runKcpEchoClient(o: KcpEchoClientOptions): Promise<number> {
  const server = await resolveHostPort(o.to, '--connect');
  return untilStopped((signal) => echoUntil(o, server, signal));
}

async function echoUntil(o: KcpEchoClientOptions, server: HostPort, signal: AbortSignal): Promise<number> {
  const conv = o.conv ?? ((Math.random() * 0x100000000) >>> 0);
  const client = await KcpUdpClient.open({
    server,
    conv,
    mtu: o.mtu,
    mode: 'raw',
    kcp: kcpModeOptions(o.mode, 'client', o.stream),
    keepAliveMs: 1000,
    idleTimeoutMs: 0,
    deadLinkPolicy: 'notify',
  });
  process.stderr.write(`kcp-echo -> ${o.to.host}:${o.to.port} conv=${conv} mode ${o.mode}${o.stream ? ' (stream)' : ''}: ${o.count} x ${o.size} B every ${o.intervalMs} ms\n`);
  const sentAt: number[] = [];
  const rtts: number[] = [];
  let next = 0; // next message whose echo we expect
  let streamOffset = 0; // stream mode: bytes of message `next` already received
  let failure: string | undefined;
  let lastProgress = performance.now();
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));

  const fail = (why: string): void => {
    if (failure === undefined) failure = why;
    done();
  };
  let interrupted = false;
  void aborted(signal).then(() => {
    interrupted = true;
    done();
  });
  const echoDone = (now: number): void => {
    rtts.push(now - sentAt[next]!);
    next++;
    lastProgress = now;
    if (next === o.count) done();
  };
  client.on('message', (_s, data) => {
    const now = performance.now();
    if (!o.stream) {
      if (next >= o.count) return fail('more echoes than messages sent');
      const want = echoPayload(next, o.size);
      if (data.length !== want.length || !want.every((v, j) => data[j] === v)) {
        const idx = data.length >= 4 ? new DataView(data.buffer, data.byteOffset).getUint32(0, true) : -1;
        return fail(`echo ${next} differs (got ${data.length} bytes, index ${idx})`);
      }
      echoDone(now);
      return;
    }
    let off = 0;
    while (off < data.length) {
      if (next >= o.count) return fail('more echoed bytes than sent');
      const want = echoPayload(next, o.size);
      const take = Math.min(data.length - off, o.size - streamOffset);
      for (let j = 0; j < take; j++) {
        if (data[off + j] !== want[streamOffset + j]) return fail(`stream byte ${streamOffset + j} of message ${next} differs`);
      }
      off += take;
      streamOffset += take;
      if (streamOffset === o.size) {
        streamOffset = 0;
        echoDone(now);
      }
    }
  });
  let ending = false;
  client.on('closed', (_s, reason) => {
    if (!ending) fail(`session closed (${reason})`);
  });

  const stopSending = sendOnSchedule(o.count, o.intervalMs, (i) => {
    if (failure !== undefined) return false;
    sentAt[i] = performance.now();
    try {
      client.send(echoPayload(i, o.size));
    } catch (err) {
      fail(`send failed: ${(err as Error).message}`);
      return false;
    }
    return true;
  });
  const watchdog = setInterval(() => {
    if (performance.now() - lastProgress > o.timeoutMs) {
      fail(`timeout: no echo for ${o.timeoutMs} ms (${next}/${o.count} echoed)`);
    }
  }, Math.min(500, Math.max(10, o.timeoutMs / 4)));
  lastProgress = performance.now();
  await finished;
  stopSending();
  clearInterval(watchdog);
  const c = client.driver.counters();
  ending = true;
  await client.close();
  if (interrupted && failure === undefined) {
    process.stderr.write(`kcp-echo: interrupted (${next}/${o.count} echoed)\n`);
    return EXIT_INTERRUPTED;
  }
  if (failure !== undefined) {
    process.stderr.write(`kcp-echo: FAILED: ${failure}\n`);
    return EXIT_FAILURE;
  }
  process.stdout.write(formatEchoSummary(rtts, c.bytesOut, c.datagramsOut, o.count) + '\n');
  return 0;
}

function parseMode(text: string): KcpEchoMode {
  if (text === 'default' || text === 'normal' || text === 'fast') return text;
  throw new UsageError('--mode: must be default, normal or fast');
}

function parseConv(text: string): number {
  const n = parseUint(text, '--conv');
  if (n > 0xffffffff) throw new UsageError('--conv: must fit in 32 bits');
  return n;
}

interface KcpEchoFlags {
  listen?: number;
  connect?: HostPort;
  host: string;
  conv?: number;
  mode: KcpEchoMode;
  mtu: number;
  stream?: boolean;
  count: number;
  interval: number;
  size: number;
  timeout: number;
  idleTimeout: number;
  quiet?: boolean;
}

/** Add `gamewire kcp-echo` to `program`; its action reports the exit code through `setExit`. */
export function registerKcpEcho(program: Command, setExit: (code: number) => void): void {
  program
    .command('kcp-echo')
    .description('raw-KCP echo: --listen echoes every message back to its sender; --connect sends messages, checks every echo and prints RTT figures')
    .option('--listen <port>', 'serve on this UDP port (0 = any free port; the bound port is printed)', arg((v) => parsePort(v, '--listen')))
    .option('--connect <host:port>', 'send to a kcp-echo (or any KCP echo) server', arg((v) => parseHostPort(v, '--connect')))
    .option('--host <addr>', 'local IPv4 address to listen on', '0.0.0.0')
    .option('--conv <n>', 'conversation id (listen: accept only this conv; connect: default random)', arg(parseConv))
    .option('--mode <mode>', 'KCP settings of test.cpp: default, normal or fast', arg(parseMode), 'fast' as KcpEchoMode)
    .option('--mtu <bytes>', 'KCP mtu (50..65535)', arg((v) => parseUint(v, '--mtu')), 1400)
    .option('--stream', 'KCP stream mode (no message boundaries)')
    .option('--count <n>', 'connect: messages to send', arg((v) => parseUint(v, '--count')), 100)
    .addOption(durationOption('--interval <duration>', 'connect: time between messages; 0 = all at once', 'ms', { ms: 20, shown: '20ms' }))
    .option('--size <bytes>', 'connect: bytes per message (at least 1; at most 127 × (mtu − 24) unless --stream)', arg((v) => parseSizeFor(v, '--size', '1..127 × (mtu − 24) bytes (any size ≥ 1 with --stream)')), 8)
    .addOption(durationOption('--timeout <duration>', 'connect: fail after this long without an echo', 's', { ms: 10_000, shown: '10s' }))
    .addOption(durationOption('--idle-timeout <duration>', 'listen: drop a session silent this long', 's', { ms: 30_000, shown: '30s' }))
    .option('--quiet', 'listen: no per-session lines')
    .action(async (o: KcpEchoFlags) => {
      if ((o.listen === undefined) === (o.connect === undefined)) throw new UsageError('kcp-echo needs exactly one of --listen PORT or --connect HOST:PORT');
      if (o.mtu < 50 || o.mtu > 65535) throw new UsageError('--mtu must be in 50..65535');
      if (o.listen !== undefined) {
        setExit(await runKcpEchoServer({
          port: o.listen, host: o.host, conv: o.conv, mode: o.mode, mtu: o.mtu, stream: o.stream === true,
          idleTimeoutMs: o.idleTimeout, quiet: o.quiet === true,
        }));
        return;
      }
      if (o.count < 1) throw new UsageError('--count must be at least 1');
      const maxSize = 127 * (o.mtu - 24);
      if (!o.stream && o.size > maxSize) throw new UsageError(`--size: expected a size in 1..${maxSize} bytes at --mtu ${o.mtu} (127 fragments), got ${o.size}`);
      setExit(await runKcpEchoClient({
        to: o.connect!, conv: o.conv, mode: o.mode, mtu: o.mtu, stream: o.stream === true, count: o.count,
        intervalMs: o.interval, size: o.size, timeoutMs: o.timeout,
      }));
    });
}
