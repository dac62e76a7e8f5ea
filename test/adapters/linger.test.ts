import { describe, expect, it } from 'vitest';
import { UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { UdpLinkProxy } from '../../src/adapters/node/udp-proxy.js';
import { ChunkReceiver, type ChunkReceiverEvent } from '../../src/chunk/receiver.js';
import { ChunkSender, type ChunkSenderEvent } from '../../src/chunk/sender.js';
import { PacketType, peekPacketType } from '../../src/chunk/wire.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { nextEvent } from './helpers.js';

// The README's example with the receiver closing as soon as it has the block: the sender still
// needs acks for its last slices. Over a real loopback path that loses 40 % of acks, a receiver that
// closes with `linger` keeps answering the sender's resends until the sender has gone quiet.

/** One transfer through a lossy proxy; resolves with the sender's final event, or 'no-delivered' after `ms`. */
async function transfer(seed: number, ms: number): Promise<string> {
  const block = new NonCryptoRng(seed).fill(new Uint8Array(96 * 1024 + seed));
  const receiver = new ChunkReceiver({ maxBlockBytes: 1 << 20 });
  const rx = await UdpDriver.open<ChunkReceiverEvent>(receiver, {
    host: '127.0.0.1',
    acceptFirst: (b) => peekPacketType(b) === PacketType.Slice,
  });
  // toClient is the receiver -> sender direction: the acks.
  const proxy = await UdpLinkProxy.open({
    listenHost: '127.0.0.1',
    target: { host: '127.0.0.1', port: rx.local.port },
    toServer: { latencyMs: 2 },
    toClient: { latencyMs: 2, loss: 0.4 },
    seed,
  });
  const rxClosed = nextEvent(rx, 'close', 30_000);
  let exact = false;
  rx.on('event', (ev) => {
    if (ev.type !== 'block') return;
    exact = Buffer.from(ev.data).equals(Buffer.from(block));
    void rx.close({ linger: true });
  });
  const sender = new ChunkSender({ sessionId: 0x1000 + seed, rateBytesPerSec: 4_000_000 });
  const tx = await UdpDriver.open<ChunkSenderEvent>(sender, { host: '127.0.0.1', remote: proxy.local });
  const id = sender.sendBlock(block);
  const outcome = await new Promise<string>((resolve) => {
    const t = setTimeout(() => resolve('no-delivered'), ms);
    tx.on('event', (ev) => {
      if (ev.id !== id || ev.type === 'stalled') return;
      clearTimeout(t);
      resolve(ev.type);
    });
  });
  await rxClosed;
  expect(exact).toBe(true);
  await tx.close();
  await proxy.close();
  return outcome;
}

describe('UdpDriver.close({ linger }) over a real loopback path that loses acks', () => {
  it('a receiver that closes on its block still lets the sender see delivered (6 seeds)', async () => {
    const seeds = [1, 2, 3, 4, 5, 6];
    const outcomes = await Promise.all(seeds.map((s) => transfer(s, 20_000)));
    expect(outcomes).toEqual(seeds.map(() => 'delivered'));
  });
});
