/**
 * Unicode helpers of Stalwart's content checks (`stalwart:crates/common/src/scripts/functions/unicode.rs`):
 * zero-width and "obscured" characters, and the mixed-script test of UTS #39 §5.1 over augmented
 * script sets (the `unicode-security` crate's `is_mixed_charset` as Stalwart uses it, docs/analysis.md).
 *
 * Script data comes from the JavaScript engine's own Unicode tables (`\p{Script_Extensions=…}`), so the
 * Unicode version is Node's (15.x for Node 20), not a table of ours.
 */

import { createRequire } from 'node:module';

type Cure = (input: string) => { toString(): string };
let cureFn: Cure | null | undefined;

/**
 * Loads decancer (a native addon: the confusable/homoglyph folding Stalwart applies to URL hosts and to
 * classifier words) on first call. False when it cannot load on this platform; callers then skip what
 * needs it (HOMOGRAPH_URL, the classifier's word cure) instead of failing.
 */
export function confusableCureAvailable(): boolean {
  if (cureFn === undefined) {
    try {
      cureFn = createRequire(import.meta.url)('decancer') as Cure;
    } catch {
      cureFn = null;
    }
  }
  return cureFn !== null;
}

/**
 * decancer's `cure(s)`: `s` with confusable characters folded to their ASCII look-alikes. Undefined when
 * decancer is not available ({@link confusableCureAvailable}) or refuses the input (it throws on some).
 */
export function cureConfusables(s: string): string | undefined {
  if (!confusableCureAvailable()) return undefined;
  try {
    return cureFn!(s).toString();
  } catch {
    return undefined;
  }
}

/** U+200B, U+200C, U+200D, U+FEFF, U+00AD. */
export function isZeroWidth(cp: number): boolean {
  return cp === 0x200b || cp === 0x200c || cp === 0x200d || cp === 0xfeff || cp === 0xad;
}

/** U+200B–U+200F, U+2028–U+202F, U+205F–U+206F, U+FEFF. */
export function isObscured(cp: number): boolean {
  return (cp >= 0x200b && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f) || (cp >= 0x205f && cp <= 0x206f) || cp === 0xfeff;
}

/** ISO 15924 codes of the scripts Unicode 15 defines (Common and Inherited excluded). */
const SCRIPT_CODES = (
  'Adlm Aghb Ahom Arab Armi Armn Avst Bali Bamu Bass Batk Beng Bhks Bopo Brah Brai Bugi Buhd Cakm Cans Cari Cham ' +
  'Cher Chrs Copt Cpmn Cprt Cyrl Deva Diak Dogr Dsrt Dupl Egyp Elba Elym Ethi Geor Glag Gong Gonm Goth Gran Grek ' +
  'Gujr Guru Hang Hani Hano Hatr Hebr Hira Hluw Hmng Hmnp Hung Ital Java Kali Kana Kawi Khar Khmr Khoj Kits Knda ' +
  'Kthi Lana Laoo Latn Lepc Limb Lina Linb Lisu Lyci Lydi Mahj Maka Mand Mani Marc Medf Mend Merc Mero Mlym Modi ' +
  'Mong Mroo Mtei Mult Mymr Nagm Nand Narb Nbat Newa Nkoo Nshu Ogam Olck Orkh Orya Osge Osma Ougr Palm Pauc Perm ' +
  'Phag Phli Phlp Phnx Plrd Prti Rjng Rohg Runr Samr Sarb Saur Sgnw Shaw Shrd Sidd Sind Sinh Sogd Sogo Sora Soyo ' +
  'Sund Sylo Syrc Tagb Takr Tale Talu Taml Tang Tavt Telu Tfng Tglg Thaa Thai Tibt Tirh Tnsa Toto Ugar Vaii Vith ' +
  'Wara Wcho Xpeo Xsux Yezi Yiii Zanb'
).split(' ');

/** One regex per script the engine knows (a code the engine's Unicode version lacks is left out). */
const SCRIPTS: { code: string; re: RegExp }[] = [];
for (const code of SCRIPT_CODES) {
  try {
    SCRIPTS.push({ code, re: new RegExp(`^\\p{Script_Extensions=${code}}$`, 'u') });
  } catch {
    // older Unicode data in this engine: the script cannot occur in its tables either
  }
}
const COMMON_OR_INHERITED = /^[\p{Script_Extensions=Zyyy}\p{Script_Extensions=Zinh}]$/u;

/** Augmented script set of one code point; `null` = all scripts (Common, Inherited). */
type ScriptSet = ReadonlySet<string> | null;

// Distinct code points are few in practice; bounded so hostile text cannot grow it without limit.
const setCache = new Map<number, ScriptSet>();
const MAX_CACHE = 50_000;

function augmentedScripts(cp: number): ScriptSet {
  const hit = setCache.get(cp);
  if (hit !== undefined) return hit;
  const ch = String.fromCodePoint(cp);
  let out: ScriptSet;
  if (COMMON_OR_INHERITED.test(ch)) out = null;
  else {
    const s = new Set<string>();
    for (const { code, re } of SCRIPTS) if (re.test(ch)) s.add(code);
    // UTS #39 §5.1 augmentation: Han also stands for Hanb/Jpan/Kore, kana for Jpan, Hangul for Kore, Bopomofo for Hanb.
    if (s.has('Hani')) s.add('Hanb').add('Jpan').add('Kore');
    if (s.has('Hira') || s.has('Kana')) s.add('Jpan');
    if (s.has('Hang')) s.add('Kore');
    if (s.has('Bopo')) s.add('Hanb');
    out = s;
  }
  if (setCache.size < MAX_CACHE) setCache.set(cp, out);
  return out;
}

/**
 * Is `text` mixed-script? ASCII characters are ignored; the augmented script sets of the others are
 * intersected, and the text is mixed when at least one non-ASCII character exists and the intersection
 * is empty (`Tést 孔子` is mixed, `Test 孔子` and `日本語のテキスト` are not). Linear in `text`.
 */
export function isMixedCharset(text: string): boolean {
  let acc: Set<string> | null = null;
  let seen = false;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) continue;
    seen = true;
    const s = augmentedScripts(cp);
    if (s === null) continue;
    if (acc === null) acc = new Set(s);
    else for (const x of acc) if (!s.has(x)) acc.delete(x);
    if (acc.size === 0) return true;
  }
  return seen && acc !== null && acc.size === 0;
}
