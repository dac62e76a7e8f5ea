import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function demo(...args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/game-demo.ts', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  return new Promise((r) => child.on('close', (code) => r({ code, out, err })));
}

describe('game-demo.js arguments (spawned)', () => {
  it('--help prints the usage and exits 0; a bad argument is a usage error (exit 2, one line naming it)', async () => {
    const [help, bad] = await Promise.all([demo('--help'), demo('--bots', '0')]);
    expect(help.code, help.out + help.err).toBe(0);
    expect(help.out).toMatch(/^usage: node dist\/cli\/game-demo\.js \[--bots N\] \[--seconds S\]/);
    expect(help.out + help.err).not.toMatch(/FAIL/);
    expect(bad.code, bad.out + bad.err).toBe(2);
    expect(bad.err).toMatch(/^error: --bots: expected a whole number in 1\.\.64, got "0"\n\(run 'node dist\/cli\/game-demo\.js --help' for usage\)\n$/);
    expect(bad.out).toBe('');
  });
});

describe('npm run demo (src/cli/game-demo.ts, spawned, real loopback UDP, not a terminal)', () => {
  it('three bots for three seconds: plain progress lines, the summary with the state layer figures, every check passes, exit 0', async () => {
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
    expect(out).toMatch(/^state: \d+ ticks at 20 Hz; snapshot bytes per tick, all bots: p50 \d+/m);
    expect(out).toMatch(/^OK: every chat line arrived once.*every bot holds every ship as the server has it/m);
    expect(out).not.toContain('\x1b[');
  }, 60_000);
});
