/**
 * Where a process's time goes: a V8 CPU profile taken in-process over a chosen span (node:inspector,
 * synchronous), and its summary by function (self time) and by gamewire layer. Used by bench:netcode's
 * profiles of the server (bench/netcode-udp-server.ts over real sockets, NETCODE_BENCH_PROFILE in part 4
 * on the simulator).
 *
 *   npx tsx bench/cpuprofile.ts FILE.cpuprofile [--server]   (print the summary; --server keeps only
 *   samples under the netcode Server's calls, for profiles where clients share the process)
 */
import { readFileSync } from 'node:fs';
import { Session } from 'node:inspector';
import { pathToFileURL } from 'node:url';

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}

/** The parts of a `.cpuprofile` read here. Times in µs. */
export interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

/** Start sampling every `intervalUs` µs; the returned function stops and returns the profile. */
export function startProfile(intervalUs = 100): () => CpuProfile {
  const session = new Session();
  session.connect();
  session.post('Profiler.enable');
  session.post('Profiler.setSamplingInterval', { interval: intervalUs });
  session.post('Profiler.start');
  return () => {
    let profile: CpuProfile | undefined;
    let error: Error | null = null;
    // A same-thread inspector session answers synchronously.
    session.post('Profiler.stop', (err, r) => {
      error = err;
      profile = r?.profile as CpuProfile | undefined;
    });
    session.disconnect();
    if (profile === undefined) throw error ?? new Error('the profiler returned no profile');
    return profile;
  };
}

