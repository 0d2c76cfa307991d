import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { run as lint } from '../../src/cli/lint.js';
import { splitMbox } from '../../src/cli/inputs.js';
import { capture } from '../helpers/capture.js';
import { REPO_ROOT, hasSharedData, sharedPath } from '../helpers/shared-data.js';

const EX = join(REPO_ROOT, 'examples');

describe('spamrule classify', () => {
  it('classifies a folder with the default rule set (text output + summary)', async () => {
    const { result, stdout, stderr } = await capture(() => classify([join(EX, 'mail')]));
    expect(result).toBe(0);
    const lines = stdout.trim().split('\n').map((l) => l.split('\t'));
    expect(lines.map((l) => l[0]!.split('/').pop())).toEqual(['gtube.eml', 'ham-meeting.eml', 'spam-lottery.eml']);
    const byFile = Object.fromEntries(lines.map((l) => [l[0]!.split('/').pop(), l]));
    expect(byFile['gtube.eml']![1]).toBe('reject');
    expect(byFile['ham-meeting.eml']![1]).toBe('allow');
    expect(byFile['spam-lottery.eml']![1]).toBe('spam');
    for (const t of ['LOTTERY_WORDS', 'URL_SHORTENER', 'URL_HAS_USERINFO', 'URL_NUMERIC_IP', 'XM_PHPMAILER', 'SUBJECT_SHOUTING', 'MID_NO_DOMAIN'])
      expect(byFile['spam-lottery.eml']![3]).toContain(t);
    expect(stderr).toMatch(/^3 messages in .* msg\/s\); .*reject 1/m);
  });

  it('--json prints one object per message, mbox split into messages, envelope flags applied', async () => {
    const { stdout } = await capture(() =>
      classify(['--json', '--remote-ip', '203.0.113.9', '--tag', 'DMARC_POLICY_ALLOW', '--tag', 'SPF_FAIL', join(EX, 'inbox.mbox')]),
    );
    const recs = stdout.trim().split('\n').map((l) => JSON.parse(l) as { file: string; tags: string[]; action: string; matches: { rule: string }[] });
    expect(recs.map((r) => r.file.split('/').pop())).toEqual(['inbox.mbox#1', 'inbox.mbox#2']);
    for (const r of recs) {
      expect(r.tags).toContain('DMARC_ALLOW_WITH_SPF_FAILURE');
      expect(r.tags).toContain('RDNS_NONE'); // --remote-ip without PTR
    }
    expect(recs[1]!.action).toBe('spam');
  });

  it('--explain names rule, scope and element per tag', async () => {
    const { stdout } = await capture(() => classify(['--explain', join(EX, 'mail', 'spam-lottery.eml')]));
    expect(stdout).toMatch(/URL_SHORTENER\s+0\.50\s+rule SR_URL_SHORTENER \[match\/0\] on Url "http:\/\/bit\.ly\/3xyz"/);
    expect(stdout).toMatch(/X-Spam-Score: spam, score=/);
  });

  it('reports unreadable paths (exit status 1, after the others) and bad rules files (exit status 2)', async () => {
    expect((await capture(() => classify(['/nonexistent/x.eml']))).result).toBe(1);
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-'));
    writeFileSync(join(dir, 'bad.json'), '{not json');
    const r = await capture(() => classify(['--rules', join(dir, 'bad.json'), join(EX, 'mail')]));
    expect(r.result).toBe(2);
    expect(r.stderr).toMatch(/not valid JSON/);
  });

  it('--explain shows a Reject tag as "reject", not as a score of 0', async () => {
    const r = await capture(() => classify(['--explain', join(EX, 'mail', 'gtube.eml')]));
    expect(r.result).toBe(0);
    expect(r.stdout).toMatch(/: reject, score /);
    expect(r.stdout).toMatch(/\n {2}GTUBE +reject {2}rule SR_GTUBE /);
  });

  it('splits mbox files and unescapes >From lines', () => {
    const parts = splitMbox(Buffer.from('From a@b Mon\nSubject: 1\n\n>From here\n\nFrom c@d Tue\nSubject: 2\n\nbody\n'));
    expect(parts.map((p) => p.toString())).toEqual(['Subject: 1\n\nFrom here\n\n', 'Subject: 2\n\nbody\n']);
  });

  it('runs as a real process: npx-style entry point', () => {
    const out = execFileSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), 'classify', '--json', join(EX, 'mail', 'gtube.eml')], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(JSON.parse(out.trim())).toMatchObject({ action: 'reject', tags: expect.arrayContaining(['GTUBE']) });
  });
});

describe('spamrule lint', () => {
  it('exit 1 and names the rule and branch for a rule that does not compile', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-'));
    const file = join(dir, 'rules.json');
    writeFileSync(
      file,
      JSON.stringify([
        { '@type': 'Any', name: 'OK', condition: { match: [{ if: 'true', then: "'GOOD'" }], else: 'false' } },
        { '@type': 'Any', name: 'BROKEN', condition: { match: { '0': { if: "contains(subject, 'x'", then: "'BAD'" } }, else: 'false' } },
      ]),
    );
    const scores = join(dir, 'scores.txt');
    writeFileSync(scores, 'GOOD = 1.0\nUNUSED = 2\n');
    const { result, stdout } = await capture(() => lint(['--rules', file, '--scores', scores]));
    expect(result).toBe(1);
    expect(stdout).toMatch(/^error\s+BROKEN condition\/match\/0\/if: .*1:\d+/m);
    expect(stdout).toMatch(/2 rules, 0 DNSBL servers, 2 scores: 1 error, /);
  });

  it('flags emitted tags without a score', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-'));
    const file = join(dir, 'rules.json');
    writeFileSync(file, JSON.stringify([{ '@type': 'Any', name: 'R', condition: { match: [], else: "'NO_SCORE_TAG'" } }]));
    const scores = join(dir, 'scores.txt');
    writeFileSync(scores, 'OTHER = 1\n');
    const { result, stdout } = await capture(() => lint(['--rules', file, '--scores', scores]));
    expect(result).toBe(0);
    expect(stdout).toMatch(/warning R: tag NO_SCORE_TAG has no SpamTag score/);
  });

  it.skipIf(!hasSharedData)("passes on Stalwart's public rule set", async () => {
    const { result, stdout } = await capture(() => lint(['--rules', sharedPath('stalwart-spam-filter', 'spam-filter-rules.json')]));
    expect(result).toBe(0);
    expect(stdout).toMatch(/66 rules, 18 DNSBL servers, 403 scores: 0 errors/);
  });
});
