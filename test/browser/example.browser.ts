// examples/browser in a real Chromium: two tabs connect to the dots server beside a UDP bot and
// each holds all three dots (the state layer); moving one tab's dot with the mouse reaches the other tab.
import { spawn } from 'node:child_process';
import { join, resolve } from 'node:path';
import { chromium } from 'playwright-core';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');
const ARGS = [
  '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update',
  '--disable-sync', '--allow-loopback-in-peer-connection', '--disable-features=WebRtcHideLocalIpsWithMdns',
];

type Dots = { connected: boolean; joined: boolean; dots: { id: number; x: number; y: number }[] };

describe('examples/browser in Chromium', () => {
  it('two tabs and a bot share the field', async () => {
    const server = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'examples/browser/server.ts'), '--port', '0', '--bots', '1', '--seconds', '50'], {
      stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, TSX_TSCONFIG_PATH: join(ROOT, 'examples/browser/tsconfig.json') },
    });
    let out = '';
    server.stdout.on('data', (d: Buffer) => (out += d.toString()));
    server.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exit = new Promise<number | null>((r) => server.on('close', (c) => r(c)));
    const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ARGS });
    try {
      await expect.poll(() => /open (http:\S+) in a browser/.test(out), { timeout: 15_000 }).toBe(true);
      const url = /open (http:\S+) in a browser/.exec(out)![1]!;
      const tabs = [await browser.newPage(), await browser.newPage()];
      for (const t of tabs) await t.goto(url);
      const state = (i: number): Promise<Dots | undefined> => tabs[i]!.evaluate(() => {
        const s = (window as unknown as { __state?: Dots }).__state;
        return s && { connected: s.connected, joined: s.joined, dots: s.dots };
      });
      for (let i = 0; i < 2; i++) await expect.poll(async () => (await state(i))?.dots.length ?? 0, { timeout: 15_000 }).toBe(3);
      expect(out).toContain('browsers: 2');
      expect((await state(0))?.joined).toBe(true);
      // Tab 0 moves its dot to the top-left corner with the mouse (it heads there, SPEED px a tick): tab 1 sees a dot there.
      const box = await tabs[0]!.evaluate(() => {
        const r = document.getElementById('field')!.getBoundingClientRect();
        return { left: r.left, top: r.top };
      });
      await tabs[0]!.mouse.move(box.left + 15, box.top + 15);
      await expect.poll(async () => (await state(1))?.dots.some((d) => d.x < 40 && d.y < 40) ?? false, { timeout: 10_000 }).toBe(true);
      for (const t of tabs) await t.close();
    } finally {
      await browser.close();
      server.kill('SIGINT');
    }
    expect(await exit, out).toBe(0);
    expect(out).toMatch(/bots connected: 1, browsers: \d/);
  }, 60_000);
});
