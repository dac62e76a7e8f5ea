import { describe, expect, it } from 'vitest';
import { colyseusSystem } from '../../bench/state/colyseus.js';
import {
  bytesPerWindow, lateShare, rateStep, rateWindows, runHarness, type HarnessContext, type StateSystem,
} from '../../bench/state/harness.js';
import { S1_RANGE_M, s1Trace, s2Trace, TraceState, type Trace } from '../../bench/state/trace.js';
import type { Connection, ConnectionEvent } from '../../src/connection/connection.js';

// The pieces bench:state is built from (bench/state/): traces, the harness's counting, the colyseus
// system's end-of-run check. The bench's figures are not asserted here, only what makes them mean
// what the bench says.

function sameTrace(a: Trace, b: Trace): boolean {
  if (a.initialIds.join() !== b.initialIds.join() || a.initialValues.join() !== b.initialValues.join()) return false;
  return a.ticks.every((t, i) => {
    const u = b.ticks[i]!;
    return t.changed.join() === u.changed.join() && t.values.join() === u.values.join()
      && t.spawned.join() === u.spawned.join() && t.despawned.join() === u.despawned.join() && t.spawnedValues.join() === u.spawnedValues.join();
  });
}

describe('S1 trace', () => {
  it('is deterministic in its seed', () => {
    expect(sameTrace(s1Trace({ seed: 4, ticks: 50 }), s1Trace({ seed: 4, ticks: 50 }))).toBe(true);
    expect(sameTrace(s1Trace({ seed: 4, ticks: 50 }), s1Trace({ seed: 5, ticks: 50 }))).toBe(false);
  });

  it('moves 10 % of 900 entities a tick, distinct, by one bounded step, within the range', () => {
    const tr = s1Trace({ seed: 1, ticks: 200 });
    expect(tr.initialIds.length).toBe(900);
    const st = new TraceState(tr);
    for (let k = 0; k < tr.ticks.length; k++) {
      const before = new Map([...st.entities].map(([id, v]) => [id, v.slice()]));
      const t = st.apply();
      expect(t.changed.length).toBe(90);
      expect(new Set(t.changed).size).toBe(90);
      t.changed.forEach((id, i) => {
        const [x0, y0] = before.get(id)!;
        const x = t.values[i * 3]!, y = t.values[i * 3 + 1]!, a = t.values[i * 3 + 2]!;
        const step = Math.hypot(x - x0!, y - y0!);
        expect(step).toBeLessThanOrEqual(0.3 + 1e-12);
        // At least 50 mm unless clamped at the edge.
        if (Math.abs(x) < S1_RANGE_M && Math.abs(y) < S1_RANGE_M) expect(step).toBeGreaterThanOrEqual(0.05 - 1e-12);
        expect(Math.abs(x)).toBeLessThanOrEqual(S1_RANGE_M);
        expect(Math.abs(y)).toBeLessThanOrEqual(S1_RANGE_M);
        expect(a).toBeGreaterThanOrEqual(0);
        expect(a).toBeLessThan(2 * Math.PI);
      });
    }
  });

  it('churn: despawns live entities, spawns fresh ids, keeps the count, never moves a new one in its spawn tick', () => {
    const tr = s1Trace({ seed: 2, ticks: 100, churnPerTick: 3 });
    const st = new TraceState(tr);
    const seen = new Set(tr.initialIds);
    for (let k = 0; k < tr.ticks.length; k++) {
      const t = tr.ticks[k]!;
      for (const id of t.despawned) expect(st.entities.has(id)).toBe(true);
      for (const id of t.spawned) {
        expect(seen.has(id)).toBe(false);
        seen.add(id);
      }
      for (const id of t.changed) {
        expect(t.spawned.includes(id)).toBe(false);
        expect(t.despawned.includes(id)).toBe(false);
      }
      st.apply();
      expect(st.entities.size).toBe(900);
    }
  });
});

