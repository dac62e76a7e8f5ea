// A measurement run by hand (not part of `npm test`): what N slow-header HTTP connections cost a
// BrowserGateway endpoint, and whether a real player gets in meanwhile.
//
//   node --expose-gc --import tsx test/adapters/webrtc-slow-clients.ts [--connections 1000] [--addresses 1]
//        [--max-connections N] [--per-address N] [--headers-timeout MS] [--request-timeout MS]
//
// This process is the server (its memory is what is measured); a child process opens the connections
// from 127.0.1.1 … 127.0.1.<addresses> (loopback, spread evenly), each sending a partial request and
// then nothing, and, once they are open, connects one player from 127.0.0.1 over WebRTC.
import { fork } from 'node:child_process';
import { connect as tcpConnect, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import ndc from 'node-datachannel';
import { RTCPeerConnection as PolyfillPeer } from 'node-datachannel/polyfill';
import { connectWebRtc } from '../../src/adapters/browser/connect.js';
import { BrowserGateway } from '../../src/adapters/node/gateway.js';
import { systemUnixTime, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { Server } from '../../src/netcode/server.js';
import { generateConnectToken } from '../../src/netcode/wire.js';

const KEY = Uint8Array.from({ length: 32 }, (_, i) => i + 3);
const PROTOCOL = 0x5105n;
const UDP = '127.0.0.1:40003';

function arg(name: string): number | undefined {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? undefined : Number(process.argv[i + 1]);
}

type ToParent =
  | { type: 'opened'; ms: number; closedAtOnce: number }
  | { type: 'player'; ms: number; ok: boolean; why?: string }
  | { type: 'allClosed'; ms: number };

async function child(url: string, n: number, addresses: number): Promise<void> {
  const send = (m: ToParent): void => void process.send!(m);
  const u = new URL(url);
  const head = `POST ${u.pathname} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: appl`;
  let closed = 0;
  let allClosed!: () => void;
  const closedAll = new Promise<void>((r) => (allClosed = r));
  if (n === 0) allClosed();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: n }, (_, i) => new Promise<Socket>((resolve) => {
    const s = tcpConnect({ host: u.hostname, port: Number(u.port), localAddress: `127.0.1.${1 + (i % addresses)}` });
    s.on('error', () => undefined);
    s.resume();
    s.on('close', () => {
      closed++;
      resolve(s);
      if (closed === n) {
        send({ type: 'allClosed', ms: performance.now() - t0 });
        allClosed();
      }
    });
    s.on('connect', () => {
      s.write(head);
      resolve(s);
    });
  })));
  // Sockets refused at once see their close within a few ms of connecting.
  await new Promise((r) => setTimeout(r, 100));
  send({ type: 'opened', ms: performance.now() - t0, closedAtOnce: closed });
  class LoopbackPeer extends PolyfillPeer {
    constructor(c: RTCConfiguration = {}) {
      super({ ...c, peerConnection: new ndc.PeerConnection('player', { iceServers: [], bindAddress: '127.0.0.1' }) } as RTCConfiguration);
    }
  }
  const token = generateConnectToken({
    protocolId: PROTOCOL, privateKey: KEY, clientId: 1n, serverAddresses: [UDP],
    nowUnixSeconds: Math.floor(systemUnixTime()), expireSeconds: 60, timeoutSeconds: 5,
  });
  const p0 = performance.now();
  try {
    let connected!: () => void;
    const done = new Promise<void>((r) => (connected = r));
    const conn = await connectWebRtc({
      url, token, RTCPeerConnection: LoopbackPeer as never, onEvent: (e) => e.type === 'connected' && connected(),
    });
    await done;
    send({ type: 'player', ms: performance.now() - p0, ok: true });
    await conn.close();
  } catch (err) {
    send({ type: 'player', ms: performance.now() - p0, ok: false, why: String(err) });
  }
  await closedAll;
  ndc.cleanup();
  process.disconnect();
}

