// A session builds each message and delivery event once, through its owner's factory, already
// numbered as the connection's lanes: the object the owner's factory made is the one polled.
import { describe, expect, it } from 'vitest';
import { MessageLanes, type MessageLaneEvent } from '../channels/index.js';
import { resolveConnectionOptions } from './options.js';
import { Lanes, type SessionEvents } from './session.js';

interface Made {
  kind: 'message' | 'delivery';
  lane: number;
  id?: number;
  delivered?: boolean;
  bytes?: Uint8Array;
}

/** A factory that records every object it makes. */
function recording(): { events: SessionEvents<Made>; made: Made[] } {
  const made: Made[] = [];
  return {
    made,
    events: {
      message(lane, bytes) {
        const e: Made = { kind: 'message', lane, bytes };
        made.push(e);
        return e;
      },
      delivery(lane, id, delivered) {
        const e: Made = { kind: 'delivery', lane, id, delivered };
        made.push(e);
        return e;
      },
    },
  };
}

/** Move every body `from` writes at `now` into `to` (headroom 1: the framing's byte stays unwritten). */
function carry(now: number, from: Lanes<Made>, to: Lanes<Made>): number {
  const out = new Uint8Array(1200);
  let n = 0;
  for (let len = from.write(now, out, false); len !== undefined; len = from.write(now, out, false)) {
    if (from.writtenKind === 4) to.receiveData(now, out.subarray(0, len), 1);
    else to.receiveBlock(now, out.subarray(0, len), 1, 1);
    n++;
  }
  return n;
}

function drain(s: Lanes<Made>): Made[] {
  const got: Made[] = [];
  for (let e = s.pollEvent(); e !== undefined; e = s.pollEvent()) got.push(e);
  return got;
}

describe('Lanes events', () => {
  for (const lanes of [
    [{ mode: 'reliable-ordered' }, { mode: 'notify' }, { mode: 'block' }],
    [{ mode: 'block' }, { mode: 'reliable-ordered' }, { mode: 'notify' }],
  ] as const) {
    const label = lanes.map((l) => l.mode).join(', ');
    it(`[${label}]: each message and outcome is the one object the owner's factory made, with the connection's lane numbers`, () => {
      const opt = resolveConnectionOptions({ lanes });
      const ra = recording();
      const rb = recording();
      const a = new Lanes(opt, 1200, 1, 1, ra.events);
      const b = new Lanes(opt, 1200, 1, 2, rb.events);
      const reliable = lanes.findIndex((l) => l.mode === 'reliable-ordered');
      const notify = lanes.findIndex((l) => l.mode === 'notify');
      const block = lanes.findIndex((l) => l.mode === 'block');
      a.send(0, reliable, Uint8Array.of(1, 2, 3), true);
      const nid = a.send(0, notify, Uint8Array.of(9), false);
      const bid = a.send(0, block, new Uint8Array(3000).fill(7), true);
      let now = 0;
      for (let round = 0; round < 50 && (rb.made.length < 3 || ra.made.length < 3); round++) {
        now += 10;
        a.handleTimeout(now);
        b.handleTimeout(now);
        carry(now, a, b);
        carry(now + 5, b, a);
      }
      const atB = drain(b);
      expect(atB).toEqual(rb.made);
      for (let i = 0; i < atB.length; i++) expect(atB[i]).toBe(rb.made[i]);
      expect(atB.map((e) => [e.kind, e.lane])).toEqual([['message', reliable], ['message', notify], ['message', block]]);
      expect(atB[2]!.bytes).toEqual(new Uint8Array(3000).fill(7));
      const atA = drain(a);
      for (let i = 0; i < atA.length; i++) expect(atA[i]).toBe(ra.made[i]);
      expect(atA).toHaveLength(ra.made.length);
      expect(atA.map((e) => [e.lane, e.id, e.delivered])).toEqual(expect.arrayContaining([
        [reliable, 0, true], [notify, nid, true], [block, bid, true],
      ]));
      expect(atA).toHaveLength(3);
    });
  }

  it('MessageLanes alone raises plain ChannelEvents; with a factory, its objects', () => {
    const a = new MessageLanes({ lanes: [{ mode: 'unreliable' }] });
    const b = new MessageLanes({ lanes: [{ mode: 'unreliable' }] });
    const made: unknown[] = [];
    const c = new MessageLanes({ lanes: [{ mode: 'unreliable' }] }, {
      message: (lane, bytes) => {
        const e = { tag: 'mine', lane, bytes };
        made.push(e);
        return e;
      },
      delivery: () => ({ tag: 'mine' }),
    });
    a.send(0, 0, Uint8Array.of(5));
    const out = new Uint8Array(1200);
    const n = a.writeFrames(0, out, 0, out.length, false);
    expect(b.validate(out, 0, n) && c.validate(out, 0, n)).toBe(true);
    b.receive(0, out, 0, n);
    c.receive(0, out, 0, n);
    const plain: MessageLaneEvent | undefined = b.pollEvent();
    expect(plain).toStrictEqual({ type: 'message', lane: 0, bytes: Uint8Array.of(5) });
    const mine = c.pollEvent();
    expect(mine).toBe(made[0]);
    expect(mine).toStrictEqual({ tag: 'mine', lane: 0, bytes: Uint8Array.of(5) });
  });
});

describe('Connection events', () => {
  it('a message and a delivery are polled as built: the documented fields, naming the connection', async () => {
    const { World } = await import('../sim/world.js');
    const { ConnectionHost } = await import('./host.js');
    const { NonCryptoRng } = await import('../core/rng.js');
    const rnd = (seed: number) => { const r = new NonCryptoRng(seed); return (o: Uint8Array): void => void r.fill(o); };
    const world = new World({ seed: 1, link: { latencyMs: 10 } });
    const lanes = [{ mode: 'notify' }, { mode: 'reliable-ordered' }] as const;
    const server = new ConnectionHost({ lanes, listen: true, random: rnd(1) });
    const client = new ConnectionHost({ lanes, random: rnd(2) });
    world.add('s', server);
    world.add('c', client);
    const conn = client.connect(0, 's');
    const id = conn.send(0, Uint8Array.of(4, 2));
    world.runFor(500);
    const atServer: unknown[] = [];
    for (let e = server.pollEvent(); e !== undefined; e = server.pollEvent()) atServer.push(e);
    const sconn = server.connections()[0]!;
    expect(atServer).toStrictEqual([
      { type: 'connected', connection: sconn },
      { type: 'message', connection: sconn, lane: 0, bytes: Uint8Array.of(4, 2) },
    ]);
    const atClient: unknown[] = [];
    for (let e = client.pollEvent(); e !== undefined; e = client.pollEvent()) atClient.push(e);
    expect(atClient).toStrictEqual([
      { type: 'connected', connection: conn },
      { type: 'delivery', connection: conn, lane: 0, id, delivered: true },
    ]);
  });
});
