import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Host, type HostedPeer, type HostEvent } from './host.js';

/** A scripted peer: datagrams to send, a deadline, events; it records what the host asked of it. */
class TestPeer implements HostedPeer<string> {
  outbox: number[] = [];
  events: string[] = [];
  deadline: number | undefined;
  wakes: number[] = [];
  received: number[] = [];
  done = false;
  /** Deadline after a wake-up (default: none). */
  nextAfterWake: (now: number) => number | undefined = () => undefined;

  constructor(readonly name: string) {}

  handleDatagram(_now: number, bytes: Uint8Array): void {
    this.received.push(bytes[0]!);
    this.events.push(`got ${bytes[0]}`);
  }

  handleTimeout(now: number): void {
    this.wakes.push(now);
    this.deadline = this.nextAfterWake(now);
  }

  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    const b = this.outbox.shift();
    if (b === undefined) return undefined;
    out[0] = b;
    return 1;
  }

  pollTimeout(): number | undefined {
    return this.deadline;
  }

  pollEvent(): string | undefined {
    return this.events.shift();
  }

  finished(): boolean {
    return this.done;
  }
}

function drain<K>(h: Host<TestPeer, string, K>, now = 0): [string, number][] {
  const out = new Uint8Array(16);
  const r: [string, number][] = [];
  for (let t = h.pollTransmit(now, out); t !== undefined; t = h.pollTransmit(now, out)) r.push([t.to, out[0]!]);
  return r;
}

function events<K>(h: Host<TestPeer, string, K>): HostEvent<string>[] {
  const r: HostEvent<string>[] = [];
  for (let e = h.pollEvent(); e !== undefined; e = h.pollEvent()) r.push(e);
  return r;
}

