/**
 * The server process of bench:netcode's real-socket row (started by bench/netcode-udp.ts): a netcode
 * `Server` on `UdpDriver.openEndpoint` at 127.0.0.1:PORT, one reliable-ordered lane, sending a 100-byte
 * state to every connected client at 20 Hz (one game tick for all of them, as a game server does) from
 * the moment all CLIENTS are connected.
 * Usage (IPC child only): netcode-udp-server.ts sodium|null CLIENTS PORT.
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { systemUnixTime, UdpDriver } from '../src/adapters/node/udp-driver.js';
import { Server, type ServerClient, type ServerEvent } from '../src/netcode/server.js';
import { startProfile } from './cpuprofile.js';
import { cryptoFor, type ChildMessage, type ParentMessage, STATE_BYTES, UDP_HZ, UDP_KEY, UDP_PROTOCOL, type UdpCrypto, type UdpWindow } from './netcode-udp.js';

const say = (m: ChildMessage): void => void process.send!(m);
process.on('disconnect', () => process.exit(1));
const gc = (globalThis as { gc?: () => void }).gc;

/** Heap and array buffers in use after two collections, bytes (0 without --expose-gc). */
function memoryAfterGc(): number {
  if (gc === undefined) return 0;
  gc();
  gc();
  return process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
}

async function main(): Promise<void> {
  const [cryptoName, nArg, portArg] = process.argv.slice(2);
  const n = Number(nArg);
  const port = Number(portArg);
  const server = new Server({
    protocolId: UDP_PROTOCOL, privateKey: UDP_KEY, addresses: [`127.0.0.1:${port}`], unixTime: systemUnixTime, maxClients: n,
    crypto: await cryptoFor(cryptoName as UdpCrypto),
  });
  const driver = await UdpDriver.openEndpoint(server, { host: '127.0.0.1', port });
  const memory0 = memoryAfterGc();
  const live = new Set<ServerClient>();
  let messagesIn = 0;
  let messagesOut = 0;
  let disconnects = 0;
  driver.on('event', (e: ServerEvent) => {
    if (e.type === 'message') messagesIn++;
    else if (e.type === 'connected') {
      live.add(e.client);
      if (live.size === n && due === 0) start();
    }
    else if (e.type === 'disconnected') {
      live.delete(e.client);
      disconnects++;
    }
  });

  const state = new Uint8Array(STATE_BYTES).fill(3);
  const period = 1000 / UDP_HZ;
  let due = 0;
  // The game starts once every client is in: traffic during the handshakes would decide how many get in.
  const start = (): void => {
    due = performance.now() + period;
    setTimeout(tick, period);
  };
  const tick = (): void => {
    const now = performance.now();
    for (const c of live) c.send(0, state);
    messagesOut += live.size;
    // A tick late by more than a period is skipped, as a game server's fixed-step loop does.
    due = Math.max(due + period, now);
    setTimeout(tick, Math.max(0, due - performance.now()));
  };

  const snapshot = (): { cpu: NodeJS.CpuUsage; elu: ReturnType<typeof performance.eventLoopUtilization>; at: number; din: number; dout: number; min: number; mout: number; disc: number; drop: number } => {
    const k = driver.counters();
    const s = server.counters();
    return {
      cpu: process.cpuUsage(), elu: performance.eventLoopUtilization(), at: performance.now(), din: k.datagramsIn, dout: k.datagramsOut,
      min: messagesIn, mout: messagesOut, disc: disconnects, drop: s.replayed + s.packetsDropped + s.unknownAddress + s.malformed,
    };
  };
  process.on('message', (m: ParentMessage) => {
    if (m.type === 'stop') {
      void driver.close().then(() => process.exit(0));
      return;
    }
    if (m.type !== 'measure') return;
    const stopProfile = m.profile === undefined ? undefined : startProfile();
    const a = snapshot();
    setTimeout(() => {
      const b = snapshot();
      if (stopProfile !== undefined) writeFileSync(m.profile!, JSON.stringify(stopProfile()));
      const cpu = process.cpuUsage(a.cpu);
      const window: UdpWindow = {
        wallMs: b.at - a.at, userMs: cpu.user / 1000, systemMs: cpu.system / 1000,
        loopBusy: performance.eventLoopUtilization(b.elu, a.elu).utilization,
        datagramsIn: b.din - a.din, datagramsOut: b.dout - a.dout, messagesIn: b.min - a.min, messagesOut: b.mout - a.mout,
        connected: live.size, disconnects: b.disc - a.disc, dropped: b.drop - a.drop,
        bytesPerClient: (memoryAfterGc() - memory0) / Math.max(1, live.size),
      };
      say({ type: 'window', window });
    }, m.ms);
  });
  say({ type: 'ready', port: driver.local.port });
}

main().catch((err: unknown) => {
  say({ type: 'error', message: `server: ${(err as Error).stack ?? String(err)}` });
  process.exit(1);
});
