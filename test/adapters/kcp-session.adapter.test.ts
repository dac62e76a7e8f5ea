import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { KcpUdpClient, KcpUdpServer } from '../../src/adapters/node/kcp.js';
import { addressKey, UdpDriver } from '../../src/adapters/node/udp-driver.js';
import { KcpClient, type KcpSession, type KcpSessionEvent } from '../../src/kcp/session.js';
import { waitFor } from './helpers.js';

// Cookie mode between two gamewire ends over real loopback UDP: handshake, echo, the session
// following the client to a new source port (migration), and CLOSE reaching the server.

const KCP = { nodelay: 1, interval: 10, resend: 2, nc: true };
const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  while (cleanups.length > 0) await cleanups.pop()!();
});

describe('KCP cookie mode over loopback UDP', () => {
  it('handshakes, echoes, follows the client to a new port, and closes', async () => {
    const server = await KcpUdpServer.open({ host: '127.0.0.1', mode: 'cookie', kcp: KCP });
    cleanups.push(() => server.close());
    const migrated: string[] = [];
    const closed: string[] = [];
    server.on('message', (s, d) => s.send(d));
    server.on('migrated', (s, from) => migrated.push(`${from} -> ${s.address}`));
    server.on('closed', (_s, reason) => closed.push(reason));

    // First socket.
    const remote = { host: '127.0.0.1', port: server.local.port };
    const client = new KcpClient({ mode: 'cookie', kcp: KCP, remote: addressKey(remote.host, remote.port) });
    const got: Uint8Array[] = [];
    const onEvent = (ev: KcpSessionEvent): void => {
      if (ev.type === 'message') got.push(ev.data);
    };
    const d1 = await UdpDriver.openEndpoint<KcpSessionEvent>(client, { remote });
    d1.on('event', onEvent);
    expect(await waitFor(() => client.state === 'open', 3000)).toBe(true);
    for (let i = 0; i < 20; i++) client.send(new Uint8Array([i, 1, 2, 3]));
    d1.kick();
    expect(await waitFor(() => got.length === 20, 3000)).toBe(true);
    const firstPort = d1.local.port;
    await d1.close();

    // Same session, new socket (new source port): the cookie lets the server move it.
    const d2 = await UdpDriver.openEndpoint<KcpSessionEvent>(client, { remote });
    cleanups.push(() => d2.close());
    d2.on('event', onEvent);
    for (let i = 20; i < 40; i++) client.send(new Uint8Array([i, 1, 2, 3]));
    d2.kick();
    expect(await waitFor(() => got.length === 40, 3000)).toBe(true);
    expect(got.map((m) => m[0])).toEqual(Array.from({ length: 40 }, (_, i) => i));
    expect(migrated).toEqual([`127.0.0.1:${firstPort} -> 127.0.0.1:${d2.local.port}`]);
    expect(server.server.sessionCount).toBe(1);

    client.close();
    d2.kick();
    expect(await waitFor(() => closed.length === 1, 3000)).toBe(true);
    expect(closed).toEqual(['peer']);
    expect(server.server.sessionCount).toBe(0);
  });

  it('KcpUdpClient: raw mode open event, send and linger close', async () => {
    const server = await KcpUdpServer.open({ host: '127.0.0.1', kcp: KCP });
    cleanups.push(() => server.close());
    let received = 0;
    server.on('message', () => received++);
    const opened: KcpSession[] = [];
    server.on('open', (s) => opened.push(s));
    const client = await KcpUdpClient.open({ server: { host: '127.0.0.1', port: server.local.port }, conv: 42, kcp: KCP });
    await once(client, 'open');
    for (let i = 0; i < 50; i++) client.send(new Uint8Array(1000).fill(i));
    await client.close({ linger: true });
    expect(await waitFor(() => received === 50, 3000)).toBe(true);
    expect(opened.map((s) => s.conv)).toEqual([42]);
  });
});
