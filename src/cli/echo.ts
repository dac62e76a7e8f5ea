import type { Command } from 'commander';
import { addressKey, UdpDriver } from '../adapters/node/udp-driver.js';
import type { DeliveryMode } from '../channels/index.js';
import type { ConnectionEvent } from '../connection/connection.js';
import { ConnectionHost } from '../connection/host.js';
import type { LaneConfig } from '../connection/options.js';
import { echoPayload, formatEchoSummary, sendOnSchedule } from './kcp-echo.js';
import {
  aborted, arg, durationOption, EXIT_FAILURE, EXIT_INTERRUPTED, parseHostPort, parsePort, parseSizeFor, parseUint, resolveHostPort, untilStopped,
  UsageError, type HostPort,
} from './units.js';

/** What `gamewire echo --mode` picks: a delivery mode, or the block lane. */
export type EchoMode = DeliveryMode | 'block';

/** Largest message of `--size`: 1 MiB on message lanes, the block lane's default `maxMessageBytes` (16 MiB) for blocks. */
const MAX_SIZE: Record<'message' | 'block', number> = { message: 1 << 20, block: 16 << 20 };

/** The lanes of `gamewire echo`, one per delivery mode and a block lane; a message's lane is its mode's index here. */
export const ECHO_LANES: readonly LaneConfig[] = [
  { mode: 'reliable-ordered' },
  { mode: 'reliable-unordered' },
  { mode: 'unreliable' },
  { mode: 'unreliable-sequenced' },
  { mode: 'notify' },
  { mode: 'block', maxMessageBytes: MAX_SIZE.block },
];

/** `--mode` names: the delivery modes (`sequenced` short for unreliable-sequenced) and `block`. */
const MODE_NAMES: Record<string, EchoMode> = {
  'reliable-ordered': 'reliable-ordered',
  'reliable-unordered': 'reliable-unordered',
  unreliable: 'unreliable',
  sequenced: 'unreliable-sequenced',
  notify: 'notify',
  block: 'block',
};

/** Options of `gamewire echo --listen`. */
export interface EchoServerOptions {
  port: number;
  host: string;
  quiet: boolean;
}

/** Options of `gamewire echo --connect`. */
export interface EchoClientOptions {
  to: HostPort;
  mode: EchoMode;
  count: number;
  intervalMs: number;
  size: number;
  /** Fail when nothing is echoed for this long, ms. */
  timeoutMs: number;
}

/**
 * Serve until SIGINT/SIGTERM, echoing every message on the lane it came from; then close every
 * connection (each client is told) and resolve to 130.
 */
export async function runEchoServer(o: EchoServerOptions): Promise<number> {
  return untilStopped((signal) => serveUntil(o, signal));
}

async function serveUntil(o: EchoServerOptions, signal: AbortSignal): Promise<number> {
  const host = new ConnectionHost({ lanes: ECHO_LANES, listen: true });
  const driver = await UdpDriver.openEndpoint(host, { port: o.port, host: o.host });
  let echoed = 0;
  let dropped = 0;
  driver.on('event', (e: ConnectionEvent) => {
    if (e.type === 'message') {
      try {
        e.connection.send(e.lane, e.bytes);
        echoed++;
      } catch {
        dropped++; // queue-full: the client sees a missing echo
      }
    } else if (!o.quiet && (e.type === 'connected' || e.type === 'disconnected')) {
      process.stderr.write(`${e.connection.address} ${e.type}${e.type === 'disconnected' ? ` (${e.reason})` : ''}\n`);
    }
  });
  process.stderr.write(`echo listening on ${driver.local.host}:${driver.local.port} (lanes: ${ECHO_LANES.map((l) => l.mode).join(', ')})\n`);
  await aborted(signal);
  const c = host.counters();
  process.stderr.write(`echo: ${c.connectionsOpened} connections, ${echoed} messages echoed, ${dropped} dropped, ${c.malformed} malformed datagrams\n`);
  host.close();
  await driver.close();
  return EXIT_INTERRUPTED;
}

/**
 * Connect, send `count` messages of `size` bytes every `intervalMs` on the lane of `mode`, check
 * every echo and print the summary line. Reliable modes: every echo, intact (and in order when
 * ordered). Unreliable modes: the echoes that come back are intact, never duplicated (sequenced:
 * never older than one already seen); missing ones are reported on stderr. Resolves to 0, or 1 on a
 * failed check or timeout. SIGINT/SIGTERM closes the connection (the server is told) and resolves to 130.
 */
