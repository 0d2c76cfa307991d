/**
 * The files operators write for the rule set: `--rules` JSON bundles, `--scores` scores.txt (or JSON),
 * `--list NS=FILE` list files, and the JSON `serve --config` file. Regressions first (each names the
 * input fuzzing found), then the properties.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, describe, expect, it } from 'vitest';
import { run as evalCmd } from '../../src/cli/eval.js';
import { readLists, readRuleSet, readScoresFile } from '../../src/cli/ruleset.js';
import { readServeConfig } from '../../src/server/config.js';
import { capture } from '../helpers/capture.js';
import { fuzzParams } from '../helpers/fuzz.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-fuzz-files-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let n = 0;
/** Writes `content` to a new file with extension `ext`; returns its path. */
function file(content: string | Buffer, ext: string): string {
  const f = join(dir, `f${n++}.${ext}`);
  writeFileSync(f, content);
  return f;
}

const RULE = { '@type': 'Any', name: 'R1', condition: { match: [{ if: 'true', then: "'T1'" }], else: 'false' } };

describe('JSON files: one-line syntax errors that say where, and a leading BOM', () => {
  // JSON.parse's message for an unexpected token quotes the text around it, line breaks included, and no
  // position: `spamrule lint --rules scores.txt` printed `… Unexpected token 'T', "T1 = 2\n" is not valid JSON`
  // over two lines; a file saved with a BOM (Windows editors) was refused as `Unexpected token '﻿'`.
  it('a rules file that is not JSON: line and column, on one line', () => {
    const f = file('T1 = 2\n', 'json');
    expect(() => readRuleSet({ rules: [f] })).toThrow(new Error(`rules file ${f} is not valid JSON: line 1, column 1: unexpected token 'T'`));
    const g = file('[\n  {"@type": "Any",\n   "name": x}\n]', 'json');
    expect(() => readRuleSet({ rules: [g] })).toThrow(new Error(`rules file ${g} is not valid JSON: line 3, column 12: unexpected token 'x'`));
  });

  it('a scores JSON file, the serve config and an eval batch say the same', async () => {
    const s = file('[{"@type": "Score", "tag": "T1", "score": 1},\n]', 'json');
    expect(() => readScoresFile(s)).toThrow(new Error(`scores file ${s} is not valid JSON: line 2, column 1: unexpected token ']'`));
    const c = file('{\n  "workers": 2,\n  "rspamd": 127.0.0.1:11333\n}', 'json');
    expect(() => readServeConfig(c)).toThrow(new Error(`${c}: line 3, column 18: expected ',' or '}' after property value`));
    const b = file('[{"id": "a",\r\n "expr": nope}]', 'json');
    const r = await capture(() => evalCmd(['--batch', b]));
    expect(r.result).toBe(2);
    expect(r.stderr).toBe(`spamrule eval: cannot read ${b}: line 2, column 11: unexpected token 'o'\n`);
  });

  it('a leading byte order mark is skipped in every JSON file', () => {
    const bom = '\ufeff';
    expect(readRuleSet({ rules: [file(bom + JSON.stringify([RULE]), 'json')] }).rules).toHaveLength(1);
    expect(readScoresFile(file(bom + JSON.stringify([{ '@type': 'Score', tag: 'T1', score: 3 }]), 'json'))).toEqual([{ '@type': 'Score', tag: 'T1', score: 3 }]);
    expect(readServeConfig(file(bom + '{"workers": 3}', 'json')).workers).toBe(3);
    // scores.txt and list files trimmed it already (String.prototype.trim takes U+FEFF as space).
    expect(readScoresFile(file(`${bom}T1 = 4\r\n`, 'txt'))).toEqual([{ '@type': 'Score', tag: 'T1', score: 4 }]);
    expect(readLists([`ns=${file(`${bom}example.org\r\n`, 'txt')}`]).get('ns')).toEqual([{ key: 'example.org' }]);
  });
});

describe('scores.txt: the score range of the JSON form', () => {
  // `T1 = 1e9` was taken from scores.txt although the same score in a JSON scores file (and over JMAP) is
  // refused as outside -999999..999999.
  it.each([['T1 = 1e9'], ['T1 = -1000000'], ['T1 = 999999.5']])('%s is refused, naming the line', (line) => {
    const f = file(`# scores\nT0 = 1\n${line}\n`, 'txt');
    expect(() => readScoresFile(f)).toThrow(new Error(`scores file ${f}: line 3: ${line.split('= ')[1]} is outside -999999..999999, the range of a score`));
  });

  it('the bounds themselves are taken', () => {
    expect(readScoresFile(file('A = 999999\nB = -999999\n', 'txt')).map((t) => (t as { score: number }).score)).toEqual([999999, -999999]);
  });
});

