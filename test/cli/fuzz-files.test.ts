/**
 * The files operators write for the rule set: `--rules` JSON bundles, `--scores` scores.txt (or JSON),
 * `--list NS=FILE` list files, and the JSON `serve --config` file. Regressions first (each names the
 * input fuzzing found), then the properties.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run as evalCmd } from '../../src/cli/eval.js';
import { readLists, readRuleSet, readScoresFile } from '../../src/cli/ruleset.js';
import { readServeConfig } from '../../src/server/config.js';
import { capture } from '../helpers/capture.js';

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
