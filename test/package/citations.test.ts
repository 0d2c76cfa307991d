/**
 * What users read cites only what they can open: files of the package or the repository, RFCs and
 * Stalwart's public documentation. Internal planning notes (not in the repository, not in the package)
 * must not be cited from the sources, the README, the changelog or docs/; every `docs/*.md` a docstring
 * names, and every relative Markdown link, must exist.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/shared-data.js';

/** Files users read: sources (docstrings), the README, the changelog and docs/. */
function userFacing(): string[] {
  const out = ['README.md', 'CHANGELOG.md'].map((f) => join(REPO_ROOT, f));
  for (const top of ['src', 'grammar', 'docs']) {
    for (const e of readdirSync(join(REPO_ROOT, top), { withFileTypes: true, recursive: true })) {
      if (e.isFile() && /\.(ts|md)$/.test(e.name)) out.push(join(e.parentPath, e.name));
    }
  }
  return out;
}

/**
 * Planning notes that exist only outside the repository. `expression-language.md` and `classifier.md`
 * are fine as `docs/…` (the repository's own pages), not bare.
 */
const INTERNAL = /DECISIONS(?:\.md)?\b|spam-rules\.md|jmap-registry(?:\.md)?|anchors\.md|analysis-(?:content|headers)\.md|(?<![\w/-])(?:expression-language|classifier)\.md/;

/** Tests, benches and examples: what a contributor reads (this file excepted: it names the notes to refuse them). */
function contributorFacing(): string[] {
  const out: string[] = [];
  for (const top of ['test', 'bench', 'examples']) {
    for (const e of readdirSync(join(REPO_ROOT, top), { withFileTypes: true, recursive: true })) {
      const f = join(e.parentPath, e.name);
      if (e.isFile() && /\.(ts|mjs|md|toml|cf|ini|conf|service)$/.test(e.name) && f !== fileURLToPath(import.meta.url)) out.push(f);
    }
  }
  return out;
}

describe('citations in tests, benches and examples', () => {
  it('cite no internal planning notes either', () => {
    const hits: string[] = [];
    for (const f of contributorFacing()) {
      readFileSync(f, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (INTERNAL.test(line)) hits.push(`${relative(REPO_ROOT, f)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(hits).toEqual([]);
  });
});

describe('citations in user-facing text', () => {
  const files = userFacing();

  it('cite no internal planning notes', () => {
    const hits: string[] = [];
    for (const f of files) {
      readFileSync(f, 'utf8')
        .split('\n')
        .forEach((line, i) => {
          if (INTERNAL.test(line)) hits.push(`${relative(REPO_ROOT, f)}:${i + 1}: ${line.trim()}`);
        });
    }
    expect(hits).toEqual([]);
  });

  it('name only docs/ pages that exist', () => {
    const missing = new Set<string>();
    for (const f of files)
      for (const m of readFileSync(f, 'utf8').matchAll(/\bdocs\/[A-Za-z0-9_-]+\.md\b/g))
        if (!existsSync(join(REPO_ROOT, m[0]))) missing.add(`${relative(REPO_ROOT, f)}: ${m[0]}`);
    expect([...missing]).toEqual([]);
  });

  it('Markdown links to repository files resolve', () => {
    const broken: string[] = [];
    for (const f of files.filter((x) => x.endsWith('.md'))) {
      for (const m of readFileSync(f, 'utf8').matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = m[1]!.split('#')[0]!;
        if (target === '' || /^[a-z]+:/i.test(target)) continue; // anchors, http(s):, mailto:
        if (!existsSync(join(dirname(f), target))) broken.push(`${relative(REPO_ROOT, f)}: ${m[1]}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