describe('rules bundles: static list entries are checked', () => {
  // MemoryLookupKey / MemoryLookupKeyValue entries were taken unchecked: `[null]` failed with Node's
  // "Cannot read properties of null (reading 'namespace')" and no file named, an entry without a namespace
  // went into a list called `undefined`, a number key or `isGlobPattern: "yes"` went in as given.
  it.each([
    [{ MemoryLookupKey: [null] }, 'MemoryLookupKey[0] expected an object'],
    [{ MemoryLookupKey: [{ key: 'a' }] }, 'MemoryLookupKey[0] namespace: expected a non-empty string'],
    [{ MemoryLookupKey: [{ namespace: 'n', key: 5 }] }, 'MemoryLookupKey[0] (n) key: expected a string'],
    [{ MemoryLookupKey: [{ namespace: 'n', key: 'a', isGlobPattern: 'yes' }] }, 'MemoryLookupKey[0] (n) isGlobPattern: expected true or false'],
    [{ MemoryLookupKeyValue: [{ namespace: 'n', key: 'k' }] }, 'MemoryLookupKeyValue[0] (n) value: expected a string'],
  ])('%j', (bundle, problem) => {
    const f = file(JSON.stringify(bundle), 'json');
    expect(() => readRuleSet({ rules: [f] })).toThrow(`${f}: 1 invalid property: ${problem}`);
  });

  it('lint (lenient) reports them and keeps the good entries', () => {
    const f = file(JSON.stringify({ SpamRule: [RULE], MemoryLookupKey: [{ namespace: 'n', key: 'a' }, null, { namespace: 'n', key: 'b', isGlobPattern: null }] }), 'json');
    const set = readRuleSet({ rules: [f] }, { lenient: true });
    expect(set.problems).toEqual([{ type: 'MemoryLookupKey', index: 1, path: '', message: 'expected an object', file: f }]);
    expect(set.lists.get('n')).toEqual([{ key: 'a', isGlobPattern: false }, { key: 'b', isGlobPattern: false }]);
  });
});

// ---- the properties ----

/** One scores.txt line as generated, with what it means (a tag, or the reason the file is refused). */
type ScoreLine = { text: Buffer; tag?: { '@type': string; tag: string; score?: number }; bad?: true };
const space = fc.constantFrom('', ' ', '  ', '\t', ' \t ');
const tagName = fc.oneof(fc.constantFrom('T1', 'BAYES_SPAM', 'X-Y.z', 'ÄÖÜ', '日本', 'a"b', 'T 1', 'x'.repeat(2000)), fc.stringMatching(/^[A-Z][A-Z0-9_]{0,12}$/));
const scoreLine: fc.Arbitrary<ScoreLine> = fc.oneof(
  { weight: 5, arbitrary: fc.tuple(space, tagName, space, space, fc.oneof(fc.integer({ min: -999999, max: 999999 }), fc.double({ min: -999999, max: 999999, noNaN: true })), space).map(([a, tag, b, c, n, d]) => ({
    text: Buffer.from(`${a}${tag}${b}=${c}${String(n)}${d}`), tag: { '@type': 'Score', tag, score: Number(String(n)) } })) },
  { weight: 1, arbitrary: fc.tuple(space, tagName, fc.constantFrom('reject', 'REJECT', 'Discard', 'discard')).map(([a, tag, v]) => ({
    text: Buffer.from(`${a}${tag} = ${v}`), tag: { '@type': v.toLowerCase() === 'reject' ? 'Reject' : 'Discard', tag } })) },
  { weight: 1, arbitrary: fc.oneof(fc.constant(''), space, fc.string().map((c) => `#${c.replace(/[\r\n]/g, '')}`)).map((t) => ({ text: Buffer.from(t) })) },
  // A comment holding bytes that are not UTF-8.
  { weight: 1, arbitrary: fc.uint8Array({ maxLength: 8 }).map((b) => ({ text: Buffer.concat([Buffer.from('# '), Buffer.from(b.filter((x) => x !== 10 && x !== 13))]) })) },
  { weight: 1, arbitrary: fc.constantFrom('T1', 'T1 2', ' = 1', 'T1 =', 'T1 = abc', 'T1 = 1e9', 'T1 = -1000000', 'T1 = Infinity', 'T1 = 1=2', 'T1 = NaN').map((t) => ({ text: Buffer.from(t), bad: true as const })) },
);

describe('generated scores.txt files', () => {
  it('load the tags the lines say, in order, or fail naming the file and the first bad line', () => {
    fc.assert(
      fc.property(fc.array(scoreLine, { maxLength: 30 }), fc.constantFrom('\n', '\r\n'), fc.boolean(), fc.boolean(), (lines, eol, bom, trailing) => {
        const body = Buffer.concat(lines.flatMap((l, i) => (i === 0 ? [l.text] : [Buffer.from(eol), l.text])));
        const f = file(Buffer.concat([bom ? Buffer.from('\ufeff') : Buffer.alloc(0), body, trailing ? Buffer.from(eol) : Buffer.alloc(0)]), 'txt');
        const firstBad = lines.findIndex((l) => l.bad);
        if (firstBad >= 0) {
          expect(() => readScoresFile(f)).toThrow(new RegExp(`^scores file ${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: line ${firstBad + 1}: [^\\n]+$`));
        } else {
          expect(readScoresFile(f)).toEqual(lines.flatMap((l) => (l.tag ? [l.tag] : [])));
        }
      }),
      fuzzParams(300),
    );
  });
});

