import { createSocket } from 'node:dgram';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { runCli } from '../../src/cli/program.js';
import { NonCryptoRng } from '../../src/core/rng.js';
import { gamewire, waitFor, waitForStderr } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'gamewire-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('gamewire CLI (spawned, real loopback)', () => {
  it('bad arguments exit 2 with a message naming the problem (spawned)', async () => {
    const cases: [string[], RegExp][] = [
      [['send', 'x.bin', '--to', '127.0.0.1:9', '--rate', '10'], /--rate.*"10" needs a unit: bits per second/s],
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
      [['send', '--to', '127.0.0.1:9'], /missing FILE \(usage: gamewire send FILE --to HOST:PORT/],
      [['send'], /missing FILE and --to HOST:PORT \(usage: gamewire send FILE --to HOST:PORT/],
      [['send', 'x.bin'], /missing --to HOST:PORT \(usage: gamewire send FILE --to HOST:PORT/],
      // One port range, said the same way, whichever end a port misses.
      [['echo', '--connect', 'host:99999'], /--connect.*expected HOST:PORT with a port in 1\.\.65535, got "host:99999"/s],
      [['echo', '--connect', 'host:0'], /--connect.*expected HOST:PORT with a port in 1\.\.65535, got "host:0"/s],
      [['serve', '--port', '65536'], /--port.*expected a port in 0\.\.65535 \(0 = any free port\), got "65536"/s],
      // Sizes take units and name the range they must fall in.
      [['echo', '--connect', '127.0.0.1:2', '--size', '1MiB', '--count', '0'], /--count must be at least 1/],
      [['echo', '--connect', '127.0.0.1:2', '--size', '2MiB'], /--size: expected a size in 4\.\.1048576 bytes \(--mode block: 4\.\.16777216\), got 2097152/],
      [['echo', '--connect', '127.0.0.1:2', '--size', 'big'], /--size.*expected a size in 4\.\.1048576 bytes \(--mode block: 4\.\.16777216\), got "big"/s],
      [['connect', '--server', '127.0.0.1:2', '--raw', '--size', '1300'], /--size: expected a size in 1\.\.1200 bytes \(with --raw\), got 1300/],
      [['kcp-echo', '--connect', '127.0.0.1:2', '--size', '0'], /--size.*expected a size in 1\.\./s],
      // A token names IP addresses; it must not expire before it is used.
      [['token', '--key', 'ab'.repeat(32), '--protocol-id', '1', '--client-id', '1', '--server', 'example.com:40000', '--out', join(dir, 'never.token')], /--server.*a connect token names IP addresses: expected IPV4:PORT, got "example\.com:40000"/s],
      [['token', '--key', 'ab'.repeat(32), '--protocol-id', '1', '--client-id', '1', '--server', '127.0.0.1:40000', '--out', join(dir, 'never.token'), '--expire', '0'], /--expire.*at least 1/s],
      [['token', '--key', 'ab'.repeat(32), '--protocol-id', '1', '--client-id', '1', '--server', '127.0.0.1:40000', '--out', join(dir, 'never.token'), '--timeout', '0'], /--timeout.*at least 1/s],
      [['recv', '--out', 'x', '--timeout', 'soon'], /--timeout.*cannot read duration "soon"/s],
      [['recv', '--out', 'x', '--max-bytes', '1.5'], /--max-bytes.*whole number/s],
      [['proxy', '--listen', '0', '--to', '127.0.0.1:9', '--loss', '2'], /--loss.*probability/s],
      [['proxy', '--listen', '70000', '--to', '127.0.0.1:9'], /--listen.*0\.\.65535/s],
      [['proxy', '--listen', '0', '--to', '127.0.0.1:9', '--preset', 'moon'], /--preset.*unknown link preset 'moon'/],
      [['send', 'x.bin', '--to', '127.0.0.1:9', '--frobnicate'], /unknown option '--frobnicate'/],
      [['teleport'], /unknown command 'teleport'/],
      [[], /missing command \(one of: recv, send, proxy, echo, kcp-echo, token, serve, connect\)/],
      [['proxy', '--listen', '0', '--to', '127.0.0.1:9', '--stats-every', '10ms'], /--stats-every must be at least 100ms \(or 0 = off\)/],
      [['kcp-echo', '--listen', '0', '--mtu', '10'], /--mtu must be in 50\.\.65535/],
      [['kcp-echo'], /exactly one of --listen PORT or --connect HOST:PORT/],
      [['echo'], /exactly one of --listen PORT or --connect HOST:PORT/],
      [['echo', '--connect', '127.0.0.1:2', '--mode', 'turbo'], /--mode.*must be one of reliable-ordered, reliable-unordered, unreliable, sequenced, notify/s],
      [['echo', '--connect', '127.0.0.1:2', '--size', '3'], /--size.*4\.\.1048576/s],
      [['kcp-echo', '--connect', '127.0.0.1:9', '--mode', 'warp'], /--mode.*default, normal or fast/s],
    ];
    const problems: string[] = [];
    for (const [args, re] of cases) {
      let text = '';
      let stdout = '';
      const spy = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
        text += chunk.toString();
        return true;
      });
      const spyOut = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
        stdout += chunk.toString();
        return true;
      });
      let code: number;
      try {
        code = await runCli(['node', 'gamewire', ...args]);
      } finally {
        spy.mockRestore();
        spyOut.mockRestore();
      }
      // One shape for every command: one "error: " line, then where to read the usage; nothing on stdout.
      const command = ['recv', 'send', 'proxy', 'echo', 'kcp-echo', 'token', 'serve', 'connect'].includes(args[0] ?? '') ? `${args[0]} ` : '';
      const shape = new RegExp(`^error: [^\\n]+\\n\\(run 'gamewire ${command}--help' for usage\\)\\n$`);
      if (code !== 2 || !re.test(text) || !shape.test(text) || stdout !== '') problems.push(`${args.join(' ')} -> exit ${code}: ${text}${stdout}`);
    }
    expect(problems).toEqual([]);
  });

  it('help shows duration defaults as written and --rate as the adaptive ceiling', async () => {
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += chunk.toString();
      return true;
    });
    try {
      for (const c of ['send', 'recv', 'proxy', 'echo', 'kcp-echo', 'connect']) expect(await runCli(['node', 'gamewire', c, '--help'])).toBe(0);
    } finally {
      spy.mockRestore();
    }
    const flat = out.replace(/\s+/g, ' ');
    // Every duration default is shown with its unit (not as the ms it parses to).
    expect(flat).not.toMatch(/<duration>[^<]*?\(default: \d+\)/);
    expect(flat).toMatch(/--timeout <duration> give up after this long without hearing from the receiver \(bare number = s\) \(default: 30s\)/);
    expect(flat).toMatch(/--rate <rate> highest rate the adaptive controller may use/);
    expect(flat).not.toMatch(/initial rate/);
    expect(flat).toMatch(/--idle-timeout <duration> .* \(default: 30s\)/);
    // connect's --size: 16 B lane messages by default, 1200 B only for raw payloads.
    expect(flat).toMatch(/--size <bytes> bytes per message \(4\.\.1048576, default 16\); with --raw, per raw payload \(1\.\.1200, default 1200\)/);
  });

  it("gamewire --help's summary names every command", async () => {
    let out = '';
    const spy = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
      out += chunk.toString();
      return true;
    });
    try {
      expect(await runCli(['node', 'gamewire', '--help'])).toBe(0);
    } finally {
      spy.mockRestore();
    }
    const summary = out.split(/\n\s*Options:/)[0]!.replace(/\s+/g, ' ');
    for (const c of ['recv', 'send', 'echo', 'kcp-echo', 'token', 'serve', 'connect', 'proxy']) expect(summary).toMatch(new RegExp(`[(, ]${c}[,)]`));
    // And so does the CLI list in docs/architecture.md.
    const list = /cli\/ {2}([^\n]*)/.exec(readFileSync(join(import.meta.dirname, '../../docs/architecture.md'), 'utf8'))?.[1] ?? '';
    expect(list.split(/,\s*/)).toEqual(expect.arrayContaining(['recv', 'send', 'proxy', 'echo', 'kcp-echo', 'token', 'serve', 'connect']));
  });

  it('recv refuses an --out it cannot write before listening (exit 1), so no sender is ever acked', async () => {
    const cases: [string, RegExp][] = [
      [dir, /cannot write --out .*: it is a directory/],
      [join(dir, 'no-such-dir', 'out.bin'), /cannot write --out .*: directory .*no-such-dir does not exist/],
    ];
    const runs = cases.map(([out]) => gamewire('recv', '--port', '0', '--host', '127.0.0.1', '--out', out, '--wait', '30s'));
    const codes = await Promise.all(runs.map((r) => r.exit));
    cases.forEach(([, re], i) => {
      expect(codes[i], runs[i].stderr()).toBe(1);
      expect(runs[i].stderr()).toMatch(re);
      expect(runs[i].stderr()).not.toMatch(/listening on/);
    });
  });

  it('send to a host name that does not resolve fails at once with the lookup error (exit 1)', async () => {
    const file = join(dir, 'tiny.bin');
    writeFileSync(file, new Uint8Array(1000));
    const t0 = performance.now();
    const run = gamewire('send', file, '--to', 'nosuchhost.invalid:9000', '--timeout', '60s', '--quiet');
    expect(await run.exit, run.stderr()).toBe(1);
    expect(run.stderr()).toMatch(/^error: cannot send to nosuchhost\.invalid:9000: .*(ENOTFOUND|EAI_AGAIN|not found|resolve)/im);
    // One clean line: no stack trace, no error-code prefix, not the old "Not connected".
    expect(run.stderr().trim().split('\n')).toHaveLength(1);
    expect(run.stderr()).not.toMatch(/Not connected|invalid-argument|at .*\.ts:\d+/);
    // Well before --timeout: the lookup error is reported, not waited out.
    expect(performance.now() - t0).toBeLessThan(30_000);
  });

  it('recv on a port already in use fails at once with exit 1', async () => {
    const busy = createSocket('udp4');
    await new Promise<void>((r) => busy.bind(0, '127.0.0.1', () => r()));
    const port = busy.address().port;
    const run = gamewire('recv', '--port', String(port), '--host', '127.0.0.1', '--out', join(dir, 'busy.bin'));
    const code = await run.exit;
    busy.close();
    expect(code, run.stderr()).toBe(1);
    expect(run.stderr()).toMatch(new RegExp(`^error: cannot listen on 127\\.0\\.0\\.1:${port}: .*EADDRINUSE`, 'm'));
  });

  it('proxy --stats-every 0 means off; a positive period prints counters; Ctrl-C ends it with 130', async () => {
    const off = gamewire('proxy', '--listen', '0', '--host', '127.0.0.1', '--to', '127.0.0.1:9', '--stats-every', '0');
    const on = gamewire('proxy', '--listen', '0', '--host', '127.0.0.1', '--to', '127.0.0.1:9', '--stats-every', '100ms');
    await waitForStderr(off, /proxy listening on/);
    await waitForStderr(on, /proxy listening on/);
    // The positive control prints within a few periods; by then a 0 period (old behaviour: a
    // zero-delay interval) would have flooded.
    await waitForStderr(on, /c->s: .*\n.*c->s: /s);
    expect(await waitFor(() => /c->s:/.test(off.stderr()), 300)).toBe(false);
    off.child.kill('SIGINT');
    on.child.kill('SIGINT');
    expect(await off.exit).toBe(130);
    expect(await on.exit).toBe(130);
    expect(off.stderr().trim().split('\n')).toHaveLength(1);
  });

  it('Ctrl-C during send cancels the block: send exits 130, recv hears the cancel and exits 1', async () => {
    const src = join(dir, 'slow.bin');
    writeFileSync(src, new NonCryptoRng(7).fill(new Uint8Array(2 * 1024 * 1024)));
    const recv = gamewire('recv', '--port', '0', '--host', '127.0.0.1', '--out', join(dir, 'slow-out.bin'), '--timeout', '20s');
    const [, recvPort] = await waitForStderr(recv, /listening on [\d.]+:(\d+)/);
    const proxy = gamewire('proxy', '--listen', '0', '--host', '127.0.0.1', '--to', `127.0.0.1:${recvPort}`, '--stats-every', '100ms');
    const [, proxyPort] = await waitForStderr(proxy, /proxy listening on [\d.]+:(\d+)/);
    // 2 MiB at 1 Mbit/s takes ~17 s: interrupt once slices are flowing.
    const send = gamewire('send', src, '--to', `127.0.0.1:${proxyPort}`, '--rate', '1mbit', '--no-adaptive', '--timeout', '20s');
    await waitForStderr(proxy, /c->s: ([2-9]\d|\d{3,}) in/);
    send.child.kill('SIGINT');
    expect(await send.exit, send.stderr()).toBe(130);
    expect(send.stderr()).toMatch(/^error: interrupted$/m);
    expect(await recv.exit, recv.stderr()).toBe(1);
    expect(recv.stderr()).toMatch(/the sender cancelled the block/);
    proxy.child.kill('SIGINT');
    await proxy.exit;
  });

  it('Ctrl-C during recv exits 130 at once', async () => {
    const recv = gamewire('recv', '--port', '0', '--host', '127.0.0.1', '--out', join(dir, 'never.bin'));
    await waitForStderr(recv, /listening on/);
    recv.child.kill('SIGINT');
    expect(await recv.exit, recv.stderr()).toBe(130);
    expect(recv.stderr()).toMatch(/^error: interrupted$/m);
    // --out was opened before listening; with no block stored, the file it created is gone again.
    expect(existsSync(join(dir, 'never.bin'))).toBe(false);
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
    expect(await proxy2.exit).toBe(130);

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
