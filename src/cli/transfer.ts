import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { access, readFile, stat, writeFile } from 'node:fs/promises';
import { dirname, resolve as resolvePath } from 'node:path';
import { UdpDriver, type UdpAddress } from '../adapters/node/udp-driver.js';
import { ChunkReceiver, type ChunkReceiverEvent } from '../chunk/receiver.js';
import { ChunkSender, type ChunkSenderEvent } from '../chunk/sender.js';
import { PacketType, peekPacketType, sliceCountOf } from '../chunk/wire.js';
import { ADAPTIVE_RATE_DEFAULTS, AdaptiveRate } from '../congestion/adaptive.js';
import { GamewireError } from '../core/errors.js';
import { DEFAULT_RATE_BYTES_PER_SEC } from '../congestion/fixed.js';
import { formatSummary, ProgressBar } from './report.js';
import { EXIT_FAILURE, EXIT_INTERRUPTED, stopSignal } from './units.js';

/** A transfer that started but failed (timeout, refusal, cancel, file error) or was interrupted. */
export class TransferError extends Error {
  /** Process exit code: 1 for a failure, 130 for Ctrl-C/SIGTERM. */
  readonly exitCode: number;
  constructor(message: string, exitCode = EXIT_FAILURE) {
    super(message);
    this.name = 'TransferError';
    this.exitCode = exitCode;
  }
}

/** Default largest block `recv` accepts and `send` reads, bytes. */
export const DEFAULT_MAX_BLOCK_BYTES = 64 * 1024 * 1024;
const TICK_MS = 100;
/** After Ctrl-C, how long `send` waits for the receiver to confirm the cancel, ms. */
const CANCEL_WAIT_MS = 1000;

const interrupted = (): TransferError => new TransferError('interrupted', EXIT_INTERRUPTED);

/** Options of {@link receiveOne}. Times in ms, sizes in bytes. */
export interface ReceiveOptions {
  /** Local port (0 = any). */
  port: number;
  /** Local address to bind. */
  host: string;
  /** Largest block accepted (default 64 MiB); larger ones are refused. */
  maxBytes?: number;
  /** Fail after this long without a datagram once a sender has started. */
  idleTimeoutMs: number;
  /** Fail if no sender shows up within this long (default: wait forever). */
  waitMs?: number;
  /** After the block, keep acking until the sender is quiet this long (default 1000)… */
  lingerQuietMs?: number;
  /** …but at most this long (default 10 000). */
  lingerMaxMs?: number;
  /** Called once the socket is bound. */
  onListening?: (local: UdpAddress) => void;
  /** Progress bar to update (bytes of the block received so far); stopped before `onBlock`. */
  progress?: ProgressBar;
  /** Called with the complete block before lingering (e.g. to write the file); a throw fails the run. */
  onBlock?: (result: ReceiveResult) => Promise<void> | void;
  /** Aborting stops the run at once with a {@link TransferError} (exit code 130). */
  signal?: AbortSignal;
}

/** Outcome of {@link receiveOne}. */
export interface ReceiveResult {
  /** The block. */
  data: Uint8Array;
  /** First datagram to complete block, seconds. */
  seconds: number;
  /** Datagrams (acks) sent until the block completed. */
  datagramsSent: number;
  /** The sender's address. */
  from: UdpAddress;
}

/**
 * Receive one block on a UDP port: latch the first sender whose first datagram is a slice, wait for
 * the complete block, run `onBlock`, then linger (acking late duplicates) so the sender learns it is
 * done. Rejects with {@link TransferError} on timeouts, refusal, cancel or abort.
 */
