/**
 * What a rule, a module or the caller may set as a tag (src/util/tag-name.ts, README A21): a string that
 * would break the verdict's header lines is reported, not set. Message text reaches tags whenever a rule
 * builds one from it, so a sender could otherwise add headers of their choosing to the message an MTA
 * gets back (spamd PROCESS, checked with the real spamc) or end its header block.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { MAX_TAG_LENGTH, tagNameProblem } from '../../src/util/index.js';
import { spawn } from 'node:child_process';
import { startAll, type Started } from '../server/harness.js';

const ORDER: SpamRuleInput = {
  '@type': 'Any', name: 'ORDER_TAG', priority: 1,
  condition: { match: [{ if: "subject != ''", then: "'ORDER_' + to_uppercase(subject)" }], else: 'false' },
};
const LONG: SpamRuleInput = {
  '@type': 'Any', name: 'LONG_TAG', priority: 2,
  condition: { match: [{ if: 'true', then: `'${'X'.repeat(MAX_TAG_LENGTH + 1)}'` }], else: 'false' },
};
const EMPTY: SpamRuleInput = { '@type': 'Any', name: 'EMPTY_TAG', priority: 3, condition: { match: [{ if: 'true', then: "''" }], else: 'false' } };

/** A Subject whose encoded word decodes to CR LF and a header line, then a blank line ending the header block. */
const HOSTILE = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: =?utf-8?Q?x=0D=0AX-Spam-Flag:_NO=0D=0A=0D=0Abody?=\r\nMessage-ID: <h@example.org>\r\n\r\nHello.\r\n';

describe('tag names', () => {
  it('refuses control characters and overlong strings, accepts the rest', () => {
    expect(tagNameProblem('RBL_SPAMHAUS_SBL')).toBeUndefined();
    expect(tagNameProblem('ORDER_ÉTÉ')).toBeUndefined();
    expect(tagNameProblem('A\r\nB')).toMatch(/U\+000D at 1/);
    expect(tagNameProblem('A\tB')).toMatch(/U\+0009/);
    expect(tagNameProblem('A\u2028B')).toMatch(/U\+2028/);
    expect(tagNameProblem('A\u0085B')).toMatch(/U\+0085/);
    expect(tagNameProblem('X'.repeat(MAX_TAG_LENGTH))).toBeUndefined();
    expect(tagNameProblem('X'.repeat(MAX_TAG_LENGTH + 1))).toMatch(/at most 256/);
  });

  it('a rule result built from message text with CR/LF is reported, not set; the rest of the verdict stands', async () => {
    const engine = new SpamEngine({ rules: [ORDER, LONG, EMPTY], analysis: false });
    const r = await engine.classify(HOSTILE);
    expect(r.tags.filter((t) => t.startsWith('ORDER_'))).toEqual([]);
    expect(r.tags.some((t) => t.startsWith('XXXX'))).toBe(false);
    expect(r.tags).not.toContain('');
    const order = r.errors.find((e) => e.source === 'ORDER_TAG');
    expect(order?.message).toMatch(/^result "ORDER_X\\r\\nX-SPAM-FLAG: NO\\r\\n\\r\\nBODY" is not set as a tag: it holds the control character U\+000D/);
    expect(r.errors.find((e) => e.source === 'LONG_TAG')?.message).toMatch(/257 characters/);
    // A rule returning '' sets nothing and is no error (a common "no tag" idiom).
    expect(r.errors.find((e) => e.source === 'EMPTY_TAG')).toBeUndefined();
    for (const v of Object.values(r.headers)) expect(v).not.toMatch(/\n(?!\t)/);
    // A plain subject still gives its tag.
    const ok = await engine.classify(HOSTILE.replace(/^Subject: .*$/m, 'Subject: shoes'));
    expect(ok.tags).toContain('ORDER_SHOES');
  });

  it('an upstream tag with a line break is reported (source "tags") and left out', async () => {
    const r = await new SpamEngine({ analysis: false }).classify(HOSTILE, { tags: ['UPSTREAM_OK', 'BAD\nX-Injected: 1'] });
    expect(r.tags).toContain('UPSTREAM_OK');
    expect(r.tags.filter((t) => t.startsWith('BAD'))).toEqual([]);
    expect(r.errors).toContainEqual({ source: 'tags', message: 'upstream tag "BAD\\nX-Injected: 1" is not set: it holds the control character U+000A at 3' });
  });
});

describe('through the spamd listener, with the real spamc', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startAll({ workers: 1, spec: { rules: [ORDER], tags: [{ '@type': 'Score', tag: 'ORDER_SHOES', score: 1 }] } });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  it('spamc gets the message back with its own headers only: no header or blank line from the Subject', async () => {
    const { host, port } = s.hostPort('spamd');
    const stdout = await new Promise<string>((resolve, reject) => {
      // Not spawnSync: the listener runs in this process and must keep serving while spamc waits.
      const c = spawn('spamc', ['-d', host, '-p', String(port)]);
      let out = '';
      c.stdout.on('data', (d: Buffer) => (out += d.toString('latin1')));
      c.on('error', reject);
      c.on('close', () => resolve(out));
      c.stdin.end(HOSTILE);
    });
    const head = stdout.slice(0, stdout.indexOf('\r\n\r\n') >= 0 ? stdout.indexOf('\r\n\r\n') : stdout.indexOf('\n\n'));
    // The original headers are all still in the header block, and no X-Spam-Flag: NO line was added.
    expect(head).toMatch(/^Message-ID: <h@example\.org>$/m);
    expect(head).not.toMatch(/^X-Spam-Flag: NO/m);
    expect(head).not.toMatch(/ORDER_X/);
  });
});
