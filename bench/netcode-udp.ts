/**
 * bench:netcode part 4's real-socket row: a netcode `Server` on `UdpDriver.openEndpoint` over loopback in
 * one process (bench/netcode-udp-server.ts), N netcode `Client`s in another (bench/netcode-udp-clients.ts),
 * each client on its own `UdpDriver` socket, 20 Hz each way. This module starts both as child processes,
 * waits until every client is connected, lets the traffic warm up, has both measure the same fixed window
 * (process.cpuUsage, the drivers' datagram counters), then stops them; a child that fails, hangs or
 * outlives the run is killed.
 *
 * Alone, for one row or a profile:
 *   npx tsx bench/netcode-udp.ts [sodium|null] [clients]
 *   NETCODE_UDP_PROFILE=/tmp/udp.cpuprofile npx tsx bench/netcode-udp.ts null 250   (the server's CPU profile over the
 *   window; summarise it with bench/cpuprofile.ts)
 *   NETCODE_UDP_NODE_ARGS=--perf-basic-prof ...   (more node options for the server process, e.g. for Linux perf)
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { nullCryptoForBenchmarks } from '../src/crypto/null.js';
import type { CryptoProvider } from '../src/crypto/provider.js';
import { sodiumCrypto } from '../src/crypto/sodium.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');

/** Shared by both processes. */
export const UDP_PROTOCOL = 0x67617564n;
export const UDP_KEY = Uint8Array.from({ length: 32 }, (_, i) => 90 + i);
/** Each way: a client's input and the server's state per client, per second. */
export const UDP_HZ = 20;
export const INPUT_BYTES = 40;
export const STATE_BYTES = 100;

/** The crypto of a row: sodium, or packets not encrypted (connect tokens still sealed, as in part 4). */
export type UdpCrypto = 'sodium' | 'null';

export async function cryptoFor(name: UdpCrypto): Promise<CryptoProvider> {
  const sodium = await sodiumCrypto();
  if (name === 'sodium') return sodium;
  return { ...nullCryptoForBenchmarks('I understand this disables encryption'), xseal: sodium.xseal, xopen: sodium.xopen };
}

/** What one process measured over the window. Times in ms. */
export interface UdpWindow {
  wallMs: number;
  /** process.cpuUsage over the window (all threads of the process). */
  userMs: number;
  systemMs: number;
  /** Event-loop utilisation over the window (0..1). */
  loopBusy: number;
  /** Datagrams through the process's sockets over the window (sum over its drivers). */
  datagramsIn: number;
  datagramsOut: number;
  /** Messages received (inputs at the server, states at the clients) and sent on the lane. */
  messagesIn: number;
  messagesOut: number;
  /** Connected at the end of the window; disconnections during the window. */
  connected: number;
  disconnects: number;
  /** Server only: packets dropped by the server (replayed, failed checks, unknown address, malformed). */
  dropped?: number;
  /**
   * Server only: heap and array buffers after the window minus before the first client, per connected
   * client, bytes (both after garbage collection; measured once the window's figures are taken).
   */
  bytesPerClient?: number;
}

/** Messages from a child to the parent. */
export type ChildMessage =
  | { type: 'ready'; port: number }
  | { type: 'connected'; clients: number; ms: number }
  | { type: 'window'; window: UdpWindow }
  | { type: 'error'; message: string };

/** Messages from the parent to a child. */
export type ParentMessage = { type: 'go' } | { type: 'measure'; ms: number; profile?: string } | { type: 'stop' };

