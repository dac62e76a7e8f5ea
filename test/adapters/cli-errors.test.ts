import { createSocket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { gamewire, waitFor } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'gamewire-cli-errors-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Run the CLI in this process; what it printed and its exit code. */
async function cli(...args: string[]): Promise<{ code: number; err: string; out: string }> {
  let err = '';
  let out = '';
  const e = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
    err += chunk.toString();
    return true;
  });
  const o = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += chunk.toString();
    return true;
  });
  try {
    return { code: await runCli(['node', 'gamewire', ...args]), err, out };
  } finally {
    e.mockRestore();
    o.mockRestore();
  }
}

const TOKEN = ['token', '--key', 'ab'.repeat(32), '--protocol-id', '1', '--client-id', '7'];

describe('gamewire: run failures say what and where, in one line (exit 1)', () => {
  it('token --out and connect --token name the path that failed', async () => {
    const cases: [string[], string][] = [
      [[...TOKEN, '--server', '127.0.0.1:40000', '--out', join(dir, 'nope', 't.bin')], `error: cannot write --out ${join(dir, 'nope', 't.bin')}: directory ${join(dir, 'nope')} does not exist\n`],
      [[...TOKEN, '--server', '127.0.0.1:40000', '--out', dir], `error: cannot write --out ${dir}: it is a directory\n`],
      [['connect', '--token', dir], `error: cannot read --token ${dir}: it is a directory\n`],
      [['connect', '--token', join(dir, 'missing.token')], `error: cannot read --token ${join(dir, 'missing.token')}: no such file\n`],
    ];
    for (const [args, want] of cases) {
      const r = await cli(...args);
      expect(r.code, r.err).toBe(1);
      expect(r.err).toBe(want);
    }
  });

  it('connect --token with a file that is not a token fails at once, not after the timeout', async () => {
    const bad = join(dir, 'bad.token');
    writeFileSync(bad, new Uint8Array(100));
    const r = await cli('connect', '--token', bad, '--timeout-after', '3s');
    expect(r.code, r.err).toBe(1);
    expect(r.err).toBe(`error: --token ${bad} is not a netcode 1.02 connect token (100 bytes; a token has 2048)\n`);
  });

  it('a server that never answers: request-timed-out, then one line of likely causes', async () => {
    const silent = createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
    const token = join(dir, 'silent.token');
    expect((await cli(...TOKEN, '--server', `127.0.0.1:${silent.address().port}`, '--timeout', '1', '--out', token)).code).toBe(0);
    const r = await cli('connect', '--token', token, '--timeout-after', '10s');
    silent.close();
    expect(r.code, r.err).toBe(1);
    const lines = r.err.trim().split('\n');
    expect(lines.at(-2)).toBe('connect: FAILED: disconnected (request-timed-out)');
    expect(lines.at(-1)).toMatch(/^connect: hint: the server never answered; likely nothing is listening there, or its --key or --protocol-id differ, or the token was already used, has expired/);
  });

  it('proxy --to a name that does not resolve fails at start-up (exit 1, one line), not on the first datagram', async () => {
    const run = gamewire('proxy', '--listen', '0', '--host', '127.0.0.1', '--to', 'nosuch.invalid:1');
    const exited = await waitFor(() => run.child.exitCode !== null, 8000);
    if (!exited) {
      // What the old proxy did: listen, then crash on the first datagram.
      const port = /listening on [\d.]+:(\d+)/.exec(run.stderr())?.[1];
      if (port !== undefined) {
        const s = createSocket('udp4');
        await new Promise<void>((r) => s.send(new Uint8Array(8), Number(port), '127.0.0.1', () => r()));
        s.close();
      }
      await waitFor(() => run.child.exitCode !== null, 2000);
      run.child.kill('SIGKILL');
    }
    expect(await run.exit, run.stderr()).toBe(1);
    expect(run.stderr()).toMatch(/^error: cannot resolve --to nosuch\.invalid:1: .*(ENOTFOUND|EAI_AGAIN)/);
    expect(run.stderr().trim().split('\n')).toHaveLength(1);
  });
});
