/**
 * Unicode helpers of the content checks: zero-width and obscured characters, and the mixed-script test over
 * augmented script sets (UTS #39 §5.1), as Stalwart's unicode functions define them.
 */
import { describe, expect, it } from 'vitest';
import { confusableCureAvailable, cureConfusables, isMixedCharset, isObscured, isZeroWidth } from '../../src/message/scripts.js';

describe('unicode helpers', () => {
  it('classifies zero-width and obscured code points', () => {
    expect([0x200b, 0x200c, 0x200d, 0xfeff, 0xad].every(isZeroWidth)).toBe(true);
    expect(isZeroWidth(0x200e)).toBe(false);
    expect([0x200b, 0x200f, 0x2028, 0x202e, 0x205f, 0x206f, 0xfeff].every(isObscured)).toBe(true);
    expect(isObscured(0xad)).toBe(false);
    expect(isObscured(0x2030)).toBe(false);
  });

  it('finds mixed scripts among non-ASCII characters only', () => {
    expect(isMixedCharset('Tést 孔子')).toBe(true); // Latin ∩ Han = ∅
    expect(isMixedCharset('Test 孔子')).toBe(false); // ASCII is ignored
    expect(isMixedCharset('日本語のテキスト')).toBe(false); // Han, Hiragana, Katakana share Jpan
    expect(isMixedCharset('한국어 漢字')).toBe(false); // Hangul and Han share Kore
    expect(isMixedCharset('www.áррӏе.com')).toBe(true); // Latin á with Cyrillic
    expect(isMixedCharset('привет, мир')).toBe(false);
    expect(isMixedCharset('café – naïve')).toBe(false); // the dash is Common
    expect(isMixedCharset('plain ascii')).toBe(false);
    expect(isMixedCharset('')).toBe(false);
  });
});

describe('cureConfusables (decancer, shared by the url module and the classifier)', () => {
  it('folds look-alike letters to ASCII and leaves plain text as it is', () => {
    expect(confusableCureAvailable()).toBe(true);
    expect(cureConfusables('p\u0430yp\u0430l.com')).toBe('paypal.com'); // Cyrillic а
    expect(cureConfusables('\uff28\uff25\uff2c\uff2c\uff2f')).toBe('hello'); // full-width
    expect(cureConfusables('example.org')).toBe('example.org');
  });
});
