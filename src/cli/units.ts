/**
 * Parsers for human-written CLI quantities (rates, durations, sizes, addresses). Each throws a
 * `UsageError` with a message naming the flag, which the CLI turns into exit code 2.
 */

import { InvalidArgumentError, Option } from 'commander';
import { lookup } from 'node:dns/promises';

/** Wrap a units parser so commander reports its message as an invalid argument (exit 2). */
export function arg<T>(parse: (text: string) => T): (text: string) => T {
  return (text) => {
    try {
      return parse(text);
    } catch (err) {
      if (err instanceof UsageError) throw new InvalidArgumentError(err.message.replace(/^--[a-z-]+: /, ''));
      throw err;
    }
  };
}

/** Exit code of a run that started but failed (timeout, I/O error, refusal, corrupt data). */
export const EXIT_FAILURE = 1;
/** Exit code for bad arguments, whatever the command. */
export const EXIT_USAGE = 2;
/** Exit code after Ctrl-C (SIGINT) or SIGTERM stopped a transfer (128 + SIGINT, as shells do). */
export const EXIT_INTERRUPTED = 130;

/** The line after every usage error: where to read the usage of `command` (or of the whole CLI). */
export function usageHint(command?: string): string {
  return `(run 'gamewire ${command === undefined ? '' : `${command} `}--help' for usage)`;
}

/**
 * A duration flag whose help shows its default as written (`30s`), not as the ms it parses to.
 * A bare number is read in `bareUnit`.
 */
export function durationOption(flags: string, description: string, bareUnit: 'ms' | 's', def?: { ms: number; shown: string }): Option {
  const flag = flags.split(' ')[0]!;
  const o = new Option(flags, `${description} (bare number = ${bareUnit})`).argParser(arg((v) => parseDuration(v, flag, bareUnit)));
  return def === undefined ? o : o.default(def.ms, def.shown);
}

/** Resolve once `signal` aborts (at once if it already has). */
export function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}

/**
 * An AbortSignal fired by the first SIGINT or SIGTERM, so a command can stop cleanly (show the
 * cursor, tell the peer). A second signal exits at once with code 130. Call `dispose` when done.
 */
export function stopSignal(): { signal: AbortSignal; dispose: () => void } {
  const ac = new AbortController();
  const onSignal = (): void => {
    if (ac.signal.aborted) process.exit(EXIT_INTERRUPTED);
    ac.abort();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  return {
    signal: ac.signal,
    dispose: () => {
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    },
  };
}

/** Run `task` with a signal that SIGINT/SIGTERM abort (a second one exits at once), removing the handlers after. */
export async function untilStopped<T>(task: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const stop = stopSignal();
  try {
    return await task(stop.signal);
  } finally {
    stop.dispose();
  }
}

/** A bad command-line value; the CLI prints `message` and exits with code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

const BIT_UNITS: Record<string, number> = {
  bit: 1,
  kbit: 1e3,
  mbit: 1e6,
  gbit: 1e9,
  bps: 1,
  kbps: 1e3,
  mbps: 1e6,
  gbps: 1e9,
};

const PREFIX: Record<string, number> = { '': 1, k: 1e3, m: 1e6, g: 1e9, ki: 1024, mi: 1024 ** 2, gi: 1024 ** 3 };

const NUMBER = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-zA-Z/]*)\s*$/;

/**
 * Parse a rate into bytes per second. Bit units: `bit`, `kbit`, `mbit`, `gbit` (also `kbps`,
 * `Mbps`, `Mb/s`: bits). Byte units: `B/s`, `KB/s`, `MB/s`, `GB/s` (decimal), `KiB/s`, `MiB/s`,
 * `GiB/s` (binary). A bare number is refused, since bits and bytes are easy to confuse.
 */
export function parseRate(text: string, flag = '--rate'): number {
  const m = NUMBER.exec(text);
  if (m !== null && m[2] === '') {
    throw new UsageError(`${flag}: "${text}" needs a unit: bits per second (10mbit, 500kbit) or bytes per second (2MB/s)`);
  }
  if (m === null) {
    throw new UsageError(`${flag}: cannot read rate "${text}" (examples: 10mbit, 500kbit, 1.5mbit, 2MB/s)`);
  }
  const unit = m[2];
  let scale: number | undefined;
  if (unit.endsWith('/s') && unit.length >= 3) {
    // Only here does case matter: "MB/s" is megabytes, "Mb/s" megabits.
    const b = unit[unit.length - 3];
    const prefix = PREFIX[unit.slice(0, -3).toLowerCase()];
    if (prefix !== undefined && b === 'B') scale = prefix;
    else if (prefix !== undefined && b === 'b' && prefix % 1000 === 0) scale = prefix / 8;
    else if (prefix === 1 && b === 'b') scale = 1 / 8;
  } else {
    const bits = BIT_UNITS[unit.toLowerCase()];
    if (bits !== undefined) scale = bits / 8;
  }
  if (scale === undefined) {
    throw new UsageError(`${flag}: unknown rate unit "${unit}" (use bit, kbit, mbit, gbit, B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s)`);
  }
  const value = Number(m[1]) * scale;
  if (!(value > 0) || !Number.isFinite(value)) throw new UsageError(`${flag}: rate must be above zero, got "${text}"`);
  return value;
}

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000 };

