import { NonCryptoRng } from '../../src/core/rng.js';
import { u32, u32Add } from '../../src/core/wrap.js';
import { Kcp, KCP_MAX_FRAGMENTS } from '../../src/kcp/kcp.js';
import { KCP_OVERHEAD, readU32LE, writeU32LE } from '../../src/kcp/segment.js';
import { nodeKcp, type NodeKcp } from './oracle.js';

/** Settings of one endpoint, in node-kcp's terms (all reachable through its API). */
export interface EndpointConfig {
  mtu: number;
  sndWnd: number;
  rcvWnd: number;
  nodelay: number;
  interval: number;
  resend: number;
  nc: number;
  stream: number;
}

/** Thrown on the first observable difference between the implementations. */
export class Divergence extends Error {
  override name = 'Divergence';
}

/** One-line description of every segment in a datagram, for divergence reports. */
export function describeDatagram(b: Uint8Array): string {
  const parts: string[] = [];
  let off = 0;
  while (b.length - off >= KCP_OVERHEAD) {
    const len = readU32LE(b, off + 20);
    parts.push(
      `[cmd=${b[off + 4]} frg=${b[off + 5]} wnd=${b[off + 6]! | (b[off + 7]! << 8)} ts=${readU32LE(b, off + 8)} ` +
        `sn=${readU32LE(b, off + 12)} una=${readU32LE(b, off + 16)} len=${len}]`,
    );
    off += KCP_OVERHEAD + len;
    if (off > b.length) break;
  }
  return `${b.length}B ${parts.join(' ')}`;
}

function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && Buffer.compare(a, b) === 0;
}

function ignoreOutput(): void {}

function asBuffer(u: Uint8Array): Buffer {
  return Buffer.from(u.buffer, u.byteOffset, u.length);
}

/**
 * Rewrite the sn/una fields of every segment by `+delta` (mod 2^32), for comparing a run whose
 * sequence space starts elsewhere with one starting at 0. WASK/WINS carry the sn of the last ACK of
 * their flush, or 0 when there was none: a 0 there is left as is.
 */
export function shiftSequence(b: Uint8Array, delta: number): Uint8Array {
  const out = b.slice();
  let off = 0;
  while (out.length - off >= KCP_OVERHEAD) {
    const cmd = out[off + 4]!;
    const sn = readU32LE(out, off + 12);
    if (cmd === 81 || cmd === 82 || sn !== 0) writeU32LE(out, off + 12, u32Add(sn, delta));
    writeU32LE(out, off + 16, u32Add(readU32LE(out, off + 16), delta));
    off += KCP_OVERHEAD + readU32LE(out, off + 20);
  }
  return out;
}

/**
 * One logical endpoint run by our Kcp and node-kcp side by side (plus, optionally, a second Kcp
 * whose sequence numbers start at `shift`). Every operation is applied to all of them and every
 * observable result is compared: return codes, each output datagram, received bytes, peekSize,
 * waitSnd and check() deltas.
 */
export class Twin {
  readonly ours: Kcp;
  readonly c: NodeKcp;
  readonly shifted: Kcp | undefined;
  private oursOut: Uint8Array[] = [];
  private cOut: Uint8Array[] = [];
  private shiftedOut: Uint8Array[] = [];
  private released = false;
  /** Counts of compared events, for the test's summary and coverage checks. */
  readonly stats = newCoverage();

