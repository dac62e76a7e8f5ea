import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { expect, it } from 'vitest';

// The markdown the package ships (package.json "files") must not send a reader to files only the
// project's own machines have: its steering repository (shared/…, research/…) or a build machine's paths.
const ROOT = resolve(import.meta.dirname, '..');

it('no shipped document names a path outside the package (shared/…, /work/…, /home/…)', () => {
  const docs = ['README.md', 'bench/README.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];
  const found: string[] = [];
  for (const doc of docs) {
    readFileSync(join(ROOT, doc), 'utf8').split('\n').forEach((line, i) => {
      const m = /(?:^|[\s`(])((?:\.\.\/)*(?:shared|research)\/[\w./-]+|\/(?:work|home|root)\/[\w./-]+)/.exec(line);
      if (m !== null) found.push(`${doc}:${i + 1}: ${m[1]}`);
    });
  }
  expect(found).toEqual([]);
});
