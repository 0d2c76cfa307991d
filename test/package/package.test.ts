/**
 * The package as a user installs it: `npm pack` of a fresh build, unpacked into a new project whose
 * node_modules holds only the package's declared dependencies (linked from this checkout's, so nothing
 * is downloaded), then the library examples of README.md and docs/ type-checked under `strict` without
 * `skipLibCheck` and run both as ES modules and through `require`.
 *
 * A library example is a ```ts block that imports from 'spamrule'; the other ts blocks are fragments
 * (interface sketches) and are not compiled.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, sharedPath } from '../helpers/shared-data.js';

const NODE = process.execPath;
const TSC = join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc');
/** Loaded only when needed: the database drivers (first store of their type) and the parser (first compile). */
const LAZY_MODULES = ['pg', 'mysql2', 'ioredis', 'better-sqlite3', 'chevrotain'];

let work: string;
let app: string;
let tarball: string;
let files: string[];

interface Example {
  name: string;
  code: string;
}

/** The ```ts blocks of a Markdown file that import from 'spamrule'. */
function examplesOf(file: string): Example[] {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8');
  const out: Example[] = [];
  let n = 0;
  for (const m of text.matchAll(/^```ts\n([\s\S]*?)^```/gm)) {
    n++;
    if (/from 'spamrule'/.test(m[1]!)) out.push({ name: `${file.replace(/[/.]/g, '_')}_${n}`, code: m[1]! });
  }
  return out;
}

const EXAMPLES: Example[] = [
  ...examplesOf('README.md'),
  ...readdirSync(join(REPO_ROOT, 'docs'))
    .filter((f) => f.endsWith('.md'))
    .sort()
    .flatMap((f) => examplesOf(`docs/${f}`)),
];

/** Removes the files an earlier example run left in the project (databases the examples create). */
function fresh(dir: string): void {
  for (const f of readdirSync(dir)) if (/^(jmap\.db|lookup\.sqlite3|model\.sqlite)/.test(f)) rmSync(join(dir, f), { force: true });
}

function run(cmd: string, args: string[], cwd: string, timeout = 120_000): { status: number | null; out: string } {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout, env: { ...process.env, NODE_OPTIONS: '' } });
  return { status: r.status, out: `${r.stdout ?? ''}${r.stderr ?? ''}` };
}

/** Links `name` from this checkout's node_modules into `dir`/node_modules (scoped names too). */
function link(dir: string, name: string): void {
  const to = join(dir, 'node_modules', name);
  mkdirSync(dirname(to), { recursive: true });
  if (!existsSync(to)) symlinkSync(join(REPO_ROOT, 'node_modules', name), to, 'dir');
}

/** The .ts files under `dir` (recursively). */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.name.endsWith('.d.ts'))
    .map((e) => join(e.parentPath, e.name));
}

/**
 * True when this checkout's dist/ holds a build of every current source (each .js at least as new as its
 * .ts), as right after `npm ci` (the prepare script builds). Then the package is packed from the checkout
 * itself; otherwise from a fresh build in a temporary copy, so a stale dist/ is never what is tested.
 */
function distIsFresh(): boolean {
  for (const top of ['src', 'grammar']) {
    for (const ts of sources(join(REPO_ROOT, top))) {
      const js = join(REPO_ROOT, 'dist', ts.slice(REPO_ROOT.length + 1).replace(/\.ts$/, '.js'));
      if (!existsSync(js) || statSync(js).mtimeMs < statSync(ts).mtimeMs) return false;
    }
  }
  return true;
}

