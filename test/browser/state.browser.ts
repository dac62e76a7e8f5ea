// The state layer in a real Chromium: two tabs of the dots example join its server over WebRTC, each
// walks its own dot round a loop, and each draws the other's dot interpolated: at every frame's
// render time, where the other tab's dot was by the states the server sent that tab (its own
// snapshots of its own dot: the server's values at those ticks).
import type { Page } from 'playwright-core';
import { describe, expect, it } from 'vitest';
import { openExample } from './example-server.js';

/** Pixels a dot moves per tick at most (examples/browser/shared.ts). */
const SPEED = 12;

type Drawn = { id: number; x: number; y: number; placed: string };
type Seen = {
  joined: boolean;
  ownId: number;
  trace: { renderTick: number; others: Drawn[]; own: Drawn | undefined }[];
  ownTrail: { tick: number; x: number; y: number }[];
};

const seen = (page: Page): Promise<Seen> => page.evaluate(() => {
  const s = (window as unknown as { __state?: Seen }).__state;
  return s === undefined ? { joined: false, ownId: -1, trace: [], ownTrail: [] } : { joined: s.joined, ownId: s.ownId, trace: [...s.trace], ownTrail: [...s.ownTrail] };
});

/**
 * How tab `b` drew tab `a`'s dot: per frame placed between two snapshots, the distance from the
 * drawing to `a`'s confirmed path at that frame's render tick (both neighbouring ticks known).
 */
function compare(a: Seen, b: Seen): { frames: number; interpolated: number; errors: number[]; travelled: number } {
  const at = new Map(a.ownTrail.map((s) => [s.tick, s]));
  let frames = 0;
  let interpolated = 0;
  let travelled = 0;
  let last: { x: number; y: number } | undefined;
  const errors: number[] = [];
  for (const f of b.trace) {
    const d = f.others.find((o) => o.id === a.ownId);
    if (d === undefined || !Number.isFinite(f.renderTick)) continue;
    frames++;
    if (d.placed !== 'interpolated') continue;
    interpolated++;
    const t = Math.floor(f.renderTick);
    const s0 = at.get(t);
    const s1 = at.get(t + 1);
    if (s0 === undefined || s1 === undefined) continue;
    const k = f.renderTick - t;
    errors.push(Math.hypot(d.x - (s0.x + (s1.x - s0.x) * k), d.y - (s0.y + (s1.y - s0.y) * k)));
    if (last !== undefined) travelled += Math.hypot(d.x - last.x, d.y - last.y);
    last = d;
  }
  return { frames, interpolated, errors: errors.sort((x, y) => x - y), travelled };
}

describe('the state layer in Chromium (examples/browser)', () => {
  it('two tabs each walk their dot and draw the other\'s interpolated along its true path', async () => {
    const run = await openExample(0);
    const { tabs } = run;
    let code: number | null;
    try {
      for (const t of tabs) await expect.poll(async () => (await seen(t)).ownId >= 0, { timeout: 15_000 }).toBe(true);
      for (const t of tabs) await t.check('#walk');
      const started = performance.now();
      // Walk until each tab has drawn the other's dot between two snapshots for 3 s of frames (playback starts 1 s after the first snapshot).
      await expect.poll(async () => {
        const [a, b] = await Promise.all(tabs.map(seen));
        return Math.min(compare(a!, b!).errors.length, compare(b!, a!).errors.length);
      }, { timeout: 20_000, interval: 250 }).toBeGreaterThan(180);
      const [a, b] = await Promise.all(tabs.map(seen));
      const walkedMs = performance.now() - started;
      for (const [who, r] of [['tab 1 drawing tab 0', compare(a!, b!)], ['tab 0 drawing tab 1', compare(b!, a!)]] as const) {
        const p = (q: number): number => r.errors[Math.min(r.errors.length - 1, Math.floor(q * r.errors.length))]!;
        const figures = `${who}: ${r.frames} frames, ${r.interpolated} interpolated, ${r.errors.length} compared, error p50 ${p(0.5).toFixed(3)} p95 ${p(0.95).toFixed(3)} max ${r.errors.at(-1)!.toFixed(2)} px, travelled ${r.travelled.toFixed(0)} px in ${walkedMs.toFixed(0)} ms`;
        console.log(figures);
        expect(r.travelled, figures).toBeGreaterThan(150); // the dot walked (its loop: ≥ 60 px radius at 0.7 rad/s)
        expect(r.interpolated / r.frames, figures).toBeGreaterThan(0.7);
        // Between two snapshots it is on the path (to rounding); after an extrapolated frame the track
        // blends back over a tick or two (nothing pops), off the path by a fraction of that motion.
        expect(p(0.5), figures).toBeLessThan(0.05);
        expect(p(0.95), figures).toBeLessThan(SPEED / 2);
        expect(r.errors.at(-1)!, figures).toBeLessThan(3 * SPEED);
      }
      for (const t of tabs) await t.close();
    } finally {
      code = await run.stop();
    }
    expect(code, run.out()).toBe(0);
    expect(run.out()).toMatch(/^state: \d+ ticks at 20 Hz, \d dots$/m);
  }, 60_000);
});
