import { describe, expect, it } from 'vitest';
import { DriveLoop, type DrivePlatform } from './drive-loop.js';
import type { Address, Endpoint, Transmit } from './endpoint.js';

/** A virtual platform: a clock moved by the test, a timer table, a deferred-task queue (one "turn"). */
class FakePlatform implements DrivePlatform<number> {
  t = 0;
  readonly sent: { data: number[]; to: Address }[] = [];
  readonly timers = new Map<number, { at: number; fire: () => void }>();
  readonly delays: number[] = [];
  clears = 0;
  deferred: (() => void)[] = [];
  defers = 0;
  private nextId = 1;
  buffers: number | undefined; // when set, buffer() hands out at most this many before starving

  now(): number {
    return this.t;
  }
  send(bytes: Uint8Array, length: number, to: Address): void {
    this.sent.push({ data: [...bytes.subarray(0, length)], to });
    if (this.buffers !== undefined) this.buffers--;
  }
  setTimer(delayMs: number, fire: () => void): number {
    const id = this.nextId++;
    this.timers.set(id, { at: this.t + delayMs, fire });
    this.delays.push(delayMs);
    return id;
  }
  clearTimer(id: number): void {
    this.timers.delete(id);
    this.clears++;
  }
  defer(task: () => void): void {
    this.defers++;
    this.deferred.push(task);
  }
  /** One event-loop turn's check phase: run what was deferred before it. */
  turn(): void {
    for (const task of this.deferred.splice(0)) task();
  }
  /** Move the clock to `to`, firing due timers in order (each followed by a turn). */
  advance(to: number): void {
    for (;;) {
      let first: [number, { at: number; fire: () => void }] | undefined;
      for (const e of this.timers) if (e[1].at <= to && (first === undefined || e[1].at < first[1].at)) first = e;
      if (first === undefined) break;
      this.timers.delete(first[0]);
      this.t = first[1].at;
      first[1].fire();
      this.turn();
    }
    this.t = to;
  }
  get armedAt(): number | undefined {
    const ats = [...this.timers.values()].map((x) => x.at);
    return ats.length === 0 ? undefined : Math.min(...ats);
  }
}

type Ev = { type: string; at: number };

/** A scripted endpoint: records calls; the test queues datagrams, events and the deadline. */
class Script implements Endpoint<Ev> {
  deadline: number | undefined;
  readonly out: { data: number[]; to: Address }[] = [];
  readonly events: Ev[] = [];
  readonly log: string[] = [];
  /** Each drain after new input answers with one "ack" to the last sender (a lazily acking receiver). */
  ackTo: Address | undefined;
  received = 0;
  timeouts: number[] = [];
  waker: (() => void) | undefined;
  wakerSets: (string | undefined)[] = [];
  private readonly t: Transmit = { length: 0, to: '' };

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    this.log.push(`in ${from} ${bytes[0]} @${now}`);
    this.received++;
    this.ackTo = from;
  }
  handleTimeout(now: number): void {
    this.timeouts.push(now);
    if (this.deadline !== undefined && now >= this.deadline) {
      this.deadline = undefined;
      this.events.push({ type: 'timeout', at: now });
    }
  }
  pollTransmit(_now: number, out: Uint8Array): Transmit | undefined {
    if (this.ackTo !== undefined) {
      out[0] = 0xac;
      out[1] = this.received;
      this.t.length = 2;
      this.t.to = this.ackTo;
      this.ackTo = undefined;
      return this.t;
    }
    const d = this.out.shift();
    if (d === undefined) return undefined;
    out.set(d.data);
    this.t.length = d.data.length;
    this.t.to = d.to;
    return this.t;
  }
  pollTimeout(): number | undefined {
    return this.deadline;
  }
  pollEvent(): Ev | undefined {
    return this.events.shift();
  }
  setWaker(waker: (() => void) | undefined): void {
    this.waker = waker;
    this.wakerSets.push(waker === undefined ? undefined : 'set');
  }
  /** A command: queue a datagram and wake the driver, as a real sans-IO object would. */
  command(byte: number, to: Address): void {
    this.out.push({ data: [byte], to });
    this.waker?.();
  }
}

