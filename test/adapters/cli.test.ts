import { createSocket } from 'node:dgram';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { gamewire, waitForStderr } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'gamewire-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('gamewire CLI (spawned, real loopback)', () => {
  it('bad arguments exit 2 with a message naming the problem (spawned)', async () => {
    const cases: [string[], RegExp][] = [
      [['send', 'x.bin', '--to', '127.0.0.1:9', '--rate', '10'], /--rate.*cannot read rate "10"/s],
      [['recv', '--port', '1'], /required option '--out <file>'/],
      [['proxy', '--listen', '0', '--to', '127.0.0.1:9', '--queue', '5'], /--queue needs --rate/],
    ];
    const runs = cases.map(([args]) => gamewire(...args));
    const codes = await Promise.all(runs.map((r) => r.exit));
    cases.forEach(([, re], i) => {
      expect(codes[i], runs[i].stderr()).toBe(2);
      expect(runs[i].stderr()).toMatch(re);
    });
  });

  it('bad arguments exit 2 with a message naming the problem (in process)', async () => {
    const cases: [string[], RegExp][] = [
      [['send', 'x.bin', '--to', 'nowhere'], /--to <host:port>.*invalid.*HOST:PORT/s],
      [['send', '--to', '127.0.0.1:9'], /missing required argument 'file'/],
      [['recv', '--out', 'x', '--timeout', 'soon'], /--timeout.*cannot read duration "soon"/s],
      [['recv', '--out', 'x', '--max-bytes', '1.5'], /--max-bytes.*whole number/s],
      [['proxy', '--listen', '0', '--to', '127.0.0.1:9', '--loss', '2'], /--loss.*probability/s],
      [['proxy', '--listen', '70000', '--to', '127.0.0.1:9'], /--listen.*0\.\.65535/s],
      [['proxy', '--listen', '0', '--to', '127.0.0.1:9', '--preset', 'moon'], /--preset.*unknown link preset 'moon'/],
      [['send', 'x.bin', '--to', '127.0.0.1:9', '--frobnicate'], /unknown option '--frobnicate'/],
      [['teleport'], /unknown command 'teleport'/],
      [[], /Usage: gamewire/],
    ];
    for (const [args, re] of cases) {
      let text = '';
      const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
        text += chunk.toString();
        return true;
      });
      let code: number;
      try {
        code = await runCli(['node', 'gamewire', ...args]);
      } finally {
        spy.mockRestore();
      }
      expect(code, `${args.join(' ')}: ${text}`).toBe(2);
      expect(text, args.join(' ')).toMatch(re);
    }
  });

  it('--help and --version exit 0', async () => {
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation(() => true);
    try {
      expect(await runCli(['node', 'gamewire', '--help'])).toBe(0);
      expect(await runCli(['node', 'gamewire', 'send', '--help'])).toBe(0);
      expect(await runCli(['node', 'gamewire', '--version'])).toBe(0);
    } finally {
      spy.mockRestore();
    }
  });

  it('a sender whose receiver never answers gives up after --timeout with exit 1', async () => {
    const silent = createSocket('udp4');
    await new Promise<void>((r) => silent.bind(0, '127.0.0.1', () => r()));
    let heard = 0;
    silent.on('message', () => heard++);
    const file = join(dir, 'small.bin');
    writeFileSync(file, new Uint8Array(10_000));
    const t0 = performance.now();
    const run = gamewire('send', file, '--to', `127.0.0.1:${silent.address().port}`, '--timeout', '1s', '--quiet');
    const code = await run.exit;
    silent.close();
    expect(code, run.stderr()).toBe(1);
    expect(run.stderr()).toMatch(/no answer from 127\.0\.0\.1:\d+.*never answered for 1 s/);
    expect(heard).toBeGreaterThan(0);
    expect(performance.now() - t0).toBeGreaterThan(1000);
  });

  it('recv + proxy (10% loss each way) + send move a 512 KiB file intact', async () => {
    const data = new NonCryptoRng(4242).fill(new Uint8Array(512 * 1024));
    const src = join(dir, 'in.bin');
    const dst = join(dir, 'out.bin');
    writeFileSync(src, data);

    const recv = gamewire('recv', '--port', '0', '--host', '127.0.0.1', '--out', dst, '--timeout', '20s');
    // The proxy needs the receiver's port, so start it once recv has printed it.
    const [, recvPort] = await waitForStderr(recv, /listening on [\d.]+:(\d+)/);
    const proxy2 = gamewire('proxy', '--listen', '0', '--host', '127.0.0.1', '--to', `127.0.0.1:${recvPort}`, '--loss', '0.1', '--delay', '5', '--seed', '3');
    const [, proxyPort] = await waitForStderr(proxy2, /proxy listening on [\d.]+:(\d+)/);
    const send = gamewire('send', src, '--to', `127.0.0.1:${proxyPort}`, '--timeout', '20s');

    expect(await send.exit, send.stderr()).toBe(0);
    expect(await recv.exit, recv.stderr()).toBe(0);
    proxy2.child.kill('SIGINT');
    expect(await proxy2.exit).toBe(0);

    expect(Buffer.compare(readFileSync(dst), Buffer.from(data))).toBe(0);
    expect(send.stdout()).toMatch(/^sent 524288 bytes in [\d.]+ s, goodput [\d.]+ MB\/s .* datagrams per payload datagram, \d+ slices resent\n$/);
    expect(recv.stdout()).toMatch(/^received 524288 bytes in [\d.]+ s, goodput .* -> .*out\.bin\n$/);
    const resent = Number(/(\d+) slices resent/.exec(send.stdout())![1]);
    expect(resent).toBeGreaterThan(0);
    const counters = /c->s: (\d+) in, (\d+) out, (\d+) lost/.exec(proxy2.stdout());
    expect(counters, proxy2.stdout()).not.toBeNull();
    expect(Number(counters![3])).toBeGreaterThan(0);
  });
});