export async function runEchoClient(o: EchoClientOptions): Promise<number> {
  const resolved = await resolveHostPort(o.to, '--connect');
  return untilStopped((signal) => echoUntil(o, resolved, signal));
}

async function echoUntil(o: EchoClientOptions, resolved: HostPort, signal: AbortSignal): Promise<number> {
  const lane = ECHO_LANES.findIndex((l) => l.mode === o.mode);
  const reliable = o.mode === 'reliable-ordered' || o.mode === 'reliable-unordered' || o.mode === 'block';
  const ordered = o.mode === 'reliable-ordered' || o.mode === 'block';
  const host = new ConnectionHost({ lanes: ECHO_LANES });
  const driver = await UdpDriver.openEndpoint(host, { port: 0, host: '0.0.0.0' });
  const conn = host.connect(driver.now(), addressKey(resolved.host, resolved.port));
  process.stderr.write(`echo -> ${resolved.host}:${o.to.port} mode ${o.mode}: ${o.count} x ${o.size} B every ${o.intervalMs} ms\n`);

  const sentAt: number[] = [];
  const seen = new Uint8Array(o.count);
  const rtts: number[] = [];
  let nextOrdered = 0;
  let newest = -1;
  let received = 0;
  let outcomes = 0;
  let delivered = 0;
  let failure: string | undefined;
  let lastProgress = driver.now();
  let sent = 0;
  let done!: () => void;
  const finished = new Promise<void>((r) => (done = r));
  const fail = (why: string): void => {
    failure ??= why;
    done();
  };
  const complete = (): boolean => (reliable ? received === o.count : sent === o.count && (o.mode !== 'notify' || outcomes === o.count));

  let over = false;
  void finished.then(() => (over = true));
  let interrupted = false;
  void aborted(signal).then(() => {
    interrupted = true;
    done();
  });
  let stopSending = (): void => {};
  driver.on('event', (e: ConnectionEvent) => {
    if (over) return; // our own close() at the end
    const now = driver.now();
    if (e.type === 'disconnected') return fail(`disconnected (${e.reason})`);
    if (e.type === 'connected') {
      // Like a TCP client after connect(): RTTs measure the echo, not the handshake.
      lastProgress = now;
      stopSending = startSending();
      return;
    }
    if (e.type === 'delivery') {
      outcomes++;
      if (e.delivered) delivered++;
      lastProgress = now;
      return;
    }
    if (e.type !== 'message') return;
    const d = e.bytes;
    if (e.lane !== lane || d.length !== o.size) return fail(`echo on lane ${e.lane} with ${d.length} bytes`);
    const i = new DataView(d.buffer, d.byteOffset, d.byteLength).getUint32(0, true);
    if (i >= sent) return fail(`echo of message ${i}, never sent`);
    const want = echoPayload(i, o.size);
    if (!want.every((v, j) => d[j] === v)) return fail(`echo ${i} differs`);
    if (seen[i] === 1) return fail(`echo ${i} came twice`);
    if (ordered && i !== nextOrdered) return fail(`echo ${i} out of order (expected ${nextOrdered})`);
    if (o.mode === 'unreliable-sequenced' && i <= newest) return fail(`echo ${i} after ${newest} (sequenced)`);
    seen[i] = 1;
    nextOrdered = i + 1;
    newest = Math.max(newest, i);
    received++;
    rtts.push(now - sentAt[i]!);
    lastProgress = now;
    if (complete()) done();
  });

  const startSending = (): (() => void) => sendOnSchedule(o.count, o.intervalMs, (i) => {
    if (failure !== undefined) return false;
    sentAt[i] = driver.now();
    try {
      conn.send(lane, echoPayload(i, o.size));
    } catch (err) {
      fail(`send failed: ${(err as Error).message}`);
      return false;
    }
    sent = i + 1;
    return true;
  });
  const watchdog = setInterval(() => {
    const quiet = driver.now() - lastProgress;
    if (reliable && quiet > o.timeoutMs) fail(`timeout: no echo for ${o.timeoutMs} ms (${received}/${o.count} echoed)`);
    // Unreliable modes end once everything was sent and nothing more came back for a while.
    if (!reliable && sent === o.count && quiet > Math.min(o.timeoutMs, 2000) && (o.mode !== 'notify' || outcomes === o.count)) done();
    if (!reliable && quiet > o.timeoutMs) fail(`timeout: nothing for ${o.timeoutMs} ms`);
  }, 100);
  await finished;
  stopSending();
  clearInterval(watchdog);
  const c = driver.counters();
  conn.close();
  await driver.close();
  if (interrupted && failure === undefined) {
    process.stderr.write(`echo: interrupted (${received}/${o.count} echoed)\n`);
    return EXIT_INTERRUPTED;
  }
  if (failure !== undefined) {
    process.stderr.write(`echo: FAILED: ${failure}\n`);
    if (process.env.GAMEWIRE_DEBUG) process.stderr.write(`${JSON.stringify({ stats: conn.stats(), counters: conn.counters() })}\n`);
    return EXIT_FAILURE;
  }
  if (!reliable) {
    const extra = o.mode === 'notify' ? `, ${delivered} reported delivered, ${outcomes - delivered} lost` : '';
    process.stderr.write(`echo: ${received}/${o.count} echoes came back (${o.mode})${extra}\n`);
  }
  process.stdout.write(formatEchoSummary(rtts, c.bytesOut, c.datagramsOut, o.count) + '\n');
  return 0;
}

