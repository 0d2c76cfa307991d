/**
 * What README.md and docs/ show as importable from 'spamrule' is exported by the package index
 * (src/index.ts; package.json `exports` allows no deep import): names imported from 'spamrule' in
 * the examples, and the functions and classes of the parts that the text calls (`createResolver(…)`),
 * constructs (`new SystemResolver`) or names as a class (`StaticResolver`; a class exported as a type
 * only, such as `MessageContext`, may be named but not called). Type-only names are checked where the
 * examples use them: test/package/package.test.ts type-checks those.
 *
 * And the other way round: every name the package exports, values and types alike, has its entry in
 * docs/library.md's "Every export" index, and the index names nothing the package does not export, so
 * an export cannot go undocumented again (nor an entry outlive its export).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import * as index from '../../src/index.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

const DOCS = ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).filter((f) => f.endsWith('.md')).sort().map((f) => `docs/${f}`)];
const text = (f: string): string => readFileSync(join(REPO_ROOT, f), 'utf8');

/** Value names of `import { … } from 'spamrule'` lines, per file. */
function importedNames(): { file: string; name: string }[] {
  const out: { file: string; name: string }[] = [];
  for (const file of DOCS) {
    for (const m of text(file).matchAll(/import\s*\{([^}]*)\}\s*from\s*'spamrule'/g)) {
      for (const part of m[1]!.split(',').map((s) => s.trim())) {
        if (part === '' || part.startsWith('type ')) continue;
        out.push({ file, name: part.split(/\s+as\s+/)[0]! });
      }
    }
  }
  return out;
}

/** Functions and classes exported by some part's index.ts (src/<part>/index.ts), by name. */
async function partExports(): Promise<Set<string>> {
  const src = join(REPO_ROOT, 'src');
  const names = new Set<string>();
  for (const part of readdirSync(src)) {
    if (part === 'cli' || !statSync(join(src, part)).isDirectory()) continue;
    const mod = (await import(join(src, part, 'index.ts'))) as Record<string, unknown>;
    for (const [k, v] of Object.entries(mod)) if (typeof v === 'function') names.add(k);
  }
  return names;
}

/** Every name `import … from 'spamrule'` can take: the exports of src/index.ts, followed through its re-exports. */
function packageExports(): string[] {
  const entry = join(REPO_ROOT, 'src', 'index.ts');
  const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [] });
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  return checker.getExportsOfModule(module).map((s) => s.name).sort();
}

/** The names docs/library.md's "Every export" section lists: the code spans of each table row's first cell. */
function indexedNames(): string[] {
  const section = /\n## Every export\n([\s\S]*?)(?:\n## |$)/.exec(text('docs/library.md'))?.[1] ?? '';
  const names: string[] = [];
  for (const row of section.matchAll(/^\| ([^|]+) \|/gm)) {
    for (const m of row[1]!.matchAll(/`([A-Za-z_]\w*)`/g)) names.push(m[1]!);
  }
  return names.sort();
}

describe('the names the documentation shows as importable', () => {
  it('every name imported from \'spamrule\' in README.md and docs/ is exported', () => {
    const names = importedNames();
    expect(names.length).toBeGreaterThan(15);
    expect(names.filter(({ name }) => !(name in index))).toEqual([]);
  });

  it('every function or class of a part that the text calls, constructs or names as a class is exported', async () => {
    const parts = await partExports();
    // A class exported as a type only (`export type { MessageContext }`: a shape a signature uses, not made
    // by callers) may be named; called or constructed, it must be a value.
    const types = new Set(packageExports());
    const missing: string[] = [];
    let seen = 0;
    for (const file of DOCS) {
      const t = text(file);
      const used = new Set<string>();
      const named = new Set<string>();
      for (const m of t.matchAll(/(?<![.\w])(?:new\s+)?([A-Za-z_]\w*)\(/g)) used.add(m[1]!); // called or constructed
      for (const m of t.matchAll(/`new\s+([A-Z]\w*)`/g)) used.add(m[1]!); // constructed
      for (const m of t.matchAll(/`([A-Z]\w*)`/g)) named.add(m[1]!); // a class named in code
      for (const name of new Set([...used, ...named])) {
        if (!parts.has(name)) continue;
        seen++;
        if (!(name in index) && (used.has(name) || !types.has(name))) missing.push(`${file}: ${name}`);
      }
    }
    expect(seen).toBeGreaterThan(20);
    expect(missing).toEqual([]);
  });

  it('the README lists every exported error class', () => {
    const errors = Object.entries(index)
      .filter(([, v]) => typeof v === 'function' && (v as { prototype?: unknown }).prototype instanceof Error)
      .map(([k]) => k)
      .sort();
    const para = /The errors a caller can meet\s+are exported:([\s\S]*?)\n\n/.exec(text('README.md'))?.[1] ?? '';
    expect(errors.filter((e) => !para.includes(`\`${e}\``))).toEqual([]);
  });
});

describe('every export is documented', () => {
  it("docs/library.md's export index lists each name the package exports once, and nothing else", () => {
    const exported = packageExports();
    // The walk followed the re-exports (values, interfaces, type aliases), not only src/index.ts's own lines.
    expect(exported.length).toBeGreaterThan(120);
    expect(exported).toEqual(expect.arrayContaining(['SpamEngine', 'ClassifyResult', 'EngineOptions', 'Resolver', 'classify']));
    const listed = indexedNames();
    expect(listed.filter((n, i) => listed.indexOf(n) !== i)).toEqual([]); // listed twice
    expect(exported.filter((n) => !listed.includes(n))).toEqual([]); // exported, undocumented
    expect(listed.filter((n) => !exported.includes(n))).toEqual([]); // documented, not exported
  }, 60_000);
});
