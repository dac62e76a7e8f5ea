// Run a fleet on this machine: N game server processes on loopback and the matchmaker in front.
//   GAMEWIRE_KEY=$(openssl rand -hex 32) node --import tsx examples/fleet/fleet.ts [N] [BASE_PORT] [HTTP_PORT]
// Then each player: curl -X POST http://127.0.0.1:HTTP_PORT/join → a token for the least-loaded server.
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Matchmaker } from './matchmaker.ts';
import { keyFromEnv } from './shared.ts';

/** A running fleet: its server processes and its matchmaker; `stop()` ends them all. */
export interface Fleet {
  matchmaker: Matchmaker;
  httpPort: number;
  stop: () => Promise<void>;
}

/** Start a game server on each of `ports` and the matchmaker's HTTP endpoint (0 = any port); resolves once all are ready. */
export async function startFleet(ports: readonly number[], httpPort: number): Promise<Fleet> {
  const key = keyFromEnv();
  const mm = new Matchmaker(key, []);
  const procs: ChildProcess[] = [];
  const ready: Promise<void>[] = [];
  for (const port of ports) {
    const address = `127.0.0.1:${port}`;
    mm.servers.push({ address, players: 0, pending: 0, maxPlayers: 64 });
    // tsx maps `gamewire` to this repository's source through the example's tsconfig paths.
    const p = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./game-server.ts', import.meta.url)), String(port)], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, TSX_TSCONFIG_PATH: fileURLToPath(new URL('./tsconfig.json', import.meta.url)) },
    });
    procs.push(p);
    ready.push(new Promise((resolve, reject) => {
      p.once('exit', (code) => reject(new Error(`game server ${address} exited with ${code}`)));
      createInterface({ input: p.stdout! }).on('line', (line) => {
        if (line.startsWith('ready ')) resolve();
        const m = /^players (\d+)$/.exec(line);
        if (m !== null) mm.report(address, Number(m[1]));
      });
    }));
  }
  await Promise.all(ready);
  const http = await mm.listen(httpPort);
  const port = (http.address() as { port: number }).port;
  return {
    matchmaker: mm,
    httpPort: port,
    stop: async () => {
      await new Promise<void>((r) => http.close(() => r()));
      await Promise.all(procs.map((p) => new Promise<void>((r) => {
        p.removeAllListeners('exit');
        p.once('exit', () => r());
        p.kill('SIGTERM');
      })));
    },
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [n = '3', base = '41000', http = '8080'] = process.argv.slice(2);
  const fleet = await startFleet(Array.from({ length: Number(n) }, (_, i) => Number(base) + i), Number(http));
  console.log(`fleet: ${n} servers on 127.0.0.1:${base}..${Number(base) + Number(n) - 1}; tokens: POST http://127.0.0.1:${fleet.httpPort}/join`);
  process.on('SIGINT', () => void fleet.stop().then(() => process.exit(0)));
}
