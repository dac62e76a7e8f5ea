// The dots example runs as its README says: the server starts, serves the page, its script, a
// config and tokens, its bots connect over UDP and join the state layer (each ends holding every
// dot as the server had it, its own predicted without a correction), and with --seconds it stops by itself.
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

describe('examples/browser', () => {
  it('serves the page, script, config and tokens; two bots connect and replicate the dots through the state layer; exits 0 after --seconds', async () => {
    const p = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(new URL('./server.ts', import.meta.url)), '--port', '0', '--bots', '2', '--seconds', '6'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, TSX_TSCONFIG_PATH: fileURLToPath(new URL('./tsconfig.json', import.meta.url)) },
    });
    let out = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (out += d.toString()));
    const exit = new Promise<number | null>((r) => p.on('close', (c) => r(c)));
    for (let i = 0; i < 300 && !/open (http:\S+) in a browser/.test(out); i++) await new Promise((r) => setTimeout(r, 50));
    const url = /open (http:\S+) in a browser/.exec(out)?.[1];
    expect(url, out).toBeDefined();
    const page = await (await fetch(url!)).text();
    expect(page).toContain('<canvas id="field"');
    // An inline icon: a browser then never asks for /favicon.ico (the server has none: a 404 in the console).
    expect(page).toMatch(/<link rel="icon" href="data:[^"]*">/);
    const js = await (await fetch(new URL('/app.js', url))).text();
    expect(js).toContain('gamewire.token.'); // connect(), with its WebSocket fallback
    expect(js).toContain('StateClient');
    const config = (await (await fetch(new URL('/config', url))).json()) as { signalling: string };
    expect(config.signalling).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/gamewire$/);
    const token = Buffer.from(await (await fetch(new URL('/token', url))).text(), 'base64');
    expect(token.length).toBe(2048);
    expect(await exit, out).toBe(0);
    expect(out).toContain('bots connected: 2, browsers: 0');
    expect(out).toMatch(/^state: \d+ ticks at 20 Hz, 2 dots$/m);
    for (const bot of [0, 1]) {
      const m = new RegExp(`^state: bot ${bot} holds (\\d+) dots, (\\d+) as the server had them; (\\d+) snapshots, (\\d+) corrections$`, 'm').exec(out);
      expect(m, out).not.toBeNull();
      const [, held, matching, snapshots, corrections] = m!.map(Number);
      expect({ held, matching, corrections }).toEqual({ held: 2, matching: 2, corrections: 0 });
      expect(snapshots).toBeGreaterThan(40); // 20 Hz for the ~5 s after it joined
    }
  }, 30_000);
});