async function parent(): Promise<void> {
  const n = arg('connections') ?? 1000;
  const addresses = arg('addresses') ?? 1;
  const server = new Server({ protocolId: PROTOCOL, privateKey: KEY, addresses: [UDP], unixTime: systemUnixTime, maxClients: 64 });
  const driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port: 0 });
  const options = {
    host: '127.0.0.1',
    ...(arg('max-connections') === undefined ? {} : { maxConnections: arg('max-connections') }),
    ...(arg('per-address') === undefined ? {} : { maxConnectionsPerAddress: arg('per-address') }),
    ...(arg('headers-timeout') === undefined ? {} : { headersTimeoutMs: arg('headers-timeout') }),
    ...(arg('request-timeout') === undefined ? {} : { requestTimeoutMs: arg('request-timeout') }),
  };
  const signalling = await BrowserGateway.open(driver, server, options);
  const gc = (globalThis as { gc?: () => void }).gc;
  const mem = (): { rss: number; heap: number } => {
    const m = process.memoryUsage();
    return { rss: m.rss, heap: m.heapUsed };
  };
  const settle = async (): Promise<{ rss: number; heap: number }> => {
    for (let i = 0; i < 3; i++) {
      gc?.();
      await new Promise((r) => setTimeout(r, 50));
    }
    return mem();
  };
  const MB = (b: number): string => (b / 2 ** 20).toFixed(1);
  const before = await settle();
  let peak = mem();
  const sampler = setInterval(() => {
    const m = mem();
    peak = { rss: Math.max(peak.rss, m.rss), heap: Math.max(peak.heap, m.heap) };
  }, 10);
  const t0 = performance.now();
  const c = fork(fileURLToPath(import.meta.url), ['--child', signalling.url, String(n), String(addresses)], { execArgv: ['--import', 'tsx'] });
  const lines: string[] = [];
  let held = 0;
  await new Promise<void>((resolve) => {
    c.on('message', (m: ToParent) => {
      if (m.type === 'opened') {
        held = n - m.closedAtOnce;
        lines.push(`connections made after ${m.ms.toFixed(0)} ms (+100 ms): ${held} held, ${m.closedAtOnce} closed (refused or evicted)`);
        lines.push(`server while they are held: rss ${MB(mem().rss)} MB, heap ${MB(mem().heap)} MB`);
      } else if (m.type === 'player') {
        lines.push(`player: ${m.ok ? 'connected' : `failed (${m.why})`} in ${m.ms.toFixed(0)} ms`);
      } else {
        lines.push(`every connection closed by the server ${m.ms.toFixed(0)} ms after the first connect`);
      }
    });
    c.on('exit', () => resolve());
  });
  clearInterval(sampler);
  const after = await settle();
  const ctr = signalling.counters();
  console.log(`${n} slow-header connections from ${addresses} address(es); options ${JSON.stringify(options)}; gc ${gc === undefined ? 'unavailable' : 'forced'}`);
  for (const l of lines) console.log(`  ${l}`);
  console.log(`  server memory: before rss ${MB(before.rss)} / heap ${MB(before.heap)} MB; peak rss ${MB(peak.rss)} / heap ${MB(peak.heap)} MB `
    + `(+${MB(peak.rss - before.rss)} / +${MB(peak.heap - before.heap)}); after rss ${MB(after.rss)} / heap ${MB(after.heap)} MB`);
  console.log(`  counters: connectionsRefused ${ctr.connectionsRefused}, connectionsEvicted ${ctr.connectionsEvicted}, `
    + `httpTimeouts ${ctr.httpTimeouts}, badRequests ${ctr.badRequests}, opened ${ctr.opened}; run ${(performance.now() - t0).toFixed(0)} ms`);
  server.close();
  await driver.close({ linger: { quietMs: 50, maxMs: 300 } });
  await signalling.close();
}

if (process.argv[2] === '--child') await child(process.argv[3]!, Number(process.argv[4]), Number(process.argv[5]));
else await parent();
