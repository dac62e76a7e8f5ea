import { describe, expect, it } from 'vitest';
import { describeLink, proxyLinkConfig } from './proxy.js';
import { UsageError } from './units.js';

const base = { listen: 0, host: '127.0.0.1', to: { host: '127.0.0.1', port: 9 }, seed: 1 };

describe('gamewire proxy flags → sim link config', () => {
  it('maps delay, jitter, loss and a byte rate to latencyMs, jitterMs, loss and bits/s with the default queue', () => {
    expect(proxyLinkConfig({ ...base, delay: 50, jitter: 5, loss: 0.1, rate: 1_250_000 })).toEqual({
      latencyMs: 50,
      jitterMs: 5,
      loss: 0.1,
      rateBitsPerSec: 10_000_000,
      queueDatagrams: 1000,
    });
    expect(proxyLinkConfig({ ...base })).toEqual({});
  });

  it('starts from a preset and lets flags override its fields; --queue replaces a byte-limited queue', () => {
    const c = proxyLinkConfig({ ...base, preset: 'wifi', loss: 0.2, queue: 50 });
    expect(c.loss).toBe(0.2);
    expect(c.latencyMs).toBe(4);
    expect(c.rateBitsPerSec).toBe(50e6);
    expect(c.queueDatagrams).toBe(50);
    expect(c.queueBytes).toBeUndefined();
  });

  it('refuses an unknown preset and --queue without a rate as usage errors', () => {
    expect(() => proxyLinkConfig({ ...base, preset: 'moon' })).toThrow(UsageError);
    expect(() => proxyLinkConfig({ ...base, queue: 10 })).toThrow(/--queue needs --rate/);
  });

  it('describes a link for the start-up line', () => {
    expect(describeLink({ latencyMs: 50, jitterMs: 5, loss: 0.05, rateBitsPerSec: 1e7, queueDatagrams: 1000 })).toBe(
      '50 ms +0..5 ms jitter, 5% loss, 10 Mbit/s, queue 1000 datagrams',
    );
  });
});
