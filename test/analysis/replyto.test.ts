/**
 * replyto module: the Reply-To header (RFC 5322 §3.6.2) against From, the recipients, list headers
 * (RFC 2369, RFC 2919, RFC 3834) and the envelope, as Stalwart's reply-to analysis judges them.
 */
import { describe, expect, it } from 'vitest';
import type { SessionInput } from '../../src/analysis/types.js';
import { mail, runOne } from './module-harness.js';

async function tags(headers: string[], session: SessionInput = {}): Promise<string[]> {
  return (await runOne('replyto', mail(headers), session)).tags;
}

describe('replyto module', () => {
  it('is silent without a Reply-To header', async () => {
    expect(await tags(['From: alice@example.org', 'To: bob@example.net'])).toEqual([]);
  });

  it('tags REPLYTO_UNPARSABLE when the first mailbox has no address', async () => {
    expect(await tags(['From: alice@example.org', 'Reply-To: hello'])).toEqual(['REPLYTO_UNPARSABLE']);
    expect(await tags(['From: alice@example.org', 'Reply-To: <>'])).toEqual(['REPLYTO_UNPARSABLE']);
  });

  it('tags REPLYTO_EQ_FROM for the From address', async () => {
    expect(await tags(['From: Alice <alice@example.org>', 'Reply-To: Alice <Alice@example.org>'])).toEqual(['HAS_REPLYTO', 'REPLYTO_EQ_FROM']);
  });

  it('compares registrable domains, then the display names', async () => {
    expect(await tags(['From: "Alice" <alice@mail.example.org>', 'Reply-To: " alice " <support@example.org>'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_DN_EQ_FROM_DN',
      'REPLYTO_DOM_EQ_FROM_DOM',
    ]);
  });

  it('tags REPLYTO_DOM_NEQ_FROM_DOM and SPOOF_REPLYTO for an unrelated domain', async () => {
    expect(await tags(['From: alice@example.org', 'To: bob@example.net', 'Reply-To: claims@example.com'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_DOM_NEQ_FROM_DOM',
      'SPOOF_REPLYTO',
    ]);
  });

  it('tags REPLYTO_EQ_TO_ADDR when replies go to a recipient', async () => {
    expect(await tags(['From: alice@example.org', 'To: bob@example.net', 'Reply-To: bob@example.net'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_EQ_TO_ADDR',
      'SPOOF_REPLYTO',
    ]);
  });

  it('does not call list traffic a spoof', async () => {
    for (const h of ['List-Id: <list.example.org>', 'List-Unsubscribe: <mailto:leave@example.org>', 'Auto-Submitted: auto-generated', 'X-List: x', 'x-to-get-off-this-list: mail us']) {
      expect(await tags(['From: alice@example.org', 'To: bob@example.net', 'Reply-To: bob@example.net', h])).toEqual([
        'HAS_REPLYTO',
        'REPLYTO_DOM_NEQ_FROM_DOM',
      ]);
    }
  });

  it('does not call it a spoof when the sender writes to itself or its own domain', async () => {
    expect(await tags(['From: alice@example.org', 'To: alice@example.org', 'Reply-To: x@example.com'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_DOM_NEQ_FROM_DOM',
    ]);
    expect(await tags(['From: alice@example.org', 'Reply-To: x@example.com'], { rcptTo: ['team@lists.example.org'] })).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_DOM_NEQ_FROM_DOM',
    ]);
  });

  it('tags REPLYTO_ADDR_EQ_FROM for the envelope sender', async () => {
    expect(await tags(['From: alice@example.org', 'Reply-To: bounce@example.org'], { mailFrom: 'bounce@example.org' })).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_ADDR_EQ_FROM',
      'REPLYTO_DOM_EQ_FROM_DOM',
    ]);
  });

  it('tags needless encoding of the last Reply-To header', async () => {
    expect(await tags(['From: alice@example.org', 'Reply-To: =?utf-8?Q?Support?= <help@example.org>'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_DOM_EQ_FROM_DOM',
      'REPLYTO_EXCESS_QP',
    ]);
    expect(await tags(['From: alice@example.org', 'Reply-To: "=?utf-8?B?U3VwcG9ydA==?=" <help@example.org>'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_DOM_EQ_FROM_DOM',
      'REPLYTO_EXCESS_BASE64',
    ]);
    expect(await tags(['From: alice@example.org', 'Reply-To: =?utf-8?Q?J=C3=B6rg?= <help@example.org>'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_DOM_EQ_FROM_DOM',
    ]);
  });

  it('reads the last Reply-To header', async () => {
    expect(await tags(['From: alice@example.org', 'Reply-To: x@example.com', 'Reply-To: alice@example.org'])).toEqual([
      'HAS_REPLYTO',
      'REPLYTO_EQ_FROM',
    ]);
  });
});