  constructor(
    readonly label: string,
    conv: number,
    readonly cfg: EndpointConfig,
    readonly shift: number | undefined,
  ) {
    const opts = {
      mtu: cfg.mtu, sndWnd: cfg.sndWnd, rcvWnd: cfg.rcvWnd, nodelay: cfg.nodelay, interval: cfg.interval,
      resend: cfg.resend, nc: cfg.nc !== 0, stream: cfg.stream !== 0,
    };
    this.ours = new Kcp(conv, (d) => this.oursOut.push(d.slice()), opts);
    const KCP = nodeKcp();
    this.c = new KCP(conv);
    this.c.output((d) => this.cOut.push(new Uint8Array(d)));
    this.expect('setmtu', this.c.setmtu(cfg.mtu), 0);
    this.c.wndsize(cfg.sndWnd, cfg.rcvWnd);
    this.c.nodelay(cfg.nodelay, cfg.interval, cfg.resend, cfg.nc);
    if (cfg.stream) this.c.stream(1);
    if (shift !== undefined) {
      this.shifted = new Kcp(conv, (d) => this.shiftedOut.push(d.slice()), opts);
      this.shifted._startSequenceAt(shift);
    }
  }

  release(): void {
    if (this.released) return;
    // The binding keeps a strong handle to its output callback, and ours closes over this Twin (and
    // so over the binding object): swap in a closure-free one, or neither is ever collected.
    this.c.output(ignoreOutput);
    this.c.release();
    this.released = true;
  }

  private fail(what: string): never {
    throw new Divergence(`${this.label}: ${what}`);
  }

  private expect(what: string | (() => string), ours: unknown, theirs: unknown): void {
    this.stats.calls++;
    if (ours !== theirs) this.fail(`${typeof what === 'string' ? what : what()}: ours=${String(ours)} c=${String(theirs)}`);
  }

  /** Compare and collect the datagrams produced since the last call; returns [ours, shifted] pairs. */
  takeOutputs(what: string): { plain: Uint8Array; shifted: Uint8Array | undefined }[] {
    const a = this.oursOut;
    const b = this.cOut;
    const s = this.shiftedOut;
    if (a.length === 0 && b.length === 0 && s.length === 0) return [];
    this.oursOut = [];
    this.cOut = [];
    this.shiftedOut = [];
    if (a.length !== b.length) {
      this.fail(`${what}: ours sent ${a.length} datagrams, c sent ${b.length}\n ours: ${a.map(describeDatagram).join('\n       ')}\n c:    ${b.map(describeDatagram).join('\n       ')}`);
    }
    if (this.shifted !== undefined && s.length !== a.length) this.fail(`${what}: shifted sent ${s.length} datagrams, ours ${a.length}`);
    const res: { plain: Uint8Array; shifted: Uint8Array | undefined }[] = [];
    for (let i = 0; i < a.length; i++) {
      this.stats.datagrams++;
      countCommands(this.stats, a[i]!);
      if (!bytesEqual(a[i]!, b[i]!)) {
        this.fail(`${what}: datagram ${i} differs\n ours: ${describeDatagram(a[i]!)}\n c:    ${describeDatagram(b[i]!)}`);
      }
      if (this.shifted !== undefined) {
        const back = shiftSequence(s[i]!, u32(-this.shift!));
        if (!bytesEqual(back, a[i]!)) {
          this.fail(`${what}: shifted datagram ${i} differs after unshifting\n ours:    ${describeDatagram(a[i]!)}\n shifted: ${describeDatagram(s[i]!)}`);
        }
      }
      res.push({ plain: a[i]!, shifted: this.shifted !== undefined ? s[i] : undefined });
    }
    return res;
  }

  send(data: Uint8Array): number {
    const r = this.ours.send(data);
    this.expect('send', r, this.c.send(asBuffer(data)));
    bump(this.stats.sendCodes, r < 0 ? r : 0);
    if (this.shifted !== undefined) this.expect(`shifted send(${data.length})`, this.shifted.send(data), r);
    return r;
  }

  input(data: Uint8Array, shiftedData: Uint8Array | undefined): number {
    const r = this.ours.input(data);
    this.expect(() => `input(${describeDatagram(data)})`, r, this.c.input(asBuffer(data)));
    bump(this.stats.inputCodes, r);
    if (this.shifted !== undefined) {
      if (shiftedData === undefined) this.fail('no shifted datagram to input');
      this.expect('shifted input', this.shifted.input(shiftedData), r);
    }
    return r;
  }

