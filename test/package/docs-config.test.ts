/**
 * `spamrule serve`'s configuration file as docs/deployment.md and examples/ describe it, checked against the
 * schema `readServeConfig` applies (src/server/config.ts):
 * - every key of the schema, top-level and nested, is in the table of docs/deployment.md, "The configuration
 *   file" (a key below a listed one, such as `analysis.followRedirects.maxHops`, in that key's row), and every
 *   key the table lists is in the schema;
 * - examples/spamrule.toml, which the doc says "shows every key", loads with the real loader, with its
 *   commented-out settings switched on too, and holds every top-level key and every key of each section;
 * - the TOML examples of docs/ load too;
 * - the keys `serve --help` names (`analysis.followRedirects`, `limits.maxLearnSize`) and the `limits.…`,
 *   `managedStores.…` and `log.…` keys the docs name exist.
 */
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readServeConfig, ServeConfigSchema } from '../../src/server/config.js';
import { SERVE_USAGE } from '../../src/cli/serve-usage.js';
import { codeSpans, fencedBlocks, markdownTables, type MarkdownTable } from '../helpers/doc-mentions.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

const DOC = 'docs/deployment.md';
const EXAMPLE = 'examples/spamrule.toml';
const read = (f: string): string => readFileSync(join(REPO_ROOT, f), 'utf8');

type Def = { type: string; shape?: Record<string, unknown>; innerType?: unknown; in?: unknown; options?: unknown[] };
const defOf = (s: unknown): Def => (s as { _zod: { def: Def } })._zod.def;

/**
 * Every key path of a zod schema (`['analysis', 'followRedirects', 'maxHops']`), through optional values,
 * transforms and unions; a record's keys (`stores`, `lists`) are the user's and a custom value's fields are
 * checked by its own code (`analysis.pyzor`, `analysis.llm`), so neither is walked into. `leaf` is false for a
 * key whose value is only an object of further keys (`analysis`).
 */
function schemaKeys(schema: unknown, prefix: string[] = []): { path: string[]; leaf: boolean }[] {
  const out: { path: string[]; leaf: boolean }[] = [];
  const objectsOf = (s: unknown): { objects: Record<string, unknown>[]; other: boolean } => {
    const d = defOf(s);
    if (d.type === 'object') return { objects: [d.shape!], other: false };
    if (d.type === 'optional' || d.type === 'nullable' || d.type === 'default') return objectsOf(d.innerType);
    if (d.type === 'pipe') return objectsOf(d.in);
    if (d.type === 'union') {
      const parts = d.options!.map(objectsOf);
      return { objects: parts.flatMap((p) => p.objects), other: parts.some((p) => p.other) };
    }
    return { objects: [], other: true };
  };
  const { objects } = objectsOf(schema);
  for (const shape of objects) {
    for (const [key, value] of Object.entries(shape)) {
      const path = [...prefix, key];
      const inner = objectsOf(value);
      out.push({ path, leaf: inner.other || inner.objects.length === 0 });
      out.push(...schemaKeys(value, path));
    }
  }
  return out;
}

/** The configuration table: the one whose header starts `Key | Flag`. */
function configTable(): MarkdownTable {
  const t = markdownTables(read(DOC)).find((t) => t.header[0] === 'Key' && t.header[1] === 'Flag');
  if (t === undefined) throw new Error(`${DOC}: no table with the columns "Key | Flag | …"`);
  return t;
}

/** The keys a row lists in its first cell: `analysis.dns`, `.disabledModules` → `analysis.dns`, `analysis.disabledModules`. */
function rowKeys(cell: string): string[] {
  let parent = '';
  return codeSpans(cell).map(({ text }) => {
    if (text.startsWith('.')) return parent + text;
    parent = text.includes('.') ? text.slice(0, text.lastIndexOf('.')) : '';
    return text;
  });
}

