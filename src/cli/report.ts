import cliProgress from 'cli-progress';

/** Figures of one finished transfer, for the one-line summary. */
export interface TransferSummary {
  /** `sent` or `received`. */
  verb: 'sent' | 'received';
  /** Block size, bytes. */
  bytes: number;
  /** Wall time from first datagram (or start) to completion, seconds. */
  seconds: number;
  /** Datagrams this side put on the wire (slices + resends, or acks). */
  datagramsSent: number;
  /** Slice datagrams the block needs when nothing is lost (sender only). */
  payloadDatagrams?: number;
  /** Slices sent more than once (sender only). */
  resentSlices?: number;
}

/** Format bytes/s as `12.3 MB/s (98.4 Mbit/s)` (decimal units). */
export function formatRate(bytesPerSec: number): string {
  return `${(bytesPerSec / 1e6).toFixed(2)} MB/s (${((bytesPerSec * 8) / 1e6).toFixed(2)} Mbit/s)`;
}

/**
 * One summary line, e.g. `sent 4194304 bytes in 3.21 s, goodput 1.31 MB/s (10.45 Mbit/s),
 * 1.08 datagrams per payload datagram, 212 slices resent`.
 */
export function formatSummary(s: TransferSummary): string {
  const secs = Math.max(s.seconds, 1e-6);
  let line = `${s.verb} ${s.bytes} bytes in ${s.seconds.toFixed(2)} s, goodput ${formatRate(s.bytes / secs)}`;
  if (s.payloadDatagrams !== undefined && s.payloadDatagrams > 0) {
    line += `, ${(s.datagramsSent / s.payloadDatagrams).toFixed(2)} datagrams per payload datagram`;
  } else {
    line += `, ${s.datagramsSent} datagrams sent`;
  }
  if (s.resentSlices !== undefined) line += `, ${s.resentSlices} slices resent`;
  return line;
}

/** A byte-count progress bar on stderr; a no-op when stderr is not a TTY or `enabled` is false. */
export class ProgressBar {
  private readonly bar: cliProgress.SingleBar | undefined;
  private started = false;

  constructor(label: string, enabled: boolean) {
    this.bar =
      enabled && process.stderr.isTTY === true
        ? new cliProgress.SingleBar(
            {
              stream: process.stderr,
              format: `${label} [{bar}] {percentage}% | {value}/{total} bytes | {speed} | eta {eta_formatted}`,
              hideCursor: true,
              clearOnComplete: false,
              fps: 10,
            },
            cliProgress.Presets.shades_classic,
          )
        : undefined;
  }

  /** Show `done` of `total` bytes; `bytesPerSec` is the rate to display. */
  update(done: number, total: number, bytesPerSec: number): void {
    if (this.bar === undefined) return;
    const speed = formatRate(bytesPerSec);
    if (!this.started) {
      this.started = true;
      this.bar.start(total, done, { speed });
      return;
    }
    this.bar.setTotal(total);
    this.bar.update(done, { speed });
  }

  /** Remove the bar's timer; the last frame stays on screen. */
  stop(): void {
    if (this.bar !== undefined && this.started) this.bar.stop();
    this.started = false;
  }
}
