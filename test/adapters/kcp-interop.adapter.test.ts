import { createSocket, type Socket } from 'node:dgram';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { afterEach, describe, expect, it } from 'vitest';
import { KcpUdpClient, KcpUdpServer } from '../../src/adapters/node/kcp.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import type { KcpOptions } from '../../src/kcp/kcp.js';
import { nodeKcp, type NodeKcp } from '../kcp/oracle.js';
import { waitFor } from './helpers.js';

// Live interop over real loopback UDP: our KCP (session layer in raw mode, Node adapter) against the
// C ikcp.c inside node-kcp, both directions, message and stream mode.

const FAST = { nodelay: 1, interval: 10, resend: 2, nc: 1 };
const OURS: Omit<KcpOptions, 'mtu'> = { nodelay: 1, interval: 10, resend: 2, nc: true, sndWnd: 128, rcvWnd: 128 };

const cleanups: (() => void | Promise<void>)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

function payloads(seed: number, count: number, maxSize: number): Uint8Array[] {
  const rng = new NonCryptoRng(seed);
  return Array.from({ length: count }, () => rng.fill(new Uint8Array(rng.nextRange(1, maxSize))));
}

function concat(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

async function udp(): Promise<Socket> {
  const s = createSocket('udp4');
  s.bind(0, '127.0.0.1');
  await once(s, 'listening');
  cleanups.push(() => new Promise<void>((r) => s.close(() => r())));
  return s;
}

/** A node-kcp endpoint on `socket`, updated every 5 ms; `received` collects what `recv()` returns. */
function cEndpoint(socket: Socket, conv: number, to: { host: string; port: number }, stream: boolean): { kcp: NodeKcp; received: Uint8Array[] } {
  const KCP = nodeKcp();
  const kcp = new KCP(conv);
  kcp.output((d: Buffer, size: number) => socket.send(d, 0, size, to.port, to.host));
  kcp.nodelay(FAST.nodelay, FAST.interval, FAST.resend, FAST.nc);
  kcp.wndsize(128, 128);
  if (stream) kcp.stream(1);
  const received: Uint8Array[] = [];
  const t = setInterval(() => {
    kcp.update(Math.floor(performance.now()));
    for (let m = kcp.recv(); m !== undefined; m = kcp.recv()) received.push(new Uint8Array(m));
  }, 5);
  cleanups.push(() => {
    clearInterval(t);
    kcp.release();
  });
  return { kcp, received };
}

describe('KCP live interop over loopback UDP: ours <-> C (node-kcp)', () => {
  for (const stream of [false, true]) {
    const label = stream ? 'stream' : 'message';

    it(`C client -> our KcpUdpServer (echo), ${label} mode`, async () => {
      const server = await KcpUdpServer.open({ host: '127.0.0.1', kcp: { ...OURS, stream }, keepAliveMs: 0 });
      cleanups.push(() => server.close());
      server.on('message', (s, data) => s.send(data));
      const sock = await udp();
      const c = cEndpoint(sock, 0x5eed, { host: '127.0.0.1', port: server.local.port }, stream);
      sock.on('message', (m) => c.kcp.input(m));
      const msgs = payloads(stream ? 11 : 12, 150, 4000);
      for (const m of msgs) c.kcp.send(Buffer.from(m));
      const total = msgs.reduce((n, m) => n + m.length, 0);
      expect(await waitFor(() => c.received.reduce((n, m) => n + m.length, 0) >= total, 8000)).toBe(true);
      if (stream) expect(Buffer.from(concat(c.received)).equals(Buffer.from(concat(msgs)))).toBe(true);
      else expect(c.received.map((m) => Buffer.from(m).toString('hex'))).toEqual(msgs.map((m) => Buffer.from(m).toString('hex')));
      expect(server.server.sessionCount).toBe(1);
      expect(server.server.counters().droppedMalformed).toBe(0);
    });

    it(`our KcpUdpClient -> C echo server, ${label} mode`, async () => {
      const sock = await udp();
      const port = sock.address().port;
      const peers = new Map<string, ReturnType<typeof cEndpoint>>();
      sock.on('message', (m, r) => {
        const key = `${r.address}:${r.port}#${m.readUInt32LE(0)}`;
        let p = peers.get(key);
        if (p === undefined) {
          p = cEndpoint(sock, m.readUInt32LE(0), { host: r.address, port: r.port }, stream);
          const ep = p;
          const t = setInterval(() => {
            for (const d of ep.received.splice(0)) ep.kcp.send(Buffer.from(d));
          }, 5);
          cleanups.push(() => clearInterval(t));
          peers.set(key, p);
        }
        p.kcp.input(m);
      });
      const client = await KcpUdpClient.open({ server: { host: '127.0.0.1', port }, conv: 0xc0ffee, kcp: { ...OURS, stream } });
      cleanups.push(() => client.close());
      const got: Uint8Array[] = [];
      client.on('message', (_s, d) => got.push(d));
      await once(client, 'open');
      const msgs = payloads(stream ? 21 : 22, 150, 4000);
      for (const m of msgs) client.send(m);
      const total = msgs.reduce((n, m) => n + m.length, 0);
      expect(await waitFor(() => got.reduce((n, m) => n + m.length, 0) >= total, 8000)).toBe(true);
      if (stream) expect(Buffer.from(concat(got)).equals(Buffer.from(concat(msgs)))).toBe(true);
      else expect(got.map((m) => Buffer.from(m).toString('hex'))).toEqual(msgs.map((m) => Buffer.from(m).toString('hex')));
      expect(peers.size).toBe(1);
      expect(client.client.counters().droppedMalformed).toBe(0);
    });
  }
});
