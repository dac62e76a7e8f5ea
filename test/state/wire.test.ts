import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { StateClient } from '../../src/state/client.js';
import { CaptureLink, hex, vectorSchema, vectorSnapshots } from './vectors.js';

const unhex = (h: string): Uint8Array => Uint8Array.from(h.match(/../g)!.map((b) => parseInt(b, 16)));

function docVectors(): { tick: number; hex: string }[] {
  const doc = readFileSync(new URL('../../docs/state.md', import.meta.url), 'utf8');
  const m = /<!-- state-vectors:begin -->\s*```json\n([\s\S]*?)```\s*<!-- state-vectors:end -->/.exec(doc);
  return JSON.parse(m![1]!) as { tick: number; hex: string }[];
}

describe('docs/state.md vectors', () => {
  it('the server writes exactly these snapshots', () => {
    expect(vectorSnapshots()).toEqual(docVectors());
  });

  it('a client decodes them to the story the doc tells', () => {
    const link = new CaptureLink();
    const client = new StateClient(link, { schema: vectorSchema });
    const vs = docVectors();
    const feed = (i: number) => client.handle(0, { type: 'message', lane: 1, bytes: unhex(vs[i]!.hex) });
    const A = 1 * 65536 + 0;
    const B = 1 * 65536 + 1;
    feed(0);
    expect(client.ids().sort()).toEqual([A, B]);
    const a = client.latest(A)!;
    expect(a.tick).toBe(1);
    expect(a.values.x).toBeCloseTo(1.5, 9);
    expect(a.values.y).toBeCloseTo(-2, 9);
    expect(a.values.heading).toBeCloseTo(Math.PI / 2, 9);
    expect(a.values.shield).toBe(true);
    expect(client.latest(B)!.values).toEqual({ x: expect.closeTo(0, 9), y: expect.closeTo(0, 9), heading: 0, shield: false });
    feed(1);
    expect(client.latest(A)!.values.x).toBeCloseTo(1.75, 9);
    expect(client.latest(A)!.tick).toBe(2);
    feed(2);
    expect(client.ids()).toEqual([A]);
    expect(client.latest(A)!.tick).toBe(3);
    expect(client.counters()).toMatchObject({ malformed: 0, missingBaseline: 0, stale: 0 });
  });

  it('an update against a baseline the client never saw is dropped and asks for full state', () => {
    const link = new CaptureLink();
    const client = new StateClient(link, { schema: vectorSchema });
    client.handle(0, { type: 'message', lane: 1, bytes: unhex(docVectors()[1]!.hex) });
    expect(client.counters().missingBaseline).toBe(1);
    expect(client.ids()).toEqual([]);
    expect(link.sent.map((s) => hex(s.bytes))).toEqual(['52']);
  });
});
