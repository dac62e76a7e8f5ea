// The dots page: connects with a token from the example server and joins the state layer. Each
// frame it hands the layer this frame's input (where your dot heads: the mouse, the arrow keys, or a
// loop) and draws what the layer samples: the other dots interpolated, yours predicted. Switches turn
// interpolation and prediction off to show what each buys; plots show the interpolation delay and
// the connection, and the simulator's loss and latency can be applied to this tab.
import { type BrowserTransport, connect, type ClientEvent } from 'gamewire/browser';
import { StateClient } from 'gamewire/state';
import { type DotView, FIELD, LANES, loop, schema, SPEED, step, type Target } from './shared.js';

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const status = $<HTMLSpanElement>('status');
const hud = $<HTMLDivElement>('hud');
const field = $<HTMLCanvasElement>('field').getContext('2d')!;
const delayPlot = $<HTMLCanvasElement>('delay').getContext('2d')!;
const plots = $<HTMLCanvasElement>('plots').getContext('2d')!;
const interpolation = $<HTMLInputElement>('interpolation');
const prediction = $<HTMLInputElement>('prediction');
const walk = $<HTMLInputElement>('walk');

const clamp = (t: Target): Target => ({ tx: Math.min(FIELD.width, Math.max(0, t.tx)), ty: Math.min(FIELD.height, Math.max(0, t.ty)) });
let target: Target = { tx: FIELD.width / 2, ty: FIELD.height / 2 };
const keys = new Set<string>();
addEventListener('keydown', (e) => keys.add(e.key));
addEventListener('keyup', (e) => keys.delete(e.key));
$<HTMLCanvasElement>('field').addEventListener('mousemove', (e) => {
  target = clamp({ tx: e.offsetX, ty: e.offsetY });
});

/** What a frame drew: a dot's id, where, and how it was placed. */
type Drawn = { id: number; x: number; y: number; placed: string };
/** The last frames drawn (render tick, the other dots, your own), and your dot's states as snapshots confirmed them: for tests. */
const trace: { renderTick: number; others: Drawn[]; own: Drawn | undefined }[] = [];
const ownTrail: { tick: number; x: number; y: number }[] = [];
const KEEP_FRAMES = 900;
const KEEP_TICKS = 600;

// ?transport=webrtc|websocket forces one; otherwise WebRTC, falling back to the WebSocket.
const chosen = new URLSearchParams(location.search).get('transport');
const transports: BrowserTransport[] | undefined = chosen === 'webrtc' || chosen === 'websocket' ? [chosen] : undefined;
const picker = $<HTMLSelectElement>('transport');
picker.value = transports?.[0] ?? 'auto';
picker.addEventListener('change', () => {
  const u = new URL(location.href);
  if (picker.value === 'auto') u.searchParams.delete('transport');
  else u.searchParams.set('transport', picker.value);
  location.href = u.href;
});
const config = (await (await fetch('/config')).json()) as { signalling: string };
const token = Uint8Array.from(atob(await (await fetch('/token')).text()), (c) => c.charCodeAt(0));
let connected = false;
let view: DotView | undefined;
let ownId = -1;
const conn = await connect({
  url: config.signalling, token, lanes: LANES, ...(transports === undefined ? {} : { transports }),
  onEvent: (e: ClientEvent) => {
    if (e.type === 'connected') {
      connected = true;
      status.textContent = `connected over ${conn.transport === 'webrtc' ? 'WebRTC' : 'a WebSocket'}`;
    } else if (e.type === 'disconnected') {
      connected = false;
      status.textContent = `disconnected (${e.reason})`;
    }
    if (view === undefined) return;
    view.handle(performance.now(), e);
    if (e.type === 'message' && ownId >= 0) noteOwn(view);
  },
});
view = new StateClient(conn.client, { schema, predict: step });
if (conn.client.state === 'connected') view.hello();

/** Keep your dot's newest confirmed state (one per snapshot tick). */
function noteOwn(v: DotView): void {
  const held = v.latest(ownId);
  if (held === undefined || (ownTrail.length > 0 && held.tick <= ownTrail.at(-1)!.tick)) return;
  ownTrail.push({ tick: held.tick, x: held.values.x, y: held.values.y });
  if (ownTrail.length > KEEP_TICKS) ownTrail.shift();
}

/**
 * Your dot at render tick `r` from its confirmed states alone, as the others are drawn (prediction
 * off, interpolation on): the layer predicts your own entity, so this page keeps its snapshots.
 */
