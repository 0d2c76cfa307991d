/**
 * `spamrule mass-check`: a spam folder (with a binary file mixed in), a ham folder and an mbox of
 * RFC 5322 messages, checked with three SpamRules whose tags are known, give the exact counts,
 * percentages, S/O and RANK of SpamAssassin's hit-frequencies, its sort orders, --min-hits, the
 * JSON document, mass-check's log lines and the exit statuses; a slice of the SpamAssassin corpus
 * checked with the default rule set gives the figures the engine gives message by message.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { run as massCheck } from '../../src/cli/mass-check.js';
import { DEFAULT_RULES, DEFAULT_TAGS, SpamEngine } from '../../src/engine/index.js';
import { capture } from '../helpers/capture.js';
import { loadCorpus } from '../helpers/corpus.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-mass-check-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const mail = (n: number, subject: string): string =>
  `From: Sender ${n} <sender${n}@example.org>\r\nTo: rcpt@example.net\r\nSubject: ${subject}\r\nMessage-ID: <m${n}@example.org>\r\n\r\nBody of message ${n}.\r\n`;

const spamDir = join(dir, 'spam');
const hamDir = join(dir, 'ham');
mkdirSync(spamDir);
mkdirSync(hamDir);
// Spam: with --score-spam 4, s1, s3 and s4 are flagged (7, 4, 7 points), s2 is not (3).
['money prize', 'money', 'prize now', 'free money prize'].forEach((s, i) => writeFileSync(join(spamDir, `s${i + 1}.eml`), mail(i + 1, s)));
writeFileSync(join(spamDir, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]));
// Ham: h1 -1, h2 2 points; the mbox's #1 3 points, #2 4 points (flagged).
writeFileSync(join(hamDir, 'h1.eml'), mail(11, 'meeting notes'));
writeFileSync(join(hamDir, 'h2.eml'), mail(12, 'money for the meeting'));
const mbox = join(dir, 'ham.mbox');
writeFileSync(mbox, `From a@example.org Mon Jan  1 00:00:00 2024\n${mail(13, 'lunch money')}\nFrom b@example.org Mon Jan  1 00:00:00 2024\n${mail(14, 'prize draw')}`);

const rules = join(dir, 'rules.json');
const rule = (name: string, word: string) => ({ '@type': 'Any', name, condition: { match: [{ if: `contains(subject, '${word}')`, then: `'${name}'` }], else: 'false' } });
writeFileSync(rules, JSON.stringify([rule('MONEY', 'money'), rule('PRIZE', 'prize'), rule('FRIENDLY', 'meeting')]));
const scores = join(dir, 'scores.txt');
// UNUSED: scored, never set (listed with --min-hits 0; it takes part in RANK's scaling either way).
writeFileSync(scores, 'MONEY = 3\nPRIZE = 4\nFRIENDLY = -1\nUNUSED = 1\n');

const BASE = ['--rules', rules, '--scores', scores, '--no-analysis', '--score-spam', '4', '--no-progress', '--spam', spamDir, '--ham', hamDir, mbox];

interface TagJson {
  name: string;
  overall: number;
  spam_percent: number;
  ham_percent: number;
  so: number;
  rank: number;
  score: number | string;
  spam_hits: number;
  ham_hits: number;
}
interface Doc {
  threshold: number;
  spam: { messages: number; flagged: number; flagged_percent: number; classify_errors: number };
  ham: { messages: number; flagged: number; flagged_percent: number; classify_errors: number };
  confusion: { tp: number; fn: number; fp: number; tn: number };
  skipped: number;
  read_errors: number;
  classify_errors: number;
  elapsed_seconds: number;
  messages_per_second: number;
  tags: TagJson[];
}

const json = async (extra: string[] = []): Promise<Doc> => {
  const r = await capture(() => massCheck([...BASE, '--json', ...extra]));
  expect(r.result).toBe(0);
  return JSON.parse(r.stdout) as Doc;
};

/** Table lines (after the header and the two "(all messages…)" lines) as [columns…, name]. */
const tableRows = (stdout: string): string[][] => {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.startsWith('OVERALL%'));
  return lines.slice(at + 3).filter((l) => l !== '').map((l) => l.trim().split(/\s+/));
};

