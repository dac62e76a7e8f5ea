import { createHash } from 'node:crypto';
import { Kcp, type KcpOptions } from '../../src/kcp/kcp.js';
import type { LinkConfig } from '../../src/sim/config.js';
import { createLinkPair, type Link } from '../../src/sim/index.js';
import { nodeKcp } from './oracle.js';

// KCP's own benchmark (test.cpp + test.h, see shared research kcp.md §2.1) replayed on gamewire's
// simulator with a virtual clock, for our Kcp or for the C ikcp.c inside node-kcp: same seeded
// network, same clock, same loop order, so byte-identical implementations give identical figures.

/** test.cpp's three modes. */
export type TestCppMode = 'default' | 'normal' | 'fast';

/** Which implementation runs both ends. */
export type TestCppImpl = 'ours' | 'c';

/** One end's settings in ikcp_nodelay terms (+ minRto, which node-kcp cannot set). */
export interface TestCppEndSettings {
  nodelay: number;
  interval: number;
  resend: number;
  nc: number;
  /** rx_minrto override (test.cpp fast mode: 10 on kcp1); undefined = what nodelay sets. */
  minRto?: number;
}

/**
 * Settings of (kcp1, kcp2) per mode. `exact` = test.cpp's own (fast: kcp1 gets rx_minrto 10 and
 * fastresend 1). Without `exact`, fast mode keeps what node-kcp can express: fastresend 1 on kcp1
 * (through ikcp_nodelay's resend argument) but rx_minrto stays 30 (nodelay's value).
 */
export function testCppSettings(mode: TestCppMode, exact: boolean): [TestCppEndSettings, TestCppEndSettings] {
  if (mode === 'default') return [{ nodelay: 0, interval: 10, resend: 0, nc: 0 }, { nodelay: 0, interval: 10, resend: 0, nc: 0 }];
  if (mode === 'normal') return [{ nodelay: 0, interval: 10, resend: 0, nc: 1 }, { nodelay: 0, interval: 10, resend: 0, nc: 1 }];
  const kcp2 = { nodelay: 2, interval: 10, resend: 2, nc: 1 };
  return [{ nodelay: 2, interval: 10, resend: 1, nc: 1, ...(exact ? { minRto: 10 } : {}) }, kcp2];
}

/** Outcome of one run; times in ms. */
export interface TestCppResult {
  impl: TestCppImpl;
  mode: TestCppMode;
  exact: boolean;
  /** Echoes checked (test.cpp stops once `next > rounds` after a tick: at least rounds + 1). */
  count: number;
  /** Integer mean RTT, as test.cpp prints it. */
  avgRtt: number;
  maxRtt: number;
  /** Datagrams kcp1 handed to the network, lost ones included (test.cpp's `tx`). */
  tx: number;
  /** UDP payload bytes of those datagrams. */
  txBytes: number;
  /** Datagrams kcp2 handed to the network. */
  tx2: number;
  /** Messages kcp1 sent (test.cpp's `index` at the end). */
  messages: number;
  /** Virtual duration of the run. */
  durationMs: number;
  /** SHA-256 over every datagram either end sent (direction, time, bytes), in order. */
  trace: string;
  /** True if an echo came back out of order (test.cpp prints ERROR and stops). */
  orderError: boolean;
  /** Every RTT sample, in order. */
  rtts: number[];
}

interface End {
  send(b: Uint8Array): void;
  recv(): Uint8Array | undefined;
  input(b: Uint8Array): void;
  update(now: number): void;
  release(): void;
}

function ourEnd(settings: TestCppEndSettings, out: (d: Uint8Array) => void): End {
  const opts: KcpOptions = {
    sndWnd: 128, rcvWnd: 128, nodelay: settings.nodelay, interval: settings.interval, resend: settings.resend,
    nc: settings.nc !== 0,
  };
  if (settings.minRto !== undefined) opts.minRto = settings.minRto;
  const k = new Kcp(0x11223344, out, opts);
  const buf = new Uint8Array(10);
  return {
    send: (b) => void k.send(b),
    recv: () => {
      const n = k.recv(buf);
      return n < 0 ? undefined : buf.slice(0, n);
    },
    input: (b) => void k.input(b),
    update: (now) => k.update(now),
    release: () => {},
  };
}