/** ES-module example → CommonJS script: imports become `require`, the body runs in an async function. */
function toCommonJs(js: string): string {
  // An example whose imports are all type-only compiles to a module marked by `export {};` alone.
  const body = js.replace(/^export \{\};?$/gm, '').replace(/^import\s*\{([^}]*)\}\s*from\s*'([^']+)';?$/gm, (_m, names: string, mod: string) => {
    const parts = names
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '')
      .map((s) => s.replace(/\s+as\s+/, ': '));
    return `const { ${parts.join(', ')} } = require('${mod}');`;
  });
  const requires = body.split('\n').filter((l) => l.startsWith('const {') && l.includes('require('));
  const rest = body.split('\n').filter((l) => !(l.startsWith('const {') && l.includes('require(')));
  return `'use strict';\n${requires.join('\n')}\n(async () => {\n${rest.join('\n')}\n})().catch((e) => { console.error(e); process.exit(1); });\n`;
}

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'spamrule-pack-'));
  let src = REPO_ROOT;
  if (!distIsFresh()) {
    // A copy of the sources, so the build and `npm pack` never touch this checkout's dist/.
    src = join(work, 'src-copy');
    mkdirSync(src);
    for (const f of ['package.json', 'tsconfig.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'docs', 'examples', 'src', 'grammar'])
      cpSync(join(REPO_ROOT, f), join(src, f), { recursive: true });
    symlinkSync(join(REPO_ROOT, 'node_modules'), join(src, 'node_modules'), 'dir');
    // tsc emits even when it reports errors; `npm ci` (prepare) is where a failing build stops CI.
    run(NODE, [TSC, '-p', 'tsconfig.json'], src, 180_000);
  }
  expect(existsSync(join(src, 'dist', 'src', 'index.js'))).toBe(true);
  const packed = execFileSync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', work], { cwd: src, encoding: 'utf8' });
  const info = JSON.parse(packed) as { filename: string; files: { path: string }[] }[];
  tarball = join(work, info[0]!.filename);
  files = info[0]!.files.map((f) => f.path);

  // The user's project: the package unpacked, its declared dependencies, and the user's own TypeScript.
  app = join(work, 'app');
  mkdirSync(join(app, 'node_modules', 'spamrule'), { recursive: true });
  execFileSync('tar', ['xzf', tarball, '-C', join(app, 'node_modules', 'spamrule'), '--strip-components=1']);
  const manifest = JSON.parse(readFileSync(join(app, 'node_modules', 'spamrule', 'package.json'), 'utf8')) as {
    dependencies: Record<string, string>;
  };
  for (const dep of Object.keys(manifest.dependencies)) link(app, dep);
  link(app, 'typescript');
  link(app, '@types/node');
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
  writeFileSync(
    join(app, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        target: 'ES2022',
        lib: ['ES2022'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: ['node'],
        outDir: 'out',
        rootDir: 'examples',
      },
      include: ['examples/*.ts'],
    }),
  );
  mkdirSync(join(app, 'examples'));
  for (const e of EXAMPLES) writeFileSync(join(app, 'examples', `${e.name}.ts`), `${e.code}\nexport {};\n`);
  // What the examples read: Stalwart's published rule set and a message.
  cpSync(sharedPath('stalwart-spam-filter', 'spam-filter-rules.json'), join(app, 'spam-filter-rules.json'));
  const eml = readdirSync(join(REPO_ROOT, 'examples', 'mail')).find((f) => f.endsWith('.eml'))!;
  cpSync(join(REPO_ROOT, 'examples', 'mail', eml), join(app, 'message.eml'));
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('the packed package', () => {
  it('ships the build, LICENSE, CHANGELOG and README, and no tests', () => {
    for (const f of ['LICENSE', 'CHANGELOG.md', 'README.md', 'package.json', 'dist/src/index.js', 'dist/src/index.d.ts', 'dist/src/cli/main.js'])
      expect(files).toContain(f);
    expect(files.filter((f) => f.startsWith('test/') || f.startsWith('dist/test/'))).toEqual([]);
    const license = readFileSync(join(app, 'node_modules', 'spamrule', 'LICENSE'), 'utf8');
    expect(license).toMatch(/^MIT License/);
  });

  it('source maps resolve: each map carries the text of every source it names', () => {
    const maps = files.filter((f) => f.endsWith('.js.map'));
    expect(maps.length).toBeGreaterThan(50);
    const unresolved: string[] = [];
    for (const m of maps) {
      const map = JSON.parse(readFileSync(join(app, 'node_modules', 'spamrule', m), 'utf8')) as { sources: string[]; sourcesContent?: (string | null)[] };
      map.sources.forEach((s, i) => {
        const shipped = files.includes(join(dirname(m), s).replace(/\\/g, '/'));
        if (!shipped && typeof map.sourcesContent?.[i] !== 'string') unresolved.push(`${m}: ${s}`);
      });
    }
    expect(unresolved).toEqual([]);
  });

  it('states the Node versions that load it through require (20.19 and later 20.x, 22.12 and later)', () => {
    const pkg = JSON.parse(readFileSync(join(app, 'node_modules', 'spamrule', 'package.json'), 'utf8')) as { engines: { node: string } };
    expect(pkg.engines.node).toBe('^20.19.0 || >=22.12.0');
    const [major, minor] = process.versions.node.split('.').map(Number) as [number, number];
    expect((major === 20 && minor >= 19) || major > 22 || (major === 22 && minor >= 12)).toBe(true);
  });

  it('finds library examples in README.md and docs/', () => {
    expect(EXAMPLES.map((e) => e.name)).toEqual(expect.arrayContaining(['README_md_1', 'README_md_2']));
    expect(EXAMPLES.length).toBeGreaterThanOrEqual(4);
  });

  it('the examples type-check under strict without skipLibCheck', () => {
    const r = run(NODE, [join(app, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], app, 180_000);
    expect(r.out).toBe('');
    expect(r.status).toBe(0);
  }, 200_000);

  it('the examples run as ES modules', () => {
    for (const e of EXAMPLES) {
      fresh(app);
      const r = run(NODE, [join('out', `${e.name}.js`)], app);
      expect({ example: e.name, status: r.status, out: r.status === 0 ? '' : r.out }).toEqual({ example: e.name, status: 0, out: '' });
    }
  }, 200_000);

  it('the examples run through require', () => {
    for (const e of EXAMPLES) {
      const cjs = join(app, 'out', `${e.name}.cjs`);
      writeFileSync(cjs, toCommonJs(readFileSync(join(app, 'out', `${e.name}.js`), 'utf8')));
      fresh(app);
      const r = run(NODE, [cjs], app);
      expect({ example: e.name, status: r.status, out: r.status === 0 ? '' : r.out }).toEqual({ example: e.name, status: 0, out: '' });
    }
  }, 200_000);

  it("import('spamrule') loads no database driver and no parser; a store loads its own driver only, a compile the parser", () => {
    const probe = `
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      const loaded = () => [...new Set(Object.keys(require.cache).map((k) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(k)?.[1]).filter((n) => ${JSON.stringify(LAZY_MODULES)}.includes(n)))].sort();
      const sr = await import('spamrule');
      const afterImport = loaded();
      const store = sr.createLookupStore('t', { '@type': 'Sqlite', path: ':memory:' });
      await store.keySet('a', '1');
      const afterSqlite = loaded();
      await store.close();
      sr.compileExpression("contains(subject, 'x')");
      const afterCompile = loaded();
      console.log(JSON.stringify({ afterImport, afterSqlite, afterCompile }));
    `;
    writeFileSync(join(app, 'probe.mjs'), probe);
    const r = run(NODE, ['probe.mjs'], app);
    expect({ status: r.status, out: r.status === 0 ? '' : r.out }).toEqual({ status: 0, out: '' });
    expect(JSON.parse(r.out.trim().split('\n').pop()!)).toEqual({
      afterImport: [],
      afterSqlite: ['better-sqlite3'],
      afterCompile: ['better-sqlite3', 'chevrotain'],
    });
  });

  it('the errors a caller can meet are exported classes, and are what the API throws', () => {
    const probe = `
      const sr = await import('spamrule');
      const names = ['ExprParseError', 'ExprEvalError', 'SessionError', 'RuleBundleError', 'LookupConfigError', 'LookupStoreError', 'LookupNotSupportedError',
        'ListDownloadError', 'JmapError', 'JmapRequestError', 'JmapMethodError', 'JmapSetError', 'DnsConfigError', 'EngineClosedError', 'ScanError'];
      const exported = names.filter((n) => typeof sr[n] === 'function' && sr[n].prototype instanceof Error);
      const thrown = [];
      try { sr.compileExpression('1 +'); } catch (e) { thrown.push(e instanceof sr.ExprParseError); }
      try { sr.createLookupStore('x', { '@type': 'Nope' }); } catch (e) { thrown.push(e instanceof sr.LookupConfigError); }
      try { await new sr.JmapClient({ server: 'http://127.0.0.1:9', token: 't' }).accountId(); } catch (e) { thrown.push(e instanceof sr.JmapRequestError); }
      try { await new sr.StaticLookupList('l', []).keySet('a', 'b'); } catch (e) { thrown.push(e instanceof sr.LookupNotSupportedError); }
      try { await sr.classify('Subject: x\\r\\n\\r\\nhi\\r\\n', { session: { remoteIp: 'notanip' } }); } catch (e) { thrown.push(e instanceof sr.SessionError); }
      try { sr.parseRuleBundle({ SpamRule: [{ '@type': 'Any' }] }); } catch (e) { thrown.push(e instanceof sr.RuleBundleError); }
      try { sr.createResolver('nope'); } catch (e) { thrown.push(e instanceof sr.DnsConfigError); }
      const closed = new sr.SpamEngine();
      await closed.close();
      try { await closed.classify('Subject: x\\r\\n\\r\\nhi\\r\\n'); } catch (e) { thrown.push(e instanceof sr.EngineClosedError); }
      console.log(JSON.stringify({ exported, thrown }));
    `;
    writeFileSync(join(app, 'errors.mjs'), probe);
    const r = run(NODE, ['errors.mjs'], app);
    expect({ status: r.status, out: r.status === 0 ? '' : r.out }).toEqual({ status: 0, out: '' });
    expect(JSON.parse(r.out.trim().split('\n').pop()!)).toEqual({
      exported: ['ExprParseError', 'ExprEvalError', 'SessionError', 'RuleBundleError', 'LookupConfigError', 'LookupStoreError', 'LookupNotSupportedError', 'ListDownloadError', 'JmapError', 'JmapRequestError', 'JmapMethodError', 'JmapSetError', 'DnsConfigError', 'EngineClosedError', 'ScanError'],
      thrown: [true, true, true, true, true, true, true, true],
    });
  });

  it('the spamrule command runs from the installed package', () => {
    const r = run(NODE, [join(app, 'node_modules', 'spamrule', 'dist', 'src', 'cli', 'main.js'), 'classify', '--quiet', 'message.eml'], app);
    expect(r.status).toBe(0);
    expect(r.out).toMatch(/1 messages? in/);
  });
});