  update(now: number): void {
    this.ours.update(now);
    this.c.update(now);
    this.shifted?.update(now);
  }

  flush(): void {
    this.ours.flush();
    this.c.flush();
    this.shifted?.flush();
  }

  /** node-kcp's recv(): message mode one message; stream mode every queued segment, concatenated. */
  private recvLikeBinding(k: Kcp): Uint8Array | undefined {
    const parts: Uint8Array[] = [];
    let total = 0;
    for (;;) {
      const size = k.peekSize();
      if (size <= 0) break;
      const buf = new Uint8Array(size);
      const n = k.recv(buf);
      if (n <= 0) break;
      parts.push(buf.subarray(0, n));
      total += n;
      if (!k.stream) break;
    }
    if (total === 0) return undefined;
    if (parts.length === 1) return parts[0];
    const out = new Uint8Array(total);
    let off = 0;
    for (const p of parts) {
      out.set(p, off);
      off += p.length;
    }
    return out;
  }

  recv(): Uint8Array | undefined {
    const a = this.recvLikeBinding(this.ours);
    const cb = this.c.recv();
    const b = cb === undefined ? undefined : new Uint8Array(cb);
    this.stats.calls++;
    if ((a === undefined) !== (b === undefined) || (a !== undefined && !bytesEqual(a, b!))) {
      this.fail(`recv: ours=${a?.length ?? 'none'} bytes, c=${b?.length ?? 'none'} bytes`);
    }
    if (this.shifted !== undefined) {
      const s = this.recvLikeBinding(this.shifted);
      if ((a === undefined) !== (s === undefined) || (a !== undefined && !bytesEqual(a, s!))) this.fail('shifted recv differs');
    }
    return a;
  }

  /** Compare the cheap observables: peekSize, waitSnd, check delta at `now`. */
  observe(now: number): number {
    this.expect('peekSize', this.ours.peekSize(), this.c.peeksize());
    this.expect('waitSnd', this.ours.waitSnd(), this.c.waitsnd());
    const delta = u32(this.ours.check(now) - u32(now));
    this.expect('check delta', delta, this.c.check(now));
    if (this.shifted !== undefined) {
      this.expect('shifted peekSize', this.shifted.peekSize(), this.ours.peekSize());
      this.expect('shifted waitSnd', this.shifted.waitSnd(), this.ours.waitSnd());
      this.expect('shifted check', this.shifted.check(now), this.ours.check(now));
    }
    return delta;
  }

  reconfigureWindows(snd: number, rcv: number): void {
    this.ours.setWndSize(snd, rcv);
    this.c.wndsize(snd, rcv);
    this.shifted?.setWndSize(snd, rcv);
  }

  reconfigureNoDelay(nodelay: number, interval: number, resend: number, nc: number): void {
    this.ours.setNoDelay(nodelay, interval, resend, nc);
    this.c.nodelay(nodelay, interval, resend, nc);
    this.shifted?.setNoDelay(nodelay, interval, resend, nc);
  }

  /** Only growth: node-kcp's C buffer would overflow if queued segments outgrew a smaller MTU. */
  growMtu(mtu: number): void {
    const r = this.ours.setMtu(mtu);
    this.expect(`setmtu(${mtu})`, r, this.c.setmtu(mtu));
    this.shifted?.setMtu(mtu);
  }
}

/** What a run exercised; the test asserts every interesting path was reached by some seed. */
export interface Coverage {
  datagrams: number;
  calls: number;
  /** Output segments by cmd (81..84). */
  commands: Record<number, number>;
  inputCodes: Record<number, number>;
  sendCodes: Record<number, number>;
  retransmitTimeout: number;
  retransmitFast: number;
  deadLinks: number;
  /** Scenarios whose clock crossed a multiple of 2^31 (ts wrap or sign boundary). */
  tsWrapped: number;
  /** Scenarios whose shifted sequence numbers crossed a multiple of 2^31. */
  snWrapped: number;
  streamCases: number;
  zeroWindowSeen: number;
}

