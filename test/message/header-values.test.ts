/**
 * The Header scope's `value` of address headers and unstructured text (Subject, Comments) reads
 * them as the generic variables do (mail-parser's address parser and unstructured text), so a rule
 * on `value` and a rule on `to.name`/`subject` see the same names and text; Content-Type and
 * Content-Disposition read as the MIME tree parses them.
 */
import { describe, expect, it } from 'vitest';
import { analyzeMessage, messageContextOf, type AnalyzedMessage } from '../../src/message/index.js';

function header(m: AnalyzedMessage, name: string): { value: unknown; lower: unknown } {
  const h = m.elements('Header').find((e) => e.variable('name') === name);
  if (h === undefined) throw new Error(`no ${name} header`);
  return { value: h.variable('value'), lower: h.variable('value_lower') };
}

/** A generic variable of the message (outside any element). */
const generic = (m: AnalyzedMessage, name: string): unknown => messageContextOf(m).generic(name);

const msg = (headers: string[]): Promise<AnalyzedMessage> => analyzeMessage([...headers, '', 'body', ''].join('\r\n'));

describe('Header scope value agrees with the generic variables', () => {
  it('a comment after an angle address is part of the name, as in to.name', async () => {
    const m = await msg(['To: "Jo" <jo@example.org> (work)', 'Subject: x']);
    expect(header(m, 'To')).toEqual({ value: ['Jo (work)'], lower: ['jo@example.org'] });
    expect(generic(m, 'to.name')).toEqual(['jo (work)']);
  });

  it('words without an address are no mailbox name with an address (mail-parser), as in to/to.name', async () => {
    const m = await msg(['To: Jo Smith jo@example.org', 'Subject: x']);
    expect(header(m, 'To')).toEqual({ value: [], lower: ['jo smith jo@example.org'] });
    expect(generic(m, 'to.name')).toEqual([]);
  });

  it('names, groups and encoded words of every address header', async () => {
    const m = await msg([
      'From: jo@example.org (=?utf-8?q?Ren=C3=A9?=)',
      'Cc: =?utf-8?q?Ann?= =?utf-8?q?a?= <ann@example.com>, Team: b@example.com (Bee);',
      'List-Unsubscribe: <https://list.example.com/u?x=1>, <mailto:leave@example.com>',
      'Subject: x',
    ]);
    expect(header(m, 'From')).toEqual({ value: ['René'], lower: ['jo@example.org'] });
    expect(header(m, 'Cc')).toEqual({ value: ['Anna', 'Bee'], lower: ['ann@example.com', 'b@example.com'] });
    expect(header(m, 'List-Unsubscribe')).toEqual({ value: [], lower: ['https://list.example.com/u?x=1', 'mailto:leave@example.com'] });
  });

  it('Subject keeps the white space an encoded word produces; text then an encoded word get a space (mail-parser)', async () => {
    const m = await msg(['Subject: =?utf-8?q?Sale_?=', 'Comments: a=?utf-8?q?b?=']);
    expect(header(m, 'Subject')).toEqual({ value: 'Sale ', lower: 'sale ' });
    expect(header(m, 'Comments')).toEqual({ value: 'a b', lower: 'a b' });
    expect(generic(m, 'subject')).toBe('sale'); // the generic variable is trimmed
  });
});

describe('Header scope Content-Type agrees with the MIME tree', () => {
  const ct = async (value: string): Promise<unknown[]> => {
    const h = (await msg([`Content-Type: ${value}`])).elements('Header').find((e) => e.variable('name') === 'Content-Type')!;
    return [h.variable('value'), h.variable('value_lower'), h.variable('attributes')];
  };

  it('skips comments, keeps quoted ";" and parentheses, decodes RFC 2231 and RFC 2047 (mail-parser ContentType)', async () => {
    // Found by test/message/fuzz.test.ts (generated MIME, Content-Type with a comment): the Header scope split
    // the value at every ";" on its own, so the comment stayed in `value` and quoted values were cut.
    expect(await ct('text/x-unknown (a comment; x=y); charset = "utf-8"')).toEqual(['text/x-unknown', 'text/x-unknown', ['charset=utf-8']]);
    expect(await ct('Application/PDF; name="a;b=c (1).pdf"')).toEqual(['application/pdf', 'application/pdf', ['name=a;b=c (1).pdf']]);
    expect(await ct("application/pdf; name*=utf-8''%E2%82%AC.pdf; x=\"=?utf-8?B?w6k=?=\"")).toEqual(['application/pdf', 'application/pdf', ['x=é', 'name=€.pdf']]);
    expect(await ct('text; charset=us-ascii')).toEqual(['text', 'text', ['charset=us-ascii']]);
    expect(await ct('; charset=us-ascii')).toEqual(['', '', []]);
  });
});
