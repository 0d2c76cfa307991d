/**
 * recipient module: To/Cc/Bcc (RFC 5322 §3.6.3) against the envelope recipients (RFC 5321 RCPT TO),
 * the Subject and each other, as Stalwart's recipient analysis judges them.
 */
import { describe, expect, it } from 'vitest';
import { levenshteinBelow, MAX_SUSPICIOUS_RECIPS, wrappedInSpaces } from '../../src/analysis/recipient.js';
import type { SessionInput } from '../../src/analysis/types.js';
import { mail, runOne } from './module-harness.js';

async function tags(headers: string[], session: SessionInput = {}): Promise<string[]> {
  return (await runOne('recipient', mail(['From: alice@example.org', ...headers]), { mailFrom: 'alice@example.org', ...session })).tags;
}

const list = (names: string[], domain = 'example.net'): string => names.map((n) => `${n}@${domain}`).join(', ');

describe('recipient module', () => {
  it('tags MISSING_TO and RCPT_COUNT_ZERO', async () => {
    expect(await tags(['Subject: hi'])).toEqual(['MISSING_TO', 'RCPT_COUNT_ZERO']);
    expect(await tags(['To: Undisclosed recipients:;'])).toEqual(['RCPT_COUNT_ZERO']);
  });

  it('counts distinct recipients across To, Cc and Bcc', async () => {
    expect(await tags(['To: bob@example.net'])).toContain('RCPT_COUNT_ONE');
    expect(await tags(['To: bob@example.net, BOB@example.net', 'Cc: bob@example.net'])).toContain('RCPT_COUNT_ONE');
    expect(await tags(['To: a@example.net', 'Bcc: b@example.net'])).toContain('RCPT_COUNT_TWO');
    expect(await tags([`To: ${list(['a', 'b', 'c', 'd'])}`])).toContain('RCPT_COUNT_FIVE');
    expect(await tags([`To: ${list(['h', 'a', 'b', 'c', 'd', 'e', 'f', 'g'])}`])).toContain('RCPT_COUNT_TWELVE');
    expect(await tags([`To: ${list(Array.from({ length: 13 }, (_, i) => `user${i}`))}`])).toContain('RCPT_COUNT_GT_50');
  });

  it('judges display names', async () => {
    expect(await tags(['To: bob@example.net'])).toEqual(['RCPT_COUNT_ONE', 'TO_DN_NONE']);
    expect(await tags(['To: Bob <bob@example.net>'])).toEqual(['RCPT_COUNT_ONE', 'TO_DN_ALL']);
    expect(await tags(['To: Bob <bob@example.net>, carol@example.net'])).toEqual(['RCPT_COUNT_TWO', 'TO_DN_SOME']);
    expect(await tags(['To: "bob@example.net" <bob@example.net>'])).toEqual(['RCPT_COUNT_ONE', 'TO_DN_EQ_ADDR_ALL']);
    expect(await tags(['To: "bob@example.net" <bob@example.net>, Carol <carol@example.net>'])).toEqual([
      'RCPT_COUNT_TWO',
      'TO_DN_EQ_ADDR_SOME',
      'TO_DN_SOME',
    ]);
  });

  it('matches header recipients with the envelope', async () => {
    const hdr = ['To: bob@example.net, carol@example.net'];
    expect(await tags(hdr, { rcptTo: ['bob@example.net', 'carol@example.net'] })).toContain('TO_MATCH_ENVRCPT_ALL');
    expect(await tags(hdr, { rcptTo: ['bob@example.net'] })).toContain('TO_MATCH_ENVRCPT_SOME');
    const forged = await tags(hdr, { rcptTo: ['bob@example.net', 'dave@example.com'] });
    expect(forged).toContain('TO_MATCH_ENVRCPT_SOME');
    expect(forged).toContain('FORGED_RECIPIENTS');
    // List traffic and the sender's own address are not forged recipients.
    expect(await tags([...hdr, 'List-Id: <l.example.net>'], { rcptTo: ['dave@example.com'] })).not.toContain('FORGED_RECIPIENTS');
    expect(await tags(hdr, { mailFrom: 'dave@example.com', rcptTo: ['dave@example.com'] })).not.toContain('FORGED_RECIPIENTS');
    expect(await tags(hdr)).not.toContain('FORGED_RECIPIENTS');
  });

  it('tags RCPT_BOUNCEMOREONE for a bounce to several recipients', async () => {
    expect(await tags(['To: bob@example.net, carol@example.net'], { mailFrom: '' })).toContain('RCPT_BOUNCEMOREONE');
    expect(await tags(['To: bob@example.net, carol@example.net'], { mailFrom: 'root@example.org' })).toContain('RCPT_BOUNCEMOREONE');
    expect(await tags(['To: bob@example.net'], { mailFrom: '' })).not.toContain('RCPT_BOUNCEMOREONE');
  });

  it('finds recipients in the subject', async () => {
    expect(await tags(['To: bob@example.net', 'Subject: An offer for BOB@example.net'])).toContain('RCPT_IN_SUBJECT');
    expect(await tags(['To: robert@example.net', 'Subject: Hello Robert'])).toContain('RCPT_LOCAL_IN_SUBJECT');
    expect(await tags(['To: bob@example.net', 'Subject: Hello Bob'])).not.toContain('RCPT_LOCAL_IN_SUBJECT'); // 3 letters
  });

  it('tags SORTED_RECIPS for six or more To/Cc entries in order', async () => {
    expect(await tags([`To: ${list(['a', 'b', 'c'])}`, `Cc: ${list(['d', 'e', 'f'])}`])).toContain('SORTED_RECIPS');
    expect(await tags([`To: ${list(['a', 'b', 'c'])}`, `Bcc: ${list(['d', 'e', 'f'])}`])).not.toContain('SORTED_RECIPS');
    expect(await tags([`To: ${list(['b', 'a', 'c', 'd', 'e', 'f'])}`])).not.toContain('SORTED_RECIPS');
  });

  it('tags SUSPICIOUS_RECIPS for look-alike addresses', async () => {
    expect(await tags([`To: ${list(['tim', 'tom', 'tum', 'tem', 'tam', 'tym'], 'example.net')}`])).toContain('SUSPICIOUS_RECIPS');
    expect(await tags([`To: ${list(['alice', 'robert', 'charlotte', 'dominic', 'evelyn'])}`])).not.toContain('SUSPICIOUS_RECIPS');
    // Near-identical domains count too.
    const doms = ['exampla.net', 'exampel.net', 'examp1e.net', 'exanple.net', 'exampie.net'];
    expect(await tags([`To: ${['ann', 'benjamin', 'clara', 'dorothea', 'emmanuel'].map((n, i) => `${n}@${doms[i]}`).join(', ')}`])).toContain(
      'SUSPICIOUS_RECIPS',
    );
  });

  it('checks the raw To/Cc/Bcc headers for 8-bit text, needless encoding and blanks inside <>', async () => {
    expect(await tags(['To: J\u00f6rg <j@example.net>'])).toContain('TO_NEEDS_ENCODING');
    expect(await tags(['To: J\u00f6rg <j@example.net>'], { eightBitMime: true })).not.toContain('TO_NEEDS_ENCODING');
    const latin1 = Buffer.concat([Buffer.from('From: a@example.org\r\nCc: J'), Buffer.from([0xf6]), Buffer.from('rg <j@example.net>\r\n\r\nHi.\r\n')]);
    const t = (await runOne('recipient', new Uint8Array(latin1))).tags;
    expect(t).toContain('INVALID_TO_8BIT');
    expect(t).toContain('TO_NEEDS_ENCODING');
    expect(await tags(['To: "=?utf-8?Q?Bob?=" <bob@example.net>'])).toContain('TO_EXCESS_QP');
    expect(await tags(['Bcc: =?utf-8?B?Qm9i?= <bob@example.net>'])).toContain('TO_EXCESS_BASE64');
    expect(await tags(['To: =?utf-8?Q?J=C3=B6rg?= <j@example.net>'])).not.toContain('TO_EXCESS_QP');
    expect(await tags(['To: < bob@example.net >'])).toContain('TO_WRAPPED_IN_SPACES');
    expect(await tags(['Cc: Bob <bob@example.net >'])).toContain('TO_WRAPPED_IN_SPACES');
    expect(await tags(['To: Bob <bob@example.net>'])).not.toContain('TO_WRAPPED_IN_SPACES');
  });

  it('judges TO_WRAPPED_IN_SPACES as the piece-by-piece scan does, in one pass over hostile values', async () => {
    // The scan as first written: every piece's first ">" searched from the piece's start.
    const reference = (text: string): boolean => {
      let start = 0;
      for (;;) {
        const lt = text.indexOf('<', start);
        const end = lt < 0 ? text.length : lt;
        const gt = text.indexOf('>', start);
        if (gt >= 0 && gt < end && gt > start && (text.charCodeAt(start) === 32 || text.charCodeAt(gt - 1) === 32)) return true;
        if (lt < 0) return false;
        start = lt + 1;
      }
    };
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    for (let i = 0; i < 20_000; i++) {
      const s = Array.from({ length: next() % 14 }, () => '<> a'[next() % 4]).join('');
      expect(wrappedInSpaces(s), JSON.stringify(s)).toBe(reference(s));
    }
    // 1 MB of "<" without ">" (16 s with the per-piece search): no tag, and the other checks still run.
    const t = await tags([`To: bob@example.net`, `Cc: ${'<'.repeat(1 << 20)}`]);
    expect(t).not.toContain('TO_WRAPPED_IN_SPACES');
    expect(t).toContain('RCPT_COUNT_ONE');
  });

  it('caps the pair comparison on huge recipient lists and finishes quickly', async () => {
    const names = Array.from({ length: 5000 }, (_, i) => `u${(i * 7919) % 5000}x${'y'.repeat(i % 40)}`);
    const t0 = Date.now();
    const out = await runOne('recipient', mail(['From: a@example.org', `To: ${list(names)}`]));
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(out.tags).toContain('RCPT_COUNT_GT_50');
    expect(out.warnings.join('\n')).toContain(`first ${MAX_SUSPICIOUS_RECIPS}`);
  });
});

