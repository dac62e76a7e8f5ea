/**
 * Browser side of `npm run bench:browser`, run inside the client's network namespace by
 * bench/browser.bench.ts: headless Chromium (Debian's, via playwright-core) loads the page of
 * bench/browser-server.ts and echoes one 100-byte message every 20 ms through each system in turn.
 * Usage: tsx bench/browser-client.ts SERVER_HOST COUNT SYSTEM[,SYSTEM…]
 * SYSTEM is gamewire, websocket, geckos, raw (a bare unreliable data channel; echo), block-ws (16 MiB
 * over the WebSocket, counted by the server) or block (a 16 MiB block browser → server on the
 * gamewire block lane). Prints one JSON line per run: { system, sent, rtts, missing, ms, ipBytes,
 * ipPackets } with the IP bytes and packets this namespace sent while the system ran (page load excluded).
 */
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';

/** IP bytes and packets sent from this network namespace so far (/proc/net is per namespace). */
function ipOut(): { bytes: number; packets: number } {
  const field = (file: string, prefix: string, name: string): number => {
    const rows = readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith(prefix));
    return Number(rows[1]!.split(/\s+/)[rows[0]!.split(/\s+/).indexOf(name)]);
  };
  return { bytes: field('/proc/net/netstat', 'IpExt:', 'OutOctets'), packets: field('/proc/net/snmp', 'Ip:', 'OutRequests') };
}

const [host = '10.99.0.2', countArg = '500', systemsArg = 'gamewire,websocket,geckos'] = process.argv.slice(2);
const count = Number(countArg);
const PAGE = `http://${host}:8081/`;
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--disable-features=WebRtcHideLocalIpsWithMdns', '--allow-loopback-in-peer-connection',
];

interface Run { system: string; sent: number; rtts: number[]; missing: number; ms: number; blockMs?: number; blockAckedBytes?: number; error?: string }

const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });
try {
  for (const system of systemsArg.split(',')) {
    const page = await browser.newPage();
    // tsx (esbuild, keepNames) wraps the evaluated function's inner functions in __name(): give the page one.
    await page.addInitScript('window.__name = (f) => f');
    await page.goto(PAGE);
    await page.waitForFunction(() => (window as unknown as { gw?: unknown; geckos?: unknown }).gw !== undefined);
    let before = ipOut();
    let after = before;
    await page.exposeFunction('markStart', () => void (before = ipOut()));
    await page.exposeFunction('markEnd', () => void (after = ipOut()));
    const run = await page.evaluate(async ({ system, host, count }): Promise<Run> => {
      const w = window as unknown as {
        markStart(): Promise<void>;
        markEnd(): Promise<void>;
        gw: { connectWebRtc(o: object): Promise<{ client: { send(l: number, b: Uint8Array, notice?: boolean): number; blockProgress(): { sending: { current?: { ackedBytes: number } } } | undefined }; close(): Promise<void> }> };
        geckos: (o: object) => { onConnect(cb: (err?: unknown) => void): void; emit(e: string, d: unknown, o: object): void; on(e: string, cb: (d: unknown) => void): void; close(): void };
      };
      const INTERVAL = 20;
      const sentAt = new Map<number, number>();
      const rtts: number[] = [];
      const echoed = (id: number): void => {
        const t = sentAt.get(id);
        if (t === undefined) return;
        sentAt.delete(id);
        rtts.push(performance.now() - t);
      };
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
      let send: (id: number) => void;
      let close: () => void | Promise<void>;
      const t0 = performance.now();
      try {
        if (system === 'gamewire' || system === 'block') {
          const token = Uint8Array.from(atob(await (await fetch('/token')).text()), (c) => c.charCodeAt(0));
          let connected = false;
          let blockDone = false;
          const conn = await w.gw.connectWebRtc({
            url: `http://${host}:8080/gamewire`, token, openTimeoutMs: 30_000,
            lanes: [{ mode: 'reliable-ordered' }, { mode: 'block', maxMessageBytes: 16 << 20 }],
            onEvent: (e: { type: string; bytes?: Uint8Array; lane?: number; delivered?: boolean }) => {
              if (e.type === 'connected') connected = true;
              if (e.type === 'message') echoed(new DataView(e.bytes!.buffer, e.bytes!.byteOffset).getUint32(0, true));
              if (e.type === 'delivery' && e.lane === 1) blockDone = e.delivered === true;
            },
          });
          for (let i = 0; i < 3000 && !connected; i++) await sleep(10);
          if (!connected) throw new Error('no netcode connection');
          if (system === 'block') {
            await w.markStart();
            const b0 = performance.now();
            conn.client.send(1, new Uint8Array(16 << 20).fill(7), true);
            for (let waited = 0; !blockDone && waited < 180_000; waited += 50) await sleep(50);
            const blockMs = performance.now() - b0;
            const acked = blockDone ? 16 << 20 : (conn.client.blockProgress()?.sending.current?.ackedBytes ?? 0);
            await w.markEnd();
            await conn.close();
            return { system, sent: 1, rtts: [], missing: blockDone ? 0 : 1, ms: performance.now() - t0, blockMs, blockAckedBytes: acked };
          }
          send = (id) => void conn.client.send(0, body(id));
          close = () => conn.close();
        } else if (system === 'raw') {
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
          dc.onmessage = (e) => echoed(new DataView(e.data as ArrayBuffer).getUint32(0, true));
          send = (id) => dc.send(body(id));
          close = () => pc.close();
        } else if (system === 'block-ws') {
          const ws = await openWs();
          let acked = 0;
          ws.onmessage = (e) => void (acked = new DataView(e.data as ArrayBuffer).getUint32(0, true));
          await w.markStart();
          const b0 = performance.now();
          const chunk = new Uint8Array(64 << 10).fill(7);
          for (let i = 0; i < 256; i++) ws.send(chunk);
          for (let waited = 0; acked < 16 << 20 && waited < 180_000; waited += 50) await sleep(50);
          const blockMs = performance.now() - b0;
          await w.markEnd();
          ws.close();
          return { system, sent: 1, rtts: [], missing: acked < 16 << 20 ? 1 : 0, ms: performance.now() - t0, blockMs, blockAckedBytes: acked };
        } else if (system === 'websocket') {
          const ws = await openWs();
          ws.onmessage = (e) => echoed(new DataView(e.data as ArrayBuffer).getUint32(0, true));
          send = (id) => ws.send(body(id));
          close = () => ws.close();
        } else {
          const ch = w.geckos({ url: `http://${host}`, port: 9208 });
          await new Promise<void>((resolve, reject) => ch.onConnect((err) => (err ? reject(new Error(String(err))) : resolve())));
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
        return { system, sent: count, rtts, missing: sentAt.size, ms: performance.now() - t0 };
      } catch (err) {
        return { system, sent: count, rtts, missing: sentAt.size, ms: performance.now() - t0, error: String(err) };
      }
    }, { system, host, count });
    process.stdout.write(`${JSON.stringify({ ...run, ipBytes: after.bytes - before.bytes, ipPackets: after.packets - before.packets })}\n`);
    await page.close();
  }
} finally {
  await browser.close();
}
