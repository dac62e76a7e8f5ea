/**
 * The house style of bench:state's tables: number formats, the "pending" cell, and the verdict table
 * every part ends with (target, what was measured, met).
 */
import { table } from '../readme.js';

/** `x` with thousands separators and `d` decimals; '–' for NaN or ±Infinity. */
export const fmt = (x: number, d = 0): string =>
  Number.isFinite(x) ? x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : '–';

/** A share (0..1) as a percentage with `d` decimals; '–' when not finite. */
export const pct = (x: number, d = 1): string => (Number.isFinite(x) ? `${(x * 100).toFixed(d)} %` : '–');

/** The cell of a row or target that has no system yet. */
export const PENDING = 'pending';

/** One target of a part: what it asks, the figures it was judged on, and whether it was met (undefined: pending). */
export interface Verdict {
  what: string;
  figures: string;
  met: boolean | undefined;
}

/** The verdict table of a part. */
export function verdictTable(v: Verdict[]): string {
  return table(['target', 'measured', 'met'], v.map((x) => [x.what, x.figures, x.met === undefined ? PENDING : x.met ? 'yes' : '**no**']), ['---', '---', ':---:']);
}

/** "min–max" of `xs` with `d` decimals. */
export function range(xs: readonly number[], d = 0): string {
  return `${fmt(Math.min(...xs), d)}–${fmt(Math.max(...xs), d)}`;
}
