import { angle, bool, defineSchema, float } from '../../src/state/schema.js';
import { StateServer, type StateLink } from '../../src/state/server.js';
import { Kind } from '../../src/state/wire.js';

/** The schema of docs/state.md's vectors. */
export const vectorTypes = { ship: { x: float(-100, 100, 0.01), y: float(-100, 100, 0.01), heading: angle(8), shield: bool() } };
export const vectorSchema = defineSchema(vectorTypes, { thrust: bool() });

/** A connection that keeps what is sent on it, and says the path carries 1 MB/s. */
export class CaptureLink implements StateLink {
  sent: { lane: number; bytes: Uint8Array; id: number }[] = [];
  private next = 0;
  send(lane: number, bytes: Uint8Array): number {
    const id = this.next++;
    this.sent.push({ lane, bytes: bytes.slice(), id });
    return id;
  }
  stats(): never {
    return { pacingRateBytesPerSec: 1_000_000 } as never;
  }
}

export const hex = (b: Uint8Array): string => Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');

/**
 * The vectors' story: tick 1 creates two ships; the client acknowledges it; ship 0 moves (tick 2,
 * a delta against tick 1); ship 1 is despawned before tick 2's fate is known (tick 3: the same delta,
 * and a destroy). Returns each snapshot's bytes.
 */
export function vectorSnapshots(): { tick: number; hex: string }[] {
  const server = new StateServer({ schema: vectorSchema, tickHz: 20, lagCompensation: { historyMs: 0, maxRewindMs: 0 } });
  const link = new CaptureLink();
  const hello = new Uint8Array(5);
  hello[0] = Kind.Hello;
  new DataView(hello.buffer).setUint32(1, vectorSchema.hash, true);
  server.handle({ type: 'message', connection: link, lane: 0, bytes: hello });
  const a = server.spawn('ship', { x: 1.5, y: -2, heading: Math.PI / 2, shield: true });
  const b = server.spawn('ship', { x: 0, y: 0, heading: 0, shield: false });
  const snaps = (): { lane: number; bytes: Uint8Array; id: number }[] => link.sent.filter((s) => s.lane === 1);
  server.tick(50);
  server.handle({ type: 'delivery', connection: link, lane: 1, id: snaps()[0]!.id, delivered: true });
  a.values.x = 1.75;
  server.tick(100);
  server.despawn(b);
  server.tick(150);
  return snaps().map((s, i) => ({ tick: i + 1, hex: hex(s.bytes) }));
}