export async function receiveOne(o: ReceiveOptions): Promise<ReceiveResult> {
  if (o.signal?.aborted === true) throw interrupted();
  const receiver = new ChunkReceiver({ maxBlockBytes: o.maxBytes ?? DEFAULT_MAX_BLOCK_BYTES });
  let driver: UdpDriver<ChunkReceiverEvent>;
  try {
    driver = await UdpDriver.open<ChunkReceiverEvent>(receiver, {
      port: o.port,
      host: o.host,
      acceptFirst: (bytes) => peekPacketType(bytes) === PacketType.Slice,
    });
  } catch (err) {
    throw new TransferError(`cannot listen on ${o.host}:${o.port}: ${reason(err)}`);
  }
  o.onListening?.(driver.local);
  const openedAt = driver.now();
  // When the sender's first slice arrived (it latched the remote): the start of the transfer.
  let firstAt: number | undefined;
  driver.on('remote', () => (firstAt ??= driver.now()));
  let ticker: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const outcome = await new Promise<{ data: Uint8Array; at: number } | TransferError>((resolve) => {
      onAbort = () => {
        resolve(interrupted());
        void driver.close(); // also ends a linger at once
      };
      o.signal?.addEventListener('abort', onAbort);
      driver.on('event', (ev) => {
        if (ev.type === 'block') resolve({ data: ev.data, at: driver.now() });
        else if (ev.type === 'refused') {
          resolve(new TransferError(`refused a block of ${ev.blockBytes} bytes: the limit (--max-bytes) is ${ev.limitBytes}`));
        } else if (ev.reason === 'sender') resolve(new TransferError('the sender cancelled the block'));
      });
      ticker = setInterval(() => {
        const now = driver.now();
        if (firstAt === undefined) {
          if (o.waitMs !== undefined && now - openedAt > o.waitMs) {
            resolve(new TransferError(`no sender within ${fmtSecs(o.waitMs)} (--wait)`));
          }
          return;
        }
        if (now - driver.lastDatagramAt > o.idleTimeoutMs) {
          resolve(new TransferError(`the sender went silent for ${fmtSecs(o.idleTimeoutMs)} (--timeout); giving up`));
          return;
        }
        const block = receiver.progress().blocks[0];
        if (block !== undefined) o.progress?.update(block.receivedBytes, block.totalBytes);
      }, TICK_MS);
    });
    clearInterval(ticker);
    if (outcome instanceof TransferError) {
      o.progress?.stop();
      // Let a refusal reach the sender before we go (not after Ctrl-C: the user wants out).
      if (firstAt !== undefined && outcome.exitCode !== EXIT_INTERRUPTED) await driver.close({ linger: { quietMs: 500, maxMs: 3000 } });
      throw outcome;
    }
    const seconds = (outcome.at - (firstAt ?? openedAt)) / 1000;
    o.progress?.update(outcome.data.length, outcome.data.length);
    o.progress?.stop();
    const result: ReceiveResult = {
      data: outcome.data,
      seconds,
      datagramsSent: driver.counters().datagramsOut,
      from: driver.remote ?? { host: '?', port: 0 },
    };
    await o.onBlock?.(result);
    await driver.close({ linger: { quietMs: o.lingerQuietMs ?? 1000, maxMs: o.lingerMaxMs ?? 10_000 } });
    return result;
  } finally {
    clearInterval(ticker);
    if (onAbort !== undefined) o.signal?.removeEventListener('abort', onAbort);
    o.progress?.stop();
    await driver.close();
  }
}

/** Options of {@link sendOne}. Rates in bytes/s (wire), times in ms. */
export interface SendOptions {
  /** The receiver (or a proxy in front of it). */
  to: UdpAddress;
  /** Local port (0 = any). */
  port: number;
  /** Adaptive: the rate ceiling; fixed: the pacing rate. */
  rate?: number;
  /** Adapt the rate to delay and loss (AdaptiveRate) instead of pacing at a fixed rate. */
  adaptive: boolean;
  /** Send every slice once up front (blocks ≤ 256 KiB), then pace. */
  burst: boolean;
  /** Fail after this long without any datagram from the receiver. */
  idleTimeoutMs: number;
  /** Progress bar to update (bytes acked). */
  progress?: ProgressBar;
  /** Called for informational notices (stalls). */
  onNotice?: (text: string) => void;
  /**
   * Aborting cancels the block (the receiver is told; up to 1 s for its answer) and rejects with a
   * {@link TransferError} (exit code 130), unless the block turns out to be delivered already.
   */
  signal?: AbortSignal;
}

/** Outcome of {@link sendOne}. */
export interface SendResult {
  /** Block size, bytes. */
  bytes: number;
  /** Start of sending to the last needed ack, seconds. */
  seconds: number;
  /** Every datagram the sender wrote. */
  datagramsSent: number;
  /** Slice datagrams needed without loss. */
  payloadDatagrams: number;
  /** Slices sent more than once. */
  resentSlices: number;
}