/** One real-socket row. */
export interface UdpRow {
  clients: number;
  crypto: UdpCrypto;
  server: UdpWindow;
  clientProcess: UdpWindow;
  /** Server CPU (user + system) / wall time: 1.0 = one core. */
  share: number;
  /** Server CPU per datagram through its socket (in + out), µs. */
  usPerPacket: number;
  /** Datagrams through the server per client per second (part 4's simulator: 60). */
  packetsPerClientSecond: number;
  /** Datagrams the server read / datagrams the clients sent, over the window (below ~1: the server's socket overflowed). */
  readFraction: number;
  /** The server read under 90 % of what the clients sent: it could not keep up (its socket's receive buffer overflowed). */
  saturated: boolean;
  /** CPU the machine's other processes used over the window, in cores (Linux /proc/stat; NaN elsewhere). */
  othersCores: number;
  /** Seconds waited before the run for the machine to be quiet. */
  waitedS: number;
}

/** Options of {@link udpRow}. Times in ms. */
export interface UdpRowOptions {
  clients: number;
  crypto: UdpCrypto;
  /** Traffic before the window (default 3000). */
  warmupMs?: number;
  /** The measured window (default 5000). */
  windowMs?: number;
  /** Longest wait for a quiet machine before the run (default 20 000). */
  quietWaitMs?: number;
  /** More node options for the server process (e.g. `--perf-basic-prof` for Linux perf). */
  serverNodeArgs?: string[];
  /**
   * Write a V8 CPU profile of the server process over the window to this file (.cpuprofile; sampled
   * every 100 µs through node:inspector, which slows the server: the row's figures are then not comparable).
   */
  profile?: string;
}

const CHILD_EXEC = ['--import', 'tsx'];

/** Idle and total CPU time of the whole machine so far, in clock ticks (Linux), or undefined. */
function machineTicks(): [idle: number, total: number] | undefined {
  try {
    const f = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    return [f[3]! + f[4]!, f.reduce((a, b) => a + b, 0)];
  } catch {
    return undefined;
  }
}

/** Cores busy between two `machineTicks` readings. */
function busyCores(a: ReturnType<typeof machineTicks>, b: ReturnType<typeof machineTicks>): number {
  if (a === undefined || b === undefined) return NaN;
  return (1 - (b[0] - a[0]) / Math.max(1, b[1] - a[1])) * cpus().length;
}

/**
 * The machine is shared and a real-socket row needs about two free cores: wait until it was less
 * than 15 % busy over 300 ms, at most `maxMs`. Returns the seconds waited.
 */
async function waitForQuiet(maxMs: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const a = machineTicks();
    await new Promise((r) => setTimeout(r, 300));
    const b = machineTicks();
    if (a === undefined || busyCores(a, b) < 0.15 * cpus().length || performance.now() - t0 > maxMs) return (performance.now() - t0) / 1000;
    await new Promise((r) => setTimeout(r, 700));
  }
}

/** A free UDP port on 127.0.0.1 (the server's address must be in its tokens before it binds). */
async function freePort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  const port = s.address().port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

class Child {
  readonly proc: ChildProcess;
  private readonly inbox: ChildMessage[] = [];
  private waiting: ((m: ChildMessage) => void) | undefined;
  private exited: string | undefined;

  constructor(file: string, args: string[], execArgv: string[]) {
    this.proc = fork(join(HERE, file), args, { cwd: ROOT, execArgv: [...CHILD_EXEC, ...execArgv], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.proc.on('message', (m: ChildMessage) => {
      if (this.waiting !== undefined) {
        const w = this.waiting;
        this.waiting = undefined;
        w(m);
      } else this.inbox.push(m);
    });
    this.proc.on('exit', (code, signal) => {
      this.exited = `${file} exited (${signal ?? code})`;
      this.waiting?.({ type: 'error', message: this.exited });
    });
  }

  send(m: ParentMessage): void {
    if (this.proc.connected) this.proc.send(m);
  }

  /** The next message; rejects on an `error` message, the child's exit, or after `ms`. */
  async next<T extends ChildMessage['type']>(type: T, ms: number): Promise<Extract<ChildMessage, { type: T }>> {
    const m = this.inbox.shift() ?? (this.exited !== undefined ? { type: 'error' as const, message: this.exited } : await new Promise<ChildMessage>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting = undefined;
        resolve({ type: 'error', message: `no '${type}' within ${ms} ms` });
      }, ms);
      this.waiting = (x) => {
        clearTimeout(timer);
        resolve(x);
      };
    }));
    if (m.type === 'error') throw new Error(m.message);
    if (m.type !== type) throw new Error(`expected '${type}', got '${m.type}'`);
    return m as Extract<ChildMessage, { type: T }>;
  }

  /** Ask it to stop; SIGKILL after `ms`. */
  async stop(ms: number): Promise<void> {
    if (this.proc.exitCode !== null || this.proc.signalCode !== null) return;
    const gone = new Promise<void>((r) => this.proc.once('exit', () => r()));
    this.send({ type: 'stop' });
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), ms);
    await gone;
    clearTimeout(timer);
  }
}