describe('S2 trace', () => {
  const tr = s2Trace({ seed: 1, ticks: 900 });

  it('is deterministic in its seed', () => {
    expect(sameTrace(s2Trace({ seed: 1, ticks: 120 }), s2Trace({ seed: 1, ticks: 120 }))).toBe(true);
    expect(sameTrace(s2Trace({ seed: 1, ticks: 120 }), s2Trace({ seed: 2, ticks: 120 }))).toBe(false);
  });

  it('lists exactly the cubes that changed; unit quaternions; within the bounds; the player always moves, most cubes rest', () => {
    expect(tr.initialIds.length).toBe(901);
    const st = new TraceState(tr);
    let smallChanges = 0;
    for (let k = 0; k < tr.ticks.length; k++) {
      const before = new Map([...st.entities].map(([id, v]) => [id, v.slice()]));
      const t = st.apply();
      expect(t.changed[0]).toBe(0);
      smallChanges += t.changed.length - 1;
      const changed = new Set(t.changed);
      const wrong: string[] = [];
      for (const [id, v] of st.entities) {
        const prev = before.get(id)!;
        if (v.every((x, f) => x === prev[f]) === changed.has(id)) wrong.push(`tick ${k + 1} cube ${id}: listed ${changed.has(id)}`);
        if (Math.abs(Math.hypot(v[3]!, v[4]!, v[5]!, v[6]!) - 1) > 1e-9) wrong.push(`tick ${k + 1} cube ${id}: |q| ≠ 1`);
        if (Math.abs(v[0]!) > 256 || Math.abs(v[1]!) > 256 || v[2]! < 0 || v[2]! > 32) wrong.push(`tick ${k + 1} cube ${id}: out of bounds`);
      }
      expect(wrong).toEqual([]);
    }
    const share = smallChanges / (tr.ticks.length * 900);
    expect(share).toBeGreaterThan(0.005);
    expect(share).toBeLessThan(0.2);
  });
});

/** A system that sends `bytes` bytes per tick on lane 0 and reports each tick the client reads from its first 4 bytes. */
function tickSender(lane: 'reliable-ordered' | 'unreliable', bytes: number): StateSystem & { heldTicks: number[] } {
  const heldTicks: number[] = [];
  return {
    name: `ticks on ${lane}`,
    lanes: [{ mode: lane }],
    heldTicks,
    serverTick(_now: number, tick: number, c: Connection): void {
      const m = new Uint8Array(bytes);
      new DataView(m.buffer).setUint32(0, tick, true);
      c.send(0, m);
    },
    clientEvent(_now: number, e: ConnectionEvent, ctx: HarnessContext): void {
      if (e.type !== 'message') return;
      const tick = new DataView(e.bytes.buffer, e.bytes.byteOffset).getUint32(0, true);
      heldTicks.push(tick);
      ctx.clientHolds(tick);
    },
    finish: () => undefined,
  };
}

