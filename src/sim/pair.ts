import { checkArg } from '../core/errors.js';
import type { LinkConfig } from './config.js';
import { deriveSeed, Link } from './link.js';
import { preset } from './presets.js';

/** Two independent one-direction links forming a path between peers A and B. */
export interface LinkPair {
  /** Carries A's datagrams to B. */
  aToB: Link;
  /** Carries B's datagrams to A. */
  bToA: Link;
}

/**
 * Build both directions of a path from one seed (each direction gets its own derived seed, so the
 * directions are independent but the pair is reproducible). `aToB` and `bToA` are configs or preset
 * names; `bToA` defaults to `aToB` (a symmetric path).
 */
export function createLinkPair(
  aToB: Partial<LinkConfig> | string,
  seed: number,
  bToA: Partial<LinkConfig> | string = aToB,
): LinkPair {
  checkArg(typeof seed === 'number' && Number.isInteger(seed), 'seed must be an integer');
  const ab = typeof aToB === 'string' ? preset(aToB) : aToB;
  const ba = typeof bToA === 'string' ? preset(bToA) : bToA;
  return { aToB: new Link(ab, deriveSeed(seed, 100)), bToA: new Link(ba, deriveSeed(seed, 101)) };
}