/**
 * Parse a duration into milliseconds: `250ms`, `1.5s`, `2m`, `1h`. A bare number is read in
 * `bareUnit` (`ms` for delays, `s` for timeouts). Negative values are refused.
 */
export function parseDuration(text: string, flag: string, bareUnit: 'ms' | 's'): number {
  const m = NUMBER.exec(text);
  if (m === null) throw new UsageError(`${flag}: cannot read duration "${text}" (examples: 100ms, 30s, 2m)`);
  const unit = m[2] === '' ? bareUnit : m[2].toLowerCase();
  const scale = DURATION_UNITS[unit];
  if (scale === undefined) throw new UsageError(`${flag}: unknown duration unit "${m[2]}" (use ms, s, m, h)`);
  return Number(m[1]) * scale;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1,
  b: 1,
  kb: 1e3,
  mb: 1e6,
  gb: 1e9,
  kib: 1024,
  mib: 1024 ** 2,
  gib: 1024 ** 3,
  k: 1024,
  m: 1024 ** 2,
  g: 1024 ** 3,
};

/** Parse a byte count: `1048576`, `512KiB`, `64MiB`, `2MB` (decimal), `4M` (binary). Whole bytes only. */
export function parseSize(text: string, flag: string): number {
  const m = NUMBER.exec(text);
  const scale = m === null ? undefined : SIZE_UNITS[m[2].toLowerCase()];
  if (m === null || scale === undefined) {
    throw new UsageError(`${flag}: cannot read size "${text}" (examples: 1048576, 512KiB, 64MiB, 2MB)`);
  }
  const value = Number(m[1]) * scale;
  if (!Number.isSafeInteger(value) || value <= 0) throw new UsageError(`${flag}: size must be a whole number of bytes above zero, got "${text}"`);
  return value;
}

/**
 * A byte count as {@link parseSize} reads it (`1200`, `1MiB`), for a flag whose range (`range`, in
 * words) the command checks once it knows the other flags: an unreadable value names that range.
 */
export function parseSizeFor(text: string, flag: string, range: string): number {
  try {
    return parseSize(text, flag);
  } catch {
    throw new UsageError(`${flag}: expected a size in ${range}, got "${text}"`);
  }
}

/** A probability written as `0.1` or `10%`, in [0, 1]. */
export function parseProbability(text: string, flag: string): number {
  const pct = text.trim().endsWith('%');
  const n = Number(pct ? text.trim().slice(0, -1) : text);
  const p = pct ? n / 100 : n;
  if (text.trim() === '' || !Number.isFinite(p) || p < 0 || p > 1) {
    throw new UsageError(`${flag}: expected a probability in 0..1 or a percentage, got "${text}"`);
  }
  return p;
}

/** A local UDP (or TCP) port to listen on, 0..65535 (0 = let the OS pick a free one). */
export function parsePort(text: string, flag: string): number {
  const n = portNumber(text);
  if (n === undefined) throw new UsageError(`${flag}: expected a port in 0..65535 (0 = any free port), got "${text}"`);
  return n;
}

function portNumber(text: string): number | undefined {
  const n = Number(text);
  return /^\s*\d+\s*$/.test(text) && Number.isInteger(n) && n >= 0 && n <= 65535 ? n : undefined;
}

/** A non-negative integer (seeds, counts). */
export function parseUint(text: string, flag: string): number {
  const n = Number(text);
  if (!/^\s*\d+\s*$/.test(text) || !Number.isSafeInteger(n)) throw new UsageError(`${flag}: expected a whole number ≥ 0, got "${text}"`);
  return n;
}

/** A `HOST:PORT` pair (IPv4 address or name; `[v6]:port` is refused since the adapter is udp4). */
export interface HostPort {
  host: string;
  port: number;
}

/** Parse `HOST:PORT`, e.g. `127.0.0.1:9000` or `example.net:9000`: a port to send to, 1..65535. */
export function parseHostPort(text: string, flag: string): HostPort {
  const i = text.lastIndexOf(':');
  if (i <= 0 || text.startsWith('[')) throw new UsageError(`${flag}: expected HOST:PORT (e.g. 127.0.0.1:9000), got "${text}"`);
  const port = portNumber(text.slice(i + 1));
  if (port === undefined || port === 0) throw new UsageError(`${flag}: expected HOST:PORT with a port in 1..65535, got "${text}"`);
  return { host: text.slice(0, i), port };
}

/**
 * Resolve `to.host` to an IPv4 address (the sockets are udp4) once, at start-up. A name that does
 * not resolve rejects with a one-line `Error` naming `flag` (the CLI exits 1).
 */
export async function resolveHostPort(to: HostPort, flag: string): Promise<HostPort> {
  try {
    const r = await lookup(to.host, { family: 4 });
    return { host: r.address, port: to.port };
  } catch (err) {
    throw new Error(`cannot resolve ${flag} ${to.host}:${to.port}: ${(err as Error).message}`);
  }
}
