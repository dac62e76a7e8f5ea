import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, expect, it } from 'vitest';

// `npm run build` (which `npm run demo` and `npm pack` run) in a copy of the checkout, so a
// concurrent build of dist/ cannot interfere.
const ROOT = resolve(import.meta.dirname, '..');
const stage = mkdtempSync(join(tmpdir(), 'gamewire-build-'));
afterAll(() => rmSync(stage, { recursive: true, force: true }));

it('npm run build leaves every bin of package.json executable (npx gamewire after a rebuild)', () => {
  for (const name of ['src', 'package.json', 'tsconfig.json', 'tsconfig.build.json']) cpSync(join(ROOT, name), join(stage, name), { recursive: true });
  symlinkSync(join(ROOT, 'node_modules'), join(stage, 'node_modules'), 'dir');
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  execFileSync(npm, ['run', 'build'], { cwd: stage, stdio: 'pipe' });
  const bins = Object.values((JSON.parse(readFileSync(join(stage, 'package.json'), 'utf8')) as { bin: Record<string, string> }).bin);
  expect(bins).toContain('./dist/cli/gamewire.js');
  for (const bin of bins) {
    const path = join(stage, bin);
    expect((statSync(path).mode & 0o111).toString(8), bin).toBe('111');
    // Run the file itself, as a shell does through node_modules/.bin (its #! line picks node).
    expect(execFileSync(path, ['--version'], { cwd: stage, stdio: 'pipe' }).toString().trim()).toBe('0.1.0');
  }
});