/** An empty tally. */
export function newCoverage(): Coverage {
  return {
    datagrams: 0, calls: 0, commands: {}, inputCodes: {}, sendCodes: {}, retransmitTimeout: 0, retransmitFast: 0,
    deadLinks: 0, tsWrapped: 0, snWrapped: 0, streamCases: 0, zeroWindowSeen: 0,
  };
}

function bump(m: Record<number, number>, k: number, by = 1): void {
  m[k] = (m[k] ?? 0) + by;
}

function countCommands(c: Coverage, b: Uint8Array): void {
  let off = 0;
  while (b.length - off >= KCP_OVERHEAD) {
    const cmd = b[off + 4]!;
    bump(c.commands, cmd);
    if (b[off + 6] === 0 && b[off + 7] === 0) c.zeroWindowSeen++;
    off += KCP_OVERHEAD + readU32LE(b, off + 20);
  }
}

/** Add `b` into `a`. */
export function mergeCoverage(a: Coverage, b: Coverage): void {
  for (const k of ['datagrams', 'calls', 'retransmitTimeout', 'retransmitFast', 'deadLinks', 'tsWrapped', 'snWrapped', 'streamCases', 'zeroWindowSeen'] as const) a[k] += b[k];
  for (const k of ['commands', 'inputCodes', 'sendCodes'] as const) for (const [x, v] of Object.entries(b[k])) bump(a[k], Number(x), v);
}

interface InFlight {
  at: number;
  order: number;
  to: 0 | 1;
  plain: Uint8Array;
  shifted: Uint8Array | undefined;
}

/** Parameters of one randomised scenario, drawn from its seed (kept for failure reports). */
export interface Scenario {
  seed: number;
  conv: number;
  start: number;
  cfg: [EndpointConfig, EndpointConfig];
  loss: number;
  dup: number;
  latency: [number, number];
  steps: number;
  bidirectional: boolean;
  sendChance: number;
  garbage: number;
  shift: number | undefined;
  stallFrom: number;
  stallTo: number;
  /** Steps during which the network drops everything and the clock leaps (dead-link territory). */
  outageFrom: number;
  outageTo: number;
  bigJumps: number;
}

// Payloads are random windows of one pool: distinct enough to catch misordering, no per-send fill.
const PAYLOAD = new NonCryptoRng(0xc0ffee).fill(new Uint8Array(256 * 1024));

const MTUS = [50, 64, 100, 200, 576, 1200, 1400, 1500];
const INTERVALS = [1, 10, 20, 40, 100, 200];

function pick<T>(rng: NonCryptoRng, xs: readonly T[]): T {
  return xs[rng.nextInt(xs.length)]!;
}

function drawConfig(rng: NonCryptoRng, base?: EndpointConfig): EndpointConfig {
  if (base !== undefined && rng.chance(0.6)) return { ...base };
  const mode = rng.nextInt(4);
  const [nodelay, interval, resend, nc] =
    mode === 0 ? [0, 100, 0, 0] : mode === 1 ? [0, 40, 0, 0] : mode === 2 ? [1, 10, 2, 1] :
      [rng.nextInt(3), pick(rng, INTERVALS), rng.nextInt(4), rng.nextInt(2)];
  return {
    mtu: rng.chance(0.2) ? rng.nextRange(50, 1500) : pick(rng, MTUS),
    sndWnd: pick(rng, [1, 2, 4, 8, 32, 64, 128, 256]),
    rcvWnd: pick(rng, [1, 32, 128, 200, 256]),
    nodelay, interval, resend, nc,
    stream: base !== undefined ? base.stream : rng.chance(0.25) ? 1 : 0,
  };
}