describe(`serve's configuration file in ${DOC}`, () => {
  const keys = schemaKeys(ServeConfigSchema);
  const rows = configTable().rows.map((r) => ({ line: r.line, keys: rowKeys(r.cells[0]!), text: r.cells.join(' | ') }));

  it('reads the schema (sanity: keys at three depths)', () => {
    const names = keys.map((k) => k.path.join('.'));
    expect(names).toEqual(expect.arrayContaining(['rspamd', 'analysis.dns', 'analysis.followRedirects.maxHops', 'limits.maxSize', 'log.level']));
    expect(rows.length).toBeGreaterThan(20);
  });

  it('lists every key of the schema', () => {
    const missing: string[] = [];
    for (const { path, leaf } of keys) {
      const name = path.join('.');
      if (rows.some((r) => r.keys.includes(name))) continue;
      // A key below a listed one is named in that key's row (`"maxHops": 3` in analysis.followRedirects').
      const owner = rows.find((r) => r.keys.some((k) => name.startsWith(`${k}.`)));
      if (owner !== undefined && new RegExp(`\\b${path.at(-1)}\\b`).test(owner.text)) continue;
      if (!leaf && keys.some((k) => k.path.length > path.length && k.path.join('.').startsWith(`${name}.`))) continue;
      missing.push(
        owner === undefined
          ? `${DOC}: the configuration table has no row for the key ${name} (src/server/config.ts)`
          : `${DOC}:${owner.line}: the row of ${owner.keys.join(', ')} does not name its key ${name} (src/server/config.ts)`,
      );
    }
    expect(missing).toEqual([]);
  });

  it('is what serve --help and the docs name: every limits.…, managedStores.… and log.… key, and each key of serve --help', () => {
    const names = new Set(keys.map((k) => k.path.join('.')));
    const wrong: string[] = [];
    // serve --help: `analysis.dnsblLimits, .allowedIps and .blockedIps` names three keys of analysis (the last
    // on the next line).
    let parent = '';
    for (const line of SERVE_USAGE.split('\n')) {
      for (const m of line.matchAll(/(?<![\w.])((?:analysis|limits|managedStores|thresholds|log)\.\w+)|(?<=\s)\.(\w+)/g)) {
        const key = m[1] ?? (parent === '' ? undefined : `${parent}.${m[2]}`);
        if (m[1] !== undefined) parent = m[1].slice(0, m[1].indexOf('.'));
        if (key !== undefined && !names.has(key)) wrong.push(`spamrule serve --help names the configuration key ${key}, which the schema refuses: "${line.trim()}"`);
      }
    }
    // The docs: server-only sections (analysis.… and thresholds.… are also SpamEngine options, with other keys).
    for (const doc of ['README.md', ...readdirSync(join(REPO_ROOT, 'docs')).map((f) => `docs/${f}`)].filter((f) => f.endsWith('.md'))) {
      for (const { text } of codeSpans(read(doc))) {
        const m = /^((?:limits|managedStores|log)\.\w+)$/.exec(text);
        if (m !== null && !names.has(m[1]!)) wrong.push(`${doc}: \`${m[1]}\` is no key of serve's configuration (src/server/config.ts)`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('lists only keys of the schema', () => {
    const names = new Set(keys.map((k) => k.path.join('.')));
    const unknown = rows.flatMap((r) => r.keys.filter((k) => !names.has(k)).map((k) => `${DOC}:${r.line}: the configuration table lists ${k}, which the schema (src/server/config.ts) refuses`));
    expect(unknown).toEqual([]);
  });
});

describe('the example configuration files', () => {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-docs-config-'));
  /** Writes `text` beside nothing (relative paths in it resolve below `dir`) and loads it with the real loader. */
  const load = (name: string, text: string): ReturnType<typeof readServeConfig> => {
    const file = join(dir, name);
    writeFileSync(file, text);
    return readServeConfig(file);
  };

  it(`${EXAMPLE} loads`, () => {
    const c = readServeConfig(join(REPO_ROOT, EXAMPLE));
    expect(c.rspamd).toBe('127.0.0.1:11333');
    expect(c.thresholds?.scoreSpam).toBe(5);
  });

  it(`${EXAMPLE} loads with its commented-out settings switched on, and shows every key`, () => {
    // `# key = value` and `# [table]` lines are settings to uncomment; other comments are prose (as
    // test/server/examples.test.ts reads them, which checks where each setting lands).
    const on = read(EXAMPLE).replace(/^# (?=\[[A-Za-z.]+\]|[A-Za-z][\w-]* = )/gm, '');
    const c = load('all-on.toml', on);
    expect(c.model).toBeDefined();
    expect(c.managedStores?.allowedHosts).toEqual(['10.1.2.0/24', 'redis.internal']);
    expect(c.stores?.['spam-traps']).toEqual({ '@type': 'Sqlite', path: '/var/lib/spamrule/spam-traps.sqlite3' });
    // "shows every key" (docs/deployment.md): every top-level key, and every key of its sections.
    const given = (obj: object, path: string[]): unknown => path.reduce<unknown>((o, k) => (o as Record<string, unknown> | undefined)?.[k], obj);
    const absent = schemaKeys(ServeConfigSchema)
      .filter(({ path }) => path.length <= 2)
      .filter(({ path }) => given(c, path) === undefined)
      .map(({ path }) => `${EXAMPLE}: no ${path.join('.')} (not even commented out)`);
    expect(absent).toEqual([]);
  });

  it('the TOML examples of docs/ load', () => {
    let n = 0;
    for (const doc of [DOC]) {
      for (const block of fencedBlocks(read(doc)).filter((b) => b.lang === 'toml')) {
        expect(() => load(`block-${n++}.toml`, block.lines.join('\n')), `${doc}:${block.line}`).not.toThrow();
      }
    }
    expect(n).toBeGreaterThan(0);
  });
});
