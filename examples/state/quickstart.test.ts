import { readFileSync } from 'node:fs';
import { expect, it, vi } from 'vitest';

const read = (path: string): string => readFileSync(new URL(`../../${path}`, import.meta.url), 'utf8');

it('docs/state.md quotes examples/state/quickstart.ts verbatim, and its printed output, which is the same every run', async () => {
  const doc = read('docs/state.md');
  const blocks = [...doc.matchAll(/```(\w*)\n([\s\S]*?)```/g)].map((m) => ({ lang: m[1], text: m[2] }));
  expect(blocks.map((b) => b.text)).toContain(read('examples/state/quickstart.ts'));
  const lines: string[] = [];
  const log = vi.spyOn(console, 'log').mockImplementation((...a: unknown[]) => void lines.push(a.join(' ')));
  try {
    await import('./quickstart.js');
  } finally {
    log.mockRestore();
  }
  const printed = lines.join('\n') + '\n';
  expect(blocks.filter((b) => b.lang === 'text').map((b) => b.text)).toContain(printed);
});