/** The `ChunkSender` config `send` uses for these options. */
export function senderConfigFor(o: Pick<SendOptions, 'rate' | 'adaptive' | 'burst'>, blockBytes: number): ConstructorParameters<typeof ChunkSender>[0] {
  const sessionId = randomBytes(4).readUInt32LE(0);
  const maxQueuedBytes = Math.max(1, blockBytes);
  if (!o.adaptive) return { rateBytesPerSec: o.rate ?? DEFAULT_RATE_BYTES_PER_SEC, burst: o.burst, sessionId, maxQueuedBytes };
  const max = o.rate ?? ADAPTIVE_RATE_DEFAULTS.maxRateBytesPerSec;
  const controller = new AdaptiveRate({
    maxRateBytesPerSec: max,
    minRateBytesPerSec: Math.min(ADAPTIVE_RATE_DEFAULTS.minRateBytesPerSec, max),
    initialRateBytesPerSec: Math.min(ADAPTIVE_RATE_DEFAULTS.initialRateBytesPerSec, max),
  });
  return { rateController: controller, burst: o.burst, sessionId, maxQueuedBytes };
}

/**
 * Send `data` as one block and resolve once every slice is acked. Rejects with
 * {@link TransferError} when the address cannot be used, the receiver stays silent for
 * `idleTimeoutMs`, refuses or cancels, or `signal` aborts.
 */
export async function sendOne(data: Uint8Array, o: SendOptions): Promise<SendResult> {
  if (o.signal?.aborted === true) throw interrupted();
  const sender = new ChunkSender(senderConfigFor(o, data.length));
  const id = sender.sendBlock(data);
  let driver: UdpDriver<ChunkSenderEvent>;
  try {
    driver = await UdpDriver.open<ChunkSenderEvent>(sender, { port: o.port, remote: o.to });
  } catch (err) {
    throw new TransferError(`cannot send to ${o.to.host}:${o.to.port}: ${reason(err)}`);
  }
  const startedAt = driver.now();
  let ticker: NodeJS.Timeout | undefined;
  let cancelWait: NodeJS.Timeout | undefined;
  let onAbort: (() => void) | undefined;
  try {
    const outcome = await new Promise<number | TransferError>((resolve) => {
      onAbort = () => {
        if (!sender.cancel(id)) return;
        driver.kick();
        cancelWait = setTimeout(() => resolve(interrupted()), CANCEL_WAIT_MS);
      };
      o.signal?.addEventListener('abort', onAbort);
      driver.on('event', (ev) => {
        if (ev.id !== id) return;
        if (ev.type === 'delivered') resolve(driver.now());
        else if (ev.type === 'refused') {
          resolve(new TransferError(`the receiver refused the block: ${data.length} bytes is over its limit of ${ev.limitBytes}`));
        } else if (ev.type === 'cancelled') {
          resolve(ev.reason === 'user' ? interrupted() : new TransferError(`the block was cancelled (${ev.reason})`));
        } else {
          o.onNotice?.(
            `no ack progress for ${fmtSecs(ev.sinceMs)}${ev.suspectMtu ? ' (only short slices got through: path MTU too small?)' : ''}`,
          );
        }
      });
      ticker = setInterval(() => {
        const now = driver.now();
        if (now - Math.max(startedAt, driver.lastDatagramAt) > o.idleTimeoutMs) {
          const heard = driver.lastDatagramAt > -Infinity ? 'went silent' : 'never answered';
          resolve(new TransferError(`no answer from ${o.to.host}:${o.to.port}: the receiver ${heard} for ${fmtSecs(o.idleTimeoutMs)} (--timeout); giving up`));
          return;
        }
        const p = sender.progress(now);
        if (p.current !== undefined) o.progress?.update(p.current.ackedBytes, p.current.totalBytes);
      }, TICK_MS);
    });
    if (outcome instanceof TransferError) throw outcome;
    const seconds = (outcome - startedAt) / 1000;
    o.progress?.update(data.length, data.length);
    const c = sender.counters();
    return {
      bytes: data.length,
      seconds,
      datagramsSent: c.datagramsSent,
      payloadDatagrams: sliceCountOf(data.length, sender.config.sliceBytes),
      resentSlices: c.slicesResent,
    };
  } finally {
    clearInterval(ticker);
    clearTimeout(cancelWait);
    if (onAbort !== undefined) o.signal?.removeEventListener('abort', onAbort);
    o.progress?.stop();
    await driver.close();
  }
}

