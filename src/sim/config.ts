import { checkConfig, checkKnownKeys, isInt, isNum, isObject, isProb } from '../core/config.js';

/** Two-state Markov (Gilbert-Elliott) bursty loss; the chain steps once per datagram sent. */
export interface GilbertElliottConfig {
  /** Probability (0..1) of moving from the good to the bad state after each datagram. */
  pGoodToBad: number;
  /** Probability (0..1) of moving from the bad to the good state after each datagram (mean burst = 1/p). */
  pBadToGood: number;
  /** Loss probability (0..1) while in the good state. */
  lossGood: number;
  /** Loss probability (0..1) while in the bad state. */
  lossBad: number;
}

/**
 * KCP test.cpp's "shuffle bag" loss: every `bagSize` consecutive datagrams draw, without
 * replacement, from a bag holding 0..bagSize-1; a datagram is lost when its draw is < `lost`,
 * so exactly `lost` of every aligned `bagSize` datagrams are dropped.
 */
export interface ShuffleBagLossConfig {
  /** Datagrams lost per bag (integer, 0..bagSize). test.cpp: 5. */
  lost: number;
  /** Bag size (integer ≥ 1, default 100). */
  bagSize?: number;
}

/** A window of virtual time, [startMs, endMs), in which the link is silent. */
export interface OutageWindow {
  /** Start (ms, inclusive) in the caller's `now` timeline. */
  startMs: number;
  /** End (ms, exclusive); must be > startMs. */
  endMs: number;
}

/**
 * Impairments of one direction of a simulated link. Every field is optional in constructors
 * (`Partial<LinkConfig>`); see `LINK_DEFAULTS` and docs/sim.md for defaults and decision order.
 */
export interface LinkConfig {
  /** Fixed one-way propagation delay (ms, ≥ 0). Default 0. */
  latencyMs: number;
  /** Extra delay drawn uniformly in [0, jitterMs) per datagram (ms, ≥ 0). Default 0. */
  jitterMs: number;
  /** Draw jitter as an integer in {0..floor(jitterMs)} (test.cpp's `rand() % n`). Default false. */
  jitterIntegerMs: boolean;
  /** If false, delivery time is clamped ≥ the previous delivery (FIFO, head-of-line jitter). Default true. */
  reorder: boolean;
  /** Independent (Bernoulli) loss probability per datagram (0..1). Default 0. */
  loss: number;
  /** Bursty loss; applied in addition to `loss`. Default none. */
  gilbertElliott?: GilbertElliottConfig;
  /** Exact-count loss (KCP test.cpp); applied in addition to `loss`. Default none. */
  shuffleBagLoss?: ShuffleBagLossConfig;
  /** Probability (0..1) that a delivered datagram is delivered twice; the copy draws its own jitter. Default 0. */
  duplicate: number;
  /** Bottleneck serialisation rate (bits/s, > 0). Undefined = infinitely fast, no queue. */
  rateBitsPerSec?: number;
  /** Drop-tail bottleneck limit in datagrams (integer ≥ 1). Default 1000 when a rate is set and neither limit is. */
  queueDatagrams?: number;
  /** Drop-tail bottleneck limit in wire bytes (datagram + overheadBytes, integer ≥ 1). */
  queueBytes?: number;
  /** Datagrams longer than `mtu` bytes (payload, without overhead) are dropped. Default: no limit. */
  mtu?: number;
  /** Per-datagram header bytes counted against the rate and queueBytes (integer ≥ 0). Default 28 (UDP/IPv4). */
  overheadBytes: number;
  /** Silent windows: a datagram sent in one, or due to arrive in one, is dropped. Default none. */
  outage?: readonly OutageWindow[];
  /** Hard cap on datagrams held by the link (queued + propagating); beyond it new ones are dropped. Default 100 000. */
  maxInFlight: number;
  /** Hard cap on payload bytes held by the link; beyond it new datagrams are dropped. Default 256 MiB. */
  maxInFlightBytes: number;
}

/** Defaults applied to every field a `Partial<LinkConfig>` leaves out: a perfect, instant link. */
export const LINK_DEFAULTS: Readonly<LinkConfig> = Object.freeze({
  latencyMs: 0,
  jitterMs: 0,
  jitterIntegerMs: false,
  reorder: true,
  loss: 0,
  duplicate: 0,
  overheadBytes: 28,
  maxInFlight: 100_000,
  maxInFlightBytes: 256 * 1024 * 1024,
});

/** Bottleneck queue limit (datagrams) used when a rate is set without any queue limit. */
export const DEFAULT_QUEUE_DATAGRAMS = 1000;

const KNOWN_KEYS: ReadonlySet<string> = new Set([
  'latencyMs', 'jitterMs', 'jitterIntegerMs', 'reorder', 'loss', 'gilbertElliott', 'shuffleBagLoss',
  'duplicate', 'rateBitsPerSec', 'queueDatagrams', 'queueBytes', 'mtu', 'overheadBytes', 'outage',
  'maxInFlight', 'maxInFlightBytes',
]);