describe('generated list files', () => {
  it('every other line, trimmed, is a key; blank lines and # comments are not; bytes that are not UTF-8 never fail', () => {
    const line = fc.oneof(
      fc.tuple(space, fc.oneof(fc.constantFrom('example.org', '*.example.org', 'a?b', '192.0.2.1', 'ÄÖÜ.de', 'x'.repeat(100_000)), fc.string({ minLength: 1 })), space).map(([a, k, b]) => Buffer.from(`${a}${k}${b}`)),
      fc.uint8Array({ maxLength: 12 }).map((b) => Buffer.from(b)),
      fc.constantFrom('', '#', '# comment', '  # indented comment').map((t) => Buffer.from(t)),
    );
    fc.assert(
      fc.property(fc.array(line.map((b) => Buffer.from(b.filter((x) => x !== 10 && x !== 13))), { maxLength: 30 }), fc.constantFrom('\n', '\r\n'), fc.boolean(), (lines, eol, bom) => {
        const f = file(Buffer.concat([bom ? Buffer.from('\ufeff') : Buffer.alloc(0), ...lines.flatMap((l) => [l, Buffer.from(eol)])]), 'txt');
        // What each line means, decoded on its own (a bad byte is U+FFFD wherever it is).
        const keys = lines.map((l) => l.toString('utf8').trim()).filter((k) => k !== '' && !k.startsWith('#'));
        expect(readLists([`ns=${f}`]).get('ns') ?? []).toEqual(keys.map((key) => ({ key })));
      }),
      fuzzParams(200),
    );
  });
});

/** A JSON value of any shape (deep nesting, big arrays included). */
const anyJson: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 4 }),
  fc.integer({ min: 1, max: 2000 }).map((d) => Array.from({ length: d }).reduce<unknown>((acc) => [acc], null)),
  fc.constantFrom(Array.from({ length: 5000 }, (_, i) => ({ namespace: 'big', key: `k${i}` }))),
);
const BUNDLE_KEYS = ['SpamRule', 'rules', 'SpamTag', 'MemoryLookupKey', 'MemoryLookupKeyValue', 'SpamDnsblServer', 'HttpLookup', 'SpamFileExtension', 'Other'];

describe('generated rules files', () => {
  it('load, or fail with one message naming the file (never a crash, undefined or [object Object])', () => {
    const good = { SpamRule: [RULE], SpamTag: [{ '@type': 'Score', tag: 'T1', score: 2 }], MemoryLookupKey: [{ namespace: 'n', key: 'a' }] };
    // A good bundle with parts replaced by values of any shape, or whole-file shapes, or text cut or spliced.
    const bundle = fc.oneof(
      fc.dictionary(fc.constantFrom(...BUNDLE_KEYS), anyJson, { maxKeys: 3 }).map((d) => JSON.stringify({ ...good, ...d })),
      fc.tuple(fc.constantFrom(...BUNDLE_KEYS.slice(0, 3)), fc.nat(2), anyJson).map(([k, i, v]) => JSON.stringify({ ...good, [k]: Object.assign([...((good as Record<string, unknown[]>)[k] ?? [])], { [i]: v }) })),
      anyJson.map((v) => JSON.stringify(v) ?? 'null'),
      fc.tuple(fc.nat(400), fc.string({ maxLength: 3 })).map(([at, ins]) => {
        const t = JSON.stringify(good, null, 2);
        return t.slice(0, at % t.length) + ins + t.slice(at % t.length);
      }),
    );
    fc.assert(
      fc.property(bundle, fc.boolean(), (text, lenient) => {
        const f = file(text, 'json');
        let message: string;
        try {
          readRuleSet({ rules: [f] }, { lenient });
          return;
        } catch (e) {
          expect(e, text.slice(0, 500)).toBeInstanceOf(Error);
          message = (e as Error).message;
        }
        const ctx = `${text.slice(0, 500)}\n→ ${message.slice(0, 500)}`;
        expect(message.startsWith(`rules file ${f} is not valid JSON: line `) || message.startsWith(`${f}: `), ctx).toBe(true);
        expect(message, ctx).not.toMatch(/\[object Object\]|\bundefined\b|\n\s+at /);
        const where = /is not valid JSON: line (\d+), column (\d+): /.exec(message);
        if (where) {
          // The place named is in the file.
          const lines = text.split('\n');
          expect(Number(where[1]), ctx).toBeLessThanOrEqual(lines.length);
          expect(Number(where[2]), ctx).toBeLessThanOrEqual(lines[Number(where[1]) - 1]!.length + 1);
          expect(message.includes('\n'), ctx).toBe(false);
        }
      }),
      fuzzParams(300),
    );
  });
});
