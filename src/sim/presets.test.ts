import { describe, it, expect } from 'vitest';
import { GamewireError } from '../core/errors.js';
import { Link } from './link.js';
import { createLinkPair } from './pair.js';
import { isPresetName, preset, presets } from './presets.js';

describe('presets', () => {
  it('every preset is a valid, frozen config', () => {
    for (const [name, cfg] of Object.entries(presets)) {
      expect(() => new Link(cfg, 1), name).not.toThrow();
      expect(Object.isFrozen(cfg)).toBe(true);
      for (const v of Object.values(cfg)) if (typeof v === 'object') expect(Object.isFrozen(v)).toBe(true);
    }
  });

  it('looks presets up by name and rejects unknown names', () => {
    expect(preset('wifi')).toBe(presets.wifi);
    expect(isPresetName('kcp-test')).toBe(true);
    expect(isPresetName('toString')).toBe(false);
    expect(() => preset('moon')).toThrow(GamewireError);
    expect(() => createLinkPair('moon', 1)).toThrow(GamewireError);
  });

  it("kcp-test reproduces test.cpp's network: exactly 5 lost per 100, FIFO, integer one-way delay 30..61 ms", () => {
    const link = new Link(presets['kcp-test'], 1234);
    const n = 10_000;
    const delays = new Map<number, number>();
    let lastId = -1;
    let fifo = true;
    // test.cpp's driver: a 1 ms integer clock, one datagram every 20 ms, delivered as soon as due.
    for (let now = 0; now < n * 20 + 100; now++) {
      for (let d = link.pollDeliver(now); d !== undefined; d = link.pollDeliver(now)) {
        const id = new DataView(d.buffer).getUint32(0);
        if (id <= lastId) fifo = false;
        lastId = id;
        delays.set(id, now - id * 20);
      }
      if (now % 20 === 0 && now < n * 20) {
        const b = new Uint8Array(8);
        new DataView(b.buffer).setUint32(0, now / 20);
        link.send(now, b);
      }
    }
    expect(fifo).toBe(true);
    expect(delays.size).toBe(n - 500);
    for (let w = 0; w < n; w += 100) {
      let lost = 0;
      for (let i = w; i < w + 100; i++) if (!delays.has(i)) lost++;
      expect(lost).toBe(5);
    }
    const values = [...delays.values()];
    expect(Math.min(...values)).toBe(30);
    expect(Math.max(...values)).toBe(61);
    expect(values.every((v) => Number.isInteger(v))).toBe(true);
    expect(link.config.maxInFlight).toBe(1000);
  });

  it('kcp-test tail-drops beyond 1000 datagrams in flight', () => {
    const link = new Link(presets['kcp-test'], 1);
    for (let i = 0; i < 2000; i++) link.send(0, new Uint8Array(24));
    const c = link.counters();
    expect(link.inFlight).toBe(1000);
    expect(c.droppedLoss).toBe(100);
    expect(c.droppedInFlight).toBe(900);
  });

  it('a symmetric pair built from a preset uses the preset in both directions', () => {
    const p = createLinkPair('satellite', 5);
    expect(p.aToB.config).toEqual(p.bToA.config);
    expect(p.aToB.config.latencyMs).toBe(280);
    const q = createLinkPair('lan', 5, { latencyMs: 7 });
    expect(q.bToA.config.latencyMs).toBe(7);
    expect(() => createLinkPair('lan', 0.5)).toThrow(GamewireError);
  });
});
