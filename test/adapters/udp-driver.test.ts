import { execFile } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GamewireError } from '../../src/core/errors.js';
import { UdpDriver, type DrivablePeer } from '../../src/adapters/node/udp-driver.js';

/** Sends `count` numbered 1000-byte datagrams at once and counts distinct echoes coming back. */
class Blaster implements DrivablePeer<{ type: 'all-echoed'; at: number }> {
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
class Echo implements DrivablePeer {
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
class OneShot implements DrivablePeer<{ due: number; ranAt: number }> {
  private due: number | undefined;
  private fired: { due: number; ranAt: number } | undefined;
  constructor(start: number, delayMs: number) {
    this.due = start + delayMs;
  }
  handleDatagram(): void {}
  handleTimeout(now: number): void {
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
class DrainCounter implements DrivablePeer {
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
    for (let i = 0; i < 50 && peer.received < 24; i++) await new Promise((r) => setTimeout(r, 5));
    expect(peer.received).toBe(24);
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

  it('wakes the peer with its single timer no earlier than pollTimeout()', async () => {
    const start = performance.now();
    const peer = new OneShot(start, 30);
    const driver = await UdpDriver.open(peer, { host: '127.0.0.1' });
    const [ev] = (await once(driver, 'event')) as [{ due: number; ranAt: number }];
    expect(ev.ranAt).toBeGreaterThanOrEqual(ev.due);
    expect(ev.ranAt - ev.due).toBeLessThan(500);
    expect(driver.counters().timerWakeups).toBeGreaterThanOrEqual(1);
    await driver.close();
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
      await new Promise((r) => setTimeout(r, 30));
    }
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
