import { describe, expect, it } from 'vitest';
import { ConnectionHost } from '../connection/host.js';
import { seededRandom, type RandomSource } from '../testing.js';
import { GamewireError } from './errors.js';

const draw = (r: RandomSource, lengths: number[]): Uint8Array[] => lengths.map((n) => {
  const b = new Uint8Array(n);
  r(b);
  return b;
});

describe('seededRandom (gamewire/testing)', () => {
  const lengths = [1, 4, 7, 16, 33, 1000];

  it('the same seed gives the same bytes, call for call; another seed other bytes', () => {
    const a = draw(seededRandom(42), lengths);
    expect(draw(seededRandom(42), lengths)).toEqual(a);
    const b = draw(seededRandom(43), lengths);
    for (let i = 0; i < lengths.length; i++) expect(b[i], `call ${i} (${lengths[i]} bytes)`).not.toEqual(a[i]);
    // Only the low 32 bits of the seed matter; 0 and negative seeds are seeds like any other.
    expect(draw(seededRandom(42 + 2 ** 32), lengths)).toEqual(a);
    expect(draw(seededRandom(0), lengths)).not.toEqual(draw(seededRandom(-1), lengths));
  });

  it('fills every byte it is given, and its bytes look uniform', () => {
    const b = new Uint8Array(1 << 16).fill(0);
    seededRandom(7)(b);
    const counts = new Array<number>(256).fill(0);
    for (const x of b) counts[x]!++;
    // 256 per value expected; a value missing or 50 % off would be a broken generator.
    expect(Math.min(...counts)).toBeGreaterThan(256 * 0.7);
    expect(Math.max(...counts)).toBeLessThan(256 * 1.3);
    const tail = new Uint8Array(3);
    seededRandom(7)(tail);
    expect(tail).toEqual(b.subarray(0, 3));
  });

  it('makes a ConnectionHost draw the same connection ids run to run', () => {
    const ids = (seed: number): number[] => {
      const host = new ConnectionHost({ random: seededRandom(seed) });
      return ['a', 'b', 'c'].map((to) => host.connect(0, to).localId);
    };
    expect(ids(5)).toEqual(ids(5));
    expect(ids(6)).not.toEqual(ids(5));
  });

  it('throws invalid-argument for a seed that is not an integer', () => {
    for (const bad of [1.5, NaN, Infinity, '1' as unknown as number]) {
      expect(() => seededRandom(bad)).toThrow(GamewireError);
      try {
        seededRandom(bad);
      } catch (e) {
        expect((e as GamewireError).code).toBe('invalid-argument');
      }
    }
  });
});
