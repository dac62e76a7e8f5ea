import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { ChunkReceiver, type ChunkReceiverEvent } from '../../src/chunk/receiver.js';
import { ChunkSender, type ChunkSenderEvent } from '../../src/chunk/sender.js';
import { PacketType, peekPacketType } from '../../src/chunk/wire.js';
import { AdaptiveRate } from '../../src/congestion/adaptive.js';
import { NonCryptoRng } from '../../src/core/rng.js';

describe('chunk transfer between two UdpDrivers over real loopback', () => {
  it('moves a 1 MiB block byte-exact with the adaptive rate, and the sender sees it delivered', async () => {
    const block = new NonCryptoRng(20240601).fill(new Uint8Array(1024 * 1024 + 333));
    const receiver = new ChunkReceiver({ maxBlockBytes: 4 * 1024 * 1024 });
    const rx = await UdpDriver.open<ChunkReceiverEvent>(receiver, {
      host: '127.0.0.1',
      acceptFirst: (bytes) => peekPacketType(bytes) === PacketType.Slice,
    });
    const sender = new ChunkSender({ rateController: new AdaptiveRate(), sessionId: 0x5eed });
    const id = sender.sendBlock(block);
    const tx = await UdpDriver.open<ChunkSenderEvent>(sender, { host: '127.0.0.1', remote: { host: '127.0.0.1', port: rx.local.port } });

    const [got] = (await once(rx, 'event')) as [ChunkReceiverEvent];
    const [done] = (await once(tx, 'event')) as [ChunkSenderEvent];

    expect(got.type).toBe('block');
    if (got.type !== 'block') return;
    expect(got.data.length).toBe(block.length);
    expect(Buffer.compare(Buffer.from(got.data.buffer, got.data.byteOffset, got.data.length), Buffer.from(block))).toBe(0);
    expect(done).toMatchObject({ type: 'delivered', id, bytes: block.length });
    expect(rx.remote).toEqual({ host: '127.0.0.1', port: tx.local.port });
    const sc = sender.counters();
    expect(sc.slicesSent).toBeGreaterThanOrEqual(Math.ceil(block.length / sender.config.sliceBytes));
    expect(tx.counters().datagramsOut).toBe(sc.datagramsSent);
    expect(rx.counters().datagramsIn).toBe(receiver.counters().datagramsReceived);
    await tx.close();
    await rx.close();
  });
});
