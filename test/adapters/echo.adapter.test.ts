import { afterAll, describe, expect, it } from 'vitest';
import { gamewire, waitForStderr } from './helpers.js';

const SUMMARY = /^rtt_ms avg=(\d+\.\d\d) p50=(\d+\.\d\d) p99=(\d+\.\d\d) max=(\d+\.\d\d) bytes_per_msg=(\d+\.\d) datagrams_per_msg=(\d+\.\d\d)$/m;

// The "done when": every mode over real UDP through `gamewire proxy` with 10 % loss both ways.
describe('gamewire echo (spawned, real loopback, through gamewire proxy at 10 % loss both ways)', () => {
  const server = gamewire('echo', '--listen', '0', '--host', '127.0.0.1', '--quiet');
  const proxies: ReturnType<typeof gamewire>[] = [];
  afterAll(async () => {
    for (const p of proxies) p.child.kill('SIGINT');
    server.child.kill('SIGINT');
    await Promise.all([server.exit, ...proxies.map((p) => p.exit)]);
  });

  it('every mode: reliable ones get every echo (in order when ordered), the others intact and never twice', async () => {
    const port = Number((await waitForStderr(server, /listening on 127\.0\.0\.1:(\d+)/))[1]);
    const modes = ['reliable-ordered', 'reliable-unordered', 'unreliable', 'sequenced', 'notify', 'block'];
    // One proxy per mode, each with its own seed, all at once.
    const vias: number[] = [];
    for (const [i] of modes.entries()) {
      const p = gamewire('proxy', '--listen', '0', '--host', '127.0.0.1', '--to', `127.0.0.1:${port}`, '--loss', '10%', '--delay', '5ms', '--seed', String(7 + i));
      proxies.push(p);
      vias.push(Number((await waitForStderr(p, /listening on 127\.0\.0\.1:(\d+)/))[1]));
    }
    const runs = modes.map((mode, i) => mode === 'block'
      ? gamewire('echo', '--connect', `127.0.0.1:${vias[i]}`, '--mode', mode, '--count', '8', '--interval', '100', '--size', '300000')
      : gamewire('echo', '--connect', `127.0.0.1:${vias[i]}`, '--mode', mode, '--count', '150', '--interval', '5', '--size', String(16 + i * 700)));
    const codes = await Promise.all(runs.map((r) => r.exit));
    for (const [i, r] of runs.entries()) {
      expect(codes[i], `${modes[i]}: ${r.stderr()}`).toBe(0);
      const m = r.stdout().match(SUMMARY);
      expect(m, modes[i]).not.toBeNull();
      expect(Number(m![1])).toBeGreaterThanOrEqual(10); // at least the proxy's 2 × 5 ms
    }
    expect(runs[2]!.stderr()).toMatch(/echo: (\d+)\/150 echoes came back \(unreliable\)/);
    expect(runs[4]!.stderr()).toMatch(/reported delivered, \d+ lost/);
  }, 60_000);

  it('exits 1 when nobody answers', async () => {
    const r = gamewire('echo', '--connect', '127.0.0.1:9', '--timeout', '1', '--count', '3');
    expect(await r.exit).toBe(1);
    expect(r.stderr()).toMatch(/FAILED: disconnected \(handshake-timeout\)|FAILED: timeout/);
  }, 20_000);
});
