import { afterEach, describe, expect, it, vi } from 'vitest';
import { DriveLoop } from '../../core/drive-loop.js';
import type { Address, Endpoint, Transmit } from '../../core/endpoint.js';
import { SimulatedEndpoint } from './simulated.js';

/** Records what it is handed; sends what `queue` holds, to 'server'; a deadline of its own if set. */
class Fake implements Endpoint<string> {
  received: { now: number; from: Address; bytes: Uint8Array }[] = [];
  queue: Uint8Array[] = [];
  outs: Uint8Array[] = [];
  deadline: number | undefined;
  timeouts: number[] = [];

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.received.push({ now, from, bytes });
  }

  handleTimeout(now: number): void {
    this.timeouts.push(now);
    this.deadline = undefined;
  }

  pollTransmit(_now: number, out: Uint8Array): Transmit | undefined {
    const b = this.queue.shift();
    if (b === undefined) return undefined;
    this.outs.push(out);
    out.set(b);
    return { length: b.length, to: 'server' };
  }

  pollTimeout(): number | undefined {
    return this.deadline;
  }

  pollEvent(): string | undefined {
    return undefined;
  }
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('SimulatedEndpoint', () => {
  it('with no impairment passes datagrams straight through, the same bytes, no copy', () => {
    const inner = new Fake();
    const ep = new SimulatedEndpoint(inner, 1);
    const bytes = new Uint8Array([1, 2, 3]);
    ep.handleDatagram(0, 'server', bytes);
    expect(inner.received[0].bytes).toBe(bytes);
    inner.queue.push(new Uint8Array([9, 8]));
    const out = new Uint8Array(100);
    expect(ep.pollTransmit(0, out)).toEqual({ length: 2, to: 'server' });
    expect(inner.outs[0]).toBe(out);
    expect(ep.pollTimeout()).toBeUndefined();
    inner.deadline = 30;
    expect(ep.pollTimeout()).toBe(30);
  });

  it('with latency, holds both directions on its links and reports their next delivery as its deadline', () => {
    const inner = new Fake();
    const ep = new SimulatedEndpoint(inner, 1);
    ep.configure(0, { latencyMs: 50 });
    inner.deadline = 80;
    ep.handleDatagram(0, 'server', new Uint8Array([1, 2, 3]));
    inner.queue.push(new Uint8Array([7]));
    const out = new Uint8Array(100);
    expect(ep.pollTransmit(10, out)).toBeUndefined();
    expect(inner.received).toHaveLength(0);
    expect(ep.pollTimeout()).toBe(50);
    ep.handleTimeout(50);
    expect(inner.timeouts).toEqual([]); // its own deadline (80) is not due
    expect(inner.received.map((r) => [r.now, r.from, [...r.bytes]])).toEqual([[50, 'server', [1, 2, 3]]]);
    expect(ep.pollTimeout()).toBe(60);
    expect(ep.pollTransmit(59, out)).toBeUndefined();
    expect(ep.pollTransmit(60, out)).toEqual({ length: 1, to: 'server' });
    expect(out[0]).toBe(7);
    expect(ep.pollTimeout()).toBe(80);
    ep.handleTimeout(80);
    expect(inner.timeouts).toEqual([80]);
  });

  it('after impairment is removed, what is in flight still arrives and new datagrams pass straight through', () => {
    const inner = new Fake();
    const ep = new SimulatedEndpoint(inner, 1);
    ep.configure(0, { latencyMs: 50 });
    ep.handleDatagram(0, 'server', new Uint8Array([1]));
    ep.configure(5, undefined);
    const direct = new Uint8Array([2]);
    ep.handleDatagram(6, 'server', direct);
    expect(inner.received[0].bytes).toBe(direct);
    expect(ep.pollTimeout()).toBe(50);
    ep.handleTimeout(50);
    expect(inner.received.map((r) => r.bytes[0])).toEqual([2, 1]);
    expect(ep.pollTimeout()).toBeUndefined();
  });

  it('is driven by the one DriveLoop timer: delayed datagrams leave on it, no timer of its own', () => {
    const timeoutSpy = vi.spyOn(globalThis, 'setTimeout');
    let clock = 0;
    const timers: { at: number; fire: () => void }[] = [];
    const sent: { at: number; bytes: number[] }[] = [];
    const inner = new Fake();
    const ep = new SimulatedEndpoint(inner, 1);
    ep.configure(0, { latencyMs: 40 });
    const loop = new DriveLoop<string, number>(ep, {
      now: () => clock,
      send: (bytes, length) => void sent.push({ at: clock, bytes: [...bytes.subarray(0, length)] }),
      setTimer: (ms, fire) => timers.push({ at: clock + ms, fire }) - 1,
      clearTimer: (t) => void (timers[t] = { at: Infinity, fire: () => {} }),
      defer: (task) => task(),
    }, { onEvent: () => {} });
    inner.queue.push(new Uint8Array([5, 6]));
    loop.wake();
    expect(sent).toEqual([]);
    const live = timers.filter((t) => t.at !== Infinity);
    expect(live.map((t) => t.at)).toEqual([40]);
    clock = 40;
    live[0].fire();
    expect(sent).toEqual([{ at: 40, bytes: [5, 6] }]);
    loop.handleDatagram('server', new Uint8Array([1]));
    expect(inner.received).toHaveLength(0);
    const next = timers.filter((t) => t.at !== Infinity && t.at > 40);
    expect(next.map((t) => t.at)).toEqual([80]);
    clock = 80;
    next[0].fire();
    expect(inner.received.map((r) => [r.now, [...r.bytes]])).toEqual([[80, [1]]]);
    expect(timeoutSpy).not.toHaveBeenCalled();
    void loop.close();
  });
});