describe('harness', () => {
  it('counts every byte the server sends, once: join + ticks + tail = what the world saw it send', () => {
    const s = tickSender('reliable-ordered', 300);
    const r = runHarness(s, { seed: 3, ticks: 100, loss: 0.1, drainMs: 1000 });
    const inTicks = r.bytesPerTick.reduce((a, b) => a + b, 0);
    const route = r.diag.serverToClient as { bytesSent: number; sent: number };
    expect(r.handshakeBytes + r.joinBytes + inTicks + r.tailBytes).toBe(route.bytesSent);
    expect(r.handshakeBytes).toBeGreaterThan(0);
    expect(r.sends.bytes.reduce((a, b) => a + b, 0)).toBe(route.bytesSent);
    expect(r.datagramsPerTick.reduce((a, b) => a + b, 0)).toBeLessThanOrEqual(route.sent);
    expect(r.clientBytes).toBe((r.diag.clientToServer as { bytesSent: number }).bytesSent);
    // Every tick is held in the end (reliable), and ticks are 50 ms apart after the 1 s settle.
    expect(r.ages.every((a) => a >= 50)).toBe(true);
    expect(r.firstTickAtMs - r.joinAtMs).toBe(1000);
  });

  it('state age: one way on a clean path; a lost tick is aged by the next tick the client holds', () => {
    const clean = runHarness(tickSender('unreliable', 100), { seed: 1, ticks: 60 });
    expect(clean.ages).toEqual(new Array(60).fill(50));
    expect(lateShare(clean.ages, 100)).toBe(0);

    const s = tickSender('unreliable', 100);
    const lossy = runHarness(s, { seed: 1, ticks: 200, loss: 0.3 });
    const held = new Set(s.heldTicks);
    let lost = 0;
    for (let k = 1; k <= 200; k++) {
      const a = lossy.ages[k - 1]!;
      if (held.has(k)) {
        expect(a).toBe(50);
        continue;
      }
      lost++;
      let next = k + 1;
      while (next <= 200 && !held.has(next)) next++;
      if (next > 200) expect(Number.isNaN(a)).toBe(true);
      else expect(a).toBe(50 + (next - k) * 50);
    }
    expect(lost).toBeGreaterThan(20);
    expect(lateShare(lossy.ages, 100)).toBeGreaterThan(0);
  });

  it('bytesPerWindow sums sends into whole windows and adds the per-datagram overhead', () => {
    const w = bytesPerWindow({ atMs: [0, 999, 1000, 2500, 3000], bytes: [10, 20, 30, 40, 50] }, 0, 3000);
    expect(w.map((x) => [x.startMs, x.payloadBytes, x.datagrams, x.wireBytes])).toEqual([[0, 30, 2, 86], [1000, 30, 1, 58], [2000, 40, 1, 68]]);
  });

  it('rate step: the link carries at most the new rate after the step', () => {
    const ticks = 200;
    const step = rateStep(ticks, { fromBitsPerSec: 1e6, toBitsPerSec: 128e3 });
    // 2,000 B a tick (320 kbit/s of payload) is more than 128 kbit/s carries, less than 1 Mbit/s.
    const r = runHarness(tickSender('unreliable', 2000), { seed: 1, ticks, link: step.link, onStart: step.onStart, drainMs: 3000 });
    expect(step.stepAtMs()).toBe(r.firstTickAtMs + 99 * 50);
    const sc = r.diag.serverToClient as { droppedQueue: number; bytesDelivered: number };
    expect(sc.droppedQueue).toBeGreaterThan(0);
    const windows = rateWindows(r, step, 100);
    expect(windows.some((w) => w.phase === 'before') && windows.some((w) => w.phase === 'after')).toBe(true);
    for (const w of windows) expect(w.rateBitsPerSec).toBe(w.phase === 'before' ? 1e6 : 128e3);
    // Held ticks stop arriving on time once the rate is below what is sent.
    const before = r.ages.slice(0, 90).filter((a) => !Number.isNaN(a));
    expect(Math.max(...before)).toBeLessThan(100);
    expect(lateShare(r.ages.slice(110), 100)).toBeGreaterThan(0.3);
  });
});

describe('colyseus system', () => {
  for (const variant of ['float32', 'quantized16'] as const) {
    it(`${variant}: the client's decoded map equals the server's and the trace's after 200 ticks at 10 % loss`, () => {
      const r = runHarness(colyseusSystem(s1Trace({ seed: 1, ticks: 200, churnPerTick: 2 }), variant), { seed: 1, ticks: 200, loss: 0.1 });
      expect(r.finish).toMatchObject({ clientEqualsServer: true });
      expect(r.samples.messageBytes).toHaveLength(200);
      expect(r.ages.every((a) => a >= 50)).toBe(true);
    });
  }

  it('finish fails when the client applied two patches out of order', () => {
    const inner = colyseusSystem(s1Trace({ seed: 1, ticks: 60 }), 'quantized16');
    let held: ConnectionEvent | undefined;
    let n = 0;
    const swapped: StateSystem = {
      ...inner,
      clientEvent(now, e, ctx): void {
        if (e.type !== 'message') return;
        n++;
        // Messages 1..61 carry ticks 0..60: keep tick 59's patch and apply it after tick 60's.
        if (n === 60) {
          held = { ...e, bytes: e.bytes.slice() };
          return;
        }
        inner.clientEvent(now, e, ctx);
        if (n === 61) inner.clientEvent(now, held!, ctx);
      },
    };
    expect(() => runHarness(swapped, { seed: 1, ticks: 60 })).toThrow(/client .*, server/);
  });
});