describe('spamrule mass-check', () => {
  it('prints the summary and the hit-frequencies table with exact figures', async () => {
    const { result, stdout, stderr } = await capture(() => massCheck(BASE));
    expect(result).toBe(0);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/^spam: +4 messages, 3 flagged \(75\.00%\)\n/);
    expect(stdout).toMatch(/\nham: +4 messages, 1 flagged \(25\.00%\)\n/);
    expect(stdout).toMatch(/\nconfusion: +TP 3 {2}FN 1 {2}FP 1 {2}TN 3\n/);
    expect(stdout).toMatch(/\nthreshold: +4\.00 /);
    // The PNG in the spam folder is no mail: skipped and counted.
    expect(stdout).toMatch(/\nskipped: +1 file that is not mail\n/);
    expect(stdout).toMatch(/\nread errors: +0 paths or messages\n/);
    expect(stdout).toMatch(/\nclassify errors: +0 messages /);
    expect(stdout).toMatch(/\nelapsed: +\d+\.\d\d s, \d+\.\d messages\/s\n/);
    // hit-frequencies' header and corpus lines, in its column layout.
    expect(stdout).toContain(
      'OVERALL%   SPAM%     HAM%     S/O    RANK   SCORE  NAME\n' +
        '      8        4        4    0.500   0.00    0.00  (all messages)\n' +
        '100.000  50.0000  50.0000    0.500   0.00    0.00  (all messages as %)\n',
    );
    // RANK = S/O³×2000 + SPAM%×3, scaled over every tag (UNUSED, never hit: 250, the lowest; FRIENDLY,
    // scored below 0, ranks on 1 − S/O and HAM%: 2000 + 150 = 2150, the highest).
    // PRIZE: 0.75³×2000 + 225 = 1068.75 → 0.43; MONEY: 0.6³×2000 + 225 = 657 → 0.21; X_HDR_*: 550 → 0.16.
    expect(stdout).toContain('\n 25.000   0.0000  50.0000    0.000   1.00   -1.00  FRIENDLY\n');
    expect(stdout).toContain('\n 50.000  75.0000  25.0000    0.750   0.43    4.00  PRIZE\n');
    expect(stdout).toContain('\n 62.500  75.0000  50.0000    0.600   0.21    3.00  MONEY\n');
    expect(stdout).toContain('\n100.000  100.0000  100.0000    0.500   0.16    0.00  X_HDR_SUBJECT\n');
    const rows = tableRows(stdout);
    // Default order: RANK, highest first; never-hit UNUSED hidden (--min-hits 1).
    expect(rows.slice(0, 3).map((r) => r.at(-1))).toEqual(['FRIENDLY', 'PRIZE', 'MONEY']);
    expect(rows.slice(3).every((r) => r.at(-1)!.startsWith('X_HDR_'))).toBe(true);
    expect(rows.map((r) => r.at(-1))).not.toContain('UNUSED');
  });

  it('--json gives the same numbers in the documented shape', async () => {
    const doc = await json();
    expect(Object.keys(doc)).toEqual(['threshold', 'spam', 'ham', 'confusion', 'skipped', 'read_errors', 'classify_errors', 'elapsed_seconds', 'messages_per_second', 'tags']);
    expect(doc).toMatchObject({
      threshold: 4,
      spam: { messages: 4, flagged: 3, flagged_percent: 75, classify_errors: 0 },
      ham: { messages: 4, flagged: 1, flagged_percent: 25, classify_errors: 0 },
      confusion: { tp: 3, fn: 1, fp: 1, tn: 3 },
      skipped: 1,
      read_errors: 0,
      classify_errors: 0,
    });
    expect(doc.elapsed_seconds).toBeGreaterThan(0);
    expect(doc.messages_per_second).toBeCloseTo(8 / doc.elapsed_seconds, 6);
    const by = Object.fromEntries(doc.tags.map((t) => [t.name, t]));
    expect(Object.keys(by[`PRIZE`]!)).toEqual(['name', 'overall', 'spam_percent', 'ham_percent', 'so', 'rank', 'score', 'spam_hits', 'ham_hits']);
    expect(by.PRIZE).toEqual({ name: 'PRIZE', overall: 50, spam_percent: 75, ham_percent: 25, so: 0.75, rank: (1068.75 - 250) / 1900, score: 4, spam_hits: 3, ham_hits: 1 });
    expect(by.MONEY).toMatchObject({ overall: 62.5, spam_percent: 75, ham_percent: 50, so: 0.6, score: 3, spam_hits: 3, ham_hits: 2 });
    expect(by.MONEY!.rank).toBeCloseTo((657 - 250) / 1900, 12);
    expect(by.FRIENDLY).toMatchObject({ overall: 25, spam_percent: 0, ham_percent: 50, so: 0, rank: 1, score: -1, spam_hits: 0, ham_hits: 2 });
    expect(by.UNUSED).toBeUndefined();
  });

  it('--sort orders the table; --min-hits hides rare tags (0 lists never-hit scored tags)', async () => {
    const names = async (extra: string[]): Promise<string[]> => (await json(extra)).tags.map((t) => t.name).filter((n) => !n.startsWith('X_HDR_'));
    expect(await names(['--sort', 'name'])).toEqual(['FRIENDLY', 'MONEY', 'PRIZE']);
    expect(await names(['--sort', 'so'])).toEqual(['PRIZE', 'MONEY', 'FRIENDLY']);
    expect(await names(['--sort', 'spam'])).toEqual(['MONEY', 'PRIZE', 'FRIENDLY']); // 75 = 75: by name
    expect(await names(['--sort', 'ham'])).toEqual(['FRIENDLY', 'MONEY', 'PRIZE']);
    expect(await names(['--sort', 'overall'])).toEqual(['MONEY', 'PRIZE', 'FRIENDLY']);
    const all = (await json(['--sort', 'overall'])).tags;
    // X_HDR_* (on all 8 messages) come first by OVERALL%.
    expect(all.findIndex((t) => t.name === 'MONEY')).toBe(all.filter((t) => t.name.startsWith('X_HDR_')).length);
    expect(await names(['--min-hits', '3'])).toEqual(['PRIZE', 'MONEY']);
    expect(await names(['--min-hits', '5'])).toEqual(['MONEY']);
    const zero = (await json(['--min-hits', '0'])).tags;
    expect(zero.find((t) => t.name === 'UNUSED')).toEqual({ name: 'UNUSED', overall: 0, spam_percent: 0, ham_percent: 0, so: 0.5, rank: 0, score: 1, spam_hits: 0, ham_hits: 0 });
  });

  it('--log writes spam.log and ham.log in mass-check\'s format', async () => {
    const logDir = join(dir, 'logs');
    const { result } = await capture(() => massCheck([...BASE, '--log', logDir]));
    expect(result).toBe(0);
    const read = (f: string): string[] => readFileSync(join(logDir, f), 'utf8').split('\n').filter((l) => l !== '');
    const spam = read('spam.log');
    const ham = read('ham.log');
    expect(spam[0]).toMatch(/^# mass-check results from spamrule \d+\.\d+\.\d+, on /);
    expect(ham[0]).toMatch(/^# mass-check results from spamrule /);
    // Tags sorted (ASCII) and comma-separated; the score as Perl's %2d; the X_HDR_* header-presence tags too.
    const hdr = (line: string): string => line.split(' ').at(-1)!.split(',').filter((t) => t.startsWith('X_HDR_')).join(',');
    const x = hdr(spam[1]!);
    expect(x).toBe('X_HDR_FROM,X_HDR_MESSAGE_ID,X_HDR_SUBJECT,X_HDR_TO');
    expect(spam.slice(1)).toEqual([
      `Y  7 ${join(spamDir, 's1.eml')} MONEY,PRIZE,${x}`,
      `.  3 ${join(spamDir, 's2.eml')} MONEY,${x}`,
      `Y  4 ${join(spamDir, 's3.eml')} PRIZE,${x}`,
      `Y  7 ${join(spamDir, 's4.eml')} MONEY,PRIZE,${x}`,
    ]);
    expect(ham.slice(1)).toEqual([
      `. -1 ${join(hamDir, 'h1.eml')} FRIENDLY,${x}`,
      `.  2 ${join(hamDir, 'h2.eml')} FRIENDLY,MONEY,${x}`,
      `.  3 ${mbox}#1 MONEY,${x}`,
      `Y  4 ${mbox}#2 PRIZE,${x}`,
    ]);
    // hit-frequencies' own reading of a line.
    for (const line of [...spam.slice(1), ...ham.slice(1)]) expect(line).toMatch(/^(.)\s+(-?\d+)\s+(\S+)\s*(\S*)$/);
  });

  it('counts messages whose verdict has errors and keeps them in the figures', async () => {
    const rxRules = join(dir, 'rx-rules.json');
    writeFileSync(rxRules, JSON.stringify([rule('PRIZE', 'prize'), { '@type': 'Any', name: 'RX_BODY', condition: { match: [{ if: "matches('(?i)body\\s+of', body.raw)", then: "'RX_BODY'" }], else: 'false' } }]));
    // A work limit of 1 step refuses every search: each message's verdict carries the rule's error.
    const args = ['--rules', rxRules, '--scores', scores, '--no-analysis', '--score-spam', '4', '--regex-work-limit', '1', '--no-progress', '--spam', spamDir, '--ham', hamDir, mbox];
    const doc = JSON.parse((await capture(() => massCheck([...args, '--json']))).stdout) as Doc;
    expect(doc).toMatchObject({ classify_errors: 8, spam: { messages: 4, flagged: 3, classify_errors: 4 }, ham: { messages: 4, flagged: 1, classify_errors: 4 } });
    expect(doc.tags.map((t) => t.name)).not.toContain('RX_BODY');
    expect(doc.tags.find((t) => t.name === 'PRIZE')).toMatchObject({ spam_hits: 3, ham_hits: 1 });
    const text = await capture(() => massCheck(args));
    expect(text.result).toBe(0);
    expect(text.stdout).toMatch(/\nclassify errors: 8 messages with a rule, module or store error\n/);
  });

  it('follows no symbolic link inside a folder: said on stderr, not read, not a failure', async () => {
    const linked = join(dir, 'linked');
    mkdirSync(linked);
    writeFileSync(join(linked, 'a.eml'), mail(21, 'prize'));
    symlinkSync(join(hamDir, 'h1.eml'), join(linked, 'link.eml'));
    const r = await capture(() => massCheck(['--rules', rules, '--scores', scores, '--no-analysis', '--json', '--spam', linked]));
    expect(r.result).toBe(0);
    expect(r.stderr).toMatch(/spamrule mass-check: .*link\.eml: skipped: a symbolic link/);
    expect((JSON.parse(r.stdout) as Doc).spam.messages).toBe(1);
  });

  it('exit status: 1 for a path that cannot be read (after the rest), 2 for bad usage', async () => {
    const missing = await capture(() => massCheck([...BASE, join(dir, 'nope'), '--json']));
    expect(missing.result).toBe(1);
    expect(missing.stderr).toMatch(/spamrule mass-check: .*nope: .*ENOENT|no such file/);
    const doc = JSON.parse(missing.stdout) as Doc;
    expect(doc.read_errors).toBe(1);
    expect(doc.ham.messages).toBe(4);

    const bad = async (args: string[], message: RegExp): Promise<void> => {
      const r = await capture(() => massCheck(args));
      expect(r.result).toBe(2);
      expect(r.stdout).toBe('');
      expect(r.stderr).toMatch(message);
    };
    await bad([...BASE, '--sort', 'score'], /--sort expects one of rank, overall, so, spam, ham, name, got "score"/);
    await bad([...BASE, '--min-hits=-1'], /--min-hits expects a whole number/);
    await bad([...BASE, '--min-hits', '-1'], /--min-hits expects a whole number/);
    await bad([...BASE, '--min-hits', 'x'], /--min-hits expects a whole number/);
    await bad([...BASE, '--bogus'], /unknown option '--bogus'/);
    await bad(['--rules', rules, spamDir], /say --spam or --ham before the paths/);
    await bad(['--rules', rules], /nothing to check/);
    await bad(['--spam', '-'], /standard input/);
    await bad([...BASE, '--remote-ip', 'not-an-ip'], /remote-ip/);
    await bad(['--rules', join(dir, 'missing-rules.json'), '--spam', spamDir], /missing-rules\.json/);
    writeFileSync(join(dir, 'a-file'), '');
    await bad([...BASE, '--log', join(dir, 'a-file', 'logs')], /cannot write the --log folder/);
  });

  it('is a command of the spamrule entry point, with --help', () => {
    const cli = (args: string[]): string => execFileSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), ...args], { encoding: 'utf8' });
    const help = cli(['mass-check', '--help']);
    expect(help).toMatch(/^usage: spamrule mass-check --spam PATH\.\.\. --ham PATH\.\.\./);
    expect(help).toContain('--min-hits N');
    expect(cli(['--help'])).toMatch(/\n {2}mass-check +check a rule set on labelled spam and ham/);
  });

  it('a slice of the SpamAssassin corpus with the default rule set: the figures the engine gives message by message', async () => {
    // 40 messages, every 150th of the corpus (spam and ham groups alike), as files in two folders.
    const corpus = loadCorpus({ step: 150, limit: 40 });
    const cs = join(dir, 'corpus-spam');
    const ch = join(dir, 'corpus-ham');
    mkdirSync(cs);
    mkdirSync(ch);
    for (const m of corpus) writeFileSync(join(m.isSpam ? cs : ch, `${m.group}-${m.file}`), m.raw);
    const r = await capture(() => massCheck(['--json', '--no-progress', '--spam', cs, '--ham', ch]));
    expect(r.result).toBe(0);
    const doc = JSON.parse(r.stdout) as Doc;

    // The same messages through the library's engine with the same rule set, one at a time.
    const engine = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS, authResults: { trustedAuthservIds: [], verify: false } });
    const want = { spam: 0, ham: 0, tp: 0, fp: 0, hits: new Map<string, [number, number]>() };
    for (const m of corpus) {
      const v = await engine.classify(m.raw);
      const flagged = v.action !== 'allow';
      if (m.isSpam) want.spam++;
      else want.ham++;
      if (flagged && m.isSpam) want.tp++;
      if (flagged && !m.isSpam) want.fp++;
      for (const t of v.tags) {
        const h = want.hits.get(t) ?? [0, 0];
        h[m.isSpam ? 0 : 1]++;
        want.hits.set(t, h);
      }
    }
    await engine.close();
    expect(want.spam).toBeGreaterThan(5);
    expect(want.ham).toBeGreaterThan(5);
    expect(doc.spam.messages).toBe(want.spam);
    expect(doc.ham.messages).toBe(want.ham);
    expect(doc.confusion).toEqual({ tp: want.tp, fn: want.spam - want.tp, fp: want.fp, tn: want.ham - want.fp });
    expect(new Map(doc.tags.map((t) => [t.name, [t.spam_hits, t.ham_hits]]))).toEqual(want.hits);
    for (const t of doc.tags) {
      expect(t.spam_percent).toBeCloseTo((100 * t.spam_hits) / want.spam, 9);
      expect(t.so).toBeCloseTo(t.spam_percent + t.ham_percent > 0 ? t.spam_percent / (t.spam_percent + t.ham_percent) : 0.5, 9);
    }
  }, 60_000);
});
