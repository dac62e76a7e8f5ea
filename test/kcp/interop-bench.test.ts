import { describe, expect, it } from 'vitest';
import { runTestCpp, type TestCppMode } from './interop-testcpp.js';

// CI guard for bench/kcp.bench.ts part (a): KCP's test.cpp on the simulator, our Kcp and the C
// ikcp.c (node-kcp) in the same seeded network with the same virtual clock, must produce the very
// same datagrams (trace hash) and so the same avgrtt / maxrtt / tx.

const MODES: readonly TestCppMode[] = ['default', 'normal', 'fast'];

describe('test.cpp replay: ours vs C, identical', () => {
  for (const mode of MODES) {
    it(`${mode} mode, 200 round trips, seeds 1..3`, () => {
      for (let seed = 1; seed <= 3; seed++) {
        const ours = runTestCpp('ours', mode, { seed, rounds: 200 });
        const c = runTestCpp('c', mode, { seed, rounds: 200 });
        expect(ours.orderError).toBe(false);
        expect(ours.count).toBeGreaterThanOrEqual(201);
        expect({ avg: ours.avgRtt, max: ours.maxRtt, tx: ours.tx, tx2: ours.tx2, trace: ours.trace })
          .toEqual({ avg: c.avgRtt, max: c.maxRtt, tx: c.tx, tx2: c.tx2, trace: c.trace });
        expect(ours.rtts).toEqual(c.rtts);
        // The RTT can never be below the simulated minimum of 2 × 30 ms.
        expect(Math.min(...ours.rtts)).toBeGreaterThanOrEqual(60);
      }
    });
  }

  it('a different seed gives a different trace (the comparison is not vacuous)', () => {
    const a = runTestCpp('ours', 'normal', { seed: 1, rounds: 50 });
    const b = runTestCpp('ours', 'normal', { seed: 2, rounds: 50 });
    expect(a.trace).not.toBe(b.trace);
  });

  it("fast mode with test.cpp's exact settings (rx_minrto 10 on kcp1, ours only) completes in order", () => {
    const r = runTestCpp('ours', 'fast', { seed: 1, rounds: 200, exact: true });
    expect(r.orderError).toBe(false);
    expect(r.count).toBeGreaterThanOrEqual(201);
    expect(r.avgRtt).toBeLessThan(200);
  });
});
