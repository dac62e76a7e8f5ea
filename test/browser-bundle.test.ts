// The browser entry as a bundle: it builds for the browser platform (esbuild fails on any Node
// built-in), uses no Buffer or process, and stays within the size budget docs/browser.md states.
import { build } from 'esbuild';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '..');

async function bundle(entry: string): Promise<{ text: string; min: number; gz: number }> {
  const r = await build({
    entryPoints: [entry], bundle: true, format: 'esm', platform: 'browser', target: 'es2022', minify: true, write: false,
    // Loaded only when sodiumCrypto() is called; a page that wants it maps the specifier itself.
    external: ['libsodium'], logLevel: 'silent',
  });
  const bytes = r.outputFiles[0]!.contents;
  return { text: r.outputFiles[0]!.text, min: bytes.length, gz: gzipSync(bytes, { level: 9 }).length };
}

describe('gamewire/browser bundle (docs/browser.md, "Size")', () => {
  it('the whole entry: builds for browsers without Node built-ins, ≤ 246,000 bytes minified, ≤ 78,000 gzipped', async () => {
    const b = await bundle(join(ROOT, 'src/browser.ts'));
    expect(b.text).not.toMatch(/\bBuffer\.|\bprocess\.|require\(/);
    expect(b.min).toBeLessThanOrEqual(246_000);
    expect(b.gz).toBeLessThanOrEqual(78_000);
  });

  it('a page that imports only connect (both transports): ≤ 156,000 bytes minified, ≤ 51,000 gzipped', async () => {
    mkdirSync(join(ROOT, '.examples'), { recursive: true });
    const dir = mkdtempSync(join(ROOT, '.examples', 'bundle-'));
    try {
      const entry = join(dir, 'app.ts');
      writeFileSync(entry, `import { connect } from '${join(ROOT, 'src/browser.ts')}';\n(globalThis as Record<string, unknown>).connect = connect;\n`);
      const b = await bundle(entry);
      expect(b.text).toContain('gamewire');
      expect(b.min).toBeLessThanOrEqual(156_000);
      expect(b.gz).toBeLessThanOrEqual(51_000);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
