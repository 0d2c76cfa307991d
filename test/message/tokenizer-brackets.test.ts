/**
 * The text tokenizer's bracket matching (src/message/tokenizer.ts `bracketEnd`): balanced `()`, `[]`, `{}`
 * in a URL's path, as Stalwart's tokenizer keeps them. One scan answers every bracket it passes, so a
 * text of unbalanced brackets costs linear time; the answers are those of a scan per bracket (the plain
 * definition below, the code before), in any order of asking.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { bracketEnd, tokenize } from '../../src/message/tokenizer.js';
import { fuzzParams } from '../helpers/fuzz.js';

const SEP = /[\x00-\x20"'<>\x7f\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]/;
/** A scan from `open` alone (the definition). */
function reference(text: string, open: number): number {
  const stack: string[] = [];
  for (let k = open; k < text.length; k++) {
    const c = text[k]!;
    if ('([{'.includes(c)) stack.push(c === '(' ? ')' : c === '[' ? ']' : '}');
    else if (')]}'.includes(c)) {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return k + 1;
    } else if (SEP.test(c)) return -1;
  }
  return -1;
}

describe('bracketEnd', () => {
  it('answers each bracket as a scan from it alone would, asked in any order', () => {
    const text = fc.array(fc.constantFrom('(', ')', '[', ']', '{', '}', 'a', '/', ' ', '"', '\u3000', 'é'), { maxLength: 60 }).map((a) => a.join(''));
    fc.assert(
      fc.property(text, fc.array(fc.nat()), (t, order) => {
        const opens = [...t].flatMap((c, i) => ('([{'.includes(c) ? [i] : []));
        const memo = new Map<number, number>();
        const asked = [...order.map((k) => opens[k % Math.max(1, opens.length)]!).filter((i) => i !== undefined), ...opens];
        for (const o of asked) expect(bracketEnd(t, o, t.length, memo), `${JSON.stringify(t)} at ${o}`).toBe(reference(t, o));
      }),
      fuzzParams(2000),
    );
  });

  it('a text of unbalanced brackets after URL paths tokenizes in linear time (was 8.8 s at 200 KB)', () => {
    // The classifier fuzz's case: each chunk is a URL with a path and an opening bracket never closed,
    // and each bracket's own scan read the rest of the text.
    const unit = '(搢🅩꜇鋗ṺЁ𒁦⦗𐐾쌓삕떖_\ud800http://?the';
    const text = unit.repeat(Math.ceil(200_000 / unit.length));
    const t0 = performance.now();
    const out = tokenize(text);
    expect(performance.now() - t0).toBeLessThan(1_000);
    expect(out.urls[0]).toBe('http://?the');
  });
});
