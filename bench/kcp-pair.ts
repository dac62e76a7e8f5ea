/**
 * The pair of bench:kcp part b, shared with bench:kcp-ab and bench:kcp-instr: A sends 1 KiB messages
 * to B through two KCP objects in one process, datagrams handed to the other side's input at once
 * (each lost with probability `loss`, seeded), both updated every 10 ms of virtual time.
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { NonCryptoRng } from '../src/core/rng.js';
import type { Kcp, KcpOptions } from '../src/kcp/kcp.js';

/** nodelay(1, 10, 2, 1), windows 128/128. */
export const PAIR = { nodelay: 1, interval: 10, resend: 2, nc: 1, snd: 128, rcv: 128 };

/** One end of the pair, whatever KCP implementation is behind it. */
export interface PairEnd {
  send(b: Uint8Array): void;
  recvCount(): number;
  input(b: Uint8Array): void;
  update(now: number): void;
  waitSnd(): number;
  release(): void;
}

/**
 * An end on gamewire's `Kcp` class `K`: this tree's or another checkout's (bench:kcp-ab, bench:kcp-instr). Passed in,
 * not imported, so that a bundle of the pair holds only the `Kcp` it measures.
 */
export function ourPairEnd(out: (d: Uint8Array) => void, K: typeof Kcp): PairEnd {
  const opts: KcpOptions = { nodelay: PAIR.nodelay, interval: PAIR.interval, resend: PAIR.resend, nc: true, sndWnd: PAIR.snd, rcvWnd: PAIR.rcv };
  const k = new K(1, out, opts);
  const buf = new Uint8Array(2048);
  return {
    send: (b) => void k.send(b),
    recvCount: () => {
      let n = 0;
      while (k.recv(buf) >= 0) n++;
      return n;
    },
    input: (b) => void k.input(b),
    update: (now) => k.update(now),
    waitSnd: () => k.waitSnd(),
    release: () => {},
  };
}

export interface PairRun {
  /** Messages per CPU second (`process.cpuUsage`, both ends). */
  msgsPerSec: number;
  cpuMs: number;
  /** Wall-clock time of the run, ms. */
  wallMs: number;
  datagrams: number;
  virtualMs: number;
}

/** A sends `messages` 1 KiB messages to B (ends made by `make`, given their output). */
export function pairRun(make: (out: (d: Uint8Array) => void) => PairEnd, messages: number, loss: number, seed: number, msg: Uint8Array = new Uint8Array(1024).fill(0x5a)): PairRun {
  const rng = new NonCryptoRng(seed);
  let datagrams = 0;
  let a: PairEnd | undefined;
  let b: PairEnd | undefined;
  a = make((d) => {
    datagrams++;
    if (!(loss > 0 && rng.nextFloat() < loss)) b!.input(d);
  });
  b = make((d) => {
    datagrams++;
    if (!(loss > 0 && rng.nextFloat() < loss)) a!.input(d);
  });
  let sent = 0;
  let received = 0;
  let now = 0;
  const c0 = process.cpuUsage();
  const w0 = performance.now();
  while (received < messages) {
    while (sent < messages && a.waitSnd() < 2 * PAIR.snd) {
      a.send(msg);
      sent++;
    }
    a.update(now);
    b.update(now);
    received += b.recvCount();
    now += PAIR.interval;
    if (now > 100_000_000) throw new Error('pair run stalled');
  }
  const wallMs = performance.now() - w0;
  const c = process.cpuUsage(c0);
  a.release();
  b.release();
  const cpuMs = (c.user + c.system) / 1000;
  return { msgsPerSec: messages / (cpuMs / 1000), cpuMs, wallMs, datagrams, virtualMs: now };
}

/** The command line of bench:kcp-ab and bench:kcp-instr, checked. */
export interface CheckoutArgs {
  /** The other checkout as given. */
  other: string;
  /** Its `src/kcp/index.ts`, absolute. */
  kcpEntry: string;
  /** Loss rates to run (default 0 and 0.1). */
  losses: number[];
}

/** `<other checkout> [loss ...]` from argv; a usage line and exit 2 when they are wrong. */
export function checkoutArgs(command: string): CheckoutArgs {
  const [other, ...lossArgs] = process.argv.slice(2);
  if (other === undefined) {
    console.error(`usage: npm run ${command} -- <other checkout> [loss ...]   (loss as a fraction, default 0 0.1)`);
    process.exit(2);
  }
  const losses = lossArgs.length > 0 ? lossArgs.map(Number) : [0, 0.1];
  if (losses.some((l) => !(l >= 0 && l < 1))) {
    console.error('loss must be a fraction in [0, 1)');
    process.exit(2);
  }
  const kcpEntry = path.resolve(other, 'src/kcp/index.ts');
  if (!existsSync(kcpEntry)) {
    console.error(`${kcpEntry} not found: give the root of another gamewire checkout`);
    process.exit(2);
  }
  return { other, kcpEntry, losses };
}
