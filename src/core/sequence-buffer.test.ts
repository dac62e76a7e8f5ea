import { describe, expect, it } from 'vitest';
import { SequenceBuffer } from './sequence-buffer.js';
import { GamewireError } from './errors.js';

describe('SequenceBuffer', () => {
  it('stores and finds entries by sequence', () => {
    const b = new SequenceBuffer<string>(8);
    expect(b.insert(10, 'a')).toBe(true);
    expect(b.get(10)).toBe('a');
    expect(b.has(11)).toBe(false);
    b.remove(10);
    expect(b.get(10)).toBeUndefined();
  });

  it('clears skipped slots when advancing so stale entries never alias', () => {
    const b = new SequenceBuffer<number>(4);
    b.insert(0, 0);
    b.insert(1, 1);
    b.insert(6, 6);
    expect(b.has(1)).toBe(false);
    expect(b.has(6)).toBe(true);
    expect(b.newestSequence).toBe(6);
  });

  it('refuses sequences older than its size', () => {
    const b = new SequenceBuffer<number>(4);
    b.insert(100, 1);
    expect(b.insert(97, 2)).toBe(true);
    expect(b.insert(96, 3)).toBe(false);
    expect(b.has(96)).toBe(false);
  });

  it('works across the 65535 → 0 wrap', () => {
    const b = new SequenceBuffer<number>(16);
    for (let s = 65530; s < 65536 + 10; s++) expect(b.insert(s & 0xffff, s)).toBe(true);
    expect(b.newestSequence).toBe(9);
    expect(b.get(65535)).toBe(65535);
    expect(b.get(0)).toBe(65536);
    expect(b.insert(65529, 0)).toBe(false);
  });

  it('rejects a bad size with a typed error', () => {
    expect(() => new SequenceBuffer(0)).toThrowError(GamewireError);
  });
});
