#!/usr/bin/env node
import { createHash, randomBytes } from 'node:crypto';
import { UdpLinkProxy } from '../adapters/node/udp-proxy.js';
import { describeLink } from './proxy.js';
import { formatSummary, ProgressBar } from './report.js';
import { receiveOne, sendOne, TransferError, type ReceiveResult } from './transfer.js';
import { stopSignal } from './units.js';

const BLOCK_BYTES = 4 * 1024 * 1024;
const LINK = { latencyMs: 50, loss: 0.05 };
const DEADLINE_MS = 60_000;

function sha256(b: Uint8Array): string {
  return createHash('sha256').update(b).digest('hex');
}

/**
 * `npm run demo`: one process, real loopback sockets. A receiver, a proxy with 100 ms RTT and 5% loss
 * each way, and a sender moving a 4 MiB random block, verified by SHA-256. Exit 0 on success, 1 otherwise.
 */
async function demo(): Promise<number> {
  const stop = stopSignal();
  const block = randomBytes(BLOCK_BYTES);
  const want = sha256(block);
  let gotBlock: ((r: ReceiveResult) => void) | undefined;
  const received = new Promise<ReceiveResult>((r) => (gotBlock = r));
  let listening: ((port: number) => void) | undefined;
  const recvPort = new Promise<number>((r) => (listening = r));

  const receiving = receiveOne({
    port: 0,
    host: '127.0.0.1',
    idleTimeoutMs: 20_000,
    signal: stop.signal,
    onListening: (a) => listening!(a.port),
    onBlock: (r) => gotBlock!(r),
  });
  // Awaited below; until then a rejection (Ctrl-C, timeout) must not count as unhandled.
  receiving.catch(() => undefined);
  const proxy = await UdpLinkProxy.open({
    listenHost: '127.0.0.1',
    target: { host: '127.0.0.1', port: await recvPort },
    toServer: LINK,
    seed: 2024,
  });
  process.stdout.write(
    `gamewire demo: ${BLOCK_BYTES} random bytes, sender -> proxy 127.0.0.1:${proxy.local.port} (each way: ${describeLink(LINK)}) -> receiver\n`,
  );

  const deadline = new Promise<never>((_, reject) => {
    const t = setTimeout(() => reject(new Error(`not done within ${DEADLINE_MS / 1000} s`)), DEADLINE_MS);
    t.unref();
  });
  try {
    const sent = await Promise.race([
      sendOne(block, {
        to: { host: '127.0.0.1', port: proxy.local.port },
        port: 0,
        adaptive: true,
        burst: false,
        idleTimeoutMs: 20_000,
        progress: new ProgressBar('send', true),
        signal: stop.signal,
      }),
      deadline,
    ]);
    const r = await Promise.race([received, deadline]);
    await Promise.race([receiving, deadline]);
    process.stdout.write(formatSummary({ verb: 'sent', ...sent }) + '\n');
    process.stdout.write(formatSummary({ verb: 'received', bytes: r.data.length, seconds: r.seconds, datagramsSent: r.datagramsSent }) + '\n');
    const c = proxy.counters();
    process.stdout.write(
      `proxy: c->s ${c.toServer.sent} datagrams, ${c.toServer.droppedLoss} lost; s->c ${c.toClient.sent} datagrams, ${c.toClient.droppedLoss} lost\n`,
    );
    const got = sha256(r.data);
    if (got !== want || r.data.length !== block.length) {
      process.stdout.write(`FAIL: sha256 mismatch (sent ${want}, received ${got})\n`);
      return 1;
    }
    process.stdout.write(`OK: sha256 ${got} matches\n`);
    return 0;
  } finally {
    stop.dispose();
    await proxy.close();
  }
}

demo().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stdout.write(`FAIL: ${(err as Error).message ?? String(err)}\n`);
    process.exit(err instanceof TransferError ? err.exitCode : 1);
  },
);
