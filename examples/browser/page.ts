// The dots page: connects with a token from the example server, moves your dot, draws everyone's,
// plots the connection's figures, and applies the simulated loss and latency you set.
import { connectWebRtc, type ClientEvent } from 'gamewire/browser';
import { FIELD, LANES, readField, writePosition } from './shared.js';

const $ = <T extends HTMLElement>(id: string): T => document.getElementById(id) as T;
const status = $<HTMLSpanElement>('status');
const field = $<HTMLCanvasElement>('field').getContext('2d')!;
const plots = $<HTMLCanvasElement>('plots').getContext('2d')!;

const me = { x: FIELD.width / 2, y: FIELD.height / 2 };
let dots: { id: number; x: number; y: number }[] = [];
const keys = new Set<string>();
addEventListener('keydown', (e) => keys.add(e.key));
addEventListener('keyup', (e) => keys.delete(e.key));
$<HTMLCanvasElement>('field').addEventListener('mousemove', (e) => {
  me.x = e.offsetX;
  me.y = e.offsetY;
});

const config = (await (await fetch('/config')).json()) as { signalling: string };
const token = Uint8Array.from(atob(await (await fetch('/token')).text()), (c) => c.charCodeAt(0));
let connected = false;
const conn = await connectWebRtc({
  url: config.signalling, token, lanes: LANES,
  onEvent: (e: ClientEvent) => {
    if (e.type === 'connected') {
      connected = true;
      status.textContent = 'connected';
    } else if (e.type === 'disconnected') {
      connected = false;
      status.textContent = `disconnected (${e.reason})`;
    } else if (e.type === 'message' && e.lane === 1) dots = readField(e.bytes);
  },
});
(window as unknown as { gamewireDots: unknown }).gamewireDots = { conn, get connected() { return connected; }, get dots() { return dots; } };

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

// 20 Hz: move, send our position.
setInterval(() => {
  const step = 6;
  if (keys.has('ArrowLeft')) me.x -= step;
  if (keys.has('ArrowRight')) me.x += step;
  if (keys.has('ArrowUp')) me.y -= step;
  if (keys.has('ArrowDown')) me.y += step;
  me.x = Math.min(FIELD.width, Math.max(0, me.x));
  me.y = Math.min(FIELD.height, Math.max(0, me.y));
  if (connected) conn.client.send(0, writePosition(me));
}, 50);

// Figures once a second, the last 60 s of each.
const SERIES = [
  { name: 'RTT ms', color: '#6cf', get: (s: Stats) => s.srttMs },
  { name: 'loss %', color: '#f86', get: (s: Stats) => s.lossPercent },
  { name: 'sent kbit/s', color: '#8c8', get: (s: Stats) => s.sentKbps },
  { name: 'received kbit/s', color: '#cc6', get: (s: Stats) => s.receivedKbps },
  { name: 'field lane age ms', color: '#c8f', get: (s: Stats) => (s.lanes[1] as { oldestQueuedMs?: number } | undefined)?.oldestQueuedMs ?? 0 },
];
type Stats = NonNullable<ReturnType<typeof conn.client.stats>>;
const history: number[][] = SERIES.map(() => []);
setInterval(() => {
  const s = conn.client.stats();
  if (s === undefined) return;
  SERIES.forEach((x, i) => {
    history[i]!.push(x.get(s));
    if (history[i]!.length > 60) history[i]!.shift();
  });
}, 1000);

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
    plots.strokeStyle = x.color;
    plots.beginPath();
    ys.forEach((y, k) => {
      const px = (k / 59) * (w - 120) + 110;
      const py = top + h - 4 - (y / max) * (h - 8);
      if (k === 0) plots.moveTo(px, py);
      else plots.lineTo(px, py);
    });
    plots.stroke();
    plots.fillStyle = x.color;
    plots.fillText(`${x.name}: ${(ys.at(-1) ?? 0).toFixed(1)}`, 6, top + 16);
    plots.fillStyle = '#777';
    plots.fillText(`max ${max.toFixed(0)}`, 6, top + 32);
  });
}

function frame(): void {
  field.clearRect(0, 0, FIELD.width, FIELD.height);
  for (const d of dots) {
    field.fillStyle = `hsl(${(d.id * 67) % 360} 70% 60%)`;
    field.beginPath();
    field.arc(d.x, d.y, 8, 0, Math.PI * 2);
    field.fill();
  }
  field.strokeStyle = '#fff';
  field.beginPath();
  field.arc(me.x, me.y, 11, 0, Math.PI * 2);
  field.stroke();
  drawPlots();
  requestAnimationFrame(frame);
}
frame();