/** Draw scenario `seed`. */
export function drawScenario(seed: number): Scenario {
  const rng = new NonCryptoRng(seed);
  const a = drawConfig(rng);
  const b = drawConfig(rng, a);
  const startKind = rng.nextInt(5);
  const start =
    startKind === 0 ? 0 : startKind === 1 ? rng.nextU32() : startKind === 2 ? 2 ** 31 - rng.nextRange(1, 3000) :
      2 ** 32 - rng.nextRange(1, 3000);
  const garbage = rng.chance(0.3) ? rng.nextFloat() * 0.15 : 0;
  const shiftKind = rng.nextInt(3);
  const shift = garbage > 0 ? undefined
    : shiftKind === 0 ? undefined : shiftKind === 1 ? 2 ** 32 - rng.nextRange(1, 200) : 2 ** 31 - rng.nextRange(1, 200);
  const stall = rng.chance(0.25);
  const steps = rng.nextRange(60, 260);
  const stallFrom = stall ? rng.nextInt(steps) : -1;
  const outage = rng.chance(0.1);
  const outageFrom = outage ? rng.nextInt(steps) : -1;
  return {
    seed,
    conv: rng.chance(0.2) ? pick(rng, [0, 1, 0xffffffff]) : rng.nextU32(),
    start,
    cfg: [a, b],
    loss: rng.chance(0.3) ? 0 : rng.nextFloat() * 0.3,
    dup: rng.chance(0.5) ? 0 : rng.nextFloat() * 0.1,
    latency: (() => {
      const lo = rng.nextRange(0, 80);
      return [lo, lo + rng.nextRange(0, 120)] as [number, number];
    })(),
    steps,
    bidirectional: rng.chance(0.4),
    sendChance: 0.1 + rng.nextFloat() * 0.8,
    garbage,
    shift,
    stallFrom,
    stallTo: stall ? stallFrom + rng.nextRange(5, 120) : -1,
    outageFrom,
    outageTo: outage ? outageFrom + rng.nextRange(10, 60) : -1,
    bigJumps: rng.chance(0.3) ? 0.03 : 0.003,
  };
}

function messageSize(rng: NonCryptoRng, k: Kcp): number {
  const mss = k.mss;
  const r = rng.nextFloat();
  if (r < 0.6) return rng.nextRange(1, 64);
  if (r < 0.85) return rng.nextRange(1, mss * 3);
  if (r < 0.97) return rng.nextRange(1, Math.min(KCP_MAX_FRAGMENTS * mss, 40000));
  return pick(rng, [KCP_MAX_FRAGMENTS * mss, KCP_MAX_FRAGMENTS * mss + 1, 128 * mss, 128 * mss + rng.nextRange(1, 5000)]);
}

/** A mangled copy of a real datagram, or random bytes with the right conv. */
function mangle(rng: NonCryptoRng, src: Uint8Array, conv: number): Uint8Array {
  const kind = rng.nextInt(9);
  const d = src.slice();
  switch (kind) {
    case 0: // truncate anywhere (≥ 1 byte: node-kcp ignores empty input)
      return d.subarray(0, rng.nextRange(1, Math.max(1, d.length - 1)));
    case 1: // flip bits
      for (let i = rng.nextRange(1, 4); i > 0; i--) d[rng.nextInt(d.length)]! ^= 1 << rng.nextInt(8);
      return d;
    case 2: // wrong conv
      writeU32LE(d, 0, u32(conv + rng.nextRange(1, 0xffff)));
      return d;
    case 3: // unknown command
      d[4] = pick(rng, [0, 80, 85, 255]);
      return d;
    case 4: // len too large or off by a little
      writeU32LE(d, 20, pick(rng, [readU32LE(d, 20) + 1, 0x7fffffff, 0x80000000, 0xffffffff, readU32LE(d, 20) + 25]));
      return d;
    case 5: { // trailing bytes shorter than a header
      const t = new Uint8Array(d.length + rng.nextRange(1, 23));
      t.set(d);
      return t;
    }
    case 6: { // random fields, valid conv
      const t = rng.fill(new Uint8Array(KCP_OVERHEAD + rng.nextInt(40)));
      writeU32LE(t, 0, conv);
      t[4] = 81 + rng.nextInt(4);
      writeU32LE(t, 20, t.length - KCP_OVERHEAD);
      return t;
    }
    case 7: { // plausible segment near the live sequence numbers: shift sn/una/ts a little
      if (d.length < KCP_OVERHEAD) return d;
      writeU32LE(d, 12, u32(readU32LE(d, 12) + rng.nextRange(-3, 300)));
      writeU32LE(d, 16, u32(readU32LE(d, 16) + rng.nextRange(-3, 40)));
      writeU32LE(d, 8, u32(readU32LE(d, 8) + rng.nextRange(-5000, 5000)));
      return d;
    }
    default: { // two datagrams glued together, second one cut
      const t = new Uint8Array(d.length * 2 - rng.nextInt(d.length));
      t.set(d);
      t.set(d.subarray(0, t.length - d.length), d.length);
      return t;
    }
  }
}