function ownFromSnapshots(r: number): { x: number; y: number } | undefined {
  const n = ownTrail.length;
  if (n === 0) return undefined;
  if (!(r > ownTrail[0]!.tick)) return ownTrail[r === -Infinity ? n - 1 : 0];
  for (let i = n - 1; i >= 0; i--) {
    const a = ownTrail[i]!;
    if (a.tick > r) continue;
    const b = ownTrail[i + 1];
    if (b === undefined) return a;
    const f = (r - a.tick) / (b.tick - a.tick);
    return { x: a.x + (b.x - a.x) * f, y: a.y + (b.y - a.y) * f };
  }
  return ownTrail[0];
}

(window as unknown as { __state: unknown }).__state = {
  conn,
  get connected() { return connected; },
  get joined() { return view?.joined ?? false; },
  get ownId() { return ownId; },
  /** The dots held (newest state each). */
  get dots() { return view?.ids().map((id) => ({ id, ...view!.latest(id)!.values })) ?? []; },
  stats: () => view?.stats(performance.now()),
  trace,
  ownTrail,
};

for (const id of ['loss', 'latency', 'jitter']) {
  $<HTMLInputElement>(id).addEventListener('change', () => {
    const loss = Number($<HTMLInputElement>('loss').value) / 100;
    const latencyMs = Number($<HTMLInputElement>('latency').value);
    const jitterMs = Number($<HTMLInputElement>('jitter').value);
    try {
      conn.simulate(loss === 0 && latencyMs === 0 && jitterMs === 0 ? undefined : { loss, latencyMs, jitterMs });
    } catch (err) {
      status.textContent = String(err);
    }
  });
}

/** Where your dot heads this frame: round a loop (walk), a step ahead with the arrow keys, else the mouse. */
function input(now: number, own: { x: number; y: number } | undefined): Target {
  if (walk.checked) return (target = clamp(loop((ownId & 0xffff) + 3, now / 1000)));
  const dx = (keys.has('ArrowRight') ? 1 : 0) - (keys.has('ArrowLeft') ? 1 : 0);
  const dy = (keys.has('ArrowDown') ? 1 : 0) - (keys.has('ArrowUp') ? 1 : 0);
  if ((dx !== 0 || dy !== 0) && own !== undefined) target = clamp({ tx: own.x + dx * 2 * SPEED, ty: own.y + dy * 2 * SPEED });
  return target;
}

// The interpolation delay (and its target) ten times a second, the last 30 s.
const delays: { delay: number; target: number }[] = [];
let nextDelayAt = 0;
// The connection's and the snapshots' figures once a second, the last 60 s.
type Stats = NonNullable<ReturnType<typeof conn.client.stats>>;
type ViewStats = ReturnType<DotView['stats']>;
const SERIES = [
  { name: 'RTT ms', color: '#6cf', get: (s: Stats) => s.srttMs },
  { name: 'loss %', color: '#f86', get: (s: Stats) => s.lossPercent },
  { name: 'received kbit/s', color: '#cc6', get: (s: Stats) => s.receivedKbps },
  { name: 'snapshot B/tick', color: '#8c8', get: (_s: Stats, v: ViewStats) => v.lastSnapshotBytes },
  { name: 'snapshot age ms (largest per s)', color: '#c8f', get: () => ageMax },
];
const history: number[][] = SERIES.map(() => []);
let ageMax = 0;
setInterval(() => {
  const s = conn.client.stats();
  if (s === undefined || view === undefined) return;
  const v = view.stats(performance.now());
  SERIES.forEach((x, i) => {
    history[i]!.push(x.get(s, v));
    if (history[i]!.length > 60) history[i]!.shift();
  });
  ageMax = 0;
}, 1000);

function line(ctx: CanvasRenderingContext2D, ys: number[], n: number, top: number, h: number, max: number, color: string): void {
  const w = ctx.canvas.width;
  ctx.strokeStyle = color;
  ctx.beginPath();
  ys.forEach((y, k) => {
    const px = (k / (n - 1)) * (w - 120) + 110;
    const py = top + h - 4 - (Math.min(y, max) / max) * (h - 8);
    if (k === 0) ctx.moveTo(px, py);
    else ctx.lineTo(px, py);
  });
  ctx.stroke();
}