/** `--size`'s range in words; the first 4 bytes of a message number it. */
const SIZE_RANGE = `4..${MAX_SIZE.message} bytes (--mode block: 4..${MAX_SIZE.block})`;

function parseMode(text: string): EchoMode {
  const m = MODE_NAMES[text];
  if (m === undefined) throw new UsageError(`--mode: must be one of ${Object.keys(MODE_NAMES).join(', ')}`);
  return m;
}

interface EchoFlags {
  listen?: number;
  connect?: HostPort;
  host: string;
  mode: EchoMode;
  count: number;
  interval: number;
  size: number;
  timeout: number;
  quiet?: boolean;
}

/** Add `gamewire echo` to `program`; its action reports the exit code through `setExit`. */
export function registerEcho(program: Command, setExit: (code: number) => void): void {
  program
    .command('echo')
    .description('message echo over gamewire connections: --listen echoes every message on its lane; --connect sends messages in one mode, checks every echo and prints RTT figures')
    .option('--listen <port>', 'serve on this UDP port (0 = any free port; the bound port is printed)', arg((v) => parsePort(v, '--listen')))
    .option('--connect <host:port>', 'send to a gamewire echo server', arg((v) => parseHostPort(v, '--connect')))
    .option('--host <addr>', 'local IPv4 address to listen on', '0.0.0.0')
    .option('--mode <mode>', `connect: delivery mode or block lane (${Object.keys(MODE_NAMES).join(', ')})`, arg(parseMode), 'reliable-ordered' as EchoMode)
    .option('--count <n>', 'connect: messages to send', arg((v) => parseUint(v, '--count')), 100)
    .addOption(durationOption('--interval <duration>', 'connect: time between messages; 0 = all at once', 'ms', { ms: 20, shown: '20ms' }))
    .option('--size <bytes>', `connect: bytes per message (${SIZE_RANGE}; e.g. 1200, 64KiB)`, arg((v) => parseSizeFor(v, '--size', SIZE_RANGE)), 16)
    .addOption(durationOption('--timeout <duration>', 'connect: fail after this long without an echo', 's', { ms: 10_000, shown: '10s' }))
    .option('--quiet', 'listen: no per-connection lines')
    .action(async (o: EchoFlags) => {
      if ((o.listen === undefined) === (o.connect === undefined)) throw new UsageError('echo needs exactly one of --listen PORT or --connect HOST:PORT');
      if (o.listen !== undefined) {
        setExit(await runEchoServer({ port: o.listen, host: o.host, quiet: o.quiet === true }));
        return;
      }
      if (o.count < 1) throw new UsageError('--count must be at least 1');
      const max = MAX_SIZE[o.mode === 'block' ? 'block' : 'message'];
      if (o.size < 4 || o.size > max) throw new UsageError(`--size: expected a size in ${SIZE_RANGE}, got ${o.size}`);
      setExit(await runEchoClient({ to: o.connect!, mode: o.mode, count: o.count, intervalMs: o.interval, size: o.size, timeoutMs: o.timeout }));
    });
}