/** Summary of one scenario run. */
export interface RunSummary {
  coverage: Coverage;
  sentBytes: number;
  receivedBytes: number;
  virtualMs: number;
}

/**
 * Run scenario `s` in lockstep on our Kcp and node-kcp (and the sequence-shifted Kcp if any).
 * Throws `Divergence` on the first difference; the message names the seed and step.
 */
export function runScenario(s: Scenario): RunSummary {
  const rng = new NonCryptoRng(s.seed ^ 0x5bd1e995);
  const ends = [
    new Twin('A', s.conv, s.cfg[0], s.shift),
    new Twin('B', s.conv, s.cfg[1], s.shift),
  ] as const;
  const flight: InFlight[] = [];
  const history: Uint8Array[] = [];
  let order = 0;
  let elapsed = 0;
  let sentBytes = 0;
  let receivedBytes = 0;
  let step = 0;
  const now = (): number => u32(s.start + elapsed);

  const ship = (from: 0 | 1, what: string): void => {
    for (const o of ends[from].takeOutputs(what)) {
      if (history.length < 64) history.push(o.plain);
      else history[rng.nextInt(64)] = o.plain;
      if (rng.chance(s.loss) || (step >= s.outageFrom && step < s.outageTo)) continue;
      const copies = rng.chance(s.dup) ? 2 : 1;
      for (let i = 0; i < copies; i++) {
        const f: InFlight = { at: elapsed + rng.nextRange(s.latency[0], s.latency[1]), order: order++, to: from === 0 ? 1 : 0, plain: o.plain, shifted: o.shifted };
        let j = flight.length;
        while (j > 0 && flight[j - 1]!.at > f.at) j--;
        flight.splice(j, 0, f);
      }
    }
  };

  try {
    for (step = 0; step < s.steps; step++) {
      // 1. time: a tick, a jump to the next check(), a long jump, or (rarely) backwards.
      const r = rng.nextFloat();
      const stalling = step >= s.stallFrom && step < s.stallTo;
      const outage = step >= s.outageFrom && step < s.outageTo;
      if (outage) elapsed += rng.nextRange(50, 2 ** rng.nextRange(8, 24));
      else if (r < s.bigJumps || (stalling && r < 0.25)) elapsed += rng.nextRange(500, stalling ? 4000 : 16000);
      else if (r < s.bigJumps + 0.002) elapsed -= rng.nextRange(1, 12000);
      else if (r < 0.35) elapsed += Math.max(1, Math.min(ends[0].observe(now()), ends[1].observe(now())));
      else elapsed += rng.nextRange(1, Math.max(2, Math.round(s.cfg[0].interval * 1.5)));

      // 2. deliver what is due, in arrival order.
      while (flight.length > 0 && flight[0]!.at <= elapsed) {
        const f = flight.shift()!;
        ends[f.to].input(f.plain, f.shifted);
        if (rng.chance(0.05)) {
          ends[f.to].flush();
          ship(f.to, 'flush after input');
        }
      }

      // 3. garbage and mangled traffic.
      if (s.garbage > 0 && history.length > 0 && rng.chance(s.garbage)) {
        const to = rng.nextInt(2) as 0 | 1;
        ends[to].input(mangle(rng, pick(rng, history), s.conv), undefined);
      }

      // 4. application sends.
      for (const side of [0, 1] as const) {
        if (side === 1 && !s.bidirectional) continue;
        const k = ends[side].ours;
        while (k.waitSnd() < 2 * k.sndWnd + 300 && rng.chance(s.sendChance * (side === 0 ? 1 : 0.5))) {
          const size = messageSize(rng, k);
          const off = rng.nextInt(PAYLOAD.length - size + 1);
          const data = PAYLOAD.subarray(off, off + size);
          const rc = ends[side].send(data);
          if (rc >= 0) sentBytes += data.length;
          if (rng.chance(0.3)) break;
        }
        if (rng.chance(0.03)) {
          ends[side].flush();
          ship(side, 'flush after send');
        }
      }

      // 5. rare reconfiguration.
      if (rng.chance(0.01)) {
        const side = rng.nextInt(2) as 0 | 1;
        const what = rng.nextInt(3);
        if (what === 0) ends[side].reconfigureWindows(pick(rng, [-1, 0, 1, 16, 64, 300]), pick(rng, [-1, 0, 64, 128, 300]));
        else if (what === 1) ends[side].reconfigureNoDelay(rng.nextRange(-1, 2), pick(rng, [-1, 5, 10, 30, 6000]), rng.nextRange(-1, 3), rng.nextRange(-1, 1));
        else ends[side].growMtu(Math.max(ends[side].ours.mtu, rng.nextRange(1, 1600)));
      }

      // 6. clocks.
      for (const side of [0, 1] as const) {
        ends[side].update(now());
        ship(side, 'update');
      }

      // 7. the application reads (unless B is stalled, which closes its window).
      for (const side of [0, 1] as const) {
        const stalled = side === 1 && step >= s.stallFrom && step < s.stallTo;
        if (stalled) continue;
        for (let i = 0; i < 4; i++) {
          const got = ends[side].recv();
          if (got === undefined) break;
          receivedBytes += got.length;
        }
      }
      ends[0].observe(now());
      ends[1].observe(now());
    }
  } catch (e) {
    if (e instanceof Divergence) {
      e.message = `seed ${s.seed} step ${step} (elapsed ${elapsed} ms, now ${now()}): ${e.message}\n scenario: ${JSON.stringify(s)}`;
    }
    throw e;
  } finally {
    ends[0].release();
    ends[1].release();
  }
  const coverage = newCoverage();
  for (const e of ends) {
    mergeCoverage(coverage, e.stats);
    coverage.retransmitTimeout += e.ours.counters().retransmitTimeout;
    coverage.retransmitFast += e.ours.counters().retransmitFast;
    if (e.ours.isDeadLink) coverage.deadLinks++;
  }
  // Crossing 2^31 matters for code that mixes signed and unsigned; crossing 2^32 is the wrap proper.
  const crossed = (from: number, n: number): boolean => Math.floor((from + n) / 2 ** 31) !== Math.floor(from / 2 ** 31);
  if (crossed(s.start, elapsed)) coverage.tsWrapped++;
  if (s.shift !== undefined && crossed(s.shift, Math.max(ends[0].ours.sndNxt, ends[1].ours.sndNxt))) coverage.snWrapped++;
  if (s.cfg[0].stream) coverage.streamCases++;
  return {
    coverage,
    sentBytes,
    receivedBytes,
    virtualMs: elapsed,
  };
}
