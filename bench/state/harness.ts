/**
 * The harness every system of `npm run bench:state` runs in: a server and a client `ConnectionHost`
 * (unsecured framing) on a seeded `World` (gamewire/testing), a fixed server tick on the world's
 * virtual clock, and the measurements: the server's UDP payload bytes to the client in each tick's
 * window (every datagram it sends: every lane, framing and acks included, lost ones too; counted by the
 * world as it transmits, so it depends on nothing in the connection) and the state age of every tick.
 *
 * A system under test (`StateSystem`) only encodes, sends, receives and decodes; it tells the harness
 * which tick the client holds (`clientHolds`), and the harness turns that into ages.
 */
import type { Connection, ConnectionEvent } from '../../src/connection/connection.js';
import { ConnectionHost } from '../../src/connection/host.js';
import type { ConnectionOptions, LaneConfig } from '../../src/connection/options.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import type { LinkConfig } from '../../src/sim/config.js';
import { World } from '../../src/sim/world.js';
import type { Trace } from './trace.js';

/** The server's address on the world. */
export const SERVER = 'server';
/** The client's address on the world. */
export const CLIENT = 'client';

/**
 * What the harness offers a system while it runs. Times are the world's virtual ms.
 */
export interface HarnessContext {
  /** The world (read its clock, schedule with `at`, reconfigure links). */
  readonly world: World;
  /** The server's tick interval (ms). */
  readonly tickMs: number;
  /** Trace ticks after the join (tick 0). */
  readonly ticks: number;
  /** Virtual time at which the server runs tick `tick` (0 = the join). Valid once ticking started. */
  tickTime(tick: number): number;
  /**
   * The client now (at `world.now`) holds the server's state of tick `tick` (or of a later tick, which
   * includes every earlier tick's changes). Every tick up to `tick` not held before gets its age:
   * `now − tickTime(k)`. Ticks held out of order are fine: an older tick reported later changes nothing.
   */
  clientHolds(tick: number): void;
  /**
   * Record one sample of a named figure, kept per run in `HarnessRun.samples`. The bench's tables read
   * `messageBytes` (state bytes handed to the connection for the client in one tick: a patch, a
   * snapshot) and `encodeUs` (server time to encode them for one client, µs); others go to the raw results.
   */
  sample(name: string, value: number): void;
}

/**
 * A system under test: one way of carrying a game's state from the server to the client over the
 * harness's connection. This is the plug-in shape of bench:state: the colyseus rows implement it in
 * bench/state/colyseus.ts, and the gamewire state layer (StateServer on the server's connection,
 * StateClient on the client's) plugs in the same way. The harness owns the connection, the clock and
 * the counting; the system owns the encoding and tells the harness what the client holds.
 */
export interface StateSystem {
  /** The row label. */
  readonly name: string;
  /** The lanes the system needs on the connection (both ends use the same list). */
  readonly lanes: readonly LaneConfig[];
  /**
   * Server tick `tick` at `now`: tick 0 is the join (send whatever a new client needs: the full
   * state), ticks 1..`ticks` apply the trace's tick and send. `connection` is the server's end.
   */
  serverTick(now: number, tick: number, connection: Connection, ctx: HarnessContext): void;
  /** An event of the server's host (deliveries on a notify lane, the client's messages). */
  serverEvent?(now: number, event: ConnectionEvent, ctx: HarnessContext): void;
  /** An event of the client's host (messages: decode them, then `ctx.clientHolds`). */
  clientEvent(now: number, event: ConnectionEvent, ctx: HarnessContext): void;
  /** A client frame (when `clientFrameHz` is set): sample, send inputs. `connection` is the client's end. */
  clientFrame?(now: number, frame: number, connection: Connection, ctx: HarnessContext): void;
  /**
   * After the run: check that the client's state equals the server's and the trace's (within the
   * system's precision), and throw an `Error` saying what differs if not. Returns extra figures for
   * the raw results.
   */
  finish(ctx: HarnessContext): Record<string, unknown> | void;
  /**
   * The trace tick of the newest state of trace entity `traceId` the client holds now (−1: none), for
   * figures per entity (`EntityLag`). A system that only ever holds whole ticks answers its newest tick.
   */
  heldTickOf?(traceId: number): number;
}

