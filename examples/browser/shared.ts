/** What the dots example's server and page share: the lanes, the field, and the two message formats. */
import type { LaneConfig } from 'gamewire';

/** Lane 0: a client's position (newest wins); lane 1: the whole field from the server (newest wins). */
export const LANES: LaneConfig[] = [{ mode: 'unreliable-sequenced' }, { mode: 'unreliable-sequenced' }];
export const FIELD = { width: 640, height: 400 } as const;

export function writePosition(p: { x: number; y: number }): Uint8Array {
  const b = new Uint8Array(8);
  const v = new DataView(b.buffer);
  v.setFloat32(0, p.x, true);
  v.setFloat32(4, p.y, true);
  return b;
}

/** A position from the wire, or undefined when malformed or off the field. */
export function readPosition(b: Uint8Array): { x: number; y: number } | undefined {
  if (b.length !== 8) return undefined;
  const v = new DataView(b.buffer, b.byteOffset, 8);
  const x = v.getFloat32(0, true);
  const y = v.getFloat32(4, true);
  if (!(x >= 0 && x <= FIELD.width && y >= 0 && y <= FIELD.height)) return undefined;
  return { x, y };
}

export function writeField(dots: { id: number; x: number; y: number }[]): Uint8Array {
  const b = new Uint8Array(dots.length * 12);
  const v = new DataView(b.buffer);
  dots.forEach((d, i) => {
    v.setUint32(i * 12, d.id, true);
    v.setFloat32(i * 12 + 4, d.x, true);
    v.setFloat32(i * 12 + 8, d.y, true);
  });
  return b;
}

export function readField(b: Uint8Array): { id: number; x: number; y: number }[] {
  const v = new DataView(b.buffer, b.byteOffset, b.length);
  const out: { id: number; x: number; y: number }[] = [];
  for (let o = 0; o + 12 <= b.length; o += 12) out.push({ id: v.getUint32(o, true), x: v.getFloat32(o + 4, true), y: v.getFloat32(o + 8, true) });
  return out;
}
