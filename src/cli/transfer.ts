import { randomBytes } from 'node:crypto';
import { constants } from 'node:fs';
import { type FileHandle, open, stat, unlink } from 'node:fs/promises';
import { UdpDriver, type UdpAddress } from '../adapters/node/udp-driver.js';
import { ChunkReceiver, type ChunkReceiverEvent } from '../chunk/receiver.js';
import { ChunkSender, type ChunkSenderEvent } from '../chunk/sender.js';
import { decodeChunkPacket, encodeRefuse, PacketType, peekPacketType, REFUSE_BYTES, sliceCountOf } from '../chunk/wire.js';
import { ADAPTIVE_RATE_DEFAULTS, AdaptiveRate } from '../congestion/adaptive.js';
import { GamewireError } from '../core/errors.js';
import type { SansIoPeer } from '../core/peer.js';
import { DEFAULT_RATE_BYTES_PER_SEC } from '../congestion/fixed.js';
import { fileErrorText, readInput } from './files.js';
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
  /**
   * Stores the complete block (e.g. writes the file); the sender is acked for the block's last slice
   * only after it resolves. A throw refuses the block (the sender is told) and fails the run.
   */
  onBlock?: (result: ReceiveResult) => Promise<void> | void;
  /**
   * Aborting before the block is complete refuses it (the sender is told; up to 1 s) and rejects
   * with a {@link TransferError} (exit code 130); while `onBlock` runs, it lets the block be stored
   * and acked, and ends the linger.
   */
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
 * A `ChunkReceiver` as `recv` drives it, so that no sender hears "delivered" for a block that was
 * not stored: once a block is complete its answers (the ack that completes it, and every later one)
 * are held back until `release()`, after the block was stored. `refuse()` answers every later slice
 * or cancel of the sender's session with a refusal instead (limit 0 bytes: no block of any size is
 * taken any more); the sender then ends with `refused`. While holding or refusing, the receiver
 * still sees every datagram, and nothing is due on a timer.
 */
export class StoringReceiver implements SansIoPeer<ChunkReceiverEvent> {
  private mode: 'open' | 'holding' | 'refusing' = 'open';
  private readonly events: ChunkReceiverEvent[] = [];
  /** Refusals to send, as [session, chunkId], one per slice or cancel received while refusing. */
  private readonly refusals: [number, number][] = [];

  constructor(readonly receiver: ChunkReceiver) {}

  /** Let the held answers go (the block is stored). */
  release(): void {
    if (this.mode === 'holding') this.mode = 'open';
  }

  /** From now on answer the sender's slices and cancels with refusals only. */
  refuse(): void {
    this.mode = 'refusing';
  }

  handleDatagram(now: number, bytes: Uint8Array): void {
    if (this.mode === 'refusing') {
      const r = decodeChunkPacket(bytes);
      if (!r.ok || (r.value.type !== 'slice' && r.value.type !== 'cancel') || r.value.session !== this.receiver.sessionId) return;
      if (this.refusals.length < MAX_REFUSALS_QUEUED) this.refusals.push([r.value.session, r.value.chunkId]);
      return;
    }
    this.receiver.handleDatagram(now, bytes);
    for (let e = this.receiver.pollEvent(); e !== undefined; e = this.receiver.pollEvent()) {
      if (e.type === 'block' && this.mode === 'open') this.mode = 'holding';
      this.events.push(e);
    }
  }

  handleTimeout(now: number): void {
    if (this.mode === 'open') this.receiver.handleTimeout(now);
  }

  pollTransmit(now: number, out: Uint8Array): number | undefined {
    if (this.mode === 'open') return this.receiver.pollTransmit(now, out);
    const next = this.refusals.shift();
    if (next === undefined || out.length < REFUSE_BYTES) return undefined;
    return encodeRefuse(out, { session: next[0], chunkId: next[1], reason: 'too-large', limitBytes: 0 });
  }

  pollTimeout(): number | undefined {
    return this.mode === 'open' ? this.receiver.pollTimeout() : undefined;
  }

  pollEvent(): ChunkReceiverEvent | undefined {
    return this.events.shift();
  }
}

/** Refusals waiting to be sent (one per datagram received while refusing); more are not queued. */
const MAX_REFUSALS_QUEUED = 64;
/** After Ctrl-C or a failed store, how long the receiver keeps refusing: until the sender is quiet this long (ms)… */
const REFUSE_QUIET_MS = 300;
/** …at most this long (ms). */
const REFUSE_MAX_MS = 1000;

/**
 * Receive one block on a UDP port: latch the first sender whose first datagram is a slice, wait for
 * the complete block, run `onBlock` (which stores it), and only then let the ack that completes the
 * block go out; then linger (acking late duplicates) so the sender learns it is done. If `onBlock`
 * throws, or `signal` aborts before the block is complete, the sender's slices are answered with
 * refusals for up to 1 s (so it stops at once, never hearing "delivered"). Rejects with
 * {@link TransferError} on timeouts, refusal, cancel, a failed `onBlock`, or abort (exit code 130).
 */