/** The link between the two hosts. Each direction gets the same settings and its own seeded stream. */
export interface HarnessLink {
  /** Mean one-way delay (ms, default 50). */
  oneWayMs?: number;
  /** One-way delay drawn uniformly in oneWayMs ± jitterMs (ms, default 0); datagrams may reorder. */
  jitterMs?: number;
  /** Independent loss probability per datagram, per direction (0..1, default 0). */
  loss?: number;
  /** Any other link settings, for both directions (a rate, a queue, bursty loss). */
  link?: Partial<LinkConfig>;
}

/** Options of `runHarness`. */
export interface HarnessOptions extends HarnessLink {
  /** Seeds the links, the connection ids and cookies (the trace has its own seed). */
  seed: number;
  /** Trace ticks after the join (tick 0). */
  ticks: number;
  /** Server ticks per second (default 20). */
  tickHz?: number;
  /**
   * Time between the join (tick 0) and tick 1 (ms, default 1000): the join's full state is sent and the
   * connection's rate settles before the measured ticks begin, so the join is measured apart.
   */
  joinSettleMs?: number;
  /** Time the run goes on after the last tick, for late deliveries (ms, default 2000). */
  drainMs?: number;
  /** Connection options beside the lane list (default: every default). */
  connection?: Omit<ConnectionOptions, 'lanes' | 'listen' | 'random'>;
  /** Client frames per second (default none: `clientFrame` is never called). */
  clientFrameHz?: number;
  /** Called once tick 0's time is fixed (schedule link changes with `ctx.world.at`). */
  onStart?(ctx: HarnessContext): void;
}

/** What one run measured. Ticks are numbered as the trace's: 1..ticks; arrays are indexed tick − 1. */
export interface HarnessRun {
  system: string;
  seed: number;
  ticks: number;
  tickMs: number;
  /** Virtual time of tick 0 (the join) and of tick 1 (ms). */
  joinAtMs: number;
  firstTickAtMs: number;
  /** Server → client UDP payload bytes before the join (the handshake). */
  handshakeBytes: number;
  /** Server → client UDP payload bytes from the join until tick 1. */
  joinBytes: number;
  /** From the join until the client held tick 0 (ms); NaN if it never did. */
  joinHeldMs: number;
  /** Server → client UDP payload bytes sent in each tick's window [tickTime(k), tickTime(k + 1)). */
  bytesPerTick: number[];
  /** Datagrams sent in each tick's window. */
  datagramsPerTick: number[];
  /** Server → client bytes sent after the last tick's window (resends, acks) until the run ended. */
  tailBytes: number;
  /** Client → server UDP payload bytes over the whole run (acks, and inputs if the system sends any). */
  clientBytes: number;
  /** Every server → client datagram: send time (ms) and UDP payload bytes, for window figures. */
  sends: { atMs: number[]; bytes: number[] };
  /** State age of each tick (ms): first time the client held it or a later tick, minus tickTime(k); NaN if never. */
  ages: number[];
  /** The system's own samples, by name. */
  samples: Record<string, number[]>;
  /** What the system's `finish` returned. */
  finish: Record<string, unknown> | undefined;
  /** Link and connection figures at the end, for the raw results. */
  diag: {
    serverToClient: unknown;
    clientToServer: unknown;
    server: unknown;
    client: unknown;
  };
}

function seededRandom(seed: number): (out: Uint8Array) => void {
  const r = new NonCryptoRng(seed);
  return (out) => void r.fill(out);
}

