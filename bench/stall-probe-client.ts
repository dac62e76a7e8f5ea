/**
 * Client side of bench/stall-probe.ts (run in the browser's namespace): headless Chromium loads the
 * page of bench/stall-probe-server.ts, connects with `connect({ transports: [STALL_TRANSPORT] })` (its
 * RTCPeerConnection and fetch wrapped to timestamp each phase), echoes one 100-byte message every
 * 20 ms on a reliable-ordered lane, and samples the data channel's `bufferedAmount` (every 10 ms) and
 * `getStats()` (every 250 ms). Prints `MARK start` / `MARK end` around the echo (the orchestrator reads
 * the namespaces' IP counters there) and one JSON line at the end.
 * Usage: tsx bench/stall-probe-client.ts SERVER_HOST COUNT. Environment: STALL_TRANSPORT (`webrtc`,
 * default, or `websocket`), STALL_CLIENT_REDUNDANCY (the client's `channels.redundancy`),
 * STALL_ACK_DELAY (the client's `acks.maxAckDelayMs`, ms),
 * STALL_SIMPLE_POST=1 (send the offer as `text/plain` even with an older `connect`), STALL_CHROME_LOG.
 */
import { chromium } from 'playwright-core';

const [host = '10.99.0.2', countArg = '1000'] = process.argv.slice(2);
const count = Number(countArg);
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--disable-features=WebRtcHideLocalIpsWithMdns', '--allow-loopback-in-peer-connection',
];

