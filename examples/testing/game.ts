// A toy game's own networking code, written sans-IO so that it runs unchanged on real sockets (through a
// driver) and on gamewire/testing's simulated network. Wire format, all big-endian:
//   client → server  input     [0x01, seq u32]
//   server → client  snapshot  [0x02, tick u32, players u8]
import type { Address, Endpoint, SansIoPeer, Transmit } from 'gamewire/testing';

/** The server: many clients at one address. Ticks every `tickMs` once someone has joined, and sends each player a snapshot. */
export class GameServer implements Endpoint<string> {
  tick = 0;
  private nextTick: number | undefined;
  private readonly players = new Map<Address, { lastSeen: number }>();
  private readonly outbox: Address[] = []; // at most one snapshot per player per tick
  private readonly events: string[] = [];
  private readonly tx: Transmit = { length: 0, to: '' };

  constructor(private readonly tickMs = 50, private readonly dropAfterMs = 1000, private readonly maxPlayers = 16) {}

  handleDatagram(now: number, from: Address, bytes: Uint8Array): void {
    if (bytes.length !== 5 || bytes[0] !== 0x01) return; // never trust the wire
    let p = this.players.get(from);
    if (p === undefined) {
      if (this.players.size >= this.maxPlayers) return;
      this.players.set(from, (p = { lastSeen: now }));
      this.events.push(`join ${from}`);
    }
    p.lastSeen = now;
    this.nextTick ??= now;
  }

  handleTimeout(now: number): void {
    if (this.nextTick === undefined || now < this.nextTick) return;
    this.tick++;
    this.nextTick += this.tickMs;
    for (const [addr, p] of this.players) {
      if (now - p.lastSeen > this.dropAfterMs) {
        this.players.delete(addr);
        this.events.push(`leave ${addr}`);
      } else {
        this.outbox.push(addr);
      }
    }
  }

  pollTransmit(_now: number, out: Uint8Array): Transmit | undefined {
    const to = this.outbox.shift();
    if (to === undefined) return undefined;
    out[0] = 0x02;
    new DataView(out.buffer, out.byteOffset).setUint32(1, this.tick);
    out[5] = this.players.size;
    this.tx.length = 6;
    this.tx.to = to;
    return this.tx;
  }

  pollTimeout(): number | undefined {
    return this.nextTick;
  }

  pollEvent(): string | undefined {
    return this.events.shift();
  }
}

/** A client: sends an input every `inputMs`, reads snapshots, and says 'lost' after `lostAfterMs` of silence. */
export class GameClient implements SansIoPeer<'connected' | 'lost'> {
  lastTick = 0;
  snapshots = 0;
  private seq = 0;
  private nextInput = 0;
  private inputDue = false;
  private lastHeard = 0;
  private connected = false;
  private readonly events: ('connected' | 'lost')[] = [];

  constructor(private readonly inputMs = 16, private readonly lostAfterMs = 500) {}

  handleDatagram(now: number, bytes: Uint8Array): void {
    if (bytes.length !== 6 || bytes[0] !== 0x02) return;
    const tick = new DataView(bytes.buffer, bytes.byteOffset).getUint32(1);
    if (tick > this.lastTick) this.lastTick = tick;
    this.snapshots++;
    this.lastHeard = now;
    if (!this.connected) {
      this.connected = true;
      this.events.push('connected');
    }
  }

  handleTimeout(now: number): void {
    if (this.connected && now - this.lastHeard >= this.lostAfterMs) {
      this.connected = false;
      this.events.push('lost');
    }
    if (now >= this.nextInput) {
      this.inputDue = true;
      this.nextInput = now + this.inputMs;
    }
  }

  pollTransmit(_now: number, out: Uint8Array): number | undefined {
    if (!this.inputDue) return undefined;
    this.inputDue = false;
    out[0] = 0x01;
    new DataView(out.buffer, out.byteOffset).setUint32(1, this.seq++);
    return 5;
  }

  pollTimeout(): number | undefined {
    return this.connected ? Math.min(this.nextInput, this.lastHeard + this.lostAfterMs) : this.nextInput;
  }

  pollEvent(): 'connected' | 'lost' | undefined {
    return this.events.shift();
  }
}
