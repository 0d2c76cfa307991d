/**
 * `classify --regex-work-limit STEPS` and `--regex-cache SIZE` reach the engine (`regexWorkLimit`,
 * `regexCacheBytes`): a `matches` search over the limit fails its rule with a RegexWorkError in `errors`
 * while the other rules still tag, and the thread's DFA cache budget is the size given. Bad values are
 * clear errors before any message is read (exit 2).
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { DEFAULT_REGEX_CACHE_BYTES, regexCacheStats, setRegexCacheBudget } from '../../src/expr/regex-cache.js';
import { capture } from '../helpers/capture.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-regex-flags-'));
const RULES = join(dir, 'rules.json');
const MAIL = join(dir, 'm.eml');
const rule = (name: string, cond: string) => ({ '@type': 'Any', name, condition: { match: [{ if: cond, then: `'${name}'` }], else: 'false' } });
writeFileSync(
  RULES,
  JSON.stringify([
    // A short subject: a cheap search whatever the limit below.
    rule('RX_SUBJECT', "matches('(?i)^hello', subject)"),
    // The whole message (about 20,000 characters): over a limit of 5,000 steps.
    rule('RX_BODY', "matches('(?i)cheap\\s+offer', body.raw)"),
    rule('PLAIN', "contains(subject, 'hello')"),
  ]),
);
writeFileSync(MAIL, `From: a@example.org\r\nTo: b@example.net\r\nSubject: hello there\r\n\r\n${'filler text line\r\n'.repeat(1100)}a cheap offer\r\n`);

interface Row {
  tags: string[];
  errors: { source: string; kind?: string; message: string }[];
}
const run = async (flags: string[]): Promise<Row> => {
  const { result, stdout, stderr } = await capture(() => classify(['--json', '--no-analysis', '--rules', RULES, ...flags, MAIL]));
  expect(stderr).not.toMatch(/spamrule classify:/); // only the summary
  expect(result).toBe(0);
  return JSON.parse(stdout.trim()) as Row;
};

afterEach(() => setRegexCacheBudget(DEFAULT_REGEX_CACHE_BYTES));

describe('classify --regex-work-limit and --regex-cache', () => {
  it('without them, every matches rule runs', async () => {
    const r = await run([]);
    expect(r.tags).toEqual(expect.arrayContaining(['RX_SUBJECT', 'RX_BODY', 'PLAIN']));
    expect(r.errors).toEqual([]);
  });

  it('a small --regex-work-limit fails the rule whose search is over it (RegexWorkError); the other rules still tag', async () => {
    const r = await run(['--regex-work-limit', '5000']);
    expect(r.tags).toEqual(expect.arrayContaining(['RX_SUBJECT', 'PLAIN']));
    expect(r.tags).not.toContain('RX_BODY');
    expect(r.errors).toEqual([
      expect.objectContaining({ source: 'RX_BODY', kind: 'regex_work', message: expect.stringMatching(/^regular expression "\(\?i\)cheap\\\\s\+offer" not run: .* over the limit of 5000 \(regexWorkLimit\)$/) }),
    ]);
  });

  it('--regex-cache SIZE sets the DFA cache budget of the thread', async () => {
    await run(['--regex-cache', '2M']);
    expect(regexCacheStats().budgetBytes).toBe(2 * 1024 * 1024);
    await run(['--regex-cache', '3145728']);
    expect(regexCacheStats().budgetBytes).toBe(3 * 1024 * 1024);
  });

  it.each([
    [['--regex-work-limit', '0'], /^spamrule classify: --regex-work-limit: expected steps per search, an integer from 1 to 68719476736 \(2\^36; the default is 2\^26 = 67108864\), got "0"\n$/],
    [['--regex-work-limit', 'lots'], /--regex-work-limit: expected steps per search, an integer from 1 to 68719476736 .*got "lots"/],
    [['--regex-work-limit', '1e6'], /--regex-work-limit: expected steps per search/],
    [['--regex-work-limit', String(2 ** 36 + 1)], /--regex-work-limit: expected steps per search.*got "68719476737"/],
    [['--regex-cache', '100k'], /^spamrule classify: --regex-cache: expected a size from 1M to 16G \(bytes, or with a k, M or G suffix; the default is 64M\), got "100k" \(102400 bytes\)\n$/],
    [['--regex-cache', '17G'], /--regex-cache: expected a size from 1M to 16G .*got "17G"/],
    [['--regex-cache', 'big'], /^spamrule classify: --regex-cache: expected a size such as 50M, 512k or 1048576, got "big"\n$/],
  ])('%j is an error before any message is read', async (flags, message) => {
    const { result, stdout, stderr } = await capture(() => classify([...flags, join(dir, 'missing.eml')]));
    expect(result).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
  });
});
