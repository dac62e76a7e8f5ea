import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../../src/core/rng.js';
import { u32 } from '../../src/core/wrap.js';
import { Kcp, type KcpOptions } from '../../src/kcp/kcp.js';
import { readU32LE, writeU32LE } from '../../src/kcp/segment.js';
import { createLinkPair, type Link, type LinkConfig } from '../../src/sim/index.js';
import { nodeKcp } from './oracle.js';

// Our Kcp against our Kcp and against node-kcp (C), over the seeded simulator: test.cpp's echo
// (a message every 20 ms, the peer echoes it) on the `kcp-test` preset, and large messages over a
// lossy, reordering, duplicating link. Everything must arrive intact and in order.

type Impl = 'ours' | 'c';

interface End {
  send(d: Uint8Array): void;
  input(d: Uint8Array): void;
  update(now: number): void;
  /** All complete messages queued for the application. */
  drain(): Uint8Array[];
  release(): void;
}

interface Mode {
  name: string;
  nodelay: number;
  interval: number;
  resend: number;
  nc: number;
}

const MODES: Mode[] = [
  { name: 'default', nodelay: 0, interval: 10, resend: 0, nc: 0 },
  { name: 'normal', nodelay: 0, interval: 10, resend: 0, nc: 1 },
  { name: 'fast', nodelay: 2, interval: 10, resend: 2, nc: 1 },
];

function noop(): void {}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

function makeEnd(impl: Impl, conv: number, mode: Mode, wnd: number, out: (d: Uint8Array) => void): End {
  if (impl === 'ours') {
    const opts: KcpOptions = { nodelay: mode.nodelay, interval: mode.interval, resend: mode.resend, nc: mode.nc !== 0, sndWnd: wnd, rcvWnd: wnd };
    const k = new Kcp(conv, out, opts);
    return {
      send: (d) => expect(k.send(d)).toBe(0),
      input: (d) => expect(k.input(d)).toBe(0),
      update: (now) => k.update(now),
      drain: () => {
        const msgs: Uint8Array[] = [];
        for (let m = k.recvMessage(); m !== undefined; m = k.recvMessage()) msgs.push(m);
        return msgs;
      },
      release: noop,
    };
  }
  const KCP = nodeKcp();
  const c = new KCP(conv);
  c.output((d) => out(new Uint8Array(d)));
  c.wndsize(wnd, wnd);
  c.nodelay(mode.nodelay, mode.interval, mode.resend, mode.nc);
  return {
    send: (d) => expect(c.send(Buffer.from(d))).toBe(0),
    input: (d) => expect(c.input(Buffer.from(d))).toBe(0),
    update: (now) => c.update(now),
    drain: () => {
      const msgs: Uint8Array[] = [];
      for (let m = c.recv(); m !== undefined; m = c.recv()) msgs.push(new Uint8Array(m));
      return msgs;
    },
    release: () => {
      c.output(noop);
      c.release();
    },
  };
}

interface EchoResult {
  received: number;
  avgRtt: number;
  maxRtt: number;
  virtualMs: number;
}

/**
 * test.cpp's echo on the simulator: A sends message i (index, send time, padding) every 20 ms,
 * B echoes whatever it receives, A checks order and content. Clock ticks every ms from `start`.
 */
function echo(a: Impl, b: Impl, mode: Mode, link: Partial<LinkConfig> | string, p: { count: number; seed: number; start: number; maxPad: number }): EchoResult {
  const links = createLinkPair(link, p.seed);
  let t = 0;
  const toLink = (l: Link) => (d: Uint8Array): void => l.send(t, d);
  const A = makeEnd(a, 0x1234, mode, 128, toLink(links.aToB));
  const B = makeEnd(b, 0x1234, mode, 128, toLink(links.bToA));
  const rng = new NonCryptoRng(p.seed);
  const sent: Uint8Array[] = [];
  let received = 0;
  let rttSum = 0;
  let maxRtt = 0;
  try {
    for (; received < p.count && t < 600_000; t++) {
      if (sent.length < p.count && t >= sent.length * 20) {
        const m = rng.fill(new Uint8Array(8 + rng.nextInt(p.maxPad + 1)));
        writeU32LE(m, 0, sent.length);
        writeU32LE(m, 4, t);
        sent.push(m);
        A.send(m);
      }
      const now = u32(p.start + t);
      A.update(now);
      B.update(now);
      for (let d = links.aToB.pollDeliver(t); d !== undefined; d = links.aToB.pollDeliver(t)) B.input(d);
      for (let d = links.bToA.pollDeliver(t); d !== undefined; d = links.bToA.pollDeliver(t)) A.input(d);
      for (const m of B.drain()) B.send(m);
      for (const m of A.drain()) {
        const i = readU32LE(m, 0);
        expect(i).toBe(received);
        expect(sameBytes(m, sent[i]!)).toBe(true);
        const rtt = t - readU32LE(m, 4);
        rttSum += rtt;
        maxRtt = Math.max(maxRtt, rtt);
        received++;
      }
    }
  } finally {
    A.release();
    B.release();
  }
  return { received, avgRtt: received === 0 ? 0 : Math.round(rttSum / received), maxRtt, virtualMs: t };
}

describe('KCP interop over the simulator', () => {
  for (const [a, b] of [['ours', 'ours'], ['ours', 'c'], ['c', 'ours']] as const) {
    for (const mode of MODES) {
      it(`${a} ↔ ${b}, ${mode.name} mode, kcp-test link (5% shuffle-bag loss, 30–61 ms): every echo in order`, () => {
        const r = echo(a, b, mode, 'kcp-test', { count: 300, seed: 11, start: 2 ** 32 - 2000, maxPad: 0 });
        expect(r.received).toBe(300);
        // test.cpp's published bands: normal ≈ 156 ms average, fast ≈ 138; default mode lags by seconds.
        if (mode.name !== 'default') expect(r.avgRtt).toBeLessThan(250);
      });
    }
  }

  it('ours ↔ c with fragmented messages over 10% loss, reordering and duplication', () => {
    const link: Partial<LinkConfig> = { latencyMs: 20, jitterMs: 40, reorder: true, loss: 0.1, duplicate: 0.03 };
    const fast = MODES[2]!;
    for (const [a, b] of [['ours', 'c'], ['c', 'ours']] as const) {
      const r = echo(a, b, fast, link, { count: 150, seed: 12, start: 2 ** 31 - 1000, maxPad: 30_000 });
      expect(r.received).toBe(150);
    }
  });

  it('is the same trace whichever side runs C: ours ↔ c equals c ↔ c in delivery timing', () => {
    const mode = MODES[1]!;
    const mixed = echo('ours', 'c', mode, 'kcp-test', { count: 100, seed: 13, start: 0, maxPad: 2000 });
    const ours = echo('ours', 'ours', mode, 'kcp-test', { count: 100, seed: 13, start: 0, maxPad: 2000 });
    const c = echo('c', 'c', mode, 'kcp-test', { count: 100, seed: 13, start: 0, maxPad: 2000 });
    expect(mixed).toEqual(c);
    expect(ours).toEqual(c);
  });
});