/** The layer of one stack frame, from its file (`undefined`: a frame with no file, charged to its caller's layer). */
export function layerOf(f: CallFrame): string | undefined {
  const u = f.url;
  if (f.functionName === '(garbage collector)') return 'GC';
  if (f.functionName === '(program)') return 'native outside JS (libuv: socket reads, epoll; V8)';
  if (f.functionName === '(idle)') return 'idle';
  if (f.functionName === '(root)') return undefined;
  if (u === '') return undefined;
  const rules: [RegExp, string][] = [
    [/\/src\/crypto\/|libsodium/, 'crypto (AEAD)'],
    [/\/src\/netcode\//, 'netcode (framing, server, client)'],
    [/\/src\/connection\/session\.ts|\/src\/connection\/blocks\.ts/, 'Lanes (connection/session.ts, blocks.ts)'],
    [/\/src\/connection\//, 'connection (other)'],
    [/\/src\/ack\//, 'PacketAcks'],
    [/\/src\/channels\//, 'MessageLanes'],
    [/\/src\/congestion\//, 'Path (RTT, rate, pacer)'],
    [/\/src\/core\/(host|deadline-heap)\.ts/, 'Host'],
    [/\/src\/core\/drive-loop\.ts/, 'DriveLoop'],
    [/\/src\/core\//, 'core helpers (bytes, sequence buffer, counters)'],
    [/\/src\/adapters\/node\/udp-driver\.ts/, 'UdpDriver'],
    [/^node:dgram|^node:internal\/dgram|^node:internal\/dns|^node:net$|^node:internal\/net/, 'dgram (Node) + send syscall'],
    [/^node:internal\/timers|^node:timers|^node:internal\/process\/task_queues/, 'Node timers, immediates, ticks'],
    [/^node:events|^node:internal\/event_target/, 'EventEmitter'],
    [/^node:/, 'Node (other)'],
    [/\/bench\//, 'bench harness'],
  ];
  for (const [re, name] of rules) if (re.test(u)) return name;
  return 'other';
}

/** One summary: total sampled ms, by layer and by function (self time), largest first. */
export interface ProfileSummary {
  totalMs: number;
  layers: { layer: string; ms: number; share: number }[];
  functions: { fn: string; layer: string; ms: number; share: number }[];
}

/**
 * Self time by function and by layer (a frame without a file, e.g. a native binding or a builtin, is
 * charged to the nearest caller with one). `keep`: only samples whose stack has a frame it accepts
 * (e.g. the server's calls), `idle` samples always left out.
 */
export function summarise(p: CpuProfile, keep?: (f: CallFrame) => boolean): ProfileSummary {
  const byId = new Map<number, ProfileNode>();
  const parent = new Map<number, number>();
  for (const n of p.nodes) {
    byId.set(n.id, n);
    for (const c of n.children ?? []) parent.set(c, n.id);
  }
  const layerMemo = new Map<number, string>();
  const layerAt = (id: number): string => {
    const m = layerMemo.get(id);
    if (m !== undefined) return m;
    const n = byId.get(id)!;
    const own = layerOf(n.callFrame);
    const up = parent.get(id);
    const l = own ?? (up === undefined ? 'other' : layerAt(up));
    layerMemo.set(id, l);
    return l;
  };
  const keepMemo = new Map<number, boolean>();
  const kept = (id: number): boolean => {
    if (keep === undefined) return true;
    const m = keepMemo.get(id);
    if (m !== undefined) return m;
    const up = parent.get(id);
    const k = keep(byId.get(id)!.callFrame) || (up !== undefined && kept(up));
    keepMemo.set(id, k);
    return k;
  };
  const layers = new Map<string, number>();
  const fns = new Map<string, { layer: string; ms: number }>();
  let total = 0;
  for (let i = 0; i < p.samples.length; i++) {
    // A sample's time is the gap to the next one (the last sample's to the profile's end).
    const next = i + 1 < p.timeDeltas.length ? p.timeDeltas[i + 1]! : 0;
    const ms = next / 1000;
    const id = p.samples[i]!;
    const n = byId.get(id)!;
    if (n.callFrame.functionName === '(idle)' || !kept(id)) continue;
    const layer = layerAt(id);
    total += ms;
    layers.set(layer, (layers.get(layer) ?? 0) + ms);
    const file = n.callFrame.url.replace(/^.*\/(src|bench)\//, '$1/').replace(/^file:\/\//, '');
    const key = `${n.callFrame.functionName || '(anonymous)'}${file === '' ? '' : ` ${file}`}`;
    const f = fns.get(key) ?? { layer, ms: 0 };
    f.ms += ms;
    fns.set(key, f);
  }
  return {
    totalMs: total,
    layers: [...layers].map(([layer, ms]) => ({ layer, ms, share: ms / total })).sort((a, b) => b.ms - a.ms),
    functions: [...fns].map(([fn, f]) => ({ fn, layer: f.layer, ms: f.ms, share: f.ms / total })).sort((a, b) => b.ms - a.ms),
  };
}

/** A frame that is the netcode Server's (or its host's) code: its samples are the server's in a shared process. */
export const serverFrame = (f: CallFrame): boolean => /\/src\/netcode\/server\.ts|\/src\/core\/host\.ts/.test(f.url);

/** The summary as text: layers, then the top `top` functions. */
export function formatSummary(s: ProfileSummary, top = 25): string {
  const pct = (x: number): string => `${(x * 100).toFixed(1).padStart(5)} %`;
  return [
    `sampled ${s.totalMs.toFixed(0)} ms (idle left out)`,
    '',
    'by layer (self time):',
    ...s.layers.map((l) => `  ${pct(l.share)}  ${l.ms.toFixed(0).padStart(6)} ms  ${l.layer}`),
    '',
    `top ${top} functions (self time):`,
    ...s.functions.slice(0, top).map((f) => `  ${pct(f.share)}  ${f.fn}  [${f.layer}]`),
  ].join('\n');
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const file = process.argv[2];
  if (file === undefined) {
    console.error('usage: tsx bench/cpuprofile.ts FILE.cpuprofile [--server]');
    process.exit(2);
  }
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  console.log(formatSummary(summarise(p, process.argv.includes('--server') ? serverFrame : undefined), Number(process.env.TOP ?? 25)));
}