function drawDelay(): void {
  const c = delayPlot;
  const { width: w, height: h } = c.canvas;
  c.clearRect(0, 0, w, h);
  const max = Math.max(200, ...delays.map((d) => d.delay));
  line(c, delays.map((d) => d.target), 300, 0, h, max, '#666');
  line(c, delays.map((d) => d.delay), 300, 0, h, max, '#fc6');
  c.fillStyle = '#fc6';
  c.fillText(`interpolation delay: ${(delays.at(-1)?.delay ?? 0).toFixed(0)} ms`, 6, 16);
  c.fillStyle = '#888';
  c.fillText(`target ${(delays.at(-1)?.target ?? 0).toFixed(0)} ms`, 6, 32);
  c.fillText(`max ${max.toFixed(0)} ms, 30 s`, 6, 48);
}

function drawPlots(): void {
  const w = plots.canvas.width;
  const h = plots.canvas.height / SERIES.length;
  plots.clearRect(0, 0, w, plots.canvas.height);
  SERIES.forEach((x, i) => {
    const ys = history[i]!;
    const top = i * h;
    const max = Math.max(1, ...ys);
    plots.strokeStyle = '#333';
    plots.strokeRect(0.5, top + 0.5, w - 1, h - 1);
    line(plots, ys, 60, top, h, max, x.color);
    plots.fillStyle = x.color;
    plots.fillText(`${x.name}: ${(ys.at(-1) ?? 0).toFixed(1)}`, 6, top + 16);
    plots.fillStyle = '#777';
    plots.fillText(`max ${max.toFixed(0)}`, 6, top + 32);
  });
}

function dot(x: number, y: number, id: number, own: boolean): void {
  field.fillStyle = `hsl(${((id & 0xffff) * 67) % 360} 70% 60%)`;
  field.beginPath();
  field.arc(x, y, 8, 0, Math.PI * 2);
  field.fill();
  if (!own) return;
  field.strokeStyle = '#fff';
  field.beginPath();
  field.arc(x, y, 11, 0, Math.PI * 2);
  field.stroke();
}

let hudAt = 0;
function frame(): void {
  const now = performance.now();
  field.clearRect(0, 0, FIELD.width, FIELD.height);
  if (view !== undefined && connected) {
    const drawn = view.sample(now);
    let own: Drawn | undefined;
    for (const e of drawn) {
      if (!e.predicted) continue;
      ownId = e.id;
      own = { id: e.id, x: e.values.x, y: e.values.y, placed: e.placed };
    }
    view.input(now, input(now, own));
    const st = view.stats(now);
    const r = st.playback?.renderTick ?? -Infinity;
    const others: Drawn[] = [];
    if (interpolation.checked) {
      for (const e of drawn) if (!e.predicted) others.push({ id: e.id, x: e.values.x, y: e.values.y, placed: e.placed });
    } else {
      for (const id of view.ids()) {
        const held = view.latest(id);
        if (id !== ownId && held !== undefined) others.push({ id, x: held.values.x, y: held.values.y, placed: 'newest' });
      }
    }
    if (ownId >= 0 && !prediction.checked) {
      const held = interpolation.checked ? ownFromSnapshots(r) : view.latest(ownId)?.values;
      own = held === undefined ? undefined : { id: ownId, x: held.x, y: held.y, placed: interpolation.checked ? 'interpolated' : 'newest' };
    }
    for (const d of others) dot(d.x, d.y, d.id, false);
    if (own !== undefined) dot(own.x, own.y, own.id, true);
    trace.push({ renderTick: r, others, own });
    if (trace.length > KEEP_FRAMES) trace.shift();
    if (st.snapshotAgeMs > ageMax) ageMax = st.snapshotAgeMs;
    if (st.playback !== undefined && now >= nextDelayAt) {
      nextDelayAt = now + 100;
      delays.push({ delay: st.playback.delayMs, target: st.playback.targetDelayMs });
      if (delays.length > 300) delays.shift();
    }
    if (now >= hudAt) {
      hudAt = now + 250;
      hud.textContent = `snapshot ${st.lastSnapshotBytes} B/tick · snapshot age ${st.snapshotAgeMs.toFixed(0)} ms · `
        + `interpolation delay ${(st.playback?.delayMs ?? 0).toFixed(0)} ms · corrections ${st.corrections} · dots ${st.entities}`;
    }
  }
  const t = target;
  field.strokeStyle = '#555';
  field.strokeRect(t.tx - 3, t.ty - 3, 6, 6);
  drawDelay();
  drawPlots();
  requestAnimationFrame(frame);
}
frame();
