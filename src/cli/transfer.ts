import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { UdpDriver, type DrivablePeer, type UdpAddress } from '../adapters/node/udp-driver.js';
import { ChunkReceiver, type ChunkReceiverEvent } from '../chunk/receiver.js';
import { ChunkSender, type ChunkSenderEvent } from '../chunk/sender.js';
import { decodeChunkPacket, PacketType, peekPacketType, sliceCountOf } from '../chunk/wire.js';
import { ADAPTIVE_RATE_DEFAULTS, AdaptiveRate } from '../congestion/adaptive.js';
import { DEFAULT_RATE_BYTES_PER_SEC } from '../congestion/fixed.js';
import { formatSummary, ProgressBar } from './report.js';

/** A transfer that started but failed (timeout, refusal, cancel, file error): exit code 1. */
export class TransferError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TransferError';
  }
}

/** Default largest block `recv` accepts and `send` reads, bytes. */
export const DEFAULT_MAX_BLOCK_BYTES = 64 * 1024 * 1024;
const TICK_MS = 100;

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
  /** Progress bar to update (bytes of the block received so far). */
  progress?: ProgressBar;
  /** Called with the complete block before lingering (e.g. to write the file); a throw fails the run. */
  onBlock?: (result: ReceiveResult) => Promise<void> | void;
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

/** Watches the first slice to learn the block size, for the progress bar; otherwise a pass-through. */
class ObservedReceiver implements DrivablePeer<ChunkReceiverEvent> {
  blockBytes: number | undefined;
  sliceBytes = 0;
  firstAt: number | undefined;
  constructor(readonly inner: ChunkReceiver) {}
  handleDatagram(now: number, bytes: Uint8Array): void {
    if (this.blockBytes === undefined) {
      const r = decodeChunkPacket(bytes);
      if (r.ok && r.value.type === 'slice') {
        this.blockBytes = r.value.blockBytes;
        this.sliceBytes = r.value.sliceBytes;
        this.firstAt = now;
      }
    }
    this.inner.handleDatagram(now, bytes);
  }
  handleTimeout(now: number): void {
    this.inner.handleTimeout(now);
  }
  pollTransmit(now: number, out: Uint8Array): number | undefined {
    return this.inner.pollTransmit(now, out);
  }
  pollTimeout(): number | undefined {
    return this.inner.pollTimeout();
  }
  pollEvent(): ChunkReceiverEvent | undefined {
    return this.inner.pollEvent();
  }
}

/**
 * Receive one block on a UDP port: latch the first sender whose first datagram is a slice, wait for
 * the complete block, run `onBlock`, then linger (acking late duplicates) so the sender learns it is
 * done. Rejects with {@link TransferError} on timeouts, refusal or cancel.
 */
export async function receiveOne(o: ReceiveOptions): Promise<ReceiveResult> {
  const receiver = new ChunkReceiver({ maxBlockBytes: o.maxBytes ?? DEFAULT_MAX_BLOCK_BYTES });
  const peer = new ObservedReceiver(receiver);
  const driver = await UdpDriver.open<ChunkReceiverEvent>(peer, {
    port: o.port,
    host: o.host,
    acceptFirst: (bytes) => peekPacketType(bytes) === PacketType.Slice,
  });
  o.onListening?.(driver.local);
  const openedAt = driver.now();
  let ticker: NodeJS.Timeout | undefined;
  try {
    const outcome = await new Promise<{ data: Uint8Array; at: number } | TransferError>((resolve) => {
      driver.on('event', (ev) => {
        if (ev.type === 'block') resolve({ data: ev.data, at: driver.now() });
        else if (ev.type === 'refused') {
          resolve(new TransferError(`refused a block of ${ev.blockBytes} bytes: the limit (--max-bytes) is ${ev.limitBytes}`));
        } else if (ev.reason === 'sender') resolve(new TransferError('the sender cancelled the block'));
      });
      ticker = setInterval(() => {
        const now = driver.now();
        if (peer.firstAt === undefined) {
          if (o.waitMs !== undefined && now - openedAt > o.waitMs) {
            resolve(new TransferError(`no sender within ${fmtSecs(o.waitMs)} (--wait)`));
          }
          return;
        }
        if (now - driver.lastDatagramAt > o.idleTimeoutMs) {
          resolve(new TransferError(`the sender went silent for ${fmtSecs(o.idleTimeoutMs)} (--timeout); giving up`));
          return;
        }
        if (peer.blockBytes !== undefined && o.progress !== undefined) {
          const got = Math.min(peer.blockBytes, receiver.counters().slicesAccepted * peer.sliceBytes);
          const secs = (now - peer.firstAt) / 1000;
          o.progress.update(got, peer.blockBytes, secs > 0 ? got / secs : 0);
        }
      }, TICK_MS);
    });
    if (outcome instanceof TransferError) {
      // Let a refusal reach the sender before we go.
      if (peer.firstAt !== undefined) await linger(driver, 500, 3000);
      throw outcome;
    }
    const seconds = (outcome.at - (peer.firstAt ?? openedAt)) / 1000;
    o.progress?.update(outcome.data.length, outcome.data.length, outcome.data.length / Math.max(seconds, 1e-6));
    o.progress?.stop();
    const result: ReceiveResult = {
      data: outcome.data,
      seconds,
      datagramsSent: driver.counters().datagramsOut,
      from: driver.remote ?? { host: '?', port: 0 },
    };
    await o.onBlock?.(result);
    await linger(driver, o.lingerQuietMs ?? 1000, o.lingerMaxMs ?? 10_000);
    return result;
  } finally {
    if (ticker !== undefined) clearInterval(ticker);
    o.progress?.stop();
    await driver.close();
  }
}

