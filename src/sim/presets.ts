import { GamewireError } from '../core/errors.js';
import type { LinkConfig } from './config.js';

/** Names of the built-in link presets (one direction each; see docs/sim.md for the table). */
export type PresetName =
  | 'perfect'
  | 'lan'
  | 'wifi'
  | 'mobile'
  | 'satellite'
  | 'congested'
  | 'lossy'
  | 'kcp-test';

function freeze(c: Partial<LinkConfig>): Readonly<Partial<LinkConfig>> {
  for (const v of Object.values(c)) if (typeof v === 'object' && v !== null) Object.freeze(v);
  return Object.freeze(c);
}

/**
 * Built-in one-direction impairment profiles (frozen; spread to tweak: `{ ...presets.wifi, loss: 0.1 }`).
 * Figures are plausible, not measured: ms for delays, bits/s for rates, probabilities 0..1.
 */
export const presets: Readonly<Record<PresetName, Readonly<Partial<LinkConfig>>>> = Object.freeze({
  /** Instant, lossless, unlimited. */
  perfect: freeze({}),
  /** Wired LAN: 0.5 ms, tiny jitter, 1 Gbit/s. */
  lan: freeze({ latencyMs: 0.5, jitterMs: 0.2, reorder: false, rateBitsPerSec: 1e9, queueDatagrams: 1000 }),
  /** Home Wi-Fi: 4 ms + 0–6 ms jitter (FIFO), light random and bursty loss, 50 Mbit/s, 256 KiB buffer. */
  wifi: freeze({
    latencyMs: 4, jitterMs: 6, reorder: false, loss: 0.005,
    gilbertElliott: { pGoodToBad: 0.005, pBadToGood: 0.25, lossGood: 0, lossBad: 0.3 },
    rateBitsPerSec: 50e6, queueBytes: 256 * 1024,
  }),
  /** 4G mobile: 35 ms + 0–25 ms jitter with reordering, bursty loss, rare duplicates, 10 Mbit/s, bloated 512 KiB buffer. */
  mobile: freeze({
    latencyMs: 35, jitterMs: 25, reorder: true, loss: 0.005,
    gilbertElliott: { pGoodToBad: 0.01, pBadToGood: 0.2, lossGood: 0, lossBad: 0.5 },
    duplicate: 0.001, rateBitsPerSec: 10e6, queueBytes: 512 * 1024,
  }),
  /** Geostationary satellite: 280 ms + 0–20 ms, 1% loss, 25 Mbit/s, 1 MiB buffer. */
  satellite: freeze({
    latencyMs: 280, jitterMs: 20, reorder: false, loss: 0.01, rateBitsPerSec: 25e6, queueBytes: 1024 * 1024,
  }),
  /** A thin, shallow-buffered path: 40 ms + 0–10 ms, 1% loss, 2 Mbit/s, 40-datagram queue. */
  congested: freeze({
    latencyMs: 40, jitterMs: 10, reorder: false, loss: 0.01, rateBitsPerSec: 2e6, queueDatagrams: 40,
  }),
  /** Harsh: 50 ms + 0–10 ms with reordering, 10% random loss, 1% duplicates. */
  lossy: freeze({ latencyMs: 50, jitterMs: 10, reorder: true, loss: 0.1, duplicate: 0.01 }),
  /**
   * KCP test.cpp's LatencySimulator(10, 60, 125) per direction: shuffle-bag loss of exactly 5 per 100,
   * FIFO one-way delay 30 + {0..31} ms (integer), at most 1000 datagrams in flight (tail drop).
   */
  'kcp-test': freeze({
    latencyMs: 30, jitterMs: 31, jitterIntegerMs: true, reorder: false,
    shuffleBagLoss: { lost: 5, bagSize: 100 }, maxInFlight: 1000,
  }),
});

/** True if `name` is a built-in preset name. */
export function isPresetName(name: string): name is PresetName {
  return Object.prototype.hasOwnProperty.call(presets, name);
}

/** The preset called `name`; throws `GamewireError('invalid-config')` for an unknown name. */
export function preset(name: string): Readonly<Partial<LinkConfig>> {
  if (!isPresetName(name)) {
    throw new GamewireError('invalid-config', `unknown link preset '${name}' (known: ${Object.keys(presets).join(', ')})`);
  }
  return presets[name];
}
