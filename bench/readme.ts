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
