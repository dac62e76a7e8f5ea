import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

interface Names {
  values: Set<string>;
  types: Set<string>;
}

const DECL = /^export\s+(?:declare\s+)?(?:abstract\s+)?(?:async\s+)?(class|function|const|let|var|enum|interface|type)\s+([A-Za-z_$][\w$]*)/gm;
const LIST = /^export\s+(type\s+)?\{([^}]*)\}\s*(?:from\s+'([^']+)')?\s*;/gm;
const STAR = /^export\s+\*\s+from\s+'([^']+)'\s*;/gm;

/** Every name a module exports (following `export *` and re-exports), split into values and types. */
function exportedNames(file: string, seen = new Set<string>()): Names {
  const out: Names = { values: new Set(), types: new Set() };
  if (seen.has(file)) return out;
  seen.add(file);
  const src = readFileSync(file, 'utf8');
  const target = (spec: string): string => join(dirname(file), spec.replace(/\.js$/, '.ts'));
  for (const m of src.matchAll(DECL)) {
    const isType = m[1] === 'interface' || m[1] === 'type';
    (isType ? out.types : out.values).add(m[2]!);
  }
  for (const m of src.matchAll(LIST)) {
    const from = m[3] === undefined ? undefined : exportedNames(target(m[3]), new Set(seen));
    for (const raw of m[2]!.split(',')) {
      const item = raw.trim();
      if (item === '') continue;
      const typeOnly = m[1] !== undefined || item.startsWith('type ');
      const [orig, alias] = item.replace(/^type\s+/, '').split(/\s+as\s+/);
      const name = alias ?? orig!;
      const isValue = !typeOnly && (from === undefined || from.values.has(orig!));
      (isValue ? out.values : out.types).add(name);
    }
  }
  for (const m of src.matchAll(STAR)) {
    const sub = exportedNames(target(m[1]!), seen);
    for (const v of sub.values) out.values.add(v);
    for (const t of sub.types) out.types.add(t);
  }
  return out;
}

/** The names docs/api.md lists under `## \`entry\`` (lines "- `Name` …"). */
function documented(entry: string): string[] {
  const doc = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
  const start = doc.indexOf(`\n## \`${entry}\``);
  if (start < 0) throw new Error(`docs/api.md has no section for ${entry}`);
  const end = doc.indexOf('\n## ', start + 1);
  const section = doc.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/^- `([A-Za-z_$][\w$]*)`/gm)].map((m) => m[1]!);
}

const all = (n: Names): string[] => [...n.values, ...n.types].sort();

const ENTRIES: [entry: string, file: string][] = [
  ['gamewire', 'src/index.ts'],
  ['gamewire/node', 'src/node.ts'],
  ['gamewire/browser', 'src/browser.ts'],
  ['gamewire/sim', 'src/sim/index.ts'],
  ['gamewire/testing', 'src/testing.ts'],
  ['gamewire/state', 'src/state/index.ts'],
  ['gamewire/extend', 'src/extend.ts'],
];

describe('public API', () => {
  for (const [entry, file] of ENTRIES) {
    it(`docs/api.md lists every export of ${entry} exactly once, and nothing else`, async () => {
      const names = exportedNames(join(ROOT, file));
      if (entry === 'gamewire/node' || entry === 'gamewire/browser') {
        // node and browser re-export the whole browser-safe entry; the doc lists only what each adds.
        const root = exportedNames(join(ROOT, 'src/index.ts'));
        for (const n of all(root)) {
          names.values.delete(n);
          names.types.delete(n);
        }
      }
      const listed = documented(entry);
      expect(listed.length, 'a name listed twice').toBe(new Set(listed).size);
      expect([...listed].sort()).toEqual(all(names));
      // The runtime module agrees with the parsed value exports.
      const mod = (await import(join(ROOT, file))) as Record<string, unknown>;
      const adds = entry === 'gamewire/node' || entry === 'gamewire/browser';
      const runtime = Object.keys(mod).filter((k) => !adds || !all(exportedNames(join(ROOT, 'src/index.ts'))).includes(k));
      expect(runtime.sort()).toEqual([...names.values].sort());
    });
  }

  it("docs/api.md's table and count name every entry point", () => {
    const doc = readFileSync(join(ROOT, 'docs/api.md'), 'utf8');
    const rows = [...doc.matchAll(/^\| `(gamewire[\w/]*)` \|/gm)].map((m) => m[1]);
    expect([...rows].sort()).toEqual(ENTRIES.map(([e]) => e).sort());
    const words = ['one', 'two', 'three', 'four', 'five', 'six', 'seven'];
    expect(doc).toContain(`gamewire has ${words[ENTRIES.length - 1]} entry points.`);
  });

  it('the root entry holds products, their options, events and errors: at most 40 names, no building blocks', () => {
    const root = all(exportedNames(join(ROOT, 'src/index.ts')));
    expect(root.length).toBeLessThanOrEqual(40);
    const blocks = all(exportedNames(join(ROOT, 'src/extend.ts')));
    for (const name of ['DriveLoop', 'Host', 'MessageLanes', 'PacketAcks', 'Path', 'Kcp', 'KcpArena', 'Endpoint']) {
      expect(blocks).toContain(name);
      expect(root).not.toContain(name);
    }
    expect(root.filter((n) => blocks.includes(n))).toEqual([]);
  });

  it('keeps wire codecs and internal helpers out of the root and extend entries', () => {
    const root = [...all(exportedNames(join(ROOT, 'src/index.ts'))), ...all(exportedNames(join(ROOT, 'src/extend.ts')))];
    for (const internal of ['decodeChunkPacket', 'encodeSlice', 'ByteReader', 'ByteWriter', 'seqDiff16', 'crc32Of', 'sipHash24', 'Counters', 'DeadlineHeap', 'KcpCounters']) {
      expect(root).not.toContain(internal);
    }
  });
});