/**
 * Validate `partial` and fill in defaults. Throws `GamewireError('invalid-config')` on unknown keys,
 * out-of-range values, or a queue limit without a rate. The result is a fresh, frozen object.
 */
export function resolveLinkConfig(partial: Partial<LinkConfig> = {}): Readonly<LinkConfig> {
  checkConfig(isObject(partial), 'link config must be an object');
  checkKnownKeys(partial, KNOWN_KEYS, (k) => `unknown link config key '${k}'`);
  const p: Partial<LinkConfig> = {};
  for (const [k, v] of Object.entries(partial)) if (v !== undefined) (p as Record<string, unknown>)[k] = v;
  const c: LinkConfig = { ...LINK_DEFAULTS, ...p };

  checkConfig(isNum(c.latencyMs, 0), 'latencyMs must be a finite number ≥ 0');
  checkConfig(isNum(c.jitterMs, 0), 'jitterMs must be a finite number ≥ 0');
  checkConfig(typeof c.jitterIntegerMs === 'boolean', 'jitterIntegerMs must be a boolean');
  checkConfig(typeof c.reorder === 'boolean', 'reorder must be a boolean');
  checkConfig(isProb(c.loss), 'loss must be a probability in 0..1');
  checkConfig(isProb(c.duplicate), 'duplicate must be a probability in 0..1');
  checkConfig(isInt(c.overheadBytes, 0),
    'overheadBytes must be an integer ≥ 0');
  checkConfig(isInt(c.maxInFlight, 1), 'maxInFlight must be an integer ≥ 1');
  checkConfig(isInt(c.maxInFlightBytes, 1), 'maxInFlightBytes must be an integer ≥ 1');

  if (c.gilbertElliott !== undefined) {
    const g = c.gilbertElliott;
    checkConfig(isObject(g), 'gilbertElliott must be an object');
    for (const k of ['pGoodToBad', 'pBadToGood', 'lossGood', 'lossBad'] as const) {
      checkConfig(isProb(g[k]), `gilbertElliott.${k} must be a probability in 0..1`);
    }
    checkConfig(g.pBadToGood > 0 || g.pGoodToBad === 0, 'gilbertElliott.pBadToGood must be > 0 (bad state would be absorbing)');
    c.gilbertElliott = Object.freeze({ pGoodToBad: g.pGoodToBad, pBadToGood: g.pBadToGood, lossGood: g.lossGood, lossBad: g.lossBad });
  }
  if (c.shuffleBagLoss !== undefined) {
    const s = c.shuffleBagLoss;
    checkConfig(isObject(s), 'shuffleBagLoss must be an object');
    const bagSize = s.bagSize ?? 100;
    checkConfig(isInt(bagSize, 1, 1_000_000), 'shuffleBagLoss.bagSize must be an integer in 1..1000000');
    checkConfig(isInt(s.lost, 0, bagSize),
      'shuffleBagLoss.lost must be an integer in 0..bagSize');
    c.shuffleBagLoss = Object.freeze({ lost: s.lost, bagSize });
  }
  if (c.rateBitsPerSec !== undefined) {
    checkConfig(isNum(c.rateBitsPerSec) && c.rateBitsPerSec > 0, 'rateBitsPerSec must be a finite number > 0');
  }
  if (c.queueDatagrams !== undefined) checkConfig(isInt(c.queueDatagrams, 1), 'queueDatagrams must be an integer ≥ 1');
  if (c.queueBytes !== undefined) checkConfig(isInt(c.queueBytes, 1), 'queueBytes must be an integer ≥ 1');
  checkConfig(c.rateBitsPerSec !== undefined || (c.queueDatagrams === undefined && c.queueBytes === undefined),
    'queueDatagrams/queueBytes need rateBitsPerSec (without a rate nothing ever queues)');
  if (c.rateBitsPerSec !== undefined && c.queueDatagrams === undefined && c.queueBytes === undefined) {
    c.queueDatagrams = DEFAULT_QUEUE_DATAGRAMS;
  }
  if (c.mtu !== undefined) checkConfig(isInt(c.mtu, 1), 'mtu must be an integer ≥ 1');
  if (c.outage !== undefined) {
    checkConfig(Array.isArray(c.outage), 'outage must be an array of { startMs, endMs }');
    const windows = c.outage.map((w, i) => {
      checkConfig(isObject(w) && isNum(w.startMs) && isNum(w.endMs) && w.endMs > w.startMs,
        `outage[${i}] must have finite startMs < endMs`);
      return Object.freeze({ startMs: w.startMs, endMs: w.endMs });
    });
    c.outage = Object.freeze(windows);
  }
  return Object.freeze(c);
}
