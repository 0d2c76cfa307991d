/**
 * Every named type that the package's exports use in their signatures can be imported by name.
 *
 * For each entry point of package.json `exports` (its `types` file mapped back to the TypeScript
 * source), the TypeScript checker walks the type of every export: parameters and return types of
 * functions and methods, constructor parameters, public properties (not `private`, `protected` or
 * `#` members), type arguments, union and intersection members, index signatures, base types and
 * type-parameter constraints, inferred types included. Each interface, class, enum or type alias met
 * on the way that is declared in src/ (or grammar/) must be exported by that entry point, directly or
 * through `export * as` (a namespace export such as `values`); its own members are walked in turn.
 * Types of other packages (Node's `Buffer`, prom-client's, …) are not walked into, only their type
 * arguments. A failure names the type, its file and the path from the export that reaches it.
 */
import { readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../helpers/shared-data.js';

const OWN = [join(REPO_ROOT, 'src') + sep, join(REPO_ROOT, 'grammar') + sep].map((p) => p.split(sep).join('/'));

/** The source files of the entry points: `exports[*].types` (`./dist/src/x.d.ts` → `src/x.ts`). */
function entryPoints(): string[] {
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { types: string }> };
  return Object.values(pkg.exports).map((e) => join(REPO_ROOT, e.types.replace(/^\.\/dist\//, '').replace(/\.d\.ts$/, '.ts')));
}

/** Named types reached from an entry point's exports that it does not export, each with one path that reaches it. */
function unnameable(program: ts.Program, entry: string): string[] {
  const checker = program.getTypeChecker();
  const module = checker.getSymbolAtLocation(program.getSourceFile(entry)!)!;
  const target = (s: ts.Symbol): ts.Symbol => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const exported = checker.getExportsOfModule(module);
  const nameable = new Set<ts.Symbol>();
  for (const e of exported) {
    const t = target(e);
    nameable.add(t);
    // `export * as values from …`: `values.Value` is nameable too.
    if (t.flags & ts.SymbolFlags.ValueModule) for (const x of checker.getExportsOfModule(t)) nameable.add(target(x));
  }
  const own = (s: ts.Symbol): boolean => (s.declarations ?? []).some((d) => OWN.some((p) => d.getSourceFile().fileName.startsWith(p)));
  const hidden = (p: ts.Symbol): boolean => {
    const d = p.valueDeclaration ?? p.declarations?.[0];
    if (d === undefined) return false;
    if ((d as ts.NamedDeclaration).name !== undefined && ts.isPrivateIdentifier((d as ts.NamedDeclaration).name!)) return true;
    return (ts.getCombinedModifierFlags(d) & (ts.ModifierFlags.Private | ts.ModifierFlags.Protected)) !== 0;
  };
  const missing = new Map<ts.Symbol, string>();
  const seen = new Set<ts.Type>();
  const note = (s: ts.Symbol, via: string): void => {
    if (own(s) && !(s.flags & ts.SymbolFlags.TypeParameter) && !nameable.has(s) && !missing.has(s)) missing.set(s, via);
  };
  const signature = (sig: ts.Signature, via: string): void => {
    for (const tp of sig.getTypeParameters() ?? []) visit(tp.getConstraint(), via);
    for (const p of sig.getParameters()) visit(checker.getTypeOfSymbol(p), `${via}(${p.name})`);
    visit(sig.getReturnType(), `${via}()`);
  };
  const visit = (type: ts.Type | undefined, via: string): void => {
    if (type === undefined || seen.has(type)) return;
    seen.add(type);
    if (type.aliasSymbol !== undefined) {
      note(type.aliasSymbol, via);
      for (const a of type.aliasTypeArguments ?? []) visit(a, via);
      if (!own(type.aliasSymbol)) return;
      via = `${via} > ${type.aliasSymbol.name}`;
    }
    if (type.isUnionOrIntersection()) {
      for (const t of type.types) visit(t, via);
      return;
    }
    if (type.flags & ts.TypeFlags.Index) return visit((type as ts.IndexType).type, via);
    if (type.flags & ts.TypeFlags.IndexedAccess) {
      visit((type as ts.IndexedAccessType).objectType, via);
      return visit((type as ts.IndexedAccessType).indexType, via);
    }
    if (type.flags & ts.TypeFlags.Conditional) {
      visit((type as ts.ConditionalType).checkType, via);
      return visit((type as ts.ConditionalType).extendsType, via);
    }
    if (!(type.flags & ts.TypeFlags.Object)) return;
    const obj = type as ts.ObjectType;
    if (obj.objectFlags & ts.ObjectFlags.Reference) for (const a of checker.getTypeArguments(obj as ts.TypeReference)) visit(a, via);
    const sym = type.getSymbol();
    if (sym !== undefined && sym.flags & (ts.SymbolFlags.Class | ts.SymbolFlags.Interface | ts.SymbolFlags.Enum)) {
      note(sym, via);
      if (!own(sym)) return;
      via = `${via} > ${sym.name}`;
    }
    for (const p of type.getProperties()) if (!hidden(p)) visit(checker.getTypeOfSymbol(p), `${via}.${p.name}`);
    for (const s of type.getCallSignatures()) signature(s, via);
    for (const s of type.getConstructSignatures()) signature(s, `new ${via}`);
    for (const info of checker.getIndexInfosOfType(type)) visit(info.type, `${via}[]`);
    if (type.isClassOrInterface()) for (const b of checker.getBaseTypes(type)) visit(b, via);
  };
  for (const e of exported) {
    const t = target(e);
    if (t.flags & ts.SymbolFlags.Value) visit(checker.getTypeOfSymbol(t), e.name);
    if (t.flags & ts.SymbolFlags.Type) visit(checker.getDeclaredTypeOfSymbol(t), e.name);
  }
  return [...missing].map(([s, via]) => `${s.name} (${s.declarations![0]!.getSourceFile().fileName.slice(REPO_ROOT.length + 1)}), reached by ${via}`).sort();
}

describe('the types of exported signatures', () => {
  it('are each exported by the entry point that uses them', () => {
    const entries = entryPoints();
    expect(entries.length).toBeGreaterThan(0);
    const program = ts.createProgram(entries, {
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      target: ts.ScriptTarget.ES2022,
      strict: true,
      types: ['node'],
      noEmit: true,
    });
    for (const entry of entries) {
      // The walk saw the real export list, and a type only reachable through other types' members (the
      // engine's options → analysis settings → conformance test mode).
      expect(program.getSourceFile(entry)).toBeDefined();
      expect(unnameable(program, entry)).toEqual([]);
    }
  }, 60_000);

  it('finds a named type that an export uses and the entry point does not export', () => {
    // The same walk over a small program: `f` returns `Hidden`, whose property is `Deeper`; `Shown`
    // is exported; `#secret` and `private` members are not part of the signature.
    const dir = join(REPO_ROOT, 'src');
    const files: Record<string, string> = {
      [join(dir, '__probe_entry.ts')]: [
        "import type { Hidden } from './__probe_types.js';",
        "export type { Shown } from './__probe_types.js';",
        'export declare function f(): Hidden;',
        'export declare class C { private p: Hidden; #q: Hidden; shown(): import("./__probe_types.js").Shown; }',
      ].join('\n'),
      [join(dir, '__probe_types.ts')]: 'export interface Deeper { n: number }\nexport interface Hidden { d: Deeper[] }\nexport interface Shown { s: string }\n',
    };
    const host = ts.createCompilerHost({});
    const read = host.readFile.bind(host);
    host.readFile = (f) => files[f] ?? read(f);
    host.fileExists = ((exists) => (f: string) => f in files || exists(f))(host.fileExists.bind(host));
    const getSource = host.getSourceFile.bind(host);
    host.getSourceFile = (f, lang, ...rest) => (f in files ? ts.createSourceFile(f, files[f]!, lang) : getSource(f, lang, ...rest));
    const entry = join(dir, '__probe_entry.ts');
    const program = ts.createProgram([entry], { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, types: [], noEmit: true }, host);
    expect(unnameable(program, entry).map((l) => l.split(' ')[0])).toEqual(['Deeper', 'Hidden']);
  });
});
