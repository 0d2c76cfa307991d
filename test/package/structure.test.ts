/**
 * The layout rules of the developers' guide, kept by a test: no import cycle among src/ modules
 * (value imports; `import type` is erased and cannot cycle at run time) and each part's public face
 * in its own index.ts.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = resolve(dirname(fileURLToPath(import.meta.url)), '../../src');

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    return statSync(p).isDirectory() ? files(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Relative value imports of one file, resolved to .ts paths. */
function imports(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  const re = /^\s*(import|export)\s+(type\s+)?([^'";]*?)\s*from\s+['"](\.{1,2}\/[^'"]+)['"]/gm;
  for (let m = re.exec(text); m; m = re.exec(text)) {
    if (m[2]) continue; // import type / export type
    const names = m[3] ?? '';
    // `import { type A, type B }`: every name type-only → erased.
    const braces = /^\{([^}]*)\}$/.exec(names.trim());
    if (braces && braces[1]!.split(',').map((s) => s.trim()).filter(Boolean).every((s) => s.startsWith('type '))) continue;
    out.push(resolve(dirname(file), m[4]!.replace(/\.js$/, '.ts')));
  }
  return out;
}

describe('source layout', () => {
  const all = files(SRC);
  const graph = new Map(all.map((f) => [f, imports(f)]));

  it('has no import cycle in src/', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...path.slice(path.indexOf(f)), f].map((p) => relative(SRC, p)).join(' > '));
        return;
      }
      state.set(f, 'open');
      for (const g of graph.get(f) ?? []) if (graph.has(g)) visit(g, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of all) visit(f, []);
    // The walk saw the real graph (hundreds of edges), not an empty one.
    expect([...graph.values()].reduce((n, e) => n + e.length, 0)).toBeGreaterThan(300);
    expect(cycles).toEqual([]);
  });

  it('gives every library part folder an index.ts', () => {
    // The CLI's public face is the `spamrule` command (package.json bin: src/cli/main.ts), not an import.
    const parts = readdirSync(SRC).filter((n) => n !== 'cli' && statSync(join(SRC, n)).isDirectory());
    expect(parts.length).toBeGreaterThan(5);
    expect(parts.filter((p) => !all.includes(join(SRC, p, 'index.ts')))).toEqual([]);
  });
});
