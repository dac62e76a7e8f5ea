// examples/browser in a real Chromium: two tabs connect to the dots server beside a UDP bot, one over
// WebRTC and one told to use the WebSocket, and each holds all three dots (the state layer); moving
// one tab's dot with the mouse reaches the other tab.
import { describe, expect, it } from 'vitest';
import { openExample } from './example-server.js';

type Dots = { connected: boolean; joined: boolean; dots: { id: number; x: number; y: number }[] };

describe('examples/browser in Chromium', () => {
  it('two tabs (WebRTC and WebSocket) and a bot share the field', async () => {
    const run = await openExample(1, ['', '?transport=websocket']);
    const { tabs } = run;
    let code: number | null;
    try {
      const state = (i: number): Promise<Dots | undefined> => tabs[i]!.evaluate(() => {
        const s = (window as unknown as { __state?: Dots }).__state;
        return s && { connected: s.connected, joined: s.joined, dots: s.dots };
      });
      for (let i = 0; i < 2; i++) await expect.poll(async () => (await state(i))?.dots.length ?? 0, { timeout: 15_000 }).toBe(3);
      expect(run.out()).toContain('browsers: 2');
      expect((await state(0))?.joined).toBe(true);
      expect(await tabs[0]!.textContent('#status')).toBe('connected over WebRTC');
      expect(await tabs[1]!.textContent('#status')).toBe('connected over a WebSocket');
      expect(await tabs[1]!.inputValue('#transport')).toBe('websocket');
      // Tab 0 moves its dot to the top-left corner with the mouse (it heads there, SPEED px a tick): tab 1 sees a dot there.
      const box = await tabs[0]!.evaluate(() => {
        const r = document.getElementById('field')!.getBoundingClientRect();
        return { left: r.left, top: r.top };
      });
      await tabs[0]!.mouse.move(box.left + 15, box.top + 15);
      await expect.poll(async () => (await state(1))?.dots.some((d) => d.x < 40 && d.y < 40) ?? false, { timeout: 10_000 }).toBe(true);
      for (const t of tabs) await t.close();
    } finally {
      code = await run.stop();
    }
    expect(code, run.out()).toBe(0);
    expect(run.out()).toMatch(/bots connected: 1, browsers: \d/);
  }, 60_000);
});