function setup(options: { maxTransmitsPerTurn?: number; onEvent?: (ev: Ev, loop: DriveLoop<Ev, number>) => void } = {}) {
  const p = new FakePlatform();
  const ep = new Script();
  const events: Ev[] = [];
  const loop: DriveLoop<Ev, number> = new DriveLoop<Ev, number>(ep, p, {
    onEvent: (ev) => {
      events.push(ev);
      options.onEvent?.(ev, loop);
    },
    maxTransmitsPerTurn: options.maxTransmitsPerTurn,
  });
  return { p, ep, loop, events };
}

describe('DriveLoop on a virtual clock', () => {
  it('feeds a burst as it arrives and drains once per turn: one ack for the batch', () => {
    const { p, ep, loop } = setup();
    for (let i = 0; i < 5; i++) loop.handleDatagram('a:1', new Uint8Array([i]));
    expect(ep.received).toBe(5);
    expect(p.sent).toEqual([]); // nothing before the turn's drain
    expect(p.defers).toBe(1); // coalesced
    p.turn();
    expect(p.sent).toEqual([{ data: [0xac, 5], to: 'a:1' }]);
    loop.handleDatagram('b:2', new Uint8Array([9]));
    p.turn();
    expect(p.sent[1]).toEqual({ data: [0xac, 6], to: 'b:2' });
    expect(loop.lastDatagramAt).toBe(0);
  });

  it('runs timeouts no earlier than pollTimeout(), with one timer', () => {
    const { p, ep, loop, events } = setup();
    ep.deadline = 30.4;
    loop.drain();
    expect(p.delays).toEqual([31]); // rounded up to whole ms
    p.advance(30);
    expect(ep.timeouts).toEqual([]);
    p.advance(40);
    expect(ep.timeouts).toEqual([31]);
    expect(events).toEqual([{ type: 'timeout', at: 31 }]);
    expect(loop.counters().timerWakeups).toBe(1);
    expect(p.timers.size).toBe(0); // no deadline: no timer
  });

  it('re-arm rule: keep a timer that fires at most one resolution late; re-arm for an earlier deadline; clear when none', () => {
    const { p, ep, loop } = setup();
    ep.deadline = 30;
    loop.drain();
    expect(p.delays).toEqual([30]);
    // A later deadline keeps the early timer (waking early is harmless).
    ep.deadline = 50;
    loop.drain();
    // Earlier, but by less than the 1 ms resolution: kept.
    ep.deadline = 29.2;
    loop.drain();
    expect(p.delays).toEqual([30]);
    expect(p.clears).toBe(0);
    // Earlier by a whole ms: re-armed.
    p.t = 10;
    ep.deadline = 25;
    loop.drain();
    expect(p.delays).toEqual([30, 15]);
    expect(p.clears).toBe(1);
    expect(p.armedAt).toBe(25);
    // A wake-up before the deadline moved later re-arms for it.
    ep.deadline = 60;
    loop.drain();
    p.advance(25);
    expect(ep.timeouts).toEqual([]);
    expect(p.armedAt).toBe(60);
    // No deadline: cleared.
    ep.deadline = undefined;
    loop.drain();
    expect(p.timers.size).toBe(0);
  });

  it('a deadline at or before now that produces nothing waits one resolution instead of spinning', () => {
    const p = new FakePlatform();
    class Stubborn extends Script {
      override pollTimeout(): number {
        return 5;
      }
    }
    const ep = new Stubborn();
    const loop = new DriveLoop<Ev, number>(ep, p, { onEvent: () => {} });
    p.t = 10;
    loop.drain();
    expect(ep.timeouts.length).toBeGreaterThan(0);
    expect(ep.timeouts.length).toBeLessThanOrEqual(9); // bounded rounds in one drain
    expect(p.delays).toEqual([1]);
  });

  it('sends at most maxTransmitsPerTurn per drain and continues in a deferred drain after input', () => {
    const { p, ep, loop } = setup({ maxTransmitsPerTurn: 4 });
    for (let i = 0; i < 10; i++) ep.out.push({ data: [i], to: 'x:1' });
    loop.drain();
    expect(p.sent.length).toBe(4);
    loop.handleDatagram('x:1', new Uint8Array([1])); // an ack arriving in the same turn
    p.turn();
    expect(p.sent.length).toBe(8);
    expect(p.sent[4]).toEqual({ data: [0xac, 1], to: 'x:1' }); // the input was fed before the continuation
    p.turn();
    expect(p.sent.length).toBe(11);
    expect(p.deferred.length).toBe(0);
  });

  it('stops when the platform has no free buffer and resumes on wake()', () => {
    class Pooled extends FakePlatform {
      private readonly buf = new Uint8Array(64);
      buffer(): Uint8Array | undefined {
        return (this.buffers ?? 1) > 0 ? this.buf : undefined;
      }
    }
    const p = new Pooled();
    const ep = new Script();
    p.buffers = 2;
    const platform = p;
    const loop = new DriveLoop<Ev, number>(ep, platform, { onEvent: () => {} });
    for (let i = 0; i < 5; i++) ep.out.push({ data: [i], to: 'x:1' });
    loop.drain();
    expect(p.sent.map((s) => s.data[0])).toEqual([0, 1]);
    expect(p.deferred.length).toBe(0);
    p.buffers = 10;
    loop.wake();
    p.turn();
    expect(p.sent.map((s) => s.data[0])).toEqual([0, 1, 2, 3, 4]);
  });

  it('a command from an event handler is served in the same drain; a command outside wakes it through the waker', () => {
    const { p, ep, loop, events } = setup({
      onEvent: (ev) => {
        if (ev.type === 'timeout') ep.command(7, 'y:2');
      },
    });
    expect(ep.waker).toBeDefined();
    ep.deadline = 5;
    loop.drain();
    p.advance(5);
    expect(events.length).toBe(1);
    expect(p.sent).toEqual([{ data: [7], to: 'y:2' }]);
    expect(p.defers).toBe(0);
    // Outside any drain: three commands, one deferred drain, no kick needed.
    ep.command(1, 'y:2');
    ep.command(2, 'y:2');
    ep.command(3, 'y:2');
    expect(p.defers).toBe(1);
    p.turn();
    expect(p.sent.map((s) => s.data[0])).toEqual([7, 1, 2, 3]);
  });

  it('close(): one last drain, then stopped (timer cleared, waker removed, input ignored)', async () => {
    const { p, ep, loop, events } = setup();
    ep.deadline = 100;
    ep.out.push({ data: [1], to: 'x:1' });
    ep.events.push({ type: 'queued', at: 0 });
    loop.wake();
    const closed = loop.close();
    expect(p.sent.length).toBe(1);
    expect(events).toEqual([{ type: 'queued', at: 0 }]);
    expect(loop.state).toBe('closed');
    expect(p.timers.size).toBe(0);
    expect(ep.wakerSets).toEqual(['set', undefined]);
    await closed;
    p.turn(); // the earlier wake's deferred drain does nothing
    loop.handleDatagram('x:1', new Uint8Array([1]));
    expect(ep.received).toBe(0);
    expect(p.sent.length).toBe(1);
  });

  it('close() inside an event handler finishes the running drain: what the close queued leaves, its events arrive', () => {
    const { p, ep, loop, events } = setup({
      onEvent: (ev, l) => {
        if (ev.type !== 'message') return;
        ep.command(0xc1, 'x:1'); // e.g. a CLOSE packet queued by the session's close()
        ep.events.push({ type: 'closed', at: 0 });
        void l.close();
      },
    });
    ep.events.push({ type: 'message', at: 0 });
    loop.drain();
    expect(p.sent).toEqual([{ data: [0xc1], to: 'x:1' }]);
    expect(events.map((e) => e.type)).toEqual(['message', 'closed']);
    expect(loop.state).toBe('closed');
  });

  it('close({ linger }) keeps answering until the remote is quiet for quietMs and 2.5x its last gap', async () => {
    const { p, ep, loop } = setup();
    let done = false;
    void loop.close({ quietMs: 100, maxMs: 10_000 }).then(() => (done = true));
    expect(loop.state).toBe('lingering');
    for (const at of [50, 120, 160]) {
      p.advance(at);
      loop.handleDatagram('s:1', new Uint8Array([1]));
      p.turn();
    }
    expect(p.sent.length).toBe(3); // every late duplicate acked
    p.advance(259); // last gap 40 ms: the 100 ms floor rules
    expect(loop.state).toBe('lingering');
    p.advance(260);
    expect(loop.state).toBe('closed');
    await Promise.resolve();
    expect(done).toBe(true);
    expect(p.timers.size).toBe(0);
  });

  it('close({ linger }) follows a remote that backs off: resends 100, 200, 400, 800 ms apart are all answered', () => {
    const { p, loop } = setup();
    void loop.close({ quietMs: 150, maxMs: 10_000 });
    let at = 0;
    for (const gap of [0, 100, 200, 400, 800]) {
      at += gap;
      p.advance(at);
      expect(loop.state, `at ${at}`).toBe('lingering');
      loop.handleDatagram('s:1', new Uint8Array([1]));
      p.turn();
    }
    expect(p.sent.length).toBe(5);
    p.advance(at + 1999); // 2.5 x 800
    expect(loop.state).toBe('lingering');
    p.advance(at + 2000);
    expect(loop.state).toBe('closed');
  });

  it('close({ linger }) is bounded by maxMs even when the remote never goes quiet', () => {
    const { p, loop } = setup();
    void loop.close({ quietMs: 100, maxMs: 500 });
    for (let at = 40; at <= 1000 && loop.state !== 'closed'; at += 40) {
      p.advance(at);
      loop.handleDatagram('s:1', new Uint8Array([1]));
      p.turn();
    }
    expect(loop.state).toBe('closed');
    expect(p.t).toBeGreaterThanOrEqual(500);
    expect(p.t).toBeLessThanOrEqual(540);
  });

  it('close() refuses a bad linger with invalid-config and keeps running', () => {
    const { loop } = setup();
    expect(() => loop.close({ quietMs: -1 })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(() => loop.close({ maxMs: Infinity })).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(() => loop.close(5 as unknown as boolean)).toThrow(expect.objectContaining({ code: 'invalid-config' }));
    expect(loop.state).toBe('running');
  });

  it('a second close() without linger ends a linger at once', () => {
    const { loop } = setup();
    void loop.close(true);
    expect(loop.state).toBe('lingering');
    void loop.close();
    expect(loop.state).toBe('closed');
  });

  it('a handler that throws is reported to onError with its event; the next events, commands and the timer go on', () => {
    const p = new FakePlatform();
    const ep = new Script();
    const seen: string[] = [];
    const errors: [unknown, Ev][] = [];
    const loop = new DriveLoop<Ev, number>(ep, p, {
      onEvent: (ev) => {
        seen.push(ev.type);
        if (ev.type === 'bad') throw new Error('boom');
        if (ev.type === 'after') ep.command(5, 'x:1');
      },
      onError: (err, ev) => void errors.push([err, ev]),
    });
    ep.events.push({ type: 'bad', at: 0 }, { type: 'after', at: 0 });
    ep.deadline = 50;
    loop.drain();
    expect(seen).toEqual(['bad', 'after']);
    expect(errors.map(([e, ev]) => [(e as Error).message, ev.type])).toEqual([['boom', 'bad']]);
    expect(p.sent).toEqual([{ data: [5], to: 'x:1' }]);
    expect(p.armedAt).toBe(50);
    expect(loop.counters().handlerErrors).toBe(1);
    p.advance(50);
    expect(seen).toEqual(['bad', 'after', 'timeout']);
    ep.events.push({ type: 'bad', at: 0 });
    loop.handleDatagram('x:1', new Uint8Array([1]));
    p.turn();
    expect(p.sent.at(-1)).toEqual({ data: [0xac, 1], to: 'x:1' });
    expect(errors).toHaveLength(2);
    expect(loop.state).toBe('running');
  });

  it('without onError the handler\'s error is rethrown once the drain is done: later events delivered, timer armed, still running', () => {
    const { p, ep, loop, events } = setup({
      onEvent: (ev) => {
        if (ev.type === 'bad') throw new Error('boom');
      },
    });
    ep.events.push({ type: 'bad', at: 0 }, { type: 'after', at: 0 });
    ep.deadline = 50;
    expect(() => loop.drain()).toThrow('boom');
    expect(events.map((e) => e.type)).toEqual(['bad', 'after']);
    expect(p.armedAt).toBe(50);
    expect(loop.state).toBe('running');
    p.advance(50);
    expect(events.map((e) => e.type)).toEqual(['bad', 'after', 'timeout']);
    ep.events.push({ type: 'bad', at: 0 }, { type: 'bad', at: 0 });
    expect(() => loop.drain()).toThrow(AggregateError);
    expect(loop.counters().handlerErrors).toBe(3);
  });
});