function cEnd(settings: TestCppEndSettings, out: (d: Uint8Array) => void): End {
  if (settings.minRto !== undefined) throw new Error('node-kcp cannot set rx_minrto');
  const KCP = nodeKcp();
  const k = new KCP(0x11223344);
  k.output((d: Buffer) => out(d));
  k.wndsize(128, 128);
  k.nodelay(settings.nodelay, settings.interval, settings.resend, settings.nc);
  return {
    send: (b) => void k.send(Buffer.from(b.buffer, b.byteOffset, b.length)),
    recv: () => k.recv(),
    input: (b) => void k.input(Buffer.from(b.buffer, b.byteOffset, b.length)),
    update: (now) => k.update(now),
    release: () => k.release(),
  };
}

/** Options of `runTestCpp`. */
export interface TestCppOptions {
  /** Seed of the simulated link pair (preset 'kcp-test'). */
  seed: number;
  /** test.cpp runs until `next > rounds` (default 1000). */
  rounds?: number;
  /** Use test.cpp's exact settings (ours only in fast mode). Default false. */
  exact?: boolean;
  /** Virtual clock at the start, ms (default 1000). */
  startMs?: number;
  /** Give up after this much virtual time, ms (default 600 000). */
  maxMs?: number;
  /** Impairments of each direction: a preset name or a config (default 'kcp-test', test.cpp's own). */
  link?: Partial<LinkConfig> | string;
}

/** Run test.cpp's loop for `mode` with both ends implemented by `impl`. Deterministic. */
export function runTestCpp(impl: TestCppImpl, mode: TestCppMode, o: TestCppOptions): TestCppResult {
  const rounds = o.rounds ?? 1000;
  const exact = o.exact ?? false;
  const links = createLinkPair(o.link ?? 'kcp-test', o.seed);
  const p12: Link = links.aToB;
  const p21: Link = links.bToA;
  const hash = createHash('sha256');
  const start = o.startMs ?? 1000;
  let current = start;
  const stamp = new Uint8Array(5);
  const record = (dir: number, d: Uint8Array): void => {
    stamp[0] = dir;
    new DataView(stamp.buffer).setUint32(1, current >>> 0, true);
    hash.update(stamp);
    hash.update(d);
  };
  const [s1, s2] = testCppSettings(mode, exact);
  const make = impl === 'ours' ? ourEnd : cEnd;
  const kcp1 = make(s1, (d) => {
    record(1, d);
    p12.send(current, d);
  });
  const kcp2 = make(s2, (d) => {
    record(2, d);
    p21.send(current, d);
  });

  let slap = current + 20;
  let index = 0;
  let next = 0;
  let sumrtt = 0;
  let count = 0;
  let maxrtt = 0;
  let orderError = false;
  const rtts: number[] = [];
  const msg = new Uint8Array(8);
  const view = new DataView(msg.buffer);
  const maxMs = o.maxMs ?? 600_000;
  try {
    while (current - start < maxMs) {
      current++;
      kcp1.update(current);
      kcp2.update(current);
      for (; current >= slap; slap += 20) {
        view.setUint32(0, index++, true);
        view.setUint32(4, current >>> 0, true);
        kcp1.send(msg);
      }
      for (let d = p12.pollDeliver(current); d !== undefined; d = p12.pollDeliver(current)) kcp2.input(d);
      for (let d = p21.pollDeliver(current); d !== undefined; d = p21.pollDeliver(current)) kcp1.input(d);
      for (let m = kcp2.recv(); m !== undefined; m = kcp2.recv()) kcp2.send(m);
      for (let m = kcp1.recv(); m !== undefined; m = kcp1.recv()) {
        const dv = new DataView(m.buffer, m.byteOffset, m.length);
        const sn = dv.getUint32(0, true);
        const rtt = ((current >>> 0) - dv.getUint32(4, true)) >>> 0;
        if (sn !== next) {
          orderError = true;
          break;
        }
        next++;
        sumrtt += rtt;
        count++;
        rtts.push(rtt);
        if (rtt > maxrtt) maxrtt = rtt;
      }
      if (orderError || next > rounds) break;
    }
  } finally {
    kcp1.release();
    kcp2.release();
  }
  return {
    impl, mode, exact, count,
    avgRtt: count > 0 ? Math.trunc(sumrtt / count) : NaN,
    maxRtt: maxrtt,
    tx: p12.counters().sent,
    txBytes: p12.counters().bytesSent,
    tx2: p21.counters().sent,
    messages: index,
    durationMs: current - start,
    trace: hash.digest('hex'),
    orderError,
    rtts,
  };
}
