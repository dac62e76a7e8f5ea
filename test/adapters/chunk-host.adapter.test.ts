import { describe, expect, it } from 'vitest';
import { addressKey, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { ChunkHost, type ChunkHostEvent } from '../../src/chunk/host.js';
import { ChunkSender, type ChunkSenderEvent } from '../../src/chunk/sender.js';
import { AdaptiveRate } from '../../src/congestion/adaptive.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { until } from './helpers.js';

describe('ChunkHost behind one UdpDriver port (real loopback)', () => {
  it('two senders to the same receiver port: both blocks arrive byte-exact, tagged by address, and both senders see delivered', async () => {
    const host = new ChunkHost({ receiver: { maxBlockBytes: 4 << 20 } });
    const rx = await UdpDriver.openEndpoint<ChunkHostEvent>(host, { host: '127.0.0.1' });
    const blocks = new Map<string, Uint8Array>();
    rx.on('event', (ev) => {
      if (ev.event.type === 'block') blocks.set(ev.address, ev.event.data);
    });
    const sends = await Promise.all(
      [1, 2].map(async (i) => {
        const data = new NonCryptoRng(900 + i).fill(new Uint8Array(512 * 1024 + i * 7777));
        const sender = new ChunkSender({ rateController: new AdaptiveRate(), sessionId: 0xabc0 + i });
        const tx = await UdpDriver.open<ChunkSenderEvent>(sender, { host: '127.0.0.1', remote: { host: '127.0.0.1', port: rx.local.port } });
        const events: ChunkSenderEvent[] = [];
        tx.on('event', (ev) => events.push(ev));
        const id = sender.sendBlock(data);
        return { data, tx, events, id, address: addressKey('127.0.0.1', tx.local.port) };
      }),
    );
    await until(() => blocks.size === 2 && sends.every((s) => s.events.some((e) => e.type === 'delivered')), 'both blocks and both delivered', 30_000);
    for (const s of sends) {
      const got = blocks.get(s.address);
      expect(got !== undefined && Buffer.from(got).equals(Buffer.from(s.data)), s.address).toBe(true);
      expect(s.events.filter((e) => e.type !== 'stalled')).toEqual([expect.objectContaining({ type: 'delivered', id: s.id, bytes: s.data.length })]);
    }
    expect(host.senders().sort()).toEqual(sends.map((s) => s.address).sort());
    expect(host.counters().refusedFull).toBe(0);
    for (const s of sends) await s.tx.close();
    await rx.close();
  });
});