// STALL_CHROME_LOG=1 (with DEBUG=pw:browser): Chromium's log on stderr with WebRTC's verbose level, where dcsctp prints every SCTP packet (text pcap).
const log = process.env.STALL_CHROME_LOG;
const logArgs = log === undefined ? [] : ['--enable-logging=stderr', '--v=0', '--vmodule=*/webrtc/*=3,*dcsctp*=3,*sctp*=3'];
const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: [...ARGS, ...logArgs] });
try {
  const page = await browser.newPage();
  await page.addInitScript('window.__name = (f) => f');
  await page.goto(`http://${host}:8181/`);
  await page.waitForFunction(() => (window as unknown as { gw?: unknown }).gw !== undefined);
  await page.exposeFunction('mark', (what: string) => void process.stdout.write(`MARK ${what}\n`));
  const result = await page.evaluate(async ({ host, count, simple, red, ackDelay, transport }) => {
    const w = window as unknown as {
      mark(what: string): Promise<void>;
      gw: { connect(o: object): Promise<{ client: { send(l: number, b: Uint8Array): number; stats(): unknown; counters(): unknown }; close(): Promise<void> }> };
    };
    const now = (): number => performance.timeOrigin + performance.now();
    const phases: Array<[string, number]> = [];
    const T = (what: string): void => void phases.push([what, now()]);
    let dc: RTCDataChannel | undefined;
    let pc: RTCPeerConnection | undefined;
    class Rtc extends RTCPeerConnection {
      constructor(c?: RTCConfiguration) {
        super(c);
        pc = this;
        T('pc');
        this.addEventListener('icegatheringstatechange', () => T(`gathering-${this.iceGatheringState}`));
        this.addEventListener('iceconnectionstatechange', () => T(`ice-${this.iceConnectionState}`));
        this.addEventListener('connectionstatechange', () => T(`pc-${this.connectionState}`));
        this.addEventListener('icecandidate', (e) => T(`candidate ${e.candidate?.candidate ?? 'end'}`));
      }
      override createDataChannel(label: string, o?: RTCDataChannelInit): RTCDataChannel {
        const d = super.createDataChannel(label, o);
        dc = d;
        d.addEventListener('open', () => T('dc-open'));
        return d;
      }
      override async setRemoteDescription(d: RTCSessionDescriptionInit): Promise<void> {
        T('set-remote');
        await super.setRemoteDescription(d);
        this.sctp?.transport.addEventListener('statechange', () => T(`dtls-${this.sctp?.transport.state}`));
      }
    }
    const post: typeof fetch = async (input, init) => {
      T('post');
      const r = await fetch(input, simple ? { ...init, headers: { 'content-type': 'text/plain' } } : init);
      T('answer');
      return r;
    };
    const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
    const sentAt = new Map<number, number>();
    const rtts: Array<[number, number, number]> = [];
    let connected = false;
    const token = Uint8Array.from(atob(await (await fetch('/token')).text()), (c) => c.charCodeAt(0));
    T('connect');
    const conn = await w.gw.connect({
      url: `http://${host}:8180/gamewire`, token, transports: [transport], openTimeoutMs: 30_000, RTCPeerConnection: Rtc, fetch: post,
      lanes: [{ mode: 'reliable-ordered' }], ...(red === undefined ? {} : { channels: { redundancy: red === 'auto' ? 'auto' : Number(red) } }),
      ...(ackDelay === undefined ? {} : { acks: { maxAckDelayMs: Number(ackDelay) } }),
      onEvent: (e: { type: string; bytes?: Uint8Array }) => {
        if (e.type === 'connected') {
          connected = true;
          T('connected');
        }
        if (e.type === 'message') {
          const id = new DataView(e.bytes!.buffer, e.bytes!.byteOffset).getUint32(0, true);
          const t = sentAt.get(id);
          if (t !== undefined) {
            sentAt.delete(id);
            rtts.push([id, t, now()]);
          }
        }
      },
    }).catch((e: unknown) => ({ failed: String(e) }));
    if ('failed' in conn) return { error: conn.failed, phases };
    for (let i = 0; i < 3000 && !connected; i++) await sleep(5);
    if (!connected) return { error: 'no netcode connection', phases };
    const buffered: Array<[number, number]> = [];
    let last = -1;
    const sampler = setInterval(() => {
      const b = dc?.bufferedAmount ?? -1;
      if (b !== last) buffered.push([now(), b]);
      last = b;
    }, 10);
    const stats: unknown[] = [];
    const statsTimer = setInterval(() => {
      void pc?.getStats().then((r) => {
        const row: Record<string, unknown> = { t: now() };
        r.forEach((s: Record<string, unknown>) => {
          if (s.type === 'transport') Object.assign(row, { tPs: s.packetsSent, tBs: s.bytesSent, tPr: s.packetsReceived, tBr: s.bytesReceived });
          if (s.type === 'data-channel') Object.assign(row, { mS: s.messagesSent, bS: s.bytesSent, mR: s.messagesReceived });
          if (s.type === 'candidate-pair' && s.nominated === true) Object.assign(row, { rtt: s.currentRoundTripTime, cpS: s.packetsSent, cpR: s.packetsReceived });
        });
        stats.push(row);
      });
    }, 250);
    const statsBefore = conn.client.stats();
    await w.mark('start');
    const body = (id: number): Uint8Array => {
      const b = new Uint8Array(100);
      new DataView(b.buffer).setUint32(0, id, true);
      return b;
    };
    const t0 = now();
    for (let i = 0; i < count; i++) {
      sentAt.set(i, now());
      conn.client.send(0, body(i));
      // On a schedule, not after each sleep: a late timer does not shift later messages.
      const due = t0 + (i + 1) * 20;
      await sleep(Math.max(0, due - now()));
    }
    for (let waited = 0; sentAt.size > 0 && waited < 20_000; waited += 50) await sleep(50);
    await w.mark('end');
    const statsAfter = conn.client.stats();
    clearInterval(sampler);
    clearInterval(statsTimer);
    await conn.close();
    return { phases, rtts, missing: [...sentAt.keys()], buffered, stats, statsBefore, statsAfter, sendTimes: [...Array(count).keys()].map((i) => t0 + i * 20) };
  }, { host, count, simple: process.env.STALL_SIMPLE_POST === '1', red: process.env.STALL_CLIENT_REDUNDANCY, ackDelay: process.env.STALL_ACK_DELAY, transport: process.env.STALL_TRANSPORT ?? 'webrtc' });
  process.stdout.write(`${JSON.stringify(result)}\n`);
} finally {
  await browser.close();
}
