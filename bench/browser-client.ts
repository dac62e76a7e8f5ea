/**
 * Browser side of `npm run bench:browser`, run inside the client's network namespace by
 * bench/browser.bench.ts: headless Chromium (Debian's, via playwright-core) loads the page of
 * bench/browser-server.ts and echoes one 100-byte message every 20 ms through each system in turn.
 * Usage: tsx bench/browser-client.ts SERVER_HOST COUNT SYSTEM[,SYSTEM…] [SERVER_PID]
 * SYSTEM is gamewire (over WebRTC), gamewire-ws (over the WebSocket transport), websocket (kernel TCP),
 * geckos, raw (a bare unreliable data channel; echo), or a 16 MiB upload: block (the gamewire block lane
 * over WebRTC), block-gamewire-ws (the same over the WebSocket transport), block-ws (a plain WebSocket,
 * counted by the server); during an upload the page goes on echoing on the same connection.
 * Prints one JSON line per run: { system, sent, rtts, missing, stallMs, connectMs, ms, … } with the IP
 * bytes and packets this namespace sent while the system ran (page load and connect excluded), and,
 * given SERVER_PID, those the server's namespace sent (read from /proc/SERVER_PID/net).
 */
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

/** IP bytes and packets sent so far from the network namespace of `proc` (`/proc/self` or `/proc/PID`). */
function ipOut(proc: string): { bytes: number; packets: number } {
  const field = (file: string, prefix: string, name: string): number => {
    const rows = readFileSync(`${proc}/net/${file}`, 'utf8').split('\n').filter((l) => l.startsWith(prefix));
    return Number(rows[1]!.split(/\s+/)[rows[0]!.split(/\s+/).indexOf(name)]);
  };
  return { bytes: field('netstat', 'IpExt:', 'OutOctets'), packets: field('snmp', 'Ip:', 'OutRequests') };
}

const [host = '10.99.0.2', countArg = '500', systemsArg = 'gamewire,websocket,geckos', serverPid] = process.argv.slice(2);
const count = Number(countArg);
const PAGE = `http://${host}:8081/`;
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--disable-features=WebRtcHideLocalIpsWithMdns', '--allow-loopback-in-peer-connection',
];

/**
 * One run as the page measured it: RTTs (ms) of the echoes that came back, `stallMs` the largest gap
 * between consecutive echo arrivals less the send interval, `connectMs` from the connect call to the
 * connection being usable (gamewire: its `connected` event); for an upload `blockMs` until the server had
 * it all, and `duringRtts`/`duringSent`/`duringMissing` the echoes sent on the same connection meanwhile.
 */
interface Run {
  system: string; sent: number; rtts: number[]; missing: number; stallMs: number; connectMs?: number; ms: number;
  blockMs?: number; blockAckedBytes?: number; duringRtts?: number[]; duringSent?: number; duringMissing?: number; transport?: string; error?: string;
}