describe('Host', () => {
  it('creates peers on a first datagram through accept, routes by address and tags events', () => {
    const made: TestPeer[] = [];
    const h = new Host<TestPeer>({
      maxPeers: 2,
      accept: (_now, from, bytes) => {
        if (bytes[0] === 0) return undefined;
        const p = new TestPeer(from);
        made.push(p);
        return p;
      },
    });
    h.handleDatagram(0, 'a', Uint8Array.of(1));
    h.handleDatagram(0, 'b', Uint8Array.of(2));
    h.handleDatagram(0, 'a', Uint8Array.of(3));
    h.handleDatagram(0, 'z', Uint8Array.of(0)); // refused by accept... would be, but the host is full first
    h.handleDatagram(0, 'c', Uint8Array.of(4));
    expect(made.map((p) => [p.name, p.received])).toEqual([['a', [1, 3]], ['b', [2]]]);
    const evs = events(h);
    const a = h.peerAt('a')!;
    expect(evs).toEqual([
      { peer: a, address: 'a', event: 'got 1' },
      { peer: a, address: 'a', event: 'got 3' },
      { peer: h.peerAt('b'), address: 'b', event: 'got 2' },
    ]);
    expect(h.counters()).toMatchObject({ datagramsIn: 5, refusedFull: 2, refused: 0, peersAdded: 2 });
    h.remove(h.peerAt('b')!);
    events(h);
    drain(h);
    h.handleDatagram(0, 'z', Uint8Array.of(0));
    expect(h.counters().refused).toBe(1);
    expect(h.size).toBe(1);
  });

  it('a host full to a maxPeers that is not a power of two serves every peer (tables capped at maxPeers)', () => {
    const n = 37;
    const h = new Host<TestPeer>({ maxPeers: n, accept: (_now, from) => new TestPeer(from) });
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < n; i++) {
        h.handleDatagram(round, `p${i}`, Uint8Array.of(i));
        const id = h.peerAt(`p${i}`)!;
        const p = h.get(id)!;
        p.outbox.push(i, i);
        p.deadline = round + 1;
        h.touch(id);
      }
      h.handleDatagram(round, 'extra', Uint8Array.of(0));
      expect(events(h)).toHaveLength(n);
      const sent = drain(h, round);
      expect(sent).toHaveLength(2 * n);
      expect(new Set(sent.slice(0, n).map(([to]) => to)).size).toBe(n); // one each in turn
      h.handleTimeout(round + 1);
    }
    expect(h.counters()).toMatchObject({ refusedFull: 3, peersAdded: n, wakeups: 3 * n });
  });

  it('accept may answer statelessly instead of creating a peer', () => {
    const h: Host<TestPeer> = new Host<TestPeer>({
      accept: (_now, from, bytes) => {
        if (bytes[0] === 1) return new TestPeer(from);
        h.sendTo(from, Uint8Array.of(0xee)); // e.g. a challenge or a refusal
        return undefined;
      },
    });
    h.handleDatagram(0, 'x', Uint8Array.of(0));
    expect(h.size).toBe(0);
    expect(drain(h)).toEqual([['x', 0xee]]);
    h.handleDatagram(0, 'x', Uint8Array.of(1));
    expect(h.size).toBe(1);
  });

  it('without accept, datagrams from unknown addresses are dropped and counted', () => {
    const h = new Host<TestPeer>();
    const p = new TestPeer('srv');
    h.add('srv', p);
    h.handleDatagram(0, 'other', Uint8Array.of(9));
    h.handleDatagram(0, 'srv', Uint8Array.of(8));
    expect(p.received).toEqual([8]);
    expect(h.counters().unknownAddress).toBe(1);
    expect(() => h.add('srv', new TestPeer('x'))).toThrow(/invalid-state/);
  });

  it('add throws queue-full at maxPeers', () => {
    const h = new Host<TestPeer>({ maxPeers: 1 });
    h.add('a', new TestPeer('a'));
    expect(() => h.add('b', new TestPeer('b'))).toThrow(/queue-full/);
  });

  it('wakes only the peers that are due, from one heap', () => {
    const h = new Host<TestPeer>();
    const ps = [10, 30, 20, undefined].map((d, i) => {
      const p = new TestPeer(`p${i}`);
      p.deadline = d;
      h.add(p.name, p);
      return p;
    });
    expect(h.pollTimeout()).toBe(10);
    h.handleTimeout(25);
    expect(ps.map((p) => p.wakes)).toEqual([[25], [], [25], []]);
    expect(h.pollTimeout()).toBe(30);
    ps[3]!.deadline = 26;
    expect(h.pollTimeout()).toBe(30); // the host re-reads a deadline only after something happened to the peer
    h.touch(h.peerAt('p3')!);
    expect(h.pollTimeout()).toBe(26);
    h.handleTimeout(29);
    expect(ps.map((p) => p.wakes.length)).toEqual([1, 0, 1, 1]);
    expect(h.counters().wakeups).toBe(3);
  });

  it('a peer still due right after its wake-up is next woken 1 ms later, not again at once', () => {
    const h = new Host<TestPeer>();
    const p = new TestPeer('a');
    p.deadline = 5;
    p.nextAfterWake = (now) => now - 1; // a peer that would spin
    h.add('a', p);
    for (let i = 0; i < 3; i++) h.handleTimeout(7);
    expect(p.wakes).toEqual([7]);
    expect(h.pollTimeout()).toBe(8);
    p.nextAfterWake = (now) => now + 0.25;
    h.handleTimeout(8);
    expect(h.pollTimeout()).toBe(8.25); // a later deadline is kept as is, fractions included
    // New input makes it due again at the same instant.
    p.deadline = 8;
    h.handleDatagram(8, 'a', Uint8Array.of(1));
    expect(h.pollTimeout()).toBe(9);
  });

  it('builds datagrams round robin across peers with something to send', () => {
    const h = new Host<TestPeer>();
    const [a, b, c] = ['a', 'b', 'c'].map((n) => {
      const p = new TestPeer(n);
      h.add(n, p);
      return p;
    });
    drain(h);
    a!.outbox = [1, 2, 3];
    b!.outbox = [4];
    c!.outbox = [5, 6];
    for (const n of ['a', 'b', 'c']) h.touch(h.peerAt(n)!);
    expect(drain(h)).toEqual([['a', 1], ['b', 4], ['c', 5], ['a', 2], ['c', 6], ['a', 3]]);
  });

  it('stateless replies go first, bounded; a reply larger than out is dropped and counted', () => {
    const h = new Host<TestPeer>({ maxReplies: 2 });
    const p = new TestPeer('a');
    p.outbox = [7];
    h.add('a', p);
    expect(h.sendTo('x', Uint8Array.of(1))).toBe(true);
    expect(h.sendTo('y', new Uint8Array(40))).toBe(true);
    expect(h.sendTo('z', Uint8Array.of(3))).toBe(false);
    expect(drain(h)).toEqual([['x', 1], ['a', 7]]);
    expect(h.counters()).toMatchObject({ repliesDropped: 1, transmitTooLarge: 1, datagramsOut: 2 });
  });

  it('a removed or finished peer drains its datagrams and events, then its slot is reused under a new id', () => {
    const h = new Host<TestPeer>();
    const a = new TestPeer('a');
    const idA = h.add('a', a);
    a.outbox = [1, 2];
    a.events = ['bye'];
    a.deadline = 50;
    expect(h.remove(idA)).toBe(true);
    expect(h.remove(idA)).toBe(false);
    expect(h.isLive(idA)).toBe(false);
    expect(h.get(idA)).toBe(a); // still holds its slot
    expect(h.pollTimeout()).toBeUndefined(); // no more wake-ups
    expect(h.peerAt('a')).toBeUndefined();
    h.handleDatagram(0, 'a', Uint8Array.of(5)); // no peer at 'a' any more
    expect(a.received).toEqual([]);
    expect(drain(h)).toEqual([['a', 1], ['a', 2]]);
    expect(h.size).toBe(1);
    expect(events(h)).toEqual([{ peer: idA, address: 'a', event: 'bye' }]);
    expect(h.size).toBe(0);
    expect(h.get(idA)).toBeUndefined();
    const b = new TestPeer('b');
    const idB = h.add('b', b);
    expect(idB).not.toBe(idA);
    expect(idB % 2 ** 21).toBe(idA % 2 ** 21); // same slot, new generation
    h.touch(idA); // stale: ignored
    expect(h.remove(idA)).toBe(false);
    // finished() retires on the next input.
    b.done = true;
    h.handleDatagram(0, 'b', Uint8Array.of(1));
    expect(h.liveCount).toBe(0);
    expect(events(h).map((e) => e.event)).toEqual(['got 1']);
    drain(h);
    expect(h.size).toBe(0);
    expect(h.counters().peersFreed).toBe(2);
  });

  it('rebind moves a peer to a new address', () => {
    const h = new Host<TestPeer>();
    const p = new TestPeer('a');
    const id = h.add('a', p);
    h.add('b', new TestPeer('b'));
    expect(() => h.rebind(id, 'b')).toThrow(/invalid-state/);
    h.rebind(id, 'a2');
    expect(h.peerAt('a')).toBeUndefined();
    expect(h.peerAt('a2')).toBe(id);
    p.outbox = [3];
    h.touch(id);
    expect(drain(h)).toContainEqual(['a2', 3]);
  });

  it('route mode: the owner demultiplexes, several peers may share an address', () => {
    const peers: TestPeer[] = [];
    const ids: number[] = [];
    const h: Host<TestPeer> = new Host<TestPeer>({ route: (_now, _from, bytes) => ids[bytes[0]! % 2] });
    for (let i = 0; i < 2; i++) {
      peers.push(new TestPeer(`p${i}`));
      ids.push(h.add('same', peers[i]!));
    }
    for (let i = 0; i < 4; i++) h.handleDatagram(0, 'same', Uint8Array.of(i));
    expect(peers.map((p) => p.received)).toEqual([[0, 2], [1, 3]]);
    expect(() => h.peerAt('same')).toThrow(/invalid-state/);
    expect(() => new Host<TestPeer>({ route: () => undefined, accept: () => undefined })).toThrow(/invalid-config/);
  });

  it('route mode: the host keeps the address index, in the order peers came, through add, rebind and retire', () => {
    const h = new Host<TestPeer>({ route: () => undefined });
    const at = (a: string): string[] => {
      const names: string[] = [];
      for (let id = h.firstAt(a); id !== undefined; id = h.nextAt(id)) names.push(h.get(id)!.name);
      return names;
    };
    const ids = ['p0', 'p1', 'p2', 'p3'].map((n) => h.add('same', new TestPeer(n)));
    const q = h.add('other', new TestPeer('q'));
    expect(at('same')).toEqual(['p0', 'p1', 'p2', 'p3']);
    h.remove(ids[1]!); // from the middle
    expect(at('same')).toEqual(['p0', 'p2', 'p3']);
    h.remove(ids[3]!); // the last
    h.add('same', new TestPeer('p4'));
    expect(at('same')).toEqual(['p0', 'p2', 'p4']);
    h.remove(ids[0]!); // the first
    expect(at('same')).toEqual(['p2', 'p4']);
    h.rebind(q, 'same'); // joins after those already there
    h.rebind(ids[2]!, 'moved');
    expect([at('same'), at('other'), at('moved')]).toEqual([['p4', 'q'], [], ['p2']]);
    expect(h.nextAt(ids[0]!)).toBeUndefined(); // retired: no neighbours
    expect(h.firstAt('nobody')).toBeUndefined();
    // Retiring the rest empties the index; nothing is found at an address once its peers left.
    for (const id of h.ids()) h.remove(id);
    expect([at('same'), at('moved')]).toEqual([[], []]);
  });

  it('a second address: found where no peer has it as its own, one per peer, gone on unalias and when the peer retires', () => {
    const h = new Host<TestPeer>();
    const p = new TestPeer('p');
    const id = h.add('a', p);
    const q = h.add('b', new TestPeer('q'));
    h.alias(id, 'a-bulk');
    expect([h.peerAt('a-bulk'), h.firstAt('a-bulk')]).toEqual([id, id]);
    h.handleDatagram(0, 'a-bulk', Uint8Array.of(9)); // routed by address to the peer
    expect(p.received).toEqual([9]);
    expect(() => h.alias(q, 'a-bulk')).toThrow(/invalid-state/); // another peer's
    expect(() => h.alias(q, 'a')).toThrow(/invalid-state/);
    expect(() => h.add('a-bulk', new TestPeer('r'))).toThrow(/invalid-state/);
    expect(() => h.rebind(q, 'a-bulk')).toThrow(/invalid-state/);
    h.alias(id, 'a-bulk2'); // replaces the first
    expect([h.peerAt('a-bulk'), h.peerAt('a-bulk2')]).toEqual([undefined, id]);
    expect(h.unalias('a-bulk')).toBeUndefined();
    expect(h.unalias('a-bulk2')).toBe(id);
    expect(h.peerAt('a-bulk2')).toBeUndefined();
    h.alias(id, 'a-bulk3');
    h.remove(id); // at once, while its slot still drains
    expect(h.peerAt('a-bulk3')).toBeUndefined();
    expect(() => h.alias(id, 'a-bulk4')).toThrow(/invalid-state/);
    h.alias(q, 'a-bulk3'); // free again
    expect(h.peerAt('a-bulk3')).toBe(q);
  });

  it('keys: one peer per key, found by key, in the order added; the key goes when the peer retires', () => {
    const h = new Host<TestPeer, string, bigint>({ route: () => undefined });
    const a = h.add('x', new TestPeer('a'), 7n);
    const b = h.add('x', new TestPeer('b'), 3n);
    const c = h.add('y', new TestPeer('c'));
    expect([h.peerWithKey(7n), h.peerWithKey(3n), h.peerWithKey(1n)]).toEqual([a, b, undefined]);
    expect(() => h.add('z', new TestPeer('d'), 7n)).toThrow(/invalid-state/);
    expect(h.size).toBe(3); // a refused add takes nothing
    expect(h.keyedIds()).toEqual([a, b]);
    h.rebind(a, 'moved'); // the key stays with the peer
    expect(h.peerWithKey(7n)).toBe(a);
    h.remove(a);
    expect(h.peerWithKey(7n)).toBeUndefined(); // at once, while its slot still drains
    expect(h.get(a)).toBeDefined();
    const d = h.add('z', new TestPeer('d'), 7n);
    expect(h.keyedIds()).toEqual([b, d]);
    expect(h.ids()).toContain(c);
  });

  it('groups: live peers per source group, through add, rebind and retire', () => {
    const ip = (a: string): string => a.slice(0, a.lastIndexOf(':'));
    const h = new Host<TestPeer>({ group: ip });
    const a1 = h.add('1.1.1.1:1', new TestPeer('a1'));
    h.add('1.1.1.1:2', new TestPeer('a2'));
    const b = h.add('2.2.2.2:1', new TestPeer('b'));
    expect([h.groupSize('1.1.1.1:9'), h.groupSize('2.2.2.2:9'), h.groupSize('3.3.3.3:9')]).toEqual([2, 1, 0]);
    h.rebind(b, '1.1.1.1:3');
    h.rebind(a1, '1.1.1.1:4'); // same group: no change
    expect([h.groupSize('1.1.1.1:9'), h.groupSize('2.2.2.2:9')]).toEqual([3, 0]);
    h.remove(a1);
    expect(h.groupSize('1.1.1.1:9')).toBe(2);
    expect(() => new Host<TestPeer>().groupSize('1.1.1.1:1')).toThrow(/invalid-state/);
    expect(() => new Host<TestPeer>({ group: 'ip' as never })).toThrow(/invalid-config/);
  });

  it('property: the address, key and group indexes match a model through add, remove, rebind and finish', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('add' as const), a: fc.nat(4), key: fc.option(fc.nat(5)) }),
      fc.record({ k: fc.constant('remove' as const), i: fc.nat(20) }),
      fc.record({ k: fc.constant('rebind' as const), i: fc.nat(20), a: fc.nat(4) }),
      fc.record({ k: fc.constant('finish' as const), i: fc.nat(20) }),
      fc.record({ k: fc.constant('drain' as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { minLength: 20, maxLength: 80 }), (ops) => {
        const group = (a: string): string => a.slice(0, 2); // 'g0' for a0..a1, 'g1' for a2..a3, …
        const addr = (n: number): string => `g${n >> 1}a${n}`;
        const h = new Host<TestPeer, string, number>({ maxPeers: 8, route: () => undefined, group });
        // The model: live peers in the order they came to their current address.
        let live: { id: number; p: TestPeer; at: string; key: number | undefined; since: number }[] = [];
        let clock = 0;
        for (const o of ops) {
          if (o.k === 'add') {
            const key = o.key ?? undefined;
            if (h.full || (key !== undefined && live.some((x) => x.key === key))) {
              expect(() => h.add(addr(o.a), new TestPeer('x'), key)).toThrow();
              continue;
            }
            const p = new TestPeer(`p${clock}`);
            live.push({ id: h.add(addr(o.a), p, key), p, at: addr(o.a), key, since: clock++ });
          } else if (o.k === 'drain') {
            drain(h);
            events(h);
          } else if (live.length > 0) {
            const x = live[o.i % live.length]!;
            if (o.k === 'remove') h.remove(x.id);
            else if (o.k === 'finish') {
              x.p.done = true;
              h.handleDatagram(0, x.at, Uint8Array.of(0)); // route drops it; the next touch retires
              h.touch(x.id);
            } else {
              if (x.at !== addr(o.a)) x.since = clock++;
              x.at = addr(o.a);
              h.rebind(x.id, x.at);
              continue;
            }
            live = live.filter((y) => y !== x);
          }
          for (let n = 0; n < 5; n++) {
            const want = live.filter((x) => x.at === addr(n)).sort((a, b) => a.since - b.since).map((x) => x.id);
            const got: number[] = [];
            for (let id = h.firstAt(addr(n)); id !== undefined; id = h.nextAt(id)) got.push(id);
            expect(got).toEqual(want);
            expect(h.groupSize(addr(n))).toBe(live.filter((x) => group(x.at) === group(addr(n))).length);
            expect(h.peerWithKey(n)).toBe(live.find((x) => x.key === n)?.id);
          }
          expect(h.keyedIds()).toEqual(live.filter((x) => x.key !== undefined).map((x) => x.id));
          expect(h.liveCount).toBe(live.length);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('wakes its driver on commands, and relays a peer\'s own wake hook as a touch', () => {
    class WakingPeer extends TestPeer {
      wake: (() => void) | undefined;
      setWaker(w: (() => void) | undefined): void {
        this.wake = w;
      }
    }
    const h = new Host<TestPeer>();
    let wakes = 0;
    h.setWaker(() => wakes++);
    const p = new WakingPeer('a');
    const id = h.add('a', p);
    expect(wakes).toBe(1);
    drain(h);
    events(h);
    p.outbox = [5];
    p.deadline = 40;
    p.wake!(); // the peer's own command (e.g. sendBlock) reaches the host
    expect(wakes).toBe(2);
    expect(h.pollTimeout()).toBe(40);
    expect(drain(h)).toEqual([['a', 5]]);
    h.sendTo('x', Uint8Array.of(1));
    h.touch(id);
    expect(wakes).toBe(4);
    h.handleDatagram(0, 'a', Uint8Array.of(2)); // input is the driver's own doing: no wake
    expect(wakes).toBe(4);
    h.remove(id);
    expect(wakes).toBe(5);
    drain(h);
    events(h);
    expect(p.wake).toBeUndefined(); // freed: the host took its hook back
  });

  it('property: wake-ups match a model of deadlines, and every drain is fair round robin', () => {
    const op = fc.oneof(
      fc.record({ k: fc.constant('add' as const), d: fc.option(fc.integer({ min: 0, max: 200 })) }),
      fc.record({ k: fc.constant('remove' as const), i: fc.nat(20) }),
      fc.record({ k: fc.constant('queue' as const), i: fc.nat(20), n: fc.nat(5), d: fc.option(fc.integer({ min: 0, max: 200 })) }),
      fc.record({ k: fc.constant('time' as const), dt: fc.integer({ min: 0, max: 60 }) }),
      fc.record({ k: fc.constant('drain' as const) }),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 120 }), (ops) => {
        const h = new Host<TestPeer>({ maxPeers: 8 });
        const live: { id: number; p: TestPeer }[] = [];
        let now = 0;
        let seq = 0;
        let lastWake = -Infinity;
        for (const o of ops) {
          if (o.k === 'add') {
            if (h.full) continue;
            const p = new TestPeer(`p${seq++}`);
            p.deadline = o.d ?? undefined;
            live.push({ id: h.add(p.name, p), p });
          } else if (o.k === 'remove') {
            if (live.length === 0) continue;
            const [x] = live.splice(o.i % live.length, 1);
            h.remove(x!.id);
          } else if (o.k === 'queue') {
            if (live.length === 0) continue;
            const x = live[o.i % live.length]!;
            for (let j = 0; j < o.n; j++) x.p.outbox.push(seq++ & 0xff);
            x.p.deadline = o.d ?? undefined;
            h.touch(x.id);
          } else if (o.k === 'time') {
            now += o.dt;
            const due = live.filter((x) => x.p.deadline !== undefined && x.p.deadline <= now).map((x) => x.p);
            const before = live.map((x) => x.p.wakes.length);
            h.handleTimeout(now);
            lastWake = now;
            live.forEach((x, j) => expect(x.p.wakes.length - before[j]!).toBe(due.includes(x.p) ? 1 : 0));
          }
          // The re-key rule: a peer woken by the latest handleTimeout is not due again before 1 ms later.
          const model = Math.min(...live.map((x) => x.p.deadline ?? Infinity).map((d, j) => {
            const w = live[j]!.p.wakes.at(-1);
            return w !== undefined && w === lastWake && d <= w ? w + 1 : d;
          }));
          expect(h.pollTimeout() ?? Infinity).toBe(model);
          if (o.k !== 'drain') continue;
          // Fairness: in any prefix of a drain, no peer is more than one datagram ahead of a peer that still had some.
          const pending = new Map(live.map((x) => [x.p.name, x.p.outbox.length]));
          const sent = new Map<string, number>();
          for (const [to] of drain(h, now)) {
            sent.set(to, (sent.get(to) ?? 0) + 1);
            for (const [q, total] of pending) {
              const sq = sent.get(q) ?? 0;
              if (sq < total) expect(sent.get(to)!).toBeLessThanOrEqual(sq + 1);
            }
          }
          for (const x of live) expect(x.p.outbox).toEqual([]);
          events(h);
          expect(h.size).toBe(live.length);
        }
      }),
      { numRuns: 500 },
    );
  });
});