/** Report a failed transfer on stderr and give its exit code; anything else is a bug and is rethrown. */
function failureExitCode(err: unknown): number {
  if (!(err instanceof TransferError)) throw err;
  process.stderr.write(`error: ${err.message}\n`);
  return err.exitCode;
}

/** An error's message for a person: without the `code: ` prefix a GamewireError carries. */
function reason(err: unknown): string {
  if (err instanceof GamewireError) return err.message.slice(err.code.length + 2);
  return err instanceof Error ? err.message : String(err);
}

function fmtSecs(ms: number): string {
  return `${+(ms / 1000).toFixed(3)} s`;
}

/**
 * Why `path` cannot be written as a file, or undefined if it looks writable: it is a directory, its
 * directory is missing, or permissions forbid it. Checked before listening, so a sender never hears
 * "delivered" for a block the receiver then cannot store (the final write can still fail: disk full).
 */
export async function outputProblem(path: string): Promise<string | undefined> {
  try {
    if ((await stat(path)).isDirectory()) return 'it is a directory';
    await access(path, constants.W_OK);
    return undefined;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code !== 'ENOENT') return e.code === 'EACCES' ? 'permission denied' : e.message;
  }
  const dir = dirname(resolvePath(path));
  try {
    if (!(await stat(dir)).isDirectory()) return `${dir} is not a directory`;
    await access(dir, constants.W_OK);
    return undefined;
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === 'ENOENT') return `directory ${dir} does not exist`;
    if (e.code === 'EACCES') return `no permission to create files in ${dir}`;
    return e.message;
  }
}

/** Options of `gamewire recv` after parsing. */
export interface RecvCommandOptions {
  out: string;
  port: number;
  host: string;
  maxBytes?: number;
  idleTimeoutMs: number;
  waitMs?: number;
  quiet: boolean;
}

/** `gamewire recv`: receive one block into `out`; resolves to the exit code. */
export async function runRecv(o: RecvCommandOptions): Promise<number> {
  const problem = await outputProblem(o.out);
  if (problem !== undefined) {
    process.stderr.write(`error: cannot write --out ${o.out}: ${problem}\n`);
    return EXIT_FAILURE;
  }
  const stop = stopSignal();
  try {
    await receiveOne({
      port: o.port,
      host: o.host,
      maxBytes: o.maxBytes,
      idleTimeoutMs: o.idleTimeoutMs,
      waitMs: o.waitMs,
      progress: new ProgressBar('recv', !o.quiet),
      signal: stop.signal,
      onListening: (a) => process.stderr.write(`listening on ${a.host}:${a.port}\n`),
      onBlock: async (r) => {
        try {
          await writeFile(o.out, r.data);
        } catch (err) {
          throw new TransferError(`cannot write ${o.out}: ${(err as Error).message}`);
        }
        const line = formatSummary({ verb: 'received', bytes: r.data.length, seconds: r.seconds, datagramsSent: r.datagramsSent });
        process.stdout.write(`${line} -> ${o.out}\n`);
      },
    });
    return 0;
  } catch (err) {
    return failureExitCode(err);
  } finally {
    stop.dispose();
  }
}

/** Options of `gamewire send` after parsing. */
export interface SendCommandOptions {
  file: string;
  to: UdpAddress;
  rate?: number;
  adaptive: boolean;
  burst: boolean;
  port: number;
  idleTimeoutMs: number;
  quiet: boolean;
}

/** `gamewire send`: send `file` as one block; resolves to the exit code. */
export async function runSend(o: SendCommandOptions): Promise<number> {
  let data: Uint8Array;
  try {
    data = await readFile(o.file);
  } catch (err) {
    process.stderr.write(`error: cannot read ${o.file}: ${(err as Error).message}\n`);
    return EXIT_FAILURE;
  }
  const stop = stopSignal();
  const progress = new ProgressBar('send', !o.quiet);
  try {
    const r = await sendOne(data, {
      to: o.to,
      port: o.port,
      rate: o.rate,
      adaptive: o.adaptive,
      burst: o.burst,
      idleTimeoutMs: o.idleTimeoutMs,
      progress,
      signal: stop.signal,
      onNotice: (t) => progress.log(`warning: ${t}`),
    });
    process.stdout.write(formatSummary({ verb: 'sent', ...r }) + '\n');
    return 0;
  } catch (err) {
    return failureExitCode(err);
  } finally {
    stop.dispose();
  }
}
