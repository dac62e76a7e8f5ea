import { describe, expect, it } from 'vitest';
import { gamewire, until, waitForStderr } from './helpers.js';

// Ctrl-C (SIGINT) on every long-running command: it tells the other end where the protocol has a
// way to (a disconnect), and exits 130 (docs/cli.md, Output and exit codes).

describe.concurrent('gamewire: Ctrl-C on echo and kcp-echo (spawned, real loopback)', () => {
  it('echo --connect tells the server (a disconnect, not a timeout) and exits 130; echo --listen exits 130', async () => {
    const server = gamewire('echo', '--listen', '0', '--host', '127.0.0.1');
    const [, port] = await waitForStderr(server, /echo listening on [\d.]+:(\d+)/);
    const client = gamewire('echo', '--connect', `127.0.0.1:${port}`, '--count', '100000', '--interval', '20ms');
    await waitForStderr(server, /connected/);
    client.child.kill('SIGINT');
    expect(await client.exit, client.stderr()).toBe(130);
    expect(client.stderr()).toMatch(/^echo: interrupted \(\d+\/100000 echoed\)$/m);
    // The connection's timeout is seconds; the disconnect is logged long before.
    await until(() => /disconnected \(peer\)/.test(server.stderr()), 'the server to log the disconnect', 3000);
    server.child.kill('SIGINT');
    expect(await server.exit, server.stderr()).toBe(130);
    expect(server.stderr()).toMatch(/^echo: 1 connections, \d+ messages echoed/m);
  });

  it('kcp-echo --connect and --listen exit 130', async () => {
    const server = gamewire('kcp-echo', '--listen', '0', '--host', '127.0.0.1');
    const [, port] = await waitForStderr(server, /kcp-echo listening on [\d.]+:(\d+)/);
    const client = gamewire('kcp-echo', '--connect', `127.0.0.1:${port}`, '--count', '100000', '--interval', '20ms');
    await waitForStderr(server, /open/);
    client.child.kill('SIGINT');
    server.child.kill('SIGINT');
    expect(await client.exit, client.stderr()).toBe(130);
    expect(client.stderr()).toMatch(/^kcp-echo: interrupted \(\d+\/100000 echoed\)$/m);
    expect(await server.exit, server.stderr()).toBe(130);
  });
});
