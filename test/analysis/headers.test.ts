/**
 * headers module: header-presence tags, repeated RFC 5322 §3.6 "at most once" headers, the
 * delimiter after the colon, the mailing-list score (RFC 2369/2919 List-* headers, Precedence,
 * X-Loop) and X-Priority levels (Stalwart's headers analysis).
 */
import { describe, expect, it } from 'vitest';
import { mail, runOne } from './module-harness.js';

async function tags(headers: string[], body?: string): Promise<string[]> {
  return (await runOne('headers', mail(headers, body))).tags;
}

const BASE = ['From: Alice <alice@example.org>', 'To: bob@example.net', 'Subject: hello'];
const PRESENCE = ['X_HDR_FROM', 'X_HDR_SUBJECT', 'X_HDR_TO'];

function withoutPresence(t: string[]): string[] {
  return t.filter((x) => !x.startsWith('X_HDR_'));
}

describe('headers module', () => {
  it('sets one X_HDR_ tag per header name, spelled as Stalwart spells them', async () => {
    const t = await tags([...BASE, 'message-id: <1@example.org>', 'X_Weird.Name: 1', 'X-Caf\u00e9-\u{1F600}: 1', 'X-Mailer: a', 'x-mailer: b']);
    expect(t).toEqual([...PRESENCE, 'X_HDR_MESSAGE_ID', 'X_HDR_X_MAILER', 'X_HDR_X WEIRD NAME', 'X_HDR_X_CAF _ '].sort());
  });

  it('says nothing more about a well-formed message', async () => {
    expect(withoutPresence(await tags([...BASE, 'Date: Mon, 23 Nov 2026 10:00:00 +0000']))).toEqual([]);
  });

  it('tags a repeated unique header, whatever the case of its name', async () => {
    expect(withoutPresence(await tags([...BASE, 'SUBJECT: again']))).toEqual(['MULTIPLE_UNIQUE_HEADERS']);
    expect(withoutPresence(await tags([...BASE, 'Received: a', 'Received: b', 'Comments: x', 'Comments: y']))).toEqual([]);
  });

  it('tags a unique header whose value does not start with a blank', async () => {
    expect(withoutPresence(await tags(['From: a@example.org', 'Subject:hello']))).toEqual(['HEADER_EMPTY_DELIMITER']);
    expect(withoutPresence(await tags(['From: a@example.org', 'Subject:\r\n hello']))).toEqual([]);
    expect(withoutPresence(await tags(['From: a@example.org', 'Subject:\tx']))).toEqual([]);
    expect(withoutPresence(await tags(['From: a@example.org', 'Subject:', 'To: b@example.net']))).toEqual(['HEADER_EMPTY_DELIMITER']);
    // An empty last header: Stalwart reads on through the blank line into the body.
    expect(withoutPresence(await tags(['From: a@example.org', 'Subject:'], ' indented body'))).toEqual([]);
    expect(withoutPresence(await tags(['From: a@example.org', 'Subject:'], 'body'))).toEqual(['HEADER_EMPTY_DELIMITER']);
    // Only the 13 unique headers are checked.
    expect(withoutPresence(await tags([...BASE, 'X-Mailer:nospace']))).toEqual([]);
  });

  it('adds up list headers and tags MAILLIST from a score of 1.0', async () => {
    const list = ['List-Id: <dev.lists.example.org>', 'List-Subscribe: <mailto:dev-join@lists.example.org>', 'List-Post: <mailto:dev@lists.example.org>'];
    // 0.5125 + 0.25 + 0.125 = 0.8875
    expect(withoutPresence(await tags([...BASE, ...list]))).toEqual([]);
    // + List-Unsubscribe 0.25
    expect(withoutPresence(await tags([...BASE, ...list, 'List-Unsubscribe: <mailto:dev-leave@lists.example.org>'])))
      .toEqual(['HAS_LIST_UNSUB', 'MAILLIST']);
    // + Precedence: list 0.25; every occurrence counts
    expect(withoutPresence(await tags([...BASE, ...list, 'precedence: List']))).toEqual(['MAILLIST']);
    expect(withoutPresence(await tags([...BASE, 'List-Id: <a>', 'List-Id: <b>']))).toEqual(['MAILLIST']);
    expect(withoutPresence(await tags([...BASE, 'X-Loop: a', 'X-LOOP: b', 'List-Archive: <x>', 'List-Owner: <x>', 'List-Help: <x>', 'List-Post: <x>', 'List-Archive: <y>', 'List-Post: <y>'])))
      .toEqual(['MAILLIST']);
  });

  it('tags Precedence: bulk', async () => {
    expect(withoutPresence(await tags([...BASE, 'Precedence:  BULK ']))).toEqual(['PRECEDENCE_BULK']);
    expect(withoutPresence(await tags([...BASE, 'Precedence: junk']))).toEqual([]);
  });

  it.each([
    ['0', 'HAS_X_PRIO_ZERO'], ['1', 'HAS_X_PRIO_ONE'], ['+2', 'HAS_X_PRIO_TWO'], ['3', 'HAS_X_PRIO_THREE'],
    ['4', 'HAS_X_PRIO_THREE'], ['5', 'HAS_X_PRIO_FIVE'], ['10000', 'HAS_X_PRIO_FIVE'], ['-0', 'HAS_X_PRIO_ZERO'],
  ])('maps X-Priority %s to %s', async (v, tag) => {
    expect(withoutPresence(await tags([...BASE, `X-Priority: ${v}`]))).toEqual([tag]);
  });

  it.each(['1 (Highest)', '10001', '-1', 'high', '', '99999999999'])('ignores X-Priority %j', async (v) => {
    expect(withoutPresence(await tags([...BASE, `X-Priority: ${v}`]))).toEqual([]);
  });

  it('tags MISSING_ESSENTIAL_HEADERS when none of the unique headers is present', async () => {
    expect(withoutPresence(await tags(['X-Mailer: a', 'Received: from a by b; Mon, 23 Nov 2026 10:00:00 +0000']))).toEqual(['MISSING_ESSENTIAL_HEADERS']);
    expect(withoutPresence(await tags(['Content-Type: text/plain']))).toEqual([]);
  });
});
