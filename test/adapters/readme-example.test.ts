import { spawn } from 'node:child_process';
import { createSocket } from 'node:dgram';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

/** The first ts block after `heading` in `file`, with the package imports pointed at the source tree. */
function docExample(file: string, heading: string, port: number): string {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const section = text.slice(text.indexOf(heading));
  const code = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
  if (code === undefined) throw new Error(`${file} has no ts block under "${heading}"`);
  return code
    .replace(`from 'gamewire/node'`, `from '${pathToFileURL(join(ROOT, 'src/node.ts')).href}'`)
    .replace(`from 'gamewire/browser'`, `from '${pathToFileURL(join(ROOT, 'src/browser.ts')).href}'`)
    .replace(`from 'gamewire'`, `from '${pathToFileURL(join(ROOT, 'src/index.ts')).href}'`)
    .replaceAll('9000', String(port));
}

async function freePort(): Promise<number> {
  const s = createSocket('udp4');
  await new Promise<void>((r) => s.bind(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

async function runExample(source: string): Promise<{ code: number | null; out: string }> {
  // Inside the project, so that the example's own imports (node-datachannel) resolve from node_modules.
  mkdirSync(join(ROOT, '.examples'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.examples', 'run-'));
  try {
    const file = join(dir, 'example.mts');
    writeFileSync(file, source);
    const child = spawn(process.execPath, ['--import', 'tsx', file], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    const code = await new Promise<number | null>((r) => child.on('close', (c) => r(c)));
    clearTimeout(timer);
    return { code, out };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('docs/connection.md', () => {
  it('the echo example prints the echo and exits by itself', async () => {
    const { code, out } = await runExample(docExample('docs/connection.md', '## Use', await freePort()));
    expect(out).toContain('lane 0: hello');
    expect(code).toBe(0);
  });

  it('the block lane example delivers a 4 MiB block and exits by itself', async () => {
    const { code, out } = await runExample(docExample('docs/connection.md', '## Blocks: the block lane', await freePort()));
    expect(out).toContain(`server got a block of ${4 << 20} bytes`);
    expect(out).toContain('block 1 delivered: true');
    expect(code).toBe(0);
  });
});

describe('docs/netcode.md', () => {
  it('the Server and Client example connects, echoes over netcode and exits by itself', async () => {
    const { code, out } = await runExample(docExample('docs/netcode.md', '## Server and Client', await freePort()));
    expect(out).toContain('hello');
    expect(code).toBe(0);
  });
});

describe('README', () => {
  it('the game server and client example connects, echoes over netcode and exits by itself', async () => {
    const { code, out } = await runExample(docExample('README.md', '## A game server and a client', await freePort()));
    expect(out).toContain('hello');
    expect(code).toBe(0);
  });

  it('the ten-line block example prints the block and exits by itself', async () => {
    const { code, out } = await runExample(docExample('README.md', '## Ten lines: send a block', await freePort()));
    expect(out).toContain(`got ${4 << 20} bytes`);
    expect(code).toBe(0);
  });
});

describe('docs/browser.md', () => {
  it('the WebRTC example echoes over a data channel and exits by itself', async () => {
    const { code, out } = await runExample(docExample('docs/browser.md', '## Use', await freePort()));
    expect(out).toContain('echo over webrtc: hello');
    expect(code).toBe(0);
  });
});
