import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const README = join(dirname(fileURLToPath(import.meta.url)), 'README.md');

/**
 * Replace the section of bench/README.md that starts with the line `heading` (e.g. `## chunk`) and
 * runs to the next `## ` line, or append it; other benchmarks' sections are left as they are.
 */
export function writeReadmeSection(heading: string, section: string): void {
  let text: string;
  try {
    text = readFileSync(README, 'utf8');
  } catch {
    text = '# gamewire benchmarks\n';
  }
  const body = `${section.trimEnd()}\n\n`;
  const lines = text.split('\n');
  const start = lines.indexOf(heading);
  if (start < 0) {
    text = `${text.trimEnd()}\n\n${body}`;
  } else {
    const next = lines.findIndex((l, i) => i > start && l.startsWith('## '));
    const after = next < 0 ? '' : lines.slice(next).join('\n');
    text = lines.slice(0, start).join('\n') + (start > 0 ? '\n' : '') + body + after;
  }
  writeFileSync(README, `${text.trimEnd()}\n`);
}

/**
 * A markdown table: `head`, then `rows`; column 0 left-aligned and the rest right-aligned unless
 * `align` gives the separator cells. `|` and newlines in cells are escaped.
 */
export function table(head: string[], rows: (string | number)[][], align?: string[]): string {
  const a = align ?? head.map((_, i) => (i === 0 ? '---' : '---:'));
  const cell = (x: string | number): string => String(x).replace(/\|/g, '\\|').replace(/\n/g, ' ');
  return [`| ${head.join(' | ')} |`, `|${a.join('|')}|`, ...rows.map((r) => `| ${r.map(cell).join(' | ')} |`)].join('\n');
}
