import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { NonCryptoRng } from '../../src/core/rng.js';
import { StateClient } from '../../src/state/client.js';
import { StateServer } from '../../src/state/server.js';
import { Kind } from '../../src/state/wire.js';
import { CaptureLink, vectorSchema } from './vectors.js';

/** Real snapshots of a busy server: creates, updates against several baselines, destroys. */
function realSnapshots(): Uint8Array[] {
  const server = new StateServer({ schema: vectorSchema, lagCompensation: { historyMs: 0, maxRewindMs: 0 } });
  const link = new CaptureLink();
  const hello = Uint8Array.of(Kind.Hello, 0, 0, 0, 0);
  new DataView(hello.buffer).setUint32(1, vectorSchema.hash, true);
  server.handle({ type: 'message', connection: link, lane: 0, bytes: hello });
  const rng = new NonCryptoRng(9);
  const ships = Array.from({ length: 30 }, () => server.spawn('ship', { x: 0, y: 0, heading: 0, shield: false }));
  for (let t = 0; t < 60; t++) {
    for (const s of ships) if (rng.nextFloat() < 0.3) s.values.x = rng.nextFloat() * 200 - 100;
    if (rng.nextFloat() < 0.3) server.despawn(ships.splice(rng.nextInt(ships.length), 1)[0]!);
    if (rng.nextFloat() < 0.3) ships.push(server.spawn('ship', { x: 1, y: 1, heading: 1, shield: true }));
    server.tick(t * 50);
    const last = link.sent[link.sent.length - 1]!;
    if (last.lane === 1 && rng.nextFloat() < 0.7) server.handle({ type: 'delivery', connection: link, lane: 1, id: last.id, delivered: true });
  }
  return link.sent.filter((s) => s.lane === 1).map((s) => s.bytes);
}

describe('the snapshot and input readers under hostile bytes', () => {
  const snaps = realSnapshots();

  it('random and mutated snapshots never throw, and the client stays bounded', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.uint8Array({ maxLength: 300 }),
            fc.tuple(fc.nat(snaps.length - 1), fc.nat(), fc.nat(255)).map(([i, at, v]) => {
              const b = snaps[i]!.slice();
              if (b.length > 0) b[at % b.length] = v;
              return b;
            }),
            fc.tuple(fc.nat(snaps.length - 1), fc.nat()).map(([i, n]) => snaps[i]!.slice(0, n % (snaps[i]!.length + 1))),
            fc.nat(snaps.length - 1).map((i) => snaps[i]!),
          ),
          { maxLength: 80 },
        ),
        (msgs) => {
          const client = new StateClient(new CaptureLink(), { schema: vectorSchema });
          for (const bytes of msgs) {
            client.handle(0, { type: 'message', lane: 1, bytes });
            client.handle(0, { type: 'message', lane: 0, bytes });
            client.handle(0, { type: 'message', lane: 2, bytes });
          }
          expect(client.ids().length).toBeLessThanOrEqual(65536);
          const r = (client as never as { records: Map<number, unknown> }).records;
          expect(r.size).toBeLessThanOrEqual(128);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('the real snapshots in order decode with nothing malformed (the mutations above start from valid input)', () => {
    const client = new StateClient(new CaptureLink(), { schema: vectorSchema });
    for (const bytes of snaps) client.handle(0, { type: 'message', lane: 1, bytes });
    expect(client.counters().malformed).toBe(0);
    expect(client.ids().length).toBeGreaterThan(10);
  });

  it('random input messages and control messages to the server never throw', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.uint8Array({ maxLength: 200 })), { maxLength: 50 }), (msgs) => {
        const server = new StateServer({ schema: vectorSchema, lagCompensation: { historyMs: 0, maxRewindMs: 0 } });
        const link = new CaptureLink();
        const hello = Uint8Array.of(Kind.Hello, 0, 0, 0, 0);
        new DataView(hello.buffer).setUint32(1, vectorSchema.hash, true);
        server.handle({ type: 'message', connection: link, lane: 0, bytes: hello });
        let inputs = 0;
        server.on('input', () => inputs++);
        for (const [lane, bytes] of msgs) {
          const b = lane === 3 ? Uint8Array.of(Kind.Input, ...bytes) : bytes;
          server.handle({ type: 'message', connection: link, lane: lane === 3 ? 2 : lane, bytes: b });
          server.handle({ type: 'delivery', connection: link, lane: 1, id: bytes[0] ?? 0, delivered: true });
          server.tick(0);
        }
        expect([...server.players()][0]!.stats().inputsApplied).toBe(inputs);
      }),
      { numRuns: 300 },
    );
  });
});