/** The link config of one direction for `l`. */
export function linkConfig(l: HarnessLink): Partial<LinkConfig> {
  const oneWay = l.oneWayMs ?? 50;
  const jitter = l.jitterMs ?? 0;
  if (jitter > oneWay) throw new Error(`jitter ±${jitter} ms exceeds the one-way delay ${oneWay} ms`);
  return { latencyMs: oneWay - jitter, jitterMs: 2 * jitter, loss: l.loss ?? 0, ...(l.link ?? {}) };
}

/**
 * Run `system` for `o.ticks` trace ticks: the client connects at time 0; when the server's end is
 * connected it runs tick 0 (the join), tick 1 `joinSettleMs` later, then one tick every 1000/tickHz ms;
 * the run ends `drainMs` after the last tick. Throws if the connection does not open or closes, or if
 * the system's `finish` throws. Deterministic in (system, options).
 */
export function runHarness(system: StateSystem, o: HarnessOptions): HarnessRun {
  const tickMs = 1000 / (o.tickHz ?? 20);
  const settle = o.joinSettleMs ?? 1000;
  const drain = o.drainMs ?? 2000;
  const link = linkConfig(o);
  const world = new World({
    seed: o.seed,
    routes: [{ from: SERVER, to: CLIENT, link }, { from: CLIENT, to: SERVER, link }],
  });
  const lanes = system.lanes;
  const server = new ConnectionHost({ ...(o.connection ?? {}), lanes, listen: true, random: seededRandom(o.seed * 2 + 1) });
  const client = new ConnectionHost({ ...(o.connection ?? {}), lanes, random: seededRandom(o.seed * 2 + 2) });
  world.add(SERVER, server);
  world.add(CLIENT, client);
  const clientConn = client.connect(0, SERVER);

  let joinAt = NaN;
  const tickTime = (k: number): number => (k === 0 ? joinAt : joinAt + settle + (k - 1) * tickMs);
  const ages = new Array<number>(o.ticks).fill(NaN);
  let held = -1;
  let joinHeldMs = NaN;
  const samples: Record<string, number[]> = {};
  const ctx: HarnessContext = {
    world, tickMs, ticks: o.ticks, tickTime,
    clientHolds(tick: number): void {
      if (!Number.isInteger(tick) || tick < 0 || tick > o.ticks) throw new Error(`clientHolds(${tick}): not a tick of this run`);
      for (let k = held + 1; k <= tick; k++) {
        if (k === 0) joinHeldMs = world.now - joinAt;
        else ages[k - 1] = world.now - tickTime(k);
      }
      held = Math.max(held, tick);
    },
    sample(name: string, value: number): void {
      (samples[name] ??= []).push(value);
    },
  };

  const bytesPerTick = new Array<number>(o.ticks).fill(0);
  const datagramsPerTick = new Array<number>(o.ticks).fill(0);
  const sends = { atMs: [] as number[], bytes: [] as number[] };
  let handshakeBytes = 0;
  let joinBytes = 0;
  let tailBytes = 0;
  let clientBytes = 0;
  world.onTransmit = (from, _to, bytes, now) => {
    if (from !== SERVER) {
      clientBytes += bytes.length;
      return;
    }
    sends.atMs.push(now);
    sends.bytes.push(bytes.length);
    if (Number.isNaN(joinAt)) {
      handshakeBytes += bytes.length;
      return;
    }
    const first = tickTime(1);
    if (now < first) {
      joinBytes += bytes.length;
      return;
    }
    const k = Math.floor((now - first) / tickMs);
    if (k >= o.ticks) {
      tailBytes += bytes.length;
      return;
    }
    bytesPerTick[k] += bytes.length;
    datagramsPerTick[k]++;
  };

  let serverConn: Connection | undefined;
  let error: string | undefined;
  let endAt = Infinity;
  const runTick = (k: number): void => {
    if (error !== undefined) return;
    system.serverTick(world.now, k, serverConn!, ctx);
    if (k < o.ticks) world.at(tickTime(k + 1), () => runTick(k + 1));
    else endAt = world.now + drain;
  };
  const frameMs = o.clientFrameHz === undefined ? undefined : 1000 / o.clientFrameHz;
  const runFrame = (f: number): void => {
    if (error !== undefined || world.now >= endAt) return;
    system.clientFrame?.(world.now, f, clientConn, ctx);
    world.at(joinAt + (f + 1) * frameMs!, () => runFrame(f + 1));
  };

  const pump = (): boolean => {
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) {
      if (e.type === 'connected' && serverConn === undefined) {
        serverConn = e.connection;
        joinAt = world.now;
        o.onStart?.(ctx);
        runTick(0);
        if (frameMs !== undefined) world.at(joinAt + frameMs, () => runFrame(1));
      } else if (e.type === 'disconnected') {
        error ??= `server: connection ended (${e.reason}) at ${world.now} ms`;
      }
      system.serverEvent?.(world.now, e, ctx);
    }
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) {
      if (e.type === 'disconnected') error ??= `client: connection ended (${e.reason}) at ${world.now} ms`;
      system.clientEvent(world.now, e, ctx);
    }
    return error !== undefined || world.now >= endAt;
  };
  // Long enough for the whole run at any rate the harness allows; `endAt` stops it first.
  const limit = settle + (o.ticks + 1) * tickMs + drain + 30_000;
  const r = world.runUntil(pump, { maxTimeMs: limit });
  if (error !== undefined) throw new Error(`${system.name}, seed ${o.seed}: ${error}`);
  if (serverConn === undefined) throw new Error(`${system.name}, seed ${o.seed}: the connection never opened (${r.reason} at ${r.now} ms)`);
  if (!(world.now >= endAt)) throw new Error(`${system.name}, seed ${o.seed}: stopped early (${r.reason} at ${r.now} ms)`);
  const finish = system.finish(ctx) ?? undefined;
  const routes = world.stats.routes;
  return {
    system: system.name, seed: o.seed, ticks: o.ticks, tickMs, joinAtMs: joinAt, firstTickAtMs: tickTime(1), handshakeBytes, joinBytes, joinHeldMs,
    bytesPerTick, datagramsPerTick, tailBytes, clientBytes, sends, ages, samples, finish,
    diag: {
      serverToClient: routes.find((x) => x.from === SERVER)?.link,
      clientToServer: routes.find((x) => x.from === CLIENT)?.link,
      server: { counters: serverConn.counters(), stats: withoutLanes(serverConn.stats(world.now)) },
      client: { counters: clientConn.counters(), stats: withoutLanes(clientConn.stats(world.now)) },
    },
  };
}

