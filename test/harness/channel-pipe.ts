// A fake of the packet layer for channels/ tests: two `MessageLanes` joined by a seeded packet pipe that
// loses, delays, reorders and duplicates packets, decides each packet's fate itself and reports it to
// the sender (packetDelivered / packetLost) after a random delay, so outcomes arrive in any order.
import { type MessageLaneEvent, MessageLanes, type MessageLanesOptions, type ChannelToken } from '../../src/channels/index.js';
import { newFrameView, readFrame } from '../../src/channels/wire.js';
import { NonCryptoRng } from '../../src/core/rng.js';

export interface PipeOptions {
  seed: number;
  /** Loss probability per packet, 0..1. */
  loss?: number;
  /** Duplication probability per delivered packet. */
  dup?: number;
  /** One-way delay, ms (each packet gets delay + uniform [0, jitter)). */
  delayMs?: number;
  jitterMs?: number;
  /** Payload room per packet, bytes. */
  room?: number;
  /** Each packet's room is `room` minus uniform [0, roomJitter] bytes (a header of varying length in front). */
  roomJitter?: number;
  /** Packets each end may send per 1 ms tick. */
  packetsPerTick?: number;
  /** Write a packet at each sending tick even when `hasFrames()` is false (a game's tick: redundancy rides on it). */
  alwaysSend?: boolean;
  /** An end sends only at ticks where `now % sendEveryMs === 0` (default 1: every tick). */
  sendEveryMs?: number;
}

interface InFlight {
  at: number;
  to: 0 | 1;
  bytes: Uint8Array;
  /** Index of the packet in `packets` (its fate record), or -1 for a duplicate copy. */
  record: number;
}

interface Outcome {
  at: number;
  from: 0 | 1;
  token: ChannelToken;
  delivered: boolean;
}

/** One packet sent: which end sent it, what it carried (lane, id/seq per frame) and its fate. */
export interface PacketRecord {
  from: 0 | 1;
  sentAt: number;
  bytes: number;
  frames: { lane: number; reliable: boolean; id: number }[];
  /** undefined until decided at arrival (or at loss). */
  delivered?: boolean;
}

export class ChannelPipe {
  readonly ends: [MessageLanes, MessageLanes];
  readonly events: [MessageLaneEvent[], MessageLaneEvent[]] = [[], []];
  readonly packets: PacketRecord[] = [];
  now = 0;
  private readonly rng: NonCryptoRng;
  private readonly o: Required<PipeOptions>;
  private flight: InFlight[] = [];
  private outcomes: Outcome[] = [];
  private readonly buf: Uint8Array;

  constructor(config: MessageLanesOptions | [MessageLanesOptions, MessageLanesOptions], options: PipeOptions) {
    const [ca, cb] = Array.isArray(config) ? config : [config, config];
    this.ends = [new MessageLanes(ca), new MessageLanes(cb)];
    this.o = { loss: 0, dup: 0, delayMs: 10, jitterMs: 0, room: 1200, roomJitter: 0, packetsPerTick: 1, alwaysSend: false, sendEveryMs: 1, ...options };
    this.rng = new NonCryptoRng(options.seed);
    this.buf = new Uint8Array(this.o.room);
  }

  /** Send what each end has (up to `packetsPerTick` packets), then advance 1 ms and process arrivals and outcomes. */
  tick(): void {
    for (const from of [0, 1] as const) {
      if (this.now % this.o.sendEveryMs !== 0) break;
      for (let k = 0; k < this.o.packetsPerTick; k++) {
        if (!this.ends[from].hasFrames() && !(this.o.alwaysSend && k === 0)) break;
        if (!this.sendOne(from)) break;
      }
    }
    this.now++;
    this.process();
  }

