import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { gamewire, waitForStderr } from './helpers.js';

const SUMMARY = /^rtt_ms avg=(\d+\.\d\d) p50=(\d+\.\d\d) p99=(\d+\.\d\d) max=(\d+\.\d\d) bytes_per_msg=(\d+\.\d) datagrams_per_msg=(\d+\.\d\d)$/m;
const KEY = '000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f';

describe('gamewire token / serve / connect (spawned, real loopback UDP, netcode 1.02)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gamewire-netcode-'));
  const servers: ReturnType<typeof gamewire>[] = [];
  afterAll(async () => {
    for (const s of servers) s.child.kill('SIGINT');
    await Promise.all(servers.map((s) => s.exit));
    rmSync(dir, { recursive: true, force: true });
  });

  const serve = async (...args: string[]): Promise<number> => {
    const s = gamewire('serve', '--port', '0', '--host', '127.0.0.1', '--quiet', ...args);
    servers.push(s);
    return Number((await waitForStderr(s, /listening on 127\.0\.0\.1:(\d+)/))[1]);
  };

  it('a token from `gamewire token` connects to `serve --key`; every echo checked', async () => {
    const port = await serve('--key', KEY, '--protocol-id', 'abcdef');
    const file = join(dir, 'token.bin');
    const t = gamewire('token', '--key', KEY, '--protocol-id', 'abcdef', '--client-id', '42', '--server', `127.0.0.1:${port}`, '--out', file);
    expect(await t.exit, t.stderr()).toBe(0);
    expect(readFileSync(file).length).toBe(2048);
    const c = gamewire('connect', '--token', file, '--count', '50', '--interval', '5');
    expect(await c.exit, c.stderr()).toBe(0);
    expect(c.stdout()).toMatch(SUMMARY);
    expect(c.stderr()).toMatch(/connected to 127\.0\.0\.1:\d+ as client index/);
  }, 30_000);

  it('without --key the pair works out of the box (development key), in raw mode too', async () => {
    const port = await serve('--raw');
    const c = gamewire('connect', '--server', `127.0.0.1:${port}`, '--raw', '--count', '30', '--interval', '5');
    expect(await c.exit, c.stderr()).toBe(0);
    expect(c.stdout()).toMatch(SUMMARY);
  }, 30_000);

  it('a token for another key is never answered: connect fails with a clear reason', async () => {
    const port = await serve('--key', KEY);
    const c = gamewire('connect', '--server', `127.0.0.1:${port}`, '--count', '3');
    expect(await c.exit).toBe(1);
    expect(c.stderr()).toMatch(/FAILED: disconnected \(request-timed-out\)/);
  }, 30_000);

  it('bad arguments exit 2', async () => {
    expect(await gamewire('token', '--key', 'zz', '--protocol-id', '1', '--client-id', '1', '--server', '127.0.0.1:1', '--out', join(dir, 'x')).exit).toBe(2);
    expect(await gamewire('connect', '--count', '1').exit).toBe(2);
  }, 30_000);
});
