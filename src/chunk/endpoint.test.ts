import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../core/rng.js';
import { ChunkEndpoint } from './endpoint.js';

/** Move every datagram from `from` to `to` at `now`; returns how many moved. */
function pump(from: ChunkEndpoint, to: ChunkEndpoint, now: number): number {
  const out = new Uint8Array(1200);
  let n = 0;
  for (let len = from.pollTransmit(now, out); len !== undefined; len = from.pollTransmit(now, out)) {
    to.handleDatagram(now, out.subarray(0, len));
    n++;
  }
  return n;
}

describe('ChunkEndpoint', () => {
  it('carries blocks both ways over one path, demuxing slices and acks', () => {
    const a = new ChunkEndpoint({ sender: { sessionId: 1, rateBytesPerSec: 1e8 } });
    const b = new ChunkEndpoint({ sender: { sessionId: 2, rateBytesPerSec: 1e8 } });
    const ab = new NonCryptoRng(1).fill(new Uint8Array(50_000));
    const ba = new NonCryptoRng(2).fill(new Uint8Array(30_000));
    a.sender.sendBlock(ab);
    b.sender.sendBlock(ba);
    for (let t = 0; t < 100; t++) {
      a.handleTimeout(t);
      b.handleTimeout(t);
      while (pump(a, b, t) + pump(b, a, t) > 0);
    }
    expect(b.receiver.pollEvent()).toMatchObject({ type: 'block', data: ab });
    expect(a.receiver.pollEvent()).toMatchObject({ type: 'block', data: ba });
    expect(a.sender.pollEvent()).toMatchObject({ type: 'delivered', id: 1 });
    expect(b.sender.pollEvent()).toMatchObject({ type: 'delivered', id: 1 });
    expect(a.receiver.counters().malformed + b.sender.counters().malformed).toBe(0);
    expect(a.memoryBytes()).toBe(0);
  });

  it('reports the earlier of its parts’ timeouts', () => {
    const e = new ChunkEndpoint({ sender: { rateBytesPerSec: 1000 } });
    expect(e.pollTimeout()).toBeUndefined();
    e.sender.sendBlock(new Uint8Array(5000));
    e.handleTimeout(0);
    const out = new Uint8Array(1200);
    while (e.pollTransmit(0, out) !== undefined);
    expect(e.pollTimeout()).toBe(e.sender.pollTimeout());
  });
});
