import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

describe('npm run demo (src/cli/game-demo.ts, spawned, real loopback UDP, not a terminal)', () => {
  it('three bots for three seconds: plain progress lines, the summary, every check passes, exit 0', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/game-demo.ts', '--bots', '3', '--seconds', '3'], {
      cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
    expect(code, out).toBe(0);
    expect(out).toMatch(/^t=\d+\.\ds {2}connected \d\/3/m);
    expect(out).toMatch(/^bot +srtt ms +loss/m);
    expect(out.match(/^\d +\d+ +\d+\.\d%/gm)).toHaveLength(3);
    expect(out).toContain('OK: every chat line arrived once');
    expect(out).not.toContain('\x1b[');
  }, 60_000);
});
