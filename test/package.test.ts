import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, posix, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// What `npm pack` would publish, from a fresh build: the packed file list must be self-contained.
// The build goes to a copy of the checkout, so a stale or concurrently rebuilt dist/ cannot hide or
// cause a failure.
const ROOT = resolve(import.meta.dirname, '..');
const SKIP = new Set(['node_modules', '.git', 'dist']);

let stage = '';
let packed = new Set<string>();

function read(path: string): string {
  return readFileSync(join(stage, path), 'utf8');
}

beforeAll(() => {
  stage = mkdtempSync(join(tmpdir(), 'gamewire-pack-'));
  for (const name of readdirSync(ROOT)) {
    if (!SKIP.has(name)) cpSync(join(ROOT, name), join(stage, name), { recursive: true });
  }
  try {
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(stage, 'dist')], {
      cwd: ROOT,
      stdio: 'pipe',
    });
  } catch (err) {
    throw new Error(`the build failed: ${String((err as { stdout?: Buffer }).stdout ?? err)}`);
  }
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const json = execFileSync(npm, ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: stage, stdio: ['ignore', 'pipe', 'ignore'] });
  const [report] = JSON.parse(json.toString()) as [{ files: { path: string }[] }];
  packed = new Set(report.files.map((f) => f.path));
}, 120_000);

afterAll(() => {
  if (stage !== '') rmSync(stage, { recursive: true, force: true });
});

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to '-', repeats numbered. */
export function headingSlugs(markdown: string): Set<string> {
  const slugs = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of stripFences(markdown).split('\n')) {
    const m = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (m === null) continue;
    const base = m[1]!
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    slugs.add(n === 0 ? base : `${base}-${n}`);
  }
  return slugs;
}

/** Markdown without fenced code blocks (a `#` line there is not a heading). */
function stripFences(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** Markdown without fenced code blocks and inline code (links there are not links). */
function stripCode(markdown: string): string {
  return stripFences(markdown).replace(/`[^`\n]*`/g, '');
}

/** Targets of inline links/images and reference definitions. */
export function linkTargets(markdown: string): string[] {
  const text = stripCode(markdown);
  const out: string[] = [];
  for (const m of text.matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push(m[1]!);
  for (const m of text.matchAll(/^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) out.push(m[1]!);
  return out;
}

describe('the packed package (npm pack --dry-run)', () => {
  it('ships an MIT LICENSE and the entry points package.json names', () => {
    expect(packed.has('LICENSE')).toBe(true);
    const license = read('LICENSE');
    expect(license).toMatch(/^MIT License/);
    expect(license).toMatch(/Copyright \(c\) 2026 gamewire contributors/);
    const pkg = JSON.parse(read('package.json')) as {
      main: string;
      types: string;
      bin: Record<string, string>;
      exports: Record<string, { types: string; default: string }>;
      license: string;
    };
    expect(pkg.license).toBe('MIT');
    const entries = [pkg.main, pkg.types, ...Object.values(pkg.bin), ...Object.values(pkg.exports).flatMap((e) => [e.types, e.default])];
    for (const e of entries) expect(packed.has(posix.normalize(e)), e).toBe(true);
  });

  it('has no source map, or sourceMappingURL, that points at a file it does not ship', () => {
    const dangling: string[] = [];
    for (const f of packed) {
      if (f.endsWith('.map')) {
        const map = JSON.parse(read(f)) as { sources?: string[]; sourceRoot?: string; sourcesContent?: (string | null)[] };
        (map.sources ?? []).forEach((s, i) => {
          const target = posix.normalize(posix.join(posix.dirname(f), map.sourceRoot ?? '', s));
          if (!packed.has(target) && typeof map.sourcesContent?.[i] !== 'string') dangling.push(`${f} -> ${s}`);
        });
      }
      if (f.endsWith('.js') || f.endsWith('.d.ts')) {
        for (const m of read(f).matchAll(/^\/\/# source(?:Mapping)?URL=(\S+)/gm)) {
          if (m[1]!.startsWith('data:')) continue;
          const target = posix.normalize(posix.join(posix.dirname(f), m[1]!));
          if (!packed.has(target)) dangling.push(`${f} -> ${m[1]}`);
        }
      }
    }
    expect(dangling).toEqual([]);
  });

  it('every relative link (and #anchor) in the packed markdown resolves inside the package', () => {
    const docs = [...packed].filter((f) => f.endsWith('.md'));
    expect(docs).toContain('README.md');
    const broken: string[] = [];
    for (const doc of docs) {
      for (const target of linkTargets(read(doc))) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
        const [path, anchor] = target.split('#', 2) as [string, string | undefined];
        const file = path === '' ? doc : posix.normalize(posix.join(posix.dirname(doc), decodeURI(path)));
        const isDir = [...packed].some((p) => p.startsWith(`${file.replace(/\/$/, '')}/`));
        if (!packed.has(file) && !isDir) {
          broken.push(`${doc}: ${target} (not in the package)`);
          continue;
        }
        if (anchor !== undefined && anchor !== '' && file.endsWith('.md') && !headingSlugs(read(file)).has(anchor.toLowerCase())) {
          broken.push(`${doc}: ${target} (no heading '#${anchor}' in ${file})`);
        }
      }
    }
    expect(broken).toEqual([]);
  });

  it('a TypeScript user needs @types/node only for gamewire/node (what the README says)', () => {
    const app = join(stage, 'consumer');
    mkdirSync(join(app, 'node_modules', '@types'), { recursive: true });
    symlinkSync(stage, join(app, 'node_modules', 'gamewire'), 'dir');
    symlinkSync(join(ROOT, 'node_modules', '@types', 'node'), join(app, 'node_modules', '@types', 'node'), 'dir');
    writeFileSync(join(app, 'package.json'), '{ "type": "module" }');
    writeFileSync(join(app, 'browser.ts'), "import { ChunkReceiver, ChunkSender } from 'gamewire';\nimport { DriveLoop } from 'gamewire/extend';\nimport { World } from 'gamewire/testing';\nvoid [ChunkReceiver, ChunkSender, DriveLoop, World];\n");
    writeFileSync(join(app, 'server.ts'), "import { UdpDriver } from 'gamewire/node';\nvoid UdpDriver;\n");
    const tsc = (file: string, types: string[]): string => {
      const config = join(app, `tsconfig.${file}.json`);
      const compilerOptions = { noEmit: true, strict: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], types };
      writeFileSync(config, JSON.stringify({ compilerOptions, files: [file] }));
      try {
        execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', config], { cwd: app, stdio: 'pipe' });
        return 'ok';
      } catch (err) {
        return String((err as { stdout?: Buffer }).stdout ?? err);
      }
    };
    expect(tsc('browser.ts', [])).toBe('ok');
    expect(tsc('server.ts', ['node'])).toBe('ok');
    expect(tsc('server.ts', [])).toMatch(/node:events|NodeJS/);
  });

  it('the checks above can fail: they see a link outside the package and a heading that is not there', () => {
    expect(linkTargets('see [src](../src/x.ts) and `[code](nope.md)`\n```\n[fenced](nope.md)\n```\n[ref]: ./y.md')).toEqual(['../src/x.ts', './y.md']);
    const slugs = headingSlugs('# Hello, World!\n## `gamewire send`\n## Part a\n## Part a\n```\n# not a heading\n```');
    expect([...slugs]).toEqual(['hello-world', 'gamewire-send', 'part-a', 'part-a-1']);
    expect(existsSync(join(stage, 'package.json'))).toBe(true);
  });
});
