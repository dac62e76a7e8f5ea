import { createSocket } from 'node:dgram';
import { once } from 'node:events';
import { performance } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { echoPayload, formatEchoSummary, kcpModeOptions } from '../../src/cli/kcp-echo.js';
import { runCli } from '../../src/cli/program.js';
import { nodeKcp } from '../kcp/oracle.js';
import { gamewire, until, waitForStderr } from './helpers.js';

const SUMMARY = /^rtt_ms avg=(\d+\.\d\d) p50=(\d+\.\d\d) p99=(\d+\.\d\d) max=(\d+\.\d\d) bytes_per_msg=(\d+\.\d) datagrams_per_msg=(\d+\.\d\d)$/m;

describe('gamewire kcp-echo (spawned, real loopback)', () => {
  const server = gamewire('kcp-echo', '--listen', '0', '--host', '127.0.0.1');
  afterAll(async () => {
    server.child.kill('SIGINT');
    await server.exit;
  });

  it('echoes for our client in every mode and for a C KCP client (node-kcp) at the same time', async () => {
    const port = Number((await waitForStderr(server, /listening on 127\.0\.0\.1:(\d+)/))[1]);
    const runs = [
      gamewire('kcp-echo', '--connect', `127.0.0.1:${port}`, '--mode', 'default', '--count', '40', '--interval', '2'),
      gamewire('kcp-echo', '--connect', `127.0.0.1:${port}`, '--mode', 'normal', '--count', '40', '--interval', '2', '--conv', '7'),
      gamewire('kcp-echo', '--connect', `127.0.0.1:${port}`, '--mode', 'fast', '--count', '40', '--interval', '2', '--conv', '7', '--size', '3000'),
    ];
    // node-kcp (the C ikcp.c) as a client of the CLI server, same time: raw KCP, no extra bytes.
    const KCP = nodeKcp();
    const sock = createSocket('udp4');
    sock.bind(0, '127.0.0.1');
    await once(sock, 'listening');
    const c = new KCP(0x11223344);
    c.output((d: Buffer, size: number) => sock.send(d, 0, size, port, '127.0.0.1'));
    c.nodelay(2, 10, 1, 1);
    c.wndsize(128, 128);
    sock.on('message', (m) => c.input(m));
    const got: Buffer[] = [];
    for (let i = 0; i < 30; i++) c.send(Buffer.from(echoPayload(i, 1 + i * 97)));
    const t = setInterval(() => {
      c.update(Math.floor(performance.now()));
      for (let m = c.recv(); m !== undefined; m = c.recv()) got.push(m);
    }, 5);
    try {
      const codes = await Promise.all(runs.map((r) => r.exit));
      for (const [i, r] of runs.entries()) {
        expect(codes[i], r.stderr()).toBe(0);
        expect(r.stdout()).toMatch(SUMMARY);
      }
      await until(() => got.length >= 30, "node-kcp's 30 echoes", 5000);
      expect(got.map((b) => b.toString('hex'))).toEqual(Array.from({ length: 30 }, (_, i) => Buffer.from(echoPayload(i, 1 + i * 97)).toString('hex')));
    } finally {
      clearInterval(t);
      c.release();
      sock.close();
    }
    expect(server.stderr()).toMatch(/conv=7 open/);
  });

  it('stream mode end to end', async () => {
    const s = gamewire('kcp-echo', '--listen', '0', '--host', '127.0.0.1', '--stream', '--quiet');
    try {
      const port = Number((await waitForStderr(s, /listening on 127\.0\.0\.1:(\d+)/))[1]);
      const r = gamewire('kcp-echo', '--connect', `127.0.0.1:${port}`, '--stream', '--count', '60', '--size', '2500', '--interval', '0');
      expect(await r.exit, r.stderr()).toBe(0);
      expect(r.stdout()).toMatch(SUMMARY);
    } finally {
      s.child.kill('SIGINT');
      await s.exit;
    }
  });

  it('exits 1 when nobody answers and 2 on bad arguments', async () => {
    const r = gamewire('kcp-echo', '--connect', '127.0.0.1:9', '--timeout', '1', '--count', '3');
    expect(await r.exit).toBe(1);
    expect(r.stderr()).toMatch(/FAILED: timeout/);
    const bad: string[][] = [
      ['kcp-echo'],
      ['kcp-echo', '--listen', '1', '--connect', '127.0.0.1:2'],
      ['kcp-echo', '--connect', '127.0.0.1:2', '--mode', 'turbo'],
      ['kcp-echo', '--connect', '127.0.0.1:2', '--mtu', '20'],
      ['kcp-echo', '--connect', '127.0.0.1:2', '--count', '0'],
      ['kcp-echo', '--connect', '127.0.0.1:2', '--conv', '4294967296'],
      ['kcp-echo', '--connect', '127.0.0.1:2', '--size', '200000'],
    ];
    const saved = process.stderr.write.bind(process.stderr);
    process.stderr.write = (() => true) as typeof process.stderr.write;
    try {
      for (const args of bad) expect(await runCli(['node', 'gamewire', ...args]), args.join(' ')).toBe(2);
    } finally {
      process.stderr.write = saved;
    }
  });
});

describe('kcp-echo pieces', () => {
  it("modes are test.cpp's settings", () => {
    expect(kcpModeOptions('default', 'client', false)).toMatchObject({ nodelay: 0, interval: 10, resend: 0, nc: false, sndWnd: 128, rcvWnd: 128 });
    expect(kcpModeOptions('normal', 'server', false)).toMatchObject({ nodelay: 0, interval: 10, resend: 0, nc: true });
    expect(kcpModeOptions('fast', 'client', false)).toMatchObject({ nodelay: 2, interval: 10, resend: 1, nc: true, minRto: 10 });
    expect(kcpModeOptions('fast', 'server', true)).toMatchObject({ nodelay: 2, interval: 10, resend: 2, nc: true, stream: true });
  });

  it('formats the summary line', () => {
    expect(formatEchoSummary([10, 20, 30, 40], 1000, 7, 4)).toBe('rtt_ms avg=25.00 p50=20.00 p99=40.00 max=40.00 bytes_per_msg=250.0 datagrams_per_msg=1.75');
  });
});