/** Keep the driver answering until no datagram arrived for `quietMs`, at most `maxMs`. */
async function linger(driver: UdpDriver<unknown>, quietMs: number, maxMs: number): Promise<void> {
  const start = driver.now();
  await new Promise<void>((resolve) => {
    const t = setInterval(() => {
      const now = driver.now();
      if (now - Math.max(driver.lastDatagramAt, start) >= quietMs || now - start >= maxMs) {
        clearInterval(t);
        resolve();
      }
    }, Math.min(quietMs, 50));
  });
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
 * {@link TransferError} when the receiver stays silent for `idleTimeoutMs`, refuses, or cancels.
 */
export async function sendOne(data: Uint8Array, o: SendOptions): Promise<SendResult> {
  const sender = new ChunkSender(senderConfigFor(o, data.length));
  const id = sender.sendBlock(data);
  const driver = await UdpDriver.open<ChunkSenderEvent>(sender, { port: o.port, remote: o.to });
  const startedAt = driver.now();
  let ticker: NodeJS.Timeout | undefined;
  try {
    const outcome = await new Promise<number | TransferError>((resolve) => {
      driver.on('event', (ev) => {
        if (ev.id !== id) return;
        if (ev.type === 'delivered') resolve(driver.now());
        else if (ev.type === 'refused') {
          resolve(new TransferError(`the receiver refused the block: ${data.length} bytes is over its limit of ${ev.limitBytes}`));
        } else if (ev.type === 'cancelled') resolve(new TransferError(`the block was cancelled (${ev.reason})`));
        else {
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
        if (p.current !== undefined) o.progress?.update(p.current.ackedBytes, p.current.totalBytes, p.rateBytesPerSec);
      }, TICK_MS);
    });
    if (outcome instanceof TransferError) throw outcome;
    const seconds = (outcome - startedAt) / 1000;
    o.progress?.update(data.length, data.length, data.length / Math.max(seconds, 1e-6));
    const c = sender.counters();
    return {
      bytes: data.length,
      seconds,
      datagramsSent: c.datagramsSent,
      payloadDatagrams: sliceCountOf(data.length, sender.config.sliceBytes),
      resentSlices: c.slicesResent,
    };
  } finally {
    if (ticker !== undefined) clearInterval(ticker);
    o.progress?.stop();
    await driver.close();
  }
}

/** Report a failed transfer on stderr and give exit code 1; anything else is a bug and is rethrown. */
function failureExitCode(err: unknown): number {
  if (!(err instanceof TransferError)) throw err;
  process.stderr.write(`error: ${err.message}\n`);
  return 1;
}

function fmtSecs(ms: number): string {
  return `${+(ms / 1000).toFixed(3)} s`;
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
  try {
    await receiveOne({
      port: o.port,
      host: o.host,
      maxBytes: o.maxBytes,
      idleTimeoutMs: o.idleTimeoutMs,
      waitMs: o.waitMs,
      progress: new ProgressBar('recv', !o.quiet),
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
  }
}

/** `gamewire send`: send `file` as one block; resolves to the exit code. */
export async function runSend(o: {
  file: string;
  to: UdpAddress;
  rate?: number;
  adaptive: boolean;
  burst: boolean;
  port: number;
  idleTimeoutMs: number;
  quiet: boolean;
}): Promise<number> {
  let data: Uint8Array;
  try {
    data = await readFile(o.file);
  } catch (err) {
    process.stderr.write(`error: cannot read ${o.file}: ${(err as Error).message}\n`);
    return 1;
  }
  try {
    const r = await sendOne(data, {
      to: o.to,
      port: o.port,
      rate: o.rate,
      adaptive: o.adaptive,
      burst: o.burst,
      idleTimeoutMs: o.idleTimeoutMs,
      progress: new ProgressBar('send', !o.quiet),
      onNotice: (t) => process.stderr.write(`warning: ${t}\n`),
    });
    process.stdout.write(formatSummary({ verb: 'sent', ...r }) + '\n');
    return 0;
  } catch (err) {
    return failureExitCode(err);
  }
}