/**
 * Run one real-socket row: `clients` netcode clients in a child process against a server in another,
 * over loopback, 20 Hz each way; both processes measure the same window after all are connected and
 * the warm-up. Rejects (after killing both children) when a client cannot connect or a child fails.
 */
export async function udpRow(o: UdpRowOptions): Promise<UdpRow> {
  const warmupMs = o.warmupMs ?? 3000;
  const windowMs = o.windowMs ?? 5000;
  const waitedS = await waitForQuiet(o.quietWaitMs ?? 20_000);
  const port = await freePort();
  // Both start at once; the clients open their sockets and connect when told the server is ready.
  const server = new Child('netcode-udp-server.ts', [o.crypto, String(o.clients), String(port)], ['--expose-gc', ...(o.serverNodeArgs ?? [])]);
  const clients = new Child('netcode-udp-clients.ts', [o.crypto, String(o.clients), String(port)], []);
  try {
    await server.next('ready', 30_000);
    clients.send({ type: 'go' });
    await clients.next('connected', 60_000);
    await new Promise((r) => setTimeout(r, warmupMs));
    const m0 = machineTicks();
    server.send({ type: 'measure', ms: windowMs, ...(o.profile === undefined ? {} : { profile: o.profile }) });
    clients.send({ type: 'measure', ms: windowMs });
    const s = (await server.next('window', windowMs + 60_000)).window;
    const c = (await clients.next('window', windowMs + 30_000)).window;
    const othersCores = busyCores(m0, machineTicks()) - (s.userMs + s.systemMs) / s.wallMs - (c.userMs + c.systemMs) / c.wallMs;
    const cpu = s.userMs + s.systemMs;
    const packets = s.datagramsIn + s.datagramsOut;
    const readFraction = s.datagramsIn / Math.max(1, c.datagramsOut);
    const saturated = readFraction < 0.9;
    // A server that keeps up loses no client; one that cannot may, and the row says it could not.
    if (!saturated && (s.connected !== o.clients || s.disconnects !== 0 || c.disconnects !== 0)) {
      throw new Error(`server: ${s.connected} of ${o.clients} clients connected at the end of the window, ${s.disconnects} disconnected in it`);
    }
    return {
      clients: o.clients, crypto: o.crypto, server: s, clientProcess: c,
      share: cpu / s.wallMs,
      usPerPacket: (cpu * 1000) / packets,
      packetsPerClientSecond: (packets * 1000) / s.wallMs / o.clients,
      readFraction,
      saturated,
      othersCores,
      waitedS,
    };
  } finally {
    await Promise.all([clients.stop(10_000), server.stop(10_000)]);
  }
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const crypto = (process.argv[2] ?? 'null') as UdpCrypto;
  const n = Number(process.argv[3] ?? 1000);
  const r = await udpRow({
    clients: n, crypto,
    ...(process.env.NETCODE_UDP_PROFILE ? { profile: process.env.NETCODE_UDP_PROFILE } : {}),
    ...(process.env.NETCODE_UDP_NODE_ARGS ? { serverNodeArgs: process.env.NETCODE_UDP_NODE_ARGS.split(' ') } : {}),
  });
  console.log(JSON.stringify(r, null, 1));
}
