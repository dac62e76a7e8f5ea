import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it, vi } from 'vitest';
import { GamewireError } from '../../src/core/errors.js';
import type { Address, Endpoint, Transmit } from '../../src/core/endpoint.js';
import { addressKey, parseAddressKey, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import type { SansIoPeer } from '../../src/core/peer.js';
import { ChunkReceiver, type ChunkReceiverEvent } from '../../src/chunk/receiver.js';
import { ChunkSender, type ChunkSenderEvent } from '../../src/chunk/sender.js';
import { PacketType, peekPacketType } from '../../src/chunk/wire.js';
import { PeerEndpoint } from '../../src/core/peer.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { nextEvent, until } from './helpers.js';

/** Sends `count` numbered 1000-byte datagrams at once and counts distinct echoes coming back. */
class Blaster implements SansIoPeer<{ type: 'all-echoed'; at: number }> {
  next = 0;
  readonly echoed: Uint8Array;
  distinct = 0;
  private done = false;
  private reported = false;
  constructor(readonly count: number) {
    this.echoed = new Uint8Array(count);
  }
  handleDatagram(now: number, bytes: Uint8Array): void {
    if (bytes.length !== 1000) return;
    const i = new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true);
    if (i < this.count && bytes[999] === (i & 0xff) && this.echoed[i] === 0) {
      this.echoed[i] = 1;
      this.distinct++;
      if (this.distinct === this.count) this.done = true;
    }
    void now;
  }
  handleTimeout(): void {}
  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    if (this.next >= this.count) return undefined;
    new DataView(out.buffer, out.byteOffset, 4).setUint32(0, this.next, true);
    out[999] = this.next & 0xff;
    this.next++;
    return 1000;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
  pollEvent(): { type: 'all-echoed'; at: number } | undefined {
    if (!this.done || this.reported) return undefined;
    this.reported = true;
    return { type: 'all-echoed', at: this.distinct };
  }
}

/** Echoes every datagram that starts with 0x47 ('G'), from a bounded queue. */
class Echo implements SansIoPeer {
  pollEvent(): undefined {
    return undefined;
  }
  private readonly queue: Uint8Array[] = [];
  dropped = 0;
  handleDatagram(_now: number, bytes: Uint8Array): void {
    if (this.queue.length >= 4096) {
      this.dropped++;
      return;
    }
    this.queue.push(bytes.slice());
  }
  handleTimeout(): void {}
  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    const d = this.queue.shift();
    if (d === undefined) return undefined;
    out.set(d);
    return d.length;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
}

/** Asks for one timeout `delayMs` after creation and reports when it ran. */
class OneShot implements SansIoPeer<{ due: number; ranAt: number }> {
  private due: number | undefined;
  private fired: { due: number; ranAt: number } | undefined;
  constructor(start: number, delayMs: number) {
    this.due = start + delayMs;
  }
  /** Every `now` (ms) handleTimeout was called with. */
  readonly timeouts: number[] = [];
  handleDatagram(): void {}
  handleTimeout(now: number): void {
    this.timeouts.push(now);
    if (this.due !== undefined && now >= this.due) {
      this.fired = { due: this.due, ranAt: now };
      this.due = undefined;
    }
  }
  pollTransmit(): number | undefined {
    return undefined;
  }
  pollTimeout(): number | undefined {
    return this.due;
  }
  pollEvent(): { due: number; ranAt: number } | undefined {
    const f = this.fired;
    this.fired = undefined;
    return f;
  }
}

