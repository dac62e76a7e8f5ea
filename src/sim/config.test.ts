import { describe, it, expect } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { LINK_DEFAULTS, resolveLinkConfig, type LinkConfig } from './config.js';
import { Link } from './link.js';

function codeOf(f: () => unknown): string | undefined {
  try {
    f();
  } catch (e) {
    return e instanceof GamewireError ? e.code : `non-gamewire: ${String(e)}`;
  }
  return undefined;
}

describe('resolveLinkConfig', () => {
  it('fills defaults: a perfect instant link with 28 bytes of overhead', () => {
    const c = resolveLinkConfig({});
    expect(c).toEqual(LINK_DEFAULTS);
    expect(c.overheadBytes).toBe(28);
    expect(c.reorder).toBe(true);
    expect(Object.isFrozen(c)).toBe(true);
  });

  it('treats undefined fields as absent and copies nested objects', () => {
    const ge = { pGoodToBad: 0.1, pBadToGood: 0.5, lossGood: 0, lossBad: 1 };
    const c = resolveLinkConfig({ latencyMs: undefined, gilbertElliott: ge });
    expect(c.latencyMs).toBe(0);
    ge.lossBad = 0.5;
    expect(c.gilbertElliott!.lossBad).toBe(1);
  });

  it('fills the shuffle bag size (100) and the default queue (1000 datagrams) when a rate has no limit', () => {
    expect(resolveLinkConfig({ shuffleBagLoss: { lost: 5 } }).shuffleBagLoss).toEqual({ lost: 5, bagSize: 100 });
    expect(resolveLinkConfig({ rateBitsPerSec: 1e6 }).queueDatagrams).toBe(1000);
    expect(resolveLinkConfig({ rateBitsPerSec: 1e6, queueBytes: 5000 }).queueDatagrams).toBeUndefined();
  });

  const bad: [string, Record<string, unknown>][] = [
    ['unknown key', { latency: 5 }],
    ['negative latency', { latencyMs: -1 }],
    ['NaN latency', { latencyMs: Number.NaN }],
    ['infinite latency', { latencyMs: Infinity }],
    ['string jitter', { jitterMs: '5' }],
    ['negative jitter', { jitterMs: -0.1 }],
    ['loss > 1', { loss: 1.5 }],
    ['loss < 0', { loss: -0.1 }],
    ['duplicate > 1', { duplicate: 2 }],
    ['non-boolean reorder', { reorder: 1 }],
    ['non-boolean jitterIntegerMs', { jitterIntegerMs: 'yes' }],
    ['zero rate', { rateBitsPerSec: 0 }],
    ['negative rate', { rateBitsPerSec: -5 }],
    ['queue without rate', { queueDatagrams: 10 }],
    ['queueBytes without rate', { queueBytes: 10 }],
    ['zero queue', { rateBitsPerSec: 1e6, queueDatagrams: 0 }],
    ['fractional queue', { rateBitsPerSec: 1e6, queueBytes: 1.5 }],
    ['zero mtu', { mtu: 0 }],
    ['fractional mtu', { mtu: 1200.5 }],
    ['negative overhead', { overheadBytes: -1 }],
    ['fractional overhead', { overheadBytes: 1.5 }],
    ['zero maxInFlight', { maxInFlight: 0 }],
    ['zero maxInFlightBytes', { maxInFlightBytes: 0 }],
    ['G-E probability out of range', { gilbertElliott: { pGoodToBad: 0.1, pBadToGood: 1.1, lossGood: 0, lossBad: 1 } }],
    ['G-E missing field', { gilbertElliott: { pGoodToBad: 0.1, pBadToGood: 0.5, lossGood: 0 } }],
    ['G-E absorbing bad state', { gilbertElliott: { pGoodToBad: 0.1, pBadToGood: 0, lossGood: 0, lossBad: 1 } }],
    ['G-E not an object', { gilbertElliott: 3 }],
    ['shuffle bag lost > size', { shuffleBagLoss: { lost: 101 } }],
    ['shuffle bag negative', { shuffleBagLoss: { lost: -1 } }],
    ['shuffle bag fractional', { shuffleBagLoss: { lost: 2.5 } }],
    ['shuffle bag zero size', { shuffleBagLoss: { lost: 0, bagSize: 0 } }],
    ['outage not an array', { outage: { startMs: 0, endMs: 1 } }],
    ['outage end before start', { outage: [{ startMs: 10, endMs: 10 }] }],
    ['outage NaN', { outage: [{ startMs: Number.NaN, endMs: 10 }] }],
  ];
  for (const [name, cfg] of bad) {
    it(`rejects ${name} with invalid-config`, () => {
      expect(codeOf(() => resolveLinkConfig(cfg as Partial<LinkConfig>))).toBe('invalid-config');
      expect(codeOf(() => new Link(cfg as Partial<LinkConfig>, 1))).toBe('invalid-config');
    });
  }

  it('accepts the edges of every range', () => {
    const edge: Partial<LinkConfig> = {
      latencyMs: 0, jitterMs: 0, loss: 1, duplicate: 1, overheadBytes: 0, mtu: 1, maxInFlight: 1,
      maxInFlightBytes: 1, rateBitsPerSec: 1, queueDatagrams: 1, queueBytes: 1,
      gilbertElliott: { pGoodToBad: 0, pBadToGood: 0, lossGood: 1, lossBad: 1 },
      shuffleBagLoss: { lost: 1, bagSize: 1 }, outage: [],
    };
    expect(codeOf(() => new Link(edge, 0))).toBeUndefined();
  });
});