  /** Write one packet from end `from`; false if it wrote nothing. */
  sendOne(from: 0 | 1, room = this.o.room - (this.o.roomJitter > 0 ? this.rng.nextInt(this.o.roomJitter + 1) : 0)): boolean {
    const ch = this.ends[from];
    const n = ch.writeFrames(this.now, this.buf, 0, room);
    const token = ch.takeToken();
    if (n === 0) return false;
    const bytes = this.buf.slice(0, n);
    const rec: PacketRecord = { from, sentAt: this.now, bytes: n, frames: framesOf(bytes) };
    const record = this.packets.push(rec) - 1;
    const to = (1 - from) as 0 | 1;
    if (this.rng.chance(this.o.loss)) {
      rec.delivered = false;
      if (token !== undefined) this.outcomes.push({ at: this.now + this.oneWay() * 2 + 5, from, token, delivered: false });
    } else {
      this.flight.push({ at: this.now + this.oneWay(), to, bytes, record });
      if (this.rng.chance(this.o.dup)) this.flight.push({ at: this.now + this.oneWay(), to, bytes, record: -1 });
    }
    this.tokens.set(record, token);
    return true;
  }

  private readonly tokens = new Map<number, ChannelToken | undefined>();

  private oneWay(): number {
    return this.o.delayMs + (this.o.jitterMs > 0 ? this.rng.nextInt(this.o.jitterMs) : 0);
  }

  /** Deliver every packet and outcome due at `now`, in due order. */
  process(): void {
    const due = this.flight.filter((f) => f.at <= this.now).sort((a, b) => a.at - b.at);
    this.flight = this.flight.filter((f) => f.at > this.now);
    for (const f of due) {
      const rx = this.ends[f.to];
      const ok = rx.validate(f.bytes, 0, f.bytes.length);
      if (f.record >= 0) {
        const rec = this.packets[f.record]!;
        rec.delivered = ok;
        const token = this.tokens.get(f.record);
        this.tokens.delete(f.record);
        if (token !== undefined) this.outcomes.push({ at: this.now + this.oneWay(), from: rec.from, token, delivered: ok });
      }
      if (ok) rx.receive(this.now, f.bytes, 0, f.bytes.length);
    }
    for (const from of [0, 1] as const) {
      for (let e = this.ends[from].pollEvent(); e !== undefined; e = this.ends[from].pollEvent()) this.events[from].push(e);
    }
    const ready = this.outcomes.filter((x) => x.at <= this.now);
    this.outcomes = this.outcomes.filter((x) => x.at > this.now);
    for (const x of ready) {
      if (x.delivered) this.ends[x.from].packetDelivered(this.now, x.token);
      else this.ends[x.from].packetLost(this.now, x.token);
    }
    for (const from of [0, 1] as const) {
      for (let e = this.ends[from].pollEvent(); e !== undefined; e = this.ends[from].pollEvent()) this.events[from].push(e);
    }
  }

  /** True when nothing is queued, in flight or awaiting an outcome. */
  idle(): boolean {
    return this.flight.length === 0 && this.outcomes.length === 0 && !this.ends[0].hasFrames() && !this.ends[1].hasFrames();
  }

  /** Tick until `done()` or `maxTicks`; returns the ticks run. */
  runUntil(done: () => boolean, maxTicks = 200_000): number {
    let t = 0;
    while (!done() && t < maxTicks) {
      this.tick();
      t++;
    }
    return t;
  }

  /** Messages received by end `to` on `lane`, in arrival order. */
  messages(to: 0 | 1, lane?: number): Uint8Array[] {
    return this.events[to].filter((e) => e.type === 'message' && (lane === undefined || e.lane === lane))
      .map((e) => (e as { bytes: Uint8Array }).bytes);
  }

  /** Delivery events seen by end `from`. */
  deliveries(from: 0 | 1, lane?: number): { lane: number; id: number; delivered: boolean }[] {
    return this.events[from].filter((e) => e.type === 'delivery' && (lane === undefined || e.lane === lane)) as never;
  }
}

/** The frames of a payload, for the test's own bookkeeping. */
export function framesOf(bytes: Uint8Array): { lane: number; reliable: boolean; id: number }[] {
  const v = newFrameView();
  const out: { lane: number; reliable: boolean; id: number }[] = [];
  for (let o = 0; o < bytes.length;) {
    const n = readFrame(bytes, o, bytes.length, v);
    if (n < 0) break;
    out.push({ lane: v.lane, reliable: v.reliable, id: v.id });
    o += n;
  }
  return out;
}
