/**
 * Stalwart's `html_to_tokens`: the suite's `classifier_html` tokenizer cases (read from
 * ../shared/data at run time) and the quirks that decide html-module tags.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { decodeEntity, htmlNameKey, htmlTextBody, htmlToTokens, MAX_HTML_TOKENS, type HtmlToken } from '../../src/message/html-tokens.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

interface SuiteToken {
  type: string;
  name?: number;
  text?: string;
  attributes?: [number, string | null][];
  is_self_closing?: boolean;
}

/** Our tokens in Stalwart's serde shape (names as u64 numbers; JSON numbers round the same way). */
function serde(tokens: readonly HtmlToken[]): SuiteToken[] {
  return tokens.map((t) => {
    switch (t.type) {
      case 'StartTag':
        return {
          type: 'StartTag',
          name: Number(htmlNameKey(t.name)),
          attributes: t.attributes.map(([k, v]) => [Number(htmlNameKey(k)), v] as [number, string | null]),
          is_self_closing: t.selfClosing,
        };
      case 'EndTag':
        return { type: 'EndTag', name: Number(htmlNameKey(t.name)) };
      default:
        return { type: t.type, text: t.text };
    }
  });
}

describe.skipIf(!hasSharedData)('classifier_html tokenizer cases (stalwart-antispam-suite)', () => {
  const suite = hasSharedData
    ? (JSON.parse(readFileSync(sharedPath('stalwart-antispam-suite', 'cases.json'), 'utf8')) as {
        tokenizerCases: { id: string; file: string; input: string; expectTokens: SuiteToken[] }[];
      })
    : { tokenizerCases: [] };
  const cases = suite.tokenizerCases.filter((c) => c.file === 'classifier_html');
  it('has cases', () => expect(cases.length).toBeGreaterThan(0));
  for (const c of cases) {
    it(c.id, () => {
      expect(serde(htmlToTokens(c.input).tokens)).toEqual(c.expectTokens);
    });
  }
});

function tok(html: string): HtmlToken[] {
  return htmlToTokens(html).tokens;
}

describe('html_to_tokens quirks', () => {
  it('keeps only name characters, the first 8 of them, lower-cased', () => {
    expect(tok('<o:p>')).toEqual([{ type: 'StartTag', name: 'op', attributes: [], selfClosing: false }]);
    expect(tok('<META HTTP-EQUIV=Refresh>')).toEqual([
      { type: 'StartTag', name: 'meta', attributes: [['http-equ', 'Refresh']], selfClosing: false },
    ]);
    expect(tok('<a<img src=x>')[0]).toMatchObject({ name: 'aimg', attributes: [['src', 'x']] });
    expect(tok('<ABCDEFGHIJK>')[0]).toMatchObject({ name: 'abcdefgh' });
    expect(tok('<x:y:Z·W>')[0]).toMatchObject({ name: 'xyzw' });
    expect(tok('<abcdef:ghijk>')[0]).toMatchObject({ name: 'abcdefgh' });
    expect(htmlNameKey('a')).toBe(97n);
    expect(htmlNameKey('br')).toBe(29282n);
  });

  it("treats single quotes as ordinary characters and '/' anywhere as self-closing", () => {
    expect(tok("<a href='x' title=\"a/b > c\">")).toEqual([
      { type: 'StartTag', name: 'a', attributes: [['href', "'x'"], ['title', 'a/b > c']], selfClosing: false },
    ]);
    expect(tok('<img src=/x.png>')[0]).toMatchObject({ attributes: [['src', '/x.png']], selfClosing: false });
    expect(tok('<br / >')[0]).toMatchObject({ name: 'br', selfClosing: true });
  });

  it('assigns a value without a name to the last attribute, and emits nothing without a tag name', () => {
    expect(tok('<a b=1 =2>')).toEqual([{ type: 'StartTag', name: 'a', attributes: [['b', '2']], selfClosing: false }]);
    expect(tok('<x=1>')).toEqual([]);
    expect(tok('</>')).toEqual([]);
    expect(tok('<abc')).toEqual([]);
    expect(tok('<abc def')).toEqual([{ type: 'StartTag', name: 'abc', attributes: [], selfClosing: false }]);
  });

  it('collapses white space, decodes word entities, carries a space across a tag', () => {
    expect(tok('a&amp;b &#65;&#x42; &bogus; &#xFFFFFFF; &#99999999999;')).toEqual([
      { type: 'Text', text: 'a&b AB &bogus; \ufffd &#99999999999;' },
    ]);
    expect(tok('<div>Hello, <span>&quot; world &quot; </span>!</div>').filter((t) => t.type === 'Text')).toEqual([
      { type: 'Text', text: 'Hello,' },
      { type: 'Text', text: ' " world "' },
      { type: 'Text', text: ' !' },
    ]);
    // A stray '<' swallows everything up to the next '>'.
    expect(tok('1 < 2 and 3 > 2')).toEqual([
      { type: 'Text', text: '1' },
      { type: 'StartTag', name: '2', attributes: [['and', null], ['3', null]], selfClosing: false },
      { type: 'Text', text: ' 2' },
    ]);
  });

  it('reads comments up to -->, each white-space character becoming one space', () => {
    expect(tok('<!-- a  b\t-->x')).toEqual([{ type: 'Comment', text: '!-- a  b --' }, { type: 'Text', text: 'x' }]);
    expect(tok('<!-->')).toEqual([{ type: 'Comment', text: '!--' }]);
    expect(tok('<!-- open')).toEqual([{ type: 'Comment', text: '!-- open' }]);
  });

  it('decodes HTML5 named references of one character and numeric ones as mail-parser does', () => {
    expect(decodeEntity('&heartsuit;')).toBe('\u2665');
    expect(decodeEntity('&CounterClockwiseContourIntegral;')).toBe('\u2233');
    expect(decodeEntity('&#0032;')).toBe(' ');
    expect(decodeEntity('&#xD800;')).toBe('\ufffd');
    expect(decodeEntity('&hmmm')).toBeUndefined();
    expect(decodeEntity('&#;')).toBeUndefined();
  });

  it('extracts the text outside <head>, joined with single spaces', () => {
    expect(htmlTextBody(tok('<html><head><title>T</title></head><body>a <b>b</b>c</body></html>'))).toBe('a b c');
    expect(htmlTextBody(tok('<head/>hidden'))).toBe('');
    expect(htmlTextBody(tok('<script>var x = 1;</script>shown'))).toBe('var x = 1; shown');
  });

  it('caps the number of tokens on hostile input and finishes 10 MB within seconds', () => {
    const t0 = Date.now();
    const big = '<a href="x">y</a>'.repeat(600_000); // ~10 MB, 1.8 M tokens
    const r = htmlToTokens(big);
    expect(r.truncated).toBe(true);
    expect(r.tokens.length).toBe(MAX_HTML_TOKENS);
    const text = htmlToTokens('word '.repeat(2_000_000));
    expect(text.tokens).toHaveLength(1);
    expect(Date.now() - t0).toBeLessThan(10_000);
  });
});
