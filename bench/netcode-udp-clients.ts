/**
 * The client process of bench:netcode's real-socket row (started by bench/netcode-udp.ts): N netcode
 * `Client`s, each on its own `UdpDriver` socket at 127.0.0.1 (so the server sees N addresses, as with N
 * players), connecting with tokens made here, then, once all are connected, each sending a 40-byte input
 * at 20 Hz on the reliable-ordered lane. The clients' phases are spread over the period in ten 5 ms groups, as
 * independent players' clocks would be.
 * Usage (IPC child only): netcode-udp-clients.ts sodium|null CLIENTS SERVER_PORT.
 */
import { performance } from 'node:perf_hooks';
import { UdpDriver } from '../src/adapters/node/udp-driver.js';
import { Client, type ClientEvent } from '../src/netcode/client.js';
import { generateConnectToken } from '../src/netcode/wire.js';
import { cryptoFor, type ChildMessage, INPUT_BYTES, type ParentMessage, UDP_HZ, UDP_KEY, UDP_PROTOCOL, type UdpCrypto, type UdpWindow } from './netcode-udp.js';

const say = (m: ChildMessage): void => void process.send!(m);
process.on('disconnect', () => process.exit(1));

const GROUPS = 10;
/** Clients whose handshake starts together, and the gap between such batches (ms). */
const CONNECT_BATCH = 100;
const CONNECT_GAP_MS = 25;

const go = new Promise<void>((resolve) => {
  const onGo = (m: ParentMessage): void => {
    if (m.type !== 'go') return;
    process.off('message', onGo);
    resolve();
  };
  process.on('message', onGo);
});

async function main(): Promise<void> {
  const [cryptoName, nArg, portArg] = process.argv.slice(2);
  const n = Number(nArg);
  const server = `127.0.0.1:${Number(portArg)}`;
  const crypto = await cryptoFor(cryptoName as UdpCrypto);
  const clients: Client[] = [];
  const drivers: UdpDriver<ClientEvent>[] = [];
  let connected = 0;
  let messagesIn = 0;
  let messagesOut = 0;
  let disconnects = 0;
  const t0 = performance.now();
  let allConnected = false;
  const input = new Uint8Array(INPUT_BYTES).fill(5);
  const step = 1000 / UDP_HZ / GROUPS;
  let group = 0;
  let due = 0;
  // Inputs start once every client is in (traffic during the handshakes would decide how many get in).
  function startInputs(): void {
    due = performance.now() + step;
    setTimeout(tick, step);
  }
  const tick = (): void => {
    // Groups that came due while the process was busy are sent now (at most one period's worth).
    const now = performance.now();
    for (let k = 0; k < GROUPS && due <= now; k++) {
      for (let i = group; i < n; i += GROUPS) {
        const c = clients[i]!;
        if (c.state === 'connected') {
          c.send(0, input);
          messagesOut++;
        }
      }
      group = (group + 1) % GROUPS;
      due += step;
    }
    if (due <= now) due = now + step;
    setTimeout(tick, Math.max(0, due - performance.now()));
  };

  for (let i = 0; i < n; i++) {
    const c = new Client({ crypto });
    const d = await UdpDriver.openEndpoint(c, { host: '127.0.0.1', port: 0, maxSendsPerTick: 8, recvBufferBytes: 1 << 18, sendBufferBytes: 1 << 16 });
    d.on('event', (e: ClientEvent) => {
      if (e.type === 'message') messagesIn++;
      else if (e.type === 'connected') {
        connected++;
        if (connected === n && !allConnected) {
          allConnected = true;
          startInputs();
          say({ type: 'connected', clients: n, ms: performance.now() - t0 });
        }
      } else if (e.type === 'disconnected') {
        connected--;
        disconnects++;
      }
    });
    clients.push(c);
    drivers.push(d);
  }
  await go;
  const nowUnix = Math.floor(Date.now() / 1000);
  for (let i = 0; i < n; i += CONNECT_BATCH) {
    for (let j = i; j < Math.min(n, i + CONNECT_BATCH); j++) {
      const token = generateConnectToken({
        protocolId: UDP_PROTOCOL, privateKey: UDP_KEY, clientId: BigInt(j + 1), serverAddresses: [server], nowUnixSeconds: nowUnix,
        expireSeconds: 600, timeoutSeconds: 10, crypto,
      });
      clients[j]!.connect(drivers[j]!.now(), token);
    }
    await new Promise((r) => setTimeout(r, CONNECT_GAP_MS));
  }

  const sum = (): { din: number; dout: number } => {
    let din = 0;
    let dout = 0;
    for (const d of drivers) {
      const k = d.counters();
      din += k.datagramsIn;
      dout += k.datagramsOut;
    }
    return { din, dout };
  };
  process.on('message', (m: ParentMessage) => {
    if (m.type === 'stop') process.exit(0);
    if (m.type !== 'measure') return;
    const cpu0 = process.cpuUsage();
    const elu0 = performance.eventLoopUtilization();
    const at = performance.now();
    const k0 = sum();
    const m0 = { i: messagesIn, o: messagesOut, d: disconnects };
    setTimeout(() => {
      const k1 = sum();
      const cpu = process.cpuUsage(cpu0);
      const window: UdpWindow = {
        wallMs: performance.now() - at, userMs: cpu.user / 1000, systemMs: cpu.system / 1000,
        loopBusy: performance.eventLoopUtilization(elu0).utilization,
        datagramsIn: k1.din - k0.din, datagramsOut: k1.dout - k0.dout, messagesIn: messagesIn - m0.i, messagesOut: messagesOut - m0.o,
        connected, disconnects: disconnects - m0.d,
      };
      say({ type: 'window', window });
    }, m.ms);
  });
  setTimeout(() => {
    if (!allConnected) say({ type: 'error', message: `clients: ${connected} of ${n} connected after 30 s` });
  }, 30_000).unref();
}

main().catch((err: unknown) => {
  say({ type: 'error', message: `clients: ${(err as Error).stack ?? String(err)}` });
  process.exit(1);
});