/** `BROWSER_BENCH_WS_RATE` (checked by browser.bench.ts): `adaptive:MS` (its target queue) or `fixed:BYTES_PER_SEC`. */
function wsRateOf(v: string | undefined): { kind: 'adaptive' | 'fixed'; value: number } | undefined {
  const m = /^(adaptive|fixed):(\d+(?:\.\d+)?)$/.exec(v ?? '');
  return m === null ? undefined : { kind: m[1] as 'adaptive' | 'fixed', value: Number(m[2]) };
}

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });
try {
  for (const system of systemsArg.split(',')) {
    const page = await browser.newPage();
    // tsx (esbuild, keepNames) wraps the evaluated function's inner functions in __name(): give the page one.
    await page.addInitScript('window.__name = (f) => f');
    await page.goto(PAGE);
    await page.waitForFunction(() => (window as unknown as { gw?: unknown; geckos?: unknown }).gw !== undefined);
    const counters = (): { up: { bytes: number; packets: number }; down: { bytes: number; packets: number } } => ({
      up: ipOut('/proc/self'), down: serverPid === undefined ? { bytes: NaN, packets: NaN } : ipOut(`/proc/${serverPid}`),
    });
    let before = counters();
    let after = before;
    await page.exposeFunction('markStart', () => void (before = counters()));
    await page.exposeFunction('markEnd', () => void (after = counters()));
    const run = await page.evaluate(async ({ system, host, count, wsRate, split, bulk }): Promise<Run> => {
      interface Conn {
        transport: string;
        bulk: boolean;
        client: {
          send(l: number, b: Uint8Array, notice?: boolean): number;
          blockProgress(): { sending: { current?: { ackedBytes: number } }; receiving: { blocks: { receivedBytes: number }[] } } | undefined;
        };
        close(): Promise<void>;
      }
      const w = window as unknown as {
        markStart(): Promise<void>;
        markEnd(): Promise<void>;
        gw: { connect(o: object): Promise<Conn> };
        gwx: { AdaptiveRate: new (o: object) => object; FixedRate: new (bytesPerSec: number) => object };
        geckos: (o: object) => { onConnect(cb: (err?: unknown) => void): void; emit(e: string, d: unknown, o: object): void; on(e: string, cb: (d: unknown) => void): void; close(): void };
      };
      const INTERVAL = 20;
      const BLOCK = 16 << 20;
      const sentAt = new Map<number, number>();
      const rtts: number[] = [];
      let lastArrival = NaN;
      let maxGap = 0;
      const echoed = (id: number): void => {
        const t = sentAt.get(id);
        if (t === undefined) return;
        sentAt.delete(id);
        const now = performance.now();
        rtts.push(now - t);
        if (!Number.isNaN(lastArrival)) maxGap = Math.max(maxGap, now - lastArrival);
        lastArrival = now;
      };
      const stallMs = (): number => Math.max(0, maxGap - INTERVAL);
      const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
      const openWs = (): Promise<WebSocket> => new Promise((resolve, reject) => {
        const ws = new WebSocket(`ws://${host}:8082`);
        ws.binaryType = 'arraybuffer';
        ws.onopen = () => resolve(ws);
        ws.onerror = () => reject(new Error('websocket failed'));
      });
      const body = (id: number): Uint8Array<ArrayBuffer> => {
        const b = new Uint8Array(100);
        new DataView(b.buffer).setUint32(0, id, true);
        return b;
      };
      /** A download's request: 4 bytes, the size asked for (u32). */
      const ask = (size: number): Uint8Array<ArrayBuffer> => {
        const b = new Uint8Array(4);
        new DataView(b.buffer).setUint32(0, size, true);
        return b;
      };
      /** Echo every 20 ms through `send` until `done()` (the upload arrived) or `limitMs`; returns how many were sent. */
      const echoWhile = async (send: (id: number) => void, done: () => boolean, limitMs: number): Promise<number> => {
        const s0 = performance.now();
        let n = 0;
        for (; !done() && performance.now() - s0 < limitMs; n++) {
          sentAt.set(n, performance.now());
          send(n);
          await sleep(INTERVAL);
        }
        return n;
      };
      let send: (id: number) => void;
      let close: () => void | Promise<void>;
      let connectMs: number | undefined;
      let transport: string | undefined;
      const t0 = performance.now();
      try {
        if (['gamewire', 'gamewire-ws', 'gamewire-latency', 'block', 'block-gamewire-ws', 'block-down', 'block-down-gamewire-ws'].includes(system)) {
          const overWs = system.endsWith('gamewire-ws');
          // The server with webrtcFavor 'latency', and two rides from the browser to match.
          const latency = system === 'gamewire-latency';
          // A download: the page asks for the block with a 4-byte block of its own (its size), the server sends it.
          const down = system.startsWith('block-down');
          const token = Uint8Array.from(atob(await (await fetch(latency ? '/token-latency' : '/token')).text()), (c) => c.charCodeAt(0));
          let connected = NaN;
          let blockDone = NaN;
          const c0 = performance.now();
          // An upload's block lane goes on a WebSocket of its own (the default with 'websocket' allowed;
          // BROWSER_BENCH_BULK=0, or a split, keeps it on the connection's transport). A WebRTC client
          // lists the WebSocket only for that: its fallback is put off past the data channel's opening.
          const blockOnWs = system.startsWith('block') && bulk && split === '';
          const conn = await w.gw.connect({
            url: `http://${host}:${latency ? 8083 : 8080}/gamewire`, token, openTimeoutMs: 30_000,
            ...(latency ? { channels: { redundancy: 2 } } : {}),
            transports: overWs ? ['websocket'] : blockOnWs ? ['webrtc', 'websocket'] : ['webrtc'], fallbackAfterMs: 30_000, bulk: blockOnWs,
            lanes: [{ mode: 'reliable-ordered' }, { mode: 'block', maxMessageBytes: BLOCK }],
            // BROWSER_BENCH_WS_RATE: another rate controller for the client over the WebSocket transport.
            ...(overWs && wsRate !== undefined ? {
              path: { rateController: wsRate.kind === 'fixed' ? new w.gwx.FixedRate(wsRate.value) : new w.gwx.AdaptiveRate({ targetQueueDelayMs: wsRate.value }) },
            } : {}),
            onEvent: (e: { type: string; bytes?: Uint8Array; lane?: number; delivered?: boolean }) => {
              if (e.type === 'connected') connected = performance.now();
              if (e.type === 'message' && e.lane === 1) blockDone = e.bytes!.length === BLOCK ? performance.now() : blockDone;
              else if (e.type === 'message') echoed(new DataView(e.bytes!.buffer, e.bytes!.byteOffset).getUint32(0, true));
              if (!down && e.type === 'delivery' && e.lane === 1 && e.delivered === true) blockDone = performance.now();
            },
          });
          transport = conn.transport;
          for (let i = 0; i < 3000 && Number.isNaN(connected); i++) await sleep(10);
          if (Number.isNaN(connected)) throw new Error('no netcode connection');
          connectMs = connected - c0;
          for (let i = 0; i < 1500 && blockOnWs && !conn.bulk; i++) await sleep(10);
          if (blockOnWs && !conn.bulk) throw new Error('the block lane\'s WebSocket did not open');
          if (blockOnWs) transport += ', block lane on its own WebSocket';
          if (system.startsWith('block')) {
            // BROWSER_BENCH_SPLIT: the echoes go on a second connection over that transport, the block on the first.
            let echoConn = conn;
            if (split !== '') {
              const token2 = Uint8Array.from(atob(await (await fetch('/token')).text()), (c) => c.charCodeAt(0));
              let c2 = NaN;
              echoConn = await w.gw.connect({
                url: `http://${host}:8080/gamewire`, token: token2, openTimeoutMs: 30_000, transports: [split],
                lanes: [{ mode: 'reliable-ordered' }, { mode: 'block', maxMessageBytes: BLOCK }],
                onEvent: (e: { type: string; bytes?: Uint8Array }) => {
                  if (e.type === 'connected') c2 = performance.now();
                  if (e.type === 'message') echoed(new DataView(e.bytes!.buffer, e.bytes!.byteOffset).getUint32(0, true));
                },
              });
              for (let i = 0; i < 3000 && Number.isNaN(c2); i++) await sleep(10);
              if (Number.isNaN(c2)) throw new Error('no second connection');
              transport = `${transport} + echo over ${echoConn.transport}`;
            }
            await w.markStart();
            const b0 = performance.now();
            conn.client.send(1, down ? ask(BLOCK) : new Uint8Array(BLOCK).fill(7), !down);
            const sent = await echoWhile((id) => void echoConn.client.send(0, body(id)), () => !Number.isNaN(blockDone), 180_000);
            const ok = !Number.isNaN(blockDone);
            const blockMs = (ok ? blockDone : performance.now()) - b0;
            const progress = conn.client.blockProgress();
            const acked = ok ? BLOCK : down ? (progress?.receiving.blocks[0]?.receivedBytes ?? 0) : (progress?.sending.current?.ackedBytes ?? 0);
            for (let waited = 0; sentAt.size > 0 && waited < 5000; waited += 50) await sleep(50);
            await w.markEnd();
            await conn.close();
            if (echoConn !== conn) await echoConn.close();
            return {
              system, sent: 1, rtts: [], missing: ok ? 0 : 1, stallMs: NaN, connectMs, transport, ms: performance.now() - t0, blockMs, blockAckedBytes: acked,
              duringRtts: rtts, duringSent: sent, duringMissing: sentAt.size,
            };
          }
          send = (id) => void conn.client.send(0, body(id));
          close = () => conn.close();
        } else if (system === 'raw') {
          const c0 = performance.now();
          const pc = new RTCPeerConnection({ iceServers: [] });
          const dc = pc.createDataChannel('raw', { negotiated: true, id: 0, ordered: false, maxRetransmits: 0 });
          dc.binaryType = 'arraybuffer';
          await pc.setLocalDescription(await pc.createOffer());
          const answer = await (await fetch('/raw', { method: 'POST', body: pc.localDescription!.sdp })).text();
          await pc.setRemoteDescription({ type: 'answer', sdp: answer });
          await new Promise<void>((resolve, reject) => {
            dc.onopen = () => resolve();
            setTimeout(() => reject(new Error('raw channel did not open')), 30_000);
          });
          connectMs = performance.now() - c0;
          dc.onmessage = (e) => echoed(new DataView(e.data as ArrayBuffer).getUint32(0, true));
          send = (id) => dc.send(body(id));
          close = () => pc.close();
        } else if (system === 'block-ws' || system === 'block-down-ws') {
          const down = system === 'block-down-ws';
          const c0 = performance.now();
          const ws = await openWs();
          connectMs = performance.now() - c0;
          // An upload: what the server has of the block so far; a download: what arrived of it.
          let bytes = 0;
          let blockDone = NaN;
          // 100 bytes: an echo; 4 bytes: an upload's progress (u32); 64 KiB: a download's data.
          ws.onmessage = (e) => {
            const d = new DataView(e.data as ArrayBuffer);
            if (d.byteLength === 100) return echoed(d.getUint32(0, true));
            bytes = down ? bytes + d.byteLength : d.getUint32(0, true);
            if (bytes >= BLOCK && Number.isNaN(blockDone)) blockDone = performance.now();
          };
          await w.markStart();
          const b0 = performance.now();
          if (down) ws.send(ask(BLOCK));
          else for (let i = 0, chunk = new Uint8Array(64 << 10).fill(7); i < 256; i++) ws.send(chunk);
          const sent = await echoWhile((id) => ws.send(body(id)), () => !Number.isNaN(blockDone), 180_000);
          const ok = !Number.isNaN(blockDone);
          const blockMs = (ok ? blockDone : performance.now()) - b0;
          for (let waited = 0; sentAt.size > 0 && waited < 5000; waited += 50) await sleep(50);
          await w.markEnd();
          ws.close();
          return {
            system, sent: 1, rtts: [], missing: ok ? 0 : 1, stallMs: NaN, connectMs, ms: performance.now() - t0, blockMs, blockAckedBytes: bytes,
            duringRtts: rtts, duringSent: sent, duringMissing: sentAt.size,
          };
        } else if (system === 'websocket') {
          const c0 = performance.now();
          const ws = await openWs();
          connectMs = performance.now() - c0;
          ws.onmessage = (e) => echoed(new DataView(e.data as ArrayBuffer).getUint32(0, true));
          send = (id) => ws.send(body(id));
          close = () => ws.close();
        } else {
          const c0 = performance.now();
          const ch = w.geckos({ url: `http://${host}`, port: 9208 });
          await new Promise<void>((resolve, reject) => ch.onConnect((err) => (err ? reject(new Error(String(err))) : resolve())));
          connectMs = performance.now() - c0;
          // geckos.io's reliable messages are JSON events: the id rides in a 100-character string.
          ch.on('echo', (d) => echoed(Number(String(d).slice(0, 10))));
          send = (id) => ch.emit('echo', String(id).padStart(10, '0').padEnd(100, '.'), { reliable: true });
          close = () => ch.close();
        }
        await w.markStart();
        for (let i = 0; i < count; i++) {
          sentAt.set(i, performance.now());
          send(i);
          await sleep(INTERVAL);
        }
        // A bare channel never resends: what is missing 3 s after the last send is lost.
        const wait = system === 'raw' ? 3000 : 60_000;
        for (let waited = 0; sentAt.size > 0 && waited < wait; waited += 50) await sleep(50);
        await w.markEnd();
        await close();
        return { system, sent: count, rtts, missing: sentAt.size, stallMs: stallMs(), connectMs, transport, ms: performance.now() - t0 };
      } catch (err) {
        return { system, sent: count, rtts, missing: sentAt.size, stallMs: stallMs(), connectMs, transport, ms: performance.now() - t0, error: String(err) };
      }
    }, {
      system, host, count, wsRate: wsRateOf(process.env.BROWSER_BENCH_WS_RATE), split: process.env.BROWSER_BENCH_SPLIT ?? '',
      bulk: process.env.BROWSER_BENCH_BULK !== '0',
    });
    process.stdout.write(`${JSON.stringify({
      ...run, ipBytes: after.up.bytes - before.up.bytes, ipPackets: after.up.packets - before.up.packets,
      serverIpBytes: after.down.bytes - before.down.bytes, serverIpPackets: after.down.packets - before.down.packets,
    })}\n`);
    await page.close();
  }
} finally {
  await browser.close();
}
