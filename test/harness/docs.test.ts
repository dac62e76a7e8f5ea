import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

describe('docs/testing.md', () => {
  it('quotes examples/testing/game.test.ts verbatim (the example itself runs with the tests)', () => {
    const blocks = [...read('docs/testing.md').matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
    expect(blocks).toContain(read('examples/testing/game.test.ts'));
  });
});