describe('levenshteinBelow', () => {
  const d = (a: string, b: string, k: number) => levenshteinBelow(Array.from(a), Array.from(b), k);
  it('answers "distance < k" over Unicode characters', () => {
    expect(d('tim', 'tom', 3)).toBe(true);
    expect(d('tom', 'tron', 3)).toBe(true);
    expect(d('alice', 'robert', 3)).toBe(false);
    expect(d('', 'ab', 3)).toBe(true);
    expect(d('', 'abc', 3)).toBe(false);
    expect(d('école', 'ecole', 2)).toBe(true);
    expect(d('日本', '日本語', 2)).toBe(true);
    expect(d('example.com', 'exampel.com', 3)).toBe(true);
    expect(d('example.com', 'exampel.com', 2)).toBe(false);
    expect(d('abcdefghij', 'jbcdefghia', 3)).toBe(true);
    expect(d('kitten', 'sitting', 3)).toBe(false);
    expect(d('kitten', 'sitting', 4)).toBe(true);
  });

  it('agrees with the full dynamic-programming distance on pseudo-random strings', () => {
    const full = (a: string[], b: string[]): number => {
      let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
      for (let i = 1; i <= a.length; i++) {
        const cur = [i];
        for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
        prev = cur;
      }
      return prev[b.length]!;
    };
    let seed = 7;
    const rnd = (n: number): number => (seed = (seed * 1103515245 + 12345) % 2147483648) % n;
    const word = (): string[] => Array.from({ length: rnd(9) }, () => 'abé日'[rnd(4)]!);
    for (let t = 0; t < 3000; t++) {
      const a = word();
      const b = word();
      for (const k of [1, 2, 3, 4]) expect(levenshteinBelow(a, b, k)).toBe(full(a, b) < k);
    }
  });
});
