import { performance } from 'node:perf_hooks';

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

/** `2.5 MiB`, `512 KiB`, `900 B` (binary units). */
export function formatBytes(n: number): string {
  if (n >= 1024 ** 3) return `${(n / 1024 ** 3).toFixed(2)} GiB`;
  if (n >= 1024 ** 2) return `${(n / 1024 ** 2).toFixed(1)} MiB`;
  if (n >= 1024) return `${(n / 1024).toFixed(0)} KiB`;
  return `${n} B`;
}

/** `eta 42s`, `eta 3m05s`, or `eta --` when no estimate is honest (no recent progress). */
export function formatEta(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms) || ms < 0) return 'eta --';
  const s = Math.ceil(ms / 1000);
  if (s < 60) return `eta ${s}s`;
  if (s < 3600) return `eta ${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `eta ${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/** The stream a {@link ProgressBar} draws on (process.stderr, or a fake in tests). */
export interface BarStream {
  write(text: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const HIDE_CURSOR = '\x1b[?25l';
const SHOW_CURSOR = '\x1b[?25h';
const CLEAR_LINE = '\r\x1b[K';
const REDRAW_MS = 100;
/** Rate window: samples at least this far apart… */
const SAMPLE_MS = 250;
/** …kept for about this long. */
const WINDOW_MS = 2000;
/** No new bytes for this long: the rate shows 0 and the ETA `--`. */
const STALE_MS = 2000;
const BAR_WIDTH = 24;

/**
 * A byte-count progress bar on one terminal line, with the rate and ETA measured over the last
 * ~2 s of its own updates. Draws only when enabled and the stream is a TTY; `log` prints a line
 * above the bar either way. The cursor is hidden while drawing; `stop()` or, if the process exits
 * first, an `exit` hook ends the bar's line and shows the cursor again. After `stop()` nothing is
 * drawn again.
 */
export class ProgressBar {
  private readonly draws: boolean;
  private done = 0;
  private total = 0;
  private drawn = false;
  private stopped = false;
  private lastDrawAt = -Infinity;
  private lastChangeAt: number;
  private readonly samplesT: number[] = [];
  private readonly samplesB: number[] = [];
  /** At process exit before `stop()` (a second Ctrl-C exits at once): end the bar's line, show the cursor. */
  private readonly showCursor = (): void => {
    this.stream.write(`\n${SHOW_CURSOR}`);
  };

  /**
   * @param label  word before the bar (`send`, `recv`).
   * @param enabled  false for `--quiet`.
   * @param stream  where to draw (default stderr).
   * @param clock  monotonic ms (default `performance.now`).
   */
  constructor(
    private readonly label: string,
    enabled: boolean,
    private readonly stream: BarStream = process.stderr,
    private readonly clock: () => number = () => performance.now(),
  ) {
    this.draws = enabled && stream.isTTY === true;
    this.lastChangeAt = clock();
  }

  /** Record that `done` of `total` bytes are through; redraws at most every 100 ms. */
  update(done: number, total: number): void {
    if (this.stopped) return;
    const now = this.clock();
    if (done !== this.done) this.lastChangeAt = now;
    this.done = done;
    this.total = total;
    const n = this.samplesT.length;
    if (n === 0 || now - this.samplesT[n - 1]! >= SAMPLE_MS) {
      this.samplesT.push(now);
      this.samplesB.push(done);
      while (this.samplesT.length > 2 && now - this.samplesT[1]! >= WINDOW_MS) {
        this.samplesT.shift();
        this.samplesB.shift();
      }
    }
    if (this.draws && (now - this.lastDrawAt >= REDRAW_MS || done === total)) this.draw(now);
  }

  /** Bytes/s over the last ~2 s; 0 when nothing moved for 2 s. */
  rate(): number {
    const now = this.clock();
    if (now - this.lastChangeAt >= STALE_MS || this.samplesT.length === 0) return 0;
    const dt = now - this.samplesT[0]!;
    return dt > 0 ? ((this.done - this.samplesB[0]!) * 1000) / dt : 0;
  }

  /** The line the bar shows now (also what tests check). */
  line(): string {
    const pct = this.total > 0 ? Math.min(1, this.done / this.total) : 0;
    const full = Math.round(pct * BAR_WIDTH);
    const rate = this.rate();
    const eta = this.done >= this.total && this.total > 0 ? 0 : rate > 0 ? ((this.total - this.done) * 1000) / rate : undefined;
    return (
      `${this.label} [${'='.repeat(full)}${'-'.repeat(BAR_WIDTH - full)}] ${(pct * 100).toFixed(0).padStart(3)}% | ` +
      `${formatBytes(this.done)}/${formatBytes(this.total)} | ${formatRate(rate)} | ${formatEta(eta)}`
    );
  }

  /** Print `text` on its own line; the bar (if drawn) moves below it. */
  log(text: string): void {
    if (!this.drawn || this.stopped) {
      this.stream.write(`${text}\n`);
      return;
    }
    this.stream.write(`${CLEAR_LINE}${text}\n`);
    this.draw(this.clock());
  }

  /** Draw the last frame, end its line and show the cursor. Later calls to `update` do nothing. */
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (!this.drawn) return;
    this.draw(this.clock());
    this.stream.write(`\n${SHOW_CURSOR}`);
    process.off('exit', this.showCursor);
  }

  private draw(now: number): void {
    if (!this.drawn) {
      this.drawn = true;
      this.stream.write(HIDE_CURSOR);
      process.once('exit', this.showCursor);
    }
    this.lastDrawAt = now;
    let text = this.line();
    // A wrapped line cannot be redrawn with \r, so never write the last column.
    const cols = this.stream.columns;
    if (cols !== undefined && cols > 1 && text.length >= cols) text = text.slice(0, cols - 1);
    this.stream.write(`${CLEAR_LINE}${text}`);
  }
}
