// The dots example's server in a child process and a headless Debian Chromium with two tabs on its
// page: what the browser tests of examples/browser start from.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { type Browser, chromium, type Page } from 'playwright-core';
import { expect } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--allow-loopback-in-peer-connection', '--disable-features=WebRtcHideLocalIpsWithMdns',
];

export interface ExampleRun {
  browser: Browser;
  tabs: Page[];
  /** Everything the server printed so far. */
  out(): string;
  /** Close the browser, stop the server (SIGINT), and return its exit code. */
  stop(): Promise<number | null>;
}

/** Start examples/browser/server.ts with `bots` UDP bots, open two tabs on its page (`queries`: each tab's query string). */
export async function openExample(bots: number, queries: readonly [string, string] = ['', '']): Promise<ExampleRun> {
  const server = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'examples/browser/server.ts'), '--port', '0', '--bots', String(bots), '--seconds', '50'], {
    stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TSX_TSCONFIG_PATH: join(ROOT, 'examples/browser/tsconfig.json') },
  });
  let out = '';
  server.stdout.on('data', (d: Buffer) => (out += d.toString()));
  server.stderr.on('data', (d: Buffer) => (out += d.toString()));
  const exit = new Promise<number | null>((r) => server.on('close', (c) => r(c)));
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });
  const stop = async (): Promise<number | null> => {
    await browser.close();
    server.kill('SIGINT');
    return exit;
  };
  try {
    await expect.poll(() => /open (http:\S+) in a browser/.test(out), { timeout: 15_000 }).toBe(true);
    const url = /open (http:\S+) in a browser/.exec(out)![1]!;
    const tabs = [await browser.newPage(), await browser.newPage()];
    for (const [i, t] of tabs.entries()) await t.goto(url + queries[i]);
    return { browser, tabs, out: () => out, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
