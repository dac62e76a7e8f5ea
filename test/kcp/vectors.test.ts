import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Kcp } from '../../src/kcp/kcp.js';
import { decodeKcpHeader, encodeKcpHeader, KCP_OVERHEAD, type KcpSegmentHeader } from '../../src/kcp/segment.js';

// The hex vectors live in docs/kcp.md (```kcp-vector blocks: a line of fields, a line of hex) so the
// documentation and the codec cannot drift apart.

interface Vector {
  fields: KcpSegmentHeader;
  bytes: Uint8Array;
}

function loadVectors(): Vector[] {
  const doc = readFileSync(new URL('../../docs/kcp.md', import.meta.url), 'utf8');
  const blocks = [...doc.matchAll(/```kcp-vector\n([^\n]+)\n([^\n]+)\n```/g)];
  return blocks.map((m) => {
    const f = Object.fromEntries(m[1]!.trim().split(/\s+/).map((kv) => {
      const [k, v] = kv.split('=') as [string, string];
      return [k, Number(v)];
    })) as unknown as KcpSegmentHeader;
    const bytes = Uint8Array.from(m[2]!.trim().split(/\s+/).map((h) => parseInt(h, 16)));
    return { fields: f, bytes };
  });
}

describe('KCP header vectors from docs/kcp.md', () => {
  const vectors = loadVectors();

  it('has at least two well-formed vectors', () => {
    expect(vectors.length).toBeGreaterThanOrEqual(2);
    for (const v of vectors) {
      expect(v.bytes.length).toBe(KCP_OVERHEAD);
      expect(Object.keys(v.fields).sort()).toEqual(['cmd', 'conv', 'frg', 'len', 'sn', 'ts', 'una', 'wnd']);
    }
  });

  it('encodes fields to exactly the documented bytes', () => {
    for (const v of vectors) {
      const out = new Uint8Array(KCP_OVERHEAD);
      expect(encodeKcpHeader(out, 0, v.fields)).toBe(KCP_OVERHEAD);
      expect([...out]).toEqual([...v.bytes]);
    }
  });

  it('decodes the documented bytes to exactly the fields', () => {
    for (const v of vectors) expect(decodeKcpHeader(v.bytes)).toEqual({ ok: true, value: v.fields, bytesRead: KCP_OVERHEAD });
  });

  it('is what Kcp emits for the 3000-byte example (conv 0x11223344, t=1010)', () => {
    const out: Uint8Array[] = [];
    const k = new Kcp(0x11223344, (d) => out.push(d.slice()), { nc: true, interval: 10 });
    k.update(1000);
    k.send(new Uint8Array(3000));
    k.update(1010);
    expect(out.map((d) => d.length)).toEqual([1400, 1400, 272]);
    expect([...out[0]!.subarray(0, KCP_OVERHEAD)]).toEqual([...vectors[0]!.bytes]);
  });
});
