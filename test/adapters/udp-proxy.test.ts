import { createSocket, type Socket } from 'node:dgram';
import { describe, expect, it, vi } from 'vitest';
import { UdpLinkProxy } from '../../src/adapters/node/udp-proxy.js';
import { until } from './helpers.js';

async function bound(): Promise<Socket> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
  return s;
}

// Vitest's fake timers replace the global setTimeout; waits on real I/O keep the real one.
const realSetTimeout = globalThis.setTimeout;

/** Poll `pred` every 5 ms of real time (real timers even while faked); throws, naming `what`, after 10 s. */
async function untilReal(pred: () => boolean, what: string): Promise<void> {
  const end = performance.now() + 10_000;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`timed out after 10000 ms waiting for ${what}`);
    await new Promise((r) => realSetTimeout(r, 5));
  }
}

describe('UdpLinkProxy over real loopback', () => {
  it('holds each datagram exactly the configured one-way delay in each direction (virtual clock, fake timer)', async () => {
    // Real sockets, simulated time: the proxy reads a clock the test moves, and its one timer is a
    // fake one the test fires, so no scheduling delay of a busy machine can move a result.
    let now = 0;
    const server = await bound();
    const client = await bound();
    const atServer: number[] = [];
    const atClient: string[] = [];
    server.on('message', (m, r) => {
      atServer.push(now);
      server.send(m, r.port, r.address);
    });
    client.on('message', (m) => atClient.push(`${m.toString()}@${now}`));
    const proxy = await UdpLinkProxy.open({
      listenHost: '127.0.0.1',
      target: { host: '127.0.0.1', port: server.address().port },
      toServer: { latencyMs: 25 },
      clock: () => now,
    });
    try {
      // Installed after open (nothing is in a link yet, so no timer is armed before).
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
      const advance = (ms: number): void => {
        now += ms;
        vi.advanceTimersByTime(ms);
      };
      const announced: unknown[] = [];
      proxy.on('client', (c) => announced.push(c));
      client.send(Buffer.from('ping'), proxy.local.port, '127.0.0.1');
      await untilReal(() => announced.length === 1, 'the client event');
      expect(announced).toEqual([{ host: '127.0.0.1', port: client.address().port }]);
      expect(proxy.counters().toServer).toMatchObject({ sent: 1, delivered: 0 });
      advance(24);
      expect(proxy.counters().toServer.delivered).toBe(0);
      advance(1);
      expect(proxy.counters().toServer.delivered).toBe(1);
      // The echo enters the server→client link at 25 and its drain arms the timer for 50.
      await untilReal(() => proxy.counters().toClient.sent === 1 && vi.getTimerCount() === 1, 'the echo inside the proxy');
      expect(atServer).toEqual([25]);
      advance(24);
      expect(proxy.counters().toClient.delivered).toBe(0);
      advance(1);
      expect(proxy.counters().toClient.delivered).toBe(1);
      await untilReal(() => atClient.length === 1, 'the echo at the client');
      expect(atClient).toEqual(['ping@50']);
      expect(proxy.clients).toEqual([{ host: '127.0.0.1', port: client.address().port }]);
    } finally {
      vi.useRealTimers();
      client.close();
      server.close();
      await proxy.close();
    }
  });

  it('delivers a burst of distinct replies to the client intact (regression: a deferred send reused the buffer)', async () => {
    const server = await bound();
    // Each datagram from the client makes the server answer with 20 distinct datagrams at once.
    server.on('message', (_m, r) => {
      for (let i = 0; i < 20; i++) server.send(Buffer.alloc(10 + i, i), r.port, r.address);
    });
    const proxy = await UdpLinkProxy.open({
      listenHost: '127.0.0.1',
      target: { host: '127.0.0.1', port: server.address().port },
      toServer: { latencyMs: 5 },
    });
    const client = await bound();
    const got: Buffer[] = [];
    client.on('message', (m) => got.push(m));
    client.send(Buffer.from('go'), proxy.local.port, '127.0.0.1');
    await until(() => got.length === 20, 'twenty replies');
    for (const m of got) expect(m.equals(Buffer.alloc(m.length, m.length - 10)), `reply of ${m.length} bytes`).toBe(true);
    client.close();
    server.close();
    await proxy.close();
  });

  it('drops a seeded share of datagrams: loss 0.5 on the way in loses about half of 400', async () => {
    const server = await bound();
    let got = 0;
    server.on('message', () => got++);
    const proxy = await UdpLinkProxy.open({
      listenHost: '127.0.0.1',
      target: { host: '127.0.0.1', port: server.address().port },
      toServer: { loss: 0.5 },
      seed: 7,
    });
    const client = await bound();
    for (let i = 0; i < 400; i++) client.send(Buffer.alloc(100, i), proxy.local.port, '127.0.0.1');
    await until(() => got + proxy.counters().toServer.droppedLoss === 400, 'every datagram delivered or dropped');
    const c = proxy.counters();
    expect(c.toServer.sent).toBe(400);
    expect(c.toServer.droppedLoss).toBeGreaterThan(140);
    expect(c.toServer.droppedLoss).toBeLessThan(260);
    expect(got).toBe(400 - c.toServer.droppedLoss);
    client.close();
    server.close();
    await proxy.close();
  });

  it('serves many clients: each through its own links and upstream socket, each getting its own replies', async () => {
    const server = await bound();
    const seen = new Set<string>();
    server.on('message', (m, r) => {
      seen.add(`${r.address}:${r.port}`);
      server.send(m, r.port, r.address);
    });
    const proxy = await UdpLinkProxy.open({
      listenHost: '127.0.0.1',
      target: { host: '127.0.0.1', port: server.address().port },
      toServer: { latencyMs: 5 },
      maxClients: 3,
    });
    const clients = await Promise.all([bound(), bound(), bound(), bound()]);
    const got = clients.map(() => [] as string[]);
    clients.forEach((c, i) => c.on('message', (m) => got[i]!.push(m.toString())));
    for (let k = 0; k < 5; k++) clients.forEach((c, i) => c.send(Buffer.from(`c${i} m${k}`), proxy.local.port, '127.0.0.1'));
    await until(() => got.slice(0, 3).every((g) => g.length === 5), 'five echoes for each of three clients');
    for (let i = 0; i < 3; i++) expect(got[i]!.sort()).toEqual([0, 1, 2, 3, 4].map((k) => `c${i} m${k}`));
    expect(got[3]).toEqual([]);
    expect(seen.size).toBe(3);
    const c = proxy.counters();
    expect(c.clients).toBe(3);
    expect(c.clientsRefused).toBe(5);
    expect(c.toServer.delivered).toBe(15);
    expect(proxy.clients).toHaveLength(3);
    for (const s of clients) s.close();
    server.close();
    await proxy.close();
  });

  it('at maxClients a new client takes the slot of one quiet for clientIdleMs, not of a busy one (virtual clock)', async () => {
    let now = 0;
    const server = await bound();
    server.on('message', (m, r) => server.send(m, r.port, r.address));
    const proxy = await UdpLinkProxy.open({
      listenHost: '127.0.0.1', target: { host: '127.0.0.1', port: server.address().port }, maxClients: 1, clientIdleMs: 100,
      clock: () => now,
    });
    const [a, b] = await Promise.all([bound(), bound()]);
    const got = { a: 0, b: 0 };
    a.on('message', () => got.a++);
    b.on('message', () => got.b++);
    // Each datagram from b is either refused or takes the slot: wait for either, then check which.
    const decided = async (n: number): Promise<number> => {
      await until(() => proxy.counters().clientsRefused + proxy.counters().clientsExpired === n, `b's datagram ${n} decided`);
      return proxy.counters().clientsRefused;
    };
    a.send(Buffer.from('a1'), proxy.local.port, '127.0.0.1');
    await until(() => got.a === 1, 'a echoed');
    b.send(Buffer.from('b1'), proxy.local.port, '127.0.0.1'); // a active at 0: refused
    expect(await decided(1)).toBe(1);
    now = 60;
    a.send(Buffer.from('a2'), proxy.local.port, '127.0.0.1');
    await until(() => got.a === 2, 'a echoed again');
    now = 159.5;
    b.send(Buffer.from('b2'), proxy.local.port, '127.0.0.1'); // a quiet for 99.5 ms: refused
    expect(await decided(2)).toBe(2);
    now = 160;
    b.send(Buffer.from('b3'), proxy.local.port, '127.0.0.1'); // a quiet for 100 ms: b takes its slot
    await until(() => got.b === 1, 'b echoed');
    const c = proxy.counters();
    expect([c.clients, c.clientsExpired, c.clientsRefused]).toEqual([2, 1, 2]);
    expect(proxy.clients).toEqual([{ host: '127.0.0.1', port: b.address().port }]);
    for (const s of [a, b, server]) s.close();
    await proxy.close();
  });

  it('a target host that does not resolve rejects open() with invalid-argument (it used to start, then crash on the first datagram)', async () => {
    await expect(UdpLinkProxy.open({ target: { host: 'nosuch.invalid', port: 1 } })).rejects.toMatchObject({ code: 'invalid-argument' });
  });

  it('refuses a bad link config before binding', async () => {
    await expect(UdpLinkProxy.open({ target: { host: '127.0.0.1', port: 9 }, toServer: { loss: 2 } })).rejects.toMatchObject({
      code: 'invalid-config',
    });
  });
});