function withoutLanes<T extends { lanes: unknown }>(s: T): Omit<T, 'lanes'> {
  const { lanes: _lanes, ...rest } = s;
  return rest;
}

// ---------------------------------------------------------------------------------------------
// Figures

/** Nearest-rank percentile of `xs` (p in 0..100; NaN for none). NaNs are left out. */
export function percentile(xs: readonly number[], p: number): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Median (mean of the middle two for an even count; NaN for none). */
export function median(xs: readonly number[]): number {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/**
 * The late threshold of a link (ms): one-way delay + jitter + one tick. A tick is late when its state
 * age exceeds it: it reached the client after the next tick should already have (a tick never held
 * counts as late).
 */
export function lateThresholdMs(l: HarnessLink, tickMs: number): number {
  return (l.oneWayMs ?? 50) + (l.jitterMs ?? 0) + tickMs;
}

/** Share (0..1) of `ages` above `thresholdMs`, a never-held tick (NaN) counting as late. */
export function lateShare(ages: readonly number[], thresholdMs: number): number {
  if (ages.length === 0) return NaN;
  return ages.filter((a) => Number.isNaN(a) || a > thresholdMs).length / ages.length;
}

/** One window of `bytesPerWindow`. */
export interface ByteWindow {
  /** Window start (ms, virtual). */
  startMs: number;
  /** UDP payload bytes sent in [startMs, startMs + windowMs). */
  payloadBytes: number;
  /** Datagrams sent in it. */
  datagrams: number;
  /** payloadBytes + overheadBytes per datagram: what a link's rate is charged for. */
  wireBytes: number;
}

/**
 * Bytes sent per window of `windowMs` (default 1 s) from `fromMs` to `toMs` (the last partial window
 * left out), from a run's `sends`. `overheadBytes` per datagram is added in `wireBytes` (default 28,
 * UDP/IPv4: what the simulator's rate limit counts).
 */
export function bytesPerWindow(
  sends: { atMs: readonly number[]; bytes: readonly number[] }, fromMs: number, toMs: number, windowMs = 1000, overheadBytes = 28,
): ByteWindow[] {
  const n = Math.floor((toMs - fromMs) / windowMs);
  const out: ByteWindow[] = Array.from({ length: Math.max(0, n) }, (_, i) => ({ startMs: fromMs + i * windowMs, payloadBytes: 0, datagrams: 0, wireBytes: 0 }));
  for (let i = 0; i < sends.atMs.length; i++) {
    const w = Math.floor((sends.atMs[i]! - fromMs) / windowMs);
    if (w < 0 || w >= n) continue;
    const x = out[w]!;
    x.payloadBytes += sends.bytes[i]!;
    x.datagrams++;
    x.wireBytes += sends.bytes[i]! + overheadBytes;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Part 4: a rate step

/** Options of `rateStep`. */
export interface RateStepOptions {
  /** Rate before the step (bits/s, default 1 Mbit/s). */
  fromBitsPerSec?: number;
  /** Rate after it (bits/s, default 128 kbit/s). */
  toBitsPerSec?: number;
  /** The trace tick at whose time the rate steps (default the middle of the run). */
  atTick?: number;
  /**
   * Drop-tail queue of the bottleneck (wire bytes, default 12 500: 100 ms at 1 Mbit/s, which is 780 ms
   * at 128 kbit/s). The same queue before and after the step, as a real link's buffer.
   */
  queueBytes?: number;
}

/** A rate step: what to pass to `runHarness` and how to judge its windows. */
export interface RateStep {
  /** Link settings for both directions (merge into `HarnessOptions.link`). */
  link: Partial<LinkConfig>;
  /** `HarnessOptions.onStart`: schedules the step on both directions at `tickTime(atTick)`. */
  onStart(ctx: HarnessContext): void;
  /** Time of the step (ms, virtual), known once the run started. */
  stepAtMs(): number;
  /** The link's rate at time `t` (bits/s). */
  rateAt(t: number): number;
  readonly fromBitsPerSec: number;
  readonly toBitsPerSec: number;
}

/**
 * Benchmark part 4's scenario: the path's bottleneck rate (both directions) steps from
 * `fromBitsPerSec` (1 Mbit/s) to `toBitsPerSec` (128 kbit/s) at the time of trace tick `atTick`, with
 * nothing in flight lost (the world's `reconfigure`). Judge a run with `bytesPerWindow` against
 * `rateAt` (`rateWindows`).
 */
export function rateStep(ticks: number, o: RateStepOptions = {}): RateStep {
  const from = o.fromBitsPerSec ?? 1e6;
  const to = o.toBitsPerSec ?? 128e3;
  const atTick = o.atTick ?? Math.floor(ticks / 2);
  let at = NaN;
  return {
    fromBitsPerSec: from,
    toBitsPerSec: to,
    link: { rateBitsPerSec: from, queueBytes: o.queueBytes ?? 12_500 },
    onStart(ctx): void {
      at = ctx.tickTime(atTick);
      ctx.world.at(at, () => {
        ctx.world.link(SERVER, CLIENT).reconfigure(ctx.world.now, { rateBitsPerSec: to });
        ctx.world.link(CLIENT, SERVER).reconfigure(ctx.world.now, { rateBitsPerSec: to });
      });
    },
    stepAtMs: () => at,
    rateAt: (t) => (t < at ? from : to),
  };
}

/** A window of a rate-step run with the link's rate in it and the verdict. */
export interface RateWindow extends ByteWindow {
  /** 'before' the step, or 'after' it (from `settleMs` after the step on). */
  phase: 'before' | 'after';
  /** The link's rate in the window (bits/s). */
  rateBitsPerSec: number;
  /** wireBytes × 8 ≤ rate × window. */
  within: boolean;
}

/**
 * The windows of a rate-step run: before the step, from tick 1 up to the step (aligned to end at it),
 * and after it, from `settleMs` after the step (one RTT, say) to the end of the last tick. Each is
 * judged against the link's rate in it, wire bytes (payload + 28 per datagram) against the rate.
 */
export function rateWindows(run: HarnessRun, step: RateStep, settleMs: number, windowMs = 1000): RateWindow[] {
  const at = step.stepAtMs();
  const end = run.firstTickAtMs + run.ticks * run.tickMs;
  const beforeFrom = at - Math.floor((at - run.firstTickAtMs) / windowMs) * windowMs;
  const judge = (w: ByteWindow, phase: 'before' | 'after'): RateWindow => {
    const rate = step.rateAt(w.startMs);
    return { ...w, phase, rateBitsPerSec: rate, within: w.wireBytes * 8 <= rate * (windowMs / 1000) };
  };
  return [
    ...bytesPerWindow(run.sends, beforeFrom, at, windowMs).map((w) => judge(w, 'before')),
    ...bytesPerWindow(run.sends, at + settleMs, end, windowMs).map((w) => judge(w, 'after')),
  ];
}

// ---------------------------------------------------------------------------------------------
// Entity lag

/**
 * How far behind the client's copy of each entity is: for an entity whose newest held state (trace
 * tick `j`) is still the server's, 0; otherwise the time since the server first changed it after `j`.
 * A system that holds whole ticks in order (a reliable patch stream) lags the same for every entity
 * that changed; one whose budget leaves entities out lags per entity. Built once per trace.
 */
export class EntityLag {
  /** Per trace id: the trace ticks at which its state was set (0 for the entities of tick 0, the spawn tick, each change), ascending. */
  private readonly changes = new Map<number, number[]>();
  /** Per trace id: the tick that despawned it. */
  private readonly despawnedAt = new Map<number, number>();
  private readonly ids: number[];

  constructor(trace: Trace) {
    for (const id of trace.initialIds) this.changes.set(id, [0]);
    trace.ticks.forEach((t, i) => {
      const k = i + 1;
      for (const id of t.despawned) this.despawnedAt.set(id, k);
      for (const id of t.spawned) this.changes.set(id, [k]);
      for (const id of t.changed) this.changes.get(id)!.push(k);
    });
    this.ids = [...this.changes.keys()];
  }

  /**
   * Push to `out` the lag (ms) at time `now` of every entity alive at trace tick `tick` (the newest
   * tick the server has run): 0 if the client holds its state of `tick` (its newest held tick
   * `heldTick(id)` is at or after its last change up to `tick`), else `now − tickTime(c)` for the
   * first change `c` after the held tick (−1 held: not held at all, `c` its first state).
   */
  sample(now: number, tick: number, tickTime: (k: number) => number, heldTick: (id: number) => number, out: number[]): void {
    for (const id of this.ids) {
      const ch = this.changes.get(id)!;
      if (ch[0]! > tick || (this.despawnedAt.get(id) ?? Infinity) <= tick) continue;
      const j = heldTick(id);
      let lo = 0;
      let hi = ch.length;
      while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (ch[mid]! <= j) lo = mid + 1;
        else hi = mid;
      }
      const c = ch[lo];
      out.push(c === undefined || c > tick ? 0 : now - tickTime(c));
    }
  }
}
