import { describe, expect, it } from 'vitest';
import { KcpUdpClient, KcpUdpServer } from '../../src/adapters/node/kcp.js';
import type { KcpCloseReason } from '../../src/kcp/session.js';
import { nextEvent, until } from './helpers.js';

const KCP = { nodelay: 1, interval: 10, resend: 2, nc: true };

describe('KcpUdpClient.close() called inside a message handler (loopback, cookie mode)', () => {
  it('sends CLOSE (the server sees the peer close) and emits closed and close', async () => {
    const server = await KcpUdpServer.open({ host: '127.0.0.1', mode: 'cookie', kcp: KCP });
    const serverClosed: KcpCloseReason[] = [];
    server.on('message', (s, d) => s.send(d));
    server.on('closed', (_s, reason) => serverClosed.push(reason));
    const client = await KcpUdpClient.open({ server: { host: '127.0.0.1', port: server.local.port }, mode: 'cookie', kcp: KCP });
    const clientClosed: KcpCloseReason[] = [];
    client.on('closed', (_s, reason) => clientClosed.push(reason));
    const socketClosed = nextEvent(client, 'close');
    let closing: Promise<void> | undefined;
    client.on('message', () => {
      closing ??= client.close();
    });
    await nextEvent(client, 'open');
    client.send(new Uint8Array([1, 2, 3])); // no kick(): the session wakes its driver
    await socketClosed;
    await closing;
    expect(clientClosed).toEqual(['local']);
    await until(() => serverClosed.length === 1, "the server's closed event");
    expect(serverClosed).toEqual(['peer']);
    expect(server.server.sessionCount).toBe(0);
    await server.close();
  });
});