export async function receiveOne(o: ReceiveOptions): Promise<ReceiveResult> {
  if (o.signal?.aborted === true) throw interrupted();
  const receiver = new ChunkReceiver({ maxBlockBytes: o.maxBytes ?? DEFAULT_MAX_BLOCK_BYTES });
  const storing = new StoringReceiver(receiver);
  let driver: UdpDriver<ChunkReceiverEvent>;
  try {
    driver = await UdpDriver.open<ChunkReceiverEvent>(storing, {
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
  let aborted = false;
  let wake: (() => void) | undefined;
  const onAbort = (): void => {
    aborted = true;
    wake?.();
  };
  o.signal?.addEventListener('abort', onAbort);
  if (signalled(o.signal)) onAbort(); // while the socket was opening
  /** Refuse whatever the sender still sends, until it is quiet (it has stopped), at most 1 s. */
  const refuseAndClose = async (): Promise<void> => {
    storing.refuse();
    if (firstAt !== undefined) await driver.close({ linger: { quietMs: REFUSE_QUIET_MS, maxMs: REFUSE_MAX_MS } });
  };
  try {
    const outcome = await new Promise<{ data: Uint8Array; at: number } | TransferError>((resolve) => {
      wake = () => resolve(interrupted());
      if (aborted) wake();
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
    // From here a first Ctrl-C ends a linger at once (a second one exits the process). One that
    // comes while the block is being stored lets the store finish: the block then counts as received.
    let stored = false;
    wake = () => {
      if (stored || outcome instanceof TransferError) void driver.close();
    };
    if (outcome instanceof TransferError) {
      o.progress?.stop();
      if (outcome.exitCode === EXIT_INTERRUPTED) await refuseAndClose();
      // Let a refusal reach the sender before we go.
      else if (firstAt !== undefined) await driver.close({ linger: { quietMs: 500, maxMs: 3000 } });
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
    try {
      await o.onBlock?.(result);
    } catch (err) {
      await refuseAndClose();
      throw err instanceof TransferError ? err : new TransferError(`cannot store the block: ${reason(err)}`);
    }
    stored = true;
    storing.release();
    driver.kick();
    // After Ctrl-C the close's last drain still sends the ack that completes the block.
    await driver.close(aborted ? undefined : { linger: { quietMs: o.lingerQuietMs ?? 1000, maxMs: o.lingerMaxMs ?? 10_000 } });
    return result;
  } finally {
    clearInterval(ticker);
    o.signal?.removeEventListener('abort', onAbort);
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
          // Limit 0: a gamewire recv that was stopped, or could not store the block (see StoringReceiver).
          resolve(new TransferError(ev.limitBytes === 0
            ? 'the receiver refused the block: it stopped, or could not store it'
            : `the receiver refused the block: ${data.length} bytes is over its limit of ${ev.limitBytes}`));
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

function signalled(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}

function fmtSecs(ms: number): string {
  return `${+(ms / 1000).toFixed(3)} s`;
}

/**
 * The `--out` file, opened (created if missing, not truncated) before `recv` listens, so a path
 * that cannot be written fails before any sender is heard; the block is written through it before
 * the sender is acked for its last slice.
 */
export class OutputFile {
  private constructor(
    private readonly handle: FileHandle,
    readonly path: string,
    private readonly created: boolean,
  ) {}

  /** Open `path` for writing; rejects with a {@link TransferError} naming it and why. */
  static async open(path: string): Promise<OutputFile> {
    let existed = true;
    try {
      await stat(path);
    } catch {
      existed = false;
    }
    try {
      return new OutputFile(await open(path, constants.O_WRONLY | constants.O_CREAT, 0o666), path, !existed);
    } catch (err) {
      throw new TransferError(`cannot write --out ${path}: ${fileErrorText(err, path, 'write')}`);
    }
  }

  /** Replace the file's contents with `data` and flush it to the device (a regular file) or write it through (a pipe, a device). */
  async store(data: Uint8Array): Promise<void> {
    try {
      const regular = (await this.handle.stat()).isFile();
      if (regular) await this.handle.truncate(0);
      await this.handle.write(data, 0, data.length, regular ? 0 : null);
      if (regular) await this.handle.datasync();
      await this.handle.close();
    } catch (err) {
      throw new TransferError(`cannot write --out ${this.path}: ${fileErrorText(err, this.path, 'write')}`);
    }
  }

  /** Close without storing anything; a file that `open` created is removed again. */
  async discard(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    if (this.created) await unlink(this.path).catch(() => undefined);
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
  let out: OutputFile;
  try {
    out = await OutputFile.open(o.out);
  } catch (err) {
    return failureExitCode(err);
  }
  let stored = false;
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
        await out.store(r.data);
        stored = true;
        const line = formatSummary({ verb: 'received', bytes: r.data.length, seconds: r.seconds, datagramsSent: r.datagramsSent });
        process.stdout.write(`${line} -> ${o.out}\n`);
      },
    });
    return 0;
  } catch (err) {
    return failureExitCode(err);
  } finally {
    if (!stored) await out.discard();
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
    data = await readInput(o.file, 'FILE');
  } catch (err) {
    process.stderr.write(`error: ${(err as Error).message}\n`);
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