/** Counts datagrams in and the drains (first pollTransmit after new input) that followed them. */
class DrainCounter implements SansIoPeer {
  pollEvent(): undefined {
    return undefined;
  }
  received = 0;
  drains = 0;
  private fresh = false;
  handleDatagram(): void {
    this.received++;
    this.fresh = true;
  }
  handleTimeout(): void {}
  pollTransmit(): number | undefined {
    if (this.fresh) this.drains++;
    this.fresh = false;
    return undefined;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
}

/** An addressed echo: every datagram goes back to the address it came from. */
class EchoEndpoint implements Endpoint<Address> {
  private readonly queue: { to: Address; data: Uint8Array }[] = [];
  private readonly seen = new Set<Address>();
  private readonly fresh: Address[] = [];
  private readonly t: Transmit = { length: 0, to: '' };
  handleDatagram(_now: number, from: Address, bytes: Uint8Array): void {
    if (!this.seen.has(from)) {
      this.seen.add(from);
      this.fresh.push(from);
    }
    if (this.queue.length < 1024) this.queue.push({ to: from, data: bytes.slice() });
  }
  handleTimeout(): void {}
  pollTransmit(_now: number, out: Uint8Array): Transmit | undefined {
    const d = this.queue.shift();
    if (d === undefined) return undefined;
    out.set(d.data);
    this.t.length = d.data.length;
    this.t.to = d.to;
    return this.t;
  }
  pollTimeout(): number | undefined {
    return undefined;
  }
  /** A remote seen for the first time. */
  pollEvent(): Address | undefined {
    return this.fresh.shift();
  }
  /** A command: send `text` to `to` (e.g. "not-an-address"); wakes the driver through the hook. */
  private waker: (() => void) | undefined;
  setWaker(w: (() => void) | undefined): void {
    this.waker = w;
  }
  say(to: Address, text: string): void {
    this.queue.push({ to, data: new TextEncoder().encode(text) });
    this.waker?.();
  }
}

function udpHandles(): number {
  return process.getActiveResourcesInfo().filter((r) => r === 'UDPWRAP').length;
}

describe('addressKey / parseAddressKey', () => {
  it('round-trips IPv4 and bracketed IPv6 and refuses what is not host:port', () => {
    expect(addressKey('127.0.0.1', 9000)).toBe('127.0.0.1:9000');
    expect(addressKey('::1', 9000)).toBe('[::1]:9000');
    expect(parseAddressKey('127.0.0.1:9000')).toEqual({ host: '127.0.0.1', port: 9000 });
    expect(parseAddressKey('[::1]:9000')).toEqual({ host: '::1', port: 9000 });
    expect(parseAddressKey('[fe80::1%eth0]:1')).toEqual({ host: 'fe80::1%eth0', port: 1 });
    for (const bad of ['', 'nohost', ':80', 'h:', 'h:x', 'h:70000', '[::1:80', 'h:1.5']) expect(parseAddressKey(bad), bad).toBeUndefined();
  });
});

describe('UdpDriver over real loopback', () => {
  it('feeds a burst of datagrams to the peer before draining once (so a receiver acks the batch)', async () => {
    const peer = new DrainCounter();
    const driver = await UdpDriver.open(peer, { host: '127.0.0.1' });
    const s = createSocket('udp4');
    await new Promise<void>((r) => s.bind(0, '127.0.0.1', () => r()));
    const payload = Buffer.alloc(100, 1);
    let acked = 0;
    const allSent = new Promise<void>((r) => {
      for (let i = 0; i < 24; i++) s.send(payload, driver.local.port, '127.0.0.1', () => ++acked === 24 && r());
    });
    await allSent;
    await until(() => peer.received === 24, 'the 24 datagrams at the driver');
    // All 24 were queued before the driver's socket was read: libuv hands over up to 32 per turn.
    expect(peer.drains).toBeGreaterThanOrEqual(1);
    expect(peer.drains).toBeLessThanOrEqual(3);
    s.close();
    await driver.close();
  });

  it('drains bursts larger than one turn, latches the remote and echoes every datagram', async () => {
    const echo = new Echo();
    const server = await UdpDriver.open(echo, { host: '127.0.0.1', maxSendsPerTick: 16 });
    const remoteSeen = once(server, 'remote');
    const blaster = new Blaster(2000);
    const client = await UdpDriver.open(blaster, {
      host: '127.0.0.1',
      remote: { host: '127.0.0.1', port: server.local.port },
      maxSendsPerTick: 16,
    });
    const [ev] = (await once(client, 'event')) as [{ type: string; at: number }];
    expect(ev).toEqual({ type: 'all-echoed', at: 2000 });
    const [latched] = await remoteSeen;
    expect(latched).toEqual({ host: '127.0.0.1', port: client.local.port });
    const c = client.counters();
    expect(c.datagramsOut).toBe(2000);
    expect(c.bytesOut).toBe(2_000_000);
    expect(c.datagramsIn).toBeGreaterThanOrEqual(2000);
    expect(server.counters().datagramsOut).toBe(server.counters().datagramsIn);
    expect(client.bufferSizes.recvRequested).toBe(4 * 1024 * 1024);
    expect(client.bufferSizes.recvGranted).toBeGreaterThan(0);
    await client.close();
    await server.close();
  });

  it('drops datagrams refused by acceptFirst and, once latched (and connected), ignores other addresses', async () => {
    const echo = new Echo();
    const server = await UdpDriver.open(echo, {
      host: '127.0.0.1',
      acceptFirst: (bytes) => bytes[0] === 0x47,
    });
    const stray = createSocket('udp4');
    await new Promise<void>((r) => stray.bind(0, '127.0.0.1', () => r()));
    const send = (s: typeof stray, text: string): Promise<void> =>
      new Promise((r) => s.send(Buffer.from(text), server.local.port, '127.0.0.1', () => r()));
    await send(stray, 'nope');
    const real = createSocket('udp4');
    await new Promise<void>((r) => real.bind(0, '127.0.0.1', () => r()));
    const reply = once(real, 'message');
    await send(real, 'G-hello');
    const [msg] = (await reply) as [Buffer];
    expect(msg.toString()).toBe('G-hello');
    await send(stray, 'G-intruder');
    const reply2 = once(real, 'message');
    await send(real, 'G-again');
    expect(((await reply2) as [Buffer])[0].toString()).toBe('G-again');
    // The refused one is counted; after the latch the kernel filters the intruder (connected socket).
    expect(server.counters().foreignDropped).toBe(1);
    expect(server.counters().datagramsIn).toBe(2);
    expect(echo.dropped).toBe(0);
    expect(server.remote).toEqual({ host: '127.0.0.1', port: real.address().port });
    stray.close();
    real.close();
    await server.close();
  });

  it('wakes the peer with its single timer at pollTimeout(), not before (virtual clock, fake timer)', async () => {
    // The driver reads a clock the test moves and arms a fake timer the test fires, so a busy
    // machine's scheduling delay cannot move the result: the wake-up is exact, or wrong.
    let now = 1000;
    const peer = new OneShot(now, 30);
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    let driver: UdpDriver<{ due: number; ranAt: number }> | undefined;
    try {
      driver = await UdpDriver.open(peer, { host: '127.0.0.1', clock: () => now });
      const events: unknown[] = [];
      driver.on('event', (e) => events.push(e));
      await new Promise((r) => setImmediate(r)); // open's own events are emitted in the check phase
      const advance = (ms: number): void => {
        now += ms;
        vi.advanceTimersByTime(ms);
      };
      expect(vi.getTimerCount()).toBe(1);
      advance(29);
      expect(driver.counters().timerWakeups).toBe(0);
      expect(peer.timeouts).toEqual([]);
      advance(1);
      expect(driver.counters().timerWakeups).toBe(1);
      expect(peer.timeouts).toEqual([1030]);
      expect(events).toEqual([{ due: 1030, ranAt: 1030 }]);
      // No deadline left: no timer.
      expect(vi.getTimerCount()).toBe(0);
    } finally {
      vi.useRealTimers();
      await driver?.close();
    }
  });

  it('an event the peer has at open reaches a listener attached after open resolves (open and openEndpoint)', async () => {
    const one = await UdpDriver.open(new OneShot(0, 0), { host: '127.0.0.1', clock: () => 5 });
    const seen: unknown[] = [];
    one.on('event', (e) => seen.push(e));
    const many = await UdpDriver.openEndpoint(new PeerEndpoint(new OneShot(0, 0), '127.0.0.1:9'), { host: '127.0.0.1', clock: () => 7 });
    many.on('event', (e) => seen.push(e));
    try {
      await until(() => seen.length === 2, 'both events');
      expect(seen).toEqual([{ due: 0, ranAt: 5 }, { due: 0, ranAt: 7 }]);
    } finally {
      await one.close();
      await many.close();
    }
  });

  it('a listener that throws with nobody on \'error\' is reported to the logger given, not the console', async () => {
    const reported: [string, unknown][] = [];
    const logger = { error: (message: string, error: unknown): void => void reported.push([message, error]) };
    const printed = vi.spyOn(console, 'error').mockImplementation(() => {});
    const driver = await UdpDriver.open(new OneShot(0, 0), { host: '127.0.0.1', clock: () => 5, logger });
    driver.on('event', () => {
      throw new Error('handler bug');
    });
    try {
      await until(() => reported.length === 1, 'the report');
      expect(reported[0]![0]).toMatch(/listener threw; the driver goes on/);
      expect((reported[0]![1] as Error).message).toBe('handler bug');
      expect(printed).not.toHaveBeenCalled();
      expect(driver.counters().handlerErrors).toBe(1);
    } finally {
      printed.mockRestore();
      await driver.close();
    }
    await expect(UdpDriver.open(new Echo(), { logger: {} as never })).rejects.toMatchObject({ code: 'invalid-config' });
  });

  it('kick() drains a command issued after open; ICMP refusals are counted, not thrown', async () => {
    const peer = new Blaster(0);
    const driver = await UdpDriver.open(peer, { host: '127.0.0.1', remote: { host: '127.0.0.1', port: 9 } });
    const errors: string[] = [];
    driver.on('socket-error', (e) => errors.push(e.code ?? '?'));
    expect(driver.counters().datagramsOut).toBe(0);
    for (let round = 0; round < 3; round++) {
      (peer as { count: number }).count += 5;
      driver.kick();
      driver.kick(); // coalesced
      await until(() => driver.counters().datagramsOut === 5 * (round + 1), `round ${round}'s 5 datagrams`);
    }
    await until(() => errors.length > 0, 'an ICMP refusal');
    const c = driver.counters();
    expect(c.datagramsOut).toBe(15);
    expect(c.sendErrors + c.recvErrors).toBeGreaterThan(0);
    expect(errors.length).toBe(c.sendErrors + c.recvErrors);
    expect(errors.every((e) => e === 'ECONNREFUSED')).toBe(true);
    await driver.close();
  });

  it('holds send buffers while the send queue is backed up (every send asynchronous) and still moves a block byte-exact', async () => {
    const child = fileURLToPath(new URL('./fixtures/queued-sends.ts', import.meta.url));
    const out = await new Promise<string>((resolve, reject) => {
      execFile(process.execPath, ['--test-udp-no-try-send', '--import', 'tsx', child], { timeout: 60_000 }, (err, stdout, stderr) => {
        if (err !== null) reject(new Error(`${err.message}\n${stderr}`));
        else resolve(stdout);
      });
    });
    const r = JSON.parse(out) as {
      exact: boolean; done: string; tx: Record<string, number>; rx: Record<string, number>; slices: number; resent: number;
    };
    expect(r.exact).toBe(true);
    expect(r.done).toBe('delivered');
    // A buffer reused before its queued send left goes out as a copy of a later datagram: the lost
    // slices then cost resends (4x the block when buffers were freed at once).
    expect(r.resent).toBeLessThan(r.slices / 2);
    // Callback-less sends found the queue non-empty and their buffers were held, never reused early.
    expect(r.tx.sendsQueued).toBeGreaterThan(10);
    expect(r.tx.sendErrors).toBe(0);
  });

  it('a command wakes the driver by itself: sendBlock after open, no kick()', async () => {
    const block = new NonCryptoRng(5).fill(new Uint8Array(200_000));
    const receiver = new ChunkReceiver({ maxBlockBytes: 1 << 20 });
    const rx = await UdpDriver.open<ChunkReceiverEvent>(receiver, { host: '127.0.0.1', acceptFirst: (b) => peekPacketType(b) === PacketType.Slice });
    const sender = new ChunkSender({ sessionId: 0x77 });
    const tx = await UdpDriver.open<ChunkSenderEvent>(sender, { host: '127.0.0.1', remote: { host: '127.0.0.1', port: rx.local.port } });
    // Idle now: no deadline, no timer. The block only leaves if sendBlock wakes the driver.
    expect(sender.pollTimeout()).toBeUndefined();
    const got = nextEvent<[ChunkReceiverEvent]>(rx, 'event');
    const done = nextEvent<[ChunkSenderEvent]>(tx, 'event');
    const id = sender.sendBlock(block);
    const [[ev], [d]] = await Promise.all([got, done]);
    expect(ev.type === 'block' && Buffer.from(ev.data).equals(Buffer.from(block))).toBe(true);
    expect(d).toMatchObject({ type: 'delivered', id });
    await tx.close();
    await rx.close();
  });

  it('openEndpoint: one Endpoint serves several remotes over IPv4 and IPv6, each answered at its own address', async () => {
    for (const host of ['127.0.0.1', '::1']) {
      const echo = new EchoEndpoint();
      const server = await UdpDriver.openEndpoint<Address>(echo, { host });
      const seen: Address[] = [];
      server.on('event', (a) => seen.push(a));
      const clients = await Promise.all(
        [0, 1, 2].map(
          () =>
            new Promise<ReturnType<typeof createSocket>>((r) => {
              const s = createSocket(host.includes(':') ? 'udp6' : 'udp4');
              s.bind(0, host, () => r(s));
            }),
        ),
      );
      const replies = clients.map((c, i) => {
        const got: string[] = [];
        c.on('message', (m) => got.push(m.toString()));
        for (let k = 0; k < 20; k++) c.send(Buffer.from(`c${i}-${k}`), server.local.port, host);
        return got;
      });
      await until(() => replies.every((r) => r.length === 20), `20 echoes to each client over ${host}`);
      replies.forEach((r, i) => expect(r).toEqual(Array.from({ length: 20 }, (_, k) => `c${i}-${k}`)));
      expect(seen.sort()).toEqual(clients.map((c) => addressKey(host, c.address().port)).sort());
      // A command with an unparsable destination is dropped and counted; a valid one leaves by itself.
      echo.say('not-an-address', 'x');
      echo.say(addressKey(host, clients[0].address().port), 'hello');
      await until(() => replies[0].length === 21, 'the commanded datagram');
      expect(replies[0][20]).toBe('hello');
      expect(server.counters().unsendable).toBe(1);
      expect(server.counters().datagramsOut).toBe(61);
      for (const c of clients) c.close();
      await server.close();
    }
  });

  it('openEndpoint with a remote: a connected socket; datagrams are fed as from the remote, transmits go to it', async () => {
    const server = await UdpDriver.openEndpoint<Address>(new EchoEndpoint(), { host: '127.0.0.1' });
    // Sends one ping to an address that is not the server's; records where each datagram came from.
    const seen: Address[] = [];
    let pinged = false;
    const mine: Endpoint<never> = {
      handleDatagram: (_now, from) => void seen.push(from),
      handleTimeout: () => {},
      pollTransmit: (_now, out) => {
        if (pinged) return undefined;
        pinged = true;
        out.set([1, 2, 3]);
        return { length: 3, to: 'whatever-the-endpoint-names' };
      },
      pollTimeout: () => undefined,
      pollEvent: () => undefined,
    };
    const client = await UdpDriver.openEndpoint(mine, { remote: { host: '127.0.0.1', port: server.local.port } });
    const stranger = createSocket('udp4');
    await new Promise<void>((r) => stranger.bind(0, '127.0.0.1', () => r()));
    stranger.send(Buffer.from('not for you'), client.local.port, '127.0.0.1');
    await until(() => seen.length === 1, 'the echo of the ping');
    await new Promise((r) => setTimeout(r, 20));
    expect(seen).toEqual([addressKey('127.0.0.1', server.local.port)]);
    expect(server.counters().datagramsIn).toBe(1);
    expect(client.remote).toEqual({ host: '127.0.0.1', port: server.local.port });
    expect(client.counters().unsendable).toBe(0);
    stranger.close();
    await client.close();
    await server.close();
  });

  it('attachTransport: a prefix is a lowercase name and a colon, attached once; a transmit goes to the sink of its own prefix only', async () => {
    const echo = new EchoEndpoint();
    const server = await UdpDriver.openEndpoint<Address>(echo, { host: '127.0.0.1' });
    for (const bad of ['', 'webrtc', 'WebRTC:', 'web rtc:', '1x:']) {
      expect(() => server.attachTransport(bad, () => {})).toThrow(expect.objectContaining({ code: 'invalid-argument' }));
    }
    const sunk: string[] = [];
    const feed = server.attachTransport('side:', (to, bytes) => sunk.push(`${to}=${new TextDecoder().decode(bytes)}`));
    expect(() => server.attachTransport('side:', () => {})).toThrow(expect.objectContaining({ code: 'invalid-argument' }));
    server.attachTransport('sidecar:', () => sunk.push('wrong sink'));
    feed('side:1', new TextEncoder().encode('hi'));
    await until(() => sunk.length === 1, 'the echo through the side transport');
    expect(sunk).toEqual(['side:1=hi']);
    expect(server.counters().datagramsOut).toBe(1);
    await server.close();
  });

  it('one-remote mode over IPv6: a connected udp6 socket to [::1]', async () => {
    const server = await UdpDriver.openEndpoint<Address>(new EchoEndpoint(), { host: '::1' });
    const blaster = new Blaster(300);
    const client = await UdpDriver.open(blaster, { remote: { host: '::1', port: server.local.port } });
    const [ev] = await nextEvent<[{ type: string; at: number }]>(client, 'event');
    expect(ev).toEqual({ type: 'all-echoed', at: 300 });
    expect(client.remote).toEqual({ host: '::1', port: server.local.port });
    await client.close();
    await server.close();
  });

  it('an unresolvable remote host rejects open() with invalid-argument and leaves no socket open', async () => {
    const before = udpHandles();
    const err = await UdpDriver.open(new Echo(), { remote: { host: 'no-such-host.invalid', port: 9 } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GamewireError);
    expect(err).toMatchObject({ code: 'invalid-argument' });
    expect((err as Error).message).toMatch(/no-such-host\.invalid.*does not resolve/);
    expect(udpHandles()).toBe(before);
    // A name that resolves still works (and is connected to the resolved address).
    const d = await UdpDriver.open(new Echo(), { host: '127.0.0.1', remote: { host: 'localhost', port: 9 } });
    expect(d.remote).toEqual({ host: '127.0.0.1', port: 9 });
    await d.close();
    expect(udpHandles()).toBe(before);
  });

  it('close() from an event handler still sends what the handler queued and emits close', async () => {
    const echo = new EchoEndpoint();
    const server = await UdpDriver.openEndpoint<Address>(echo, { host: '127.0.0.1' });
    const closed = nextEvent(server, 'close');
    server.on('event', (from) => {
      echo.say(from, 'bye');
      void server.close();
    });
    const c = createSocket('udp4');
    await new Promise<void>((r) => c.bind(0, '127.0.0.1', () => r()));
    const got: string[] = [];
    c.on('message', (m) => got.push(m.toString()));
    c.send(Buffer.from('hi'), server.local.port, '127.0.0.1');
    await closed;
    await until(() => got.length === 2, 'the echo and the goodbye');
    expect(got).toEqual(['hi', 'bye']);
    c.close();
  });

  it('refuses bad options with invalid-config', async () => {
    await expect(UdpDriver.open(new Echo(), { port: 70000 })).rejects.toBeInstanceOf(GamewireError);
    await expect(UdpDriver.open(new Echo(), { maxDatagramBytes: 10 })).rejects.toMatchObject({ code: 'invalid-config' });
    await expect(UdpDriver.open(new Echo(), { remote: { host: '127.0.0.1', port: 0 } })).rejects.toMatchObject({
      code: 'invalid-config',
    });
  });

  it('throws closed on flush after close', async () => {
    const driver = await UdpDriver.open(new Echo(), { host: '127.0.0.1' });
    await driver.close();
    expect(() => driver.flush()).toThrow(GamewireError);
  });
});
