/**
 * The token builder's warm-up when a long-running process loads its first model (docs/classifier.md
 * "Warm-up"): made-up texts of every kind of token go through the tokenizer, the word rules and a
 * prediction, then every token they left is forgotten.
 *
 * Why: V8 compiles a function for the branches it has run. A branch met for the first time in a real
 * message (a URL in a span longer than 600 characters, a float, a word of another script) throws the
 * compiled code away, and V8 runs the function unoptimised until it has run often enough again: on a
 * fresh process, for the first few hundred messages. Measured on the SpamAssassin corpus's unseen half
 * (same-process A/B, one message of warm-up): the classifier's time per message fell by 5–6% with this and
 * the English stemmer's warm-up (`englishWarmUpWords`), 3% with the latter alone. This one costs about
 * 0.25 s, once per thread.
 */
import { englishWarmUpWords, warmUpRandom, WordStemTokenizer } from './language.js';
import { predictCounts, type ClassifierModel } from './model.js';
import { TypedTokens } from './tokenizer.js';
import { internBoundary, TokCounter } from './tokens.js';
import { insertType } from './words.js';

/** Pieces other than plain words: every kind of token the tokenizer gives, in several spellings. */
const PIECES = [
  'http://www.example.com/path/to/page.html?q=1&r=two#frag', 'https://example.org/', 'HTTPS://Example.NET/A_B/c.d',
  'ftp://files.example.co.uk/pub/file.tar.gz', 'http://192.0.2.7:8080/x', 'https://[2001:db8::1]/v6', 'file:///tmp/report.pdf',
  'http://[word]', 'mailto:john@example.com', 'www.example.com', 'example.co.uk/offer', 'shop.example.de:443/cart', 'e.g.', 'U.S.',
  'Mr.', 'i.e.', 'john.doe@example.com', 'JANE+tag@mail.example.org', 'bad@host', 'user@192.0.2.1', '192.0.2.1', '10.0.0.254/',
  '12', '-7', '3.14', '-2.5', '1,000,000', '2024-01-31', '12:30', '$19.99', '€5', '100%', 'abc123', 'A1B2C3', 'x86_64', 'deadbeef',
  'CAFE0123', 'v2', 'mp3', 'H2O', 'Ab12Cd34Ef56', '...', '!!!', '?', '(', ')', '[', ']', '"', "'", '&', '*', '#', '@', '/', '\\',
  '—', '–', '…', '«', '»', '©', '®', '™', '•', '→', '½', '²', '\u00a0', '\u200b', 'café', 'naïve', 'Straße', 'ÉCOLE', 'señor',
  'garçon', 'привет', 'Москва', 'Αθήνα', 'مرحبا', 'שלום', 'नमस्ते', 'สวัสดี', '안녕하세요', '日本語のテキスト', '中文文本', 'ｆｕｌｌｗｉｄｔｈ',
  'пример.рф', '例え.テスト', 'http://bücher.example/straße', 'pаypal', '𝐛𝐨𝐥𝐝',
  'FREE', 'URGENT', 'Click', 'HERE', 'unsubscribe', 'Viagra', 'a', 'I', 'the', 'and',
];

/** One made-up text of about `n` tokens: English-like words in three cases among {@link PIECES}. */
function madeUpText(words: readonly string[], rnd: () => number, n: number): string {
  const parts: string[] = [];
  for (let k = 0; k < n; k++) {
    const r = rnd();
    if (r < 0.25) parts.push(PIECES[Math.floor(rnd() * PIECES.length)]!);
    else {
      const w = words[Math.floor(rnd() * words.length)]!;
      parts.push(r < 0.3 ? w.toUpperCase() : r < 0.4 ? w.charAt(0).toUpperCase() + w.slice(1) : w);
    }
    if (rnd() < 0.1) parts.push(rnd() < 0.5 ? '.' : ',');
  }
  // A span longer than the tokenizer's look-ahead (600 characters) with a host in it.
  if (rnd() < 0.3) parts.push('x'.repeat(620) + '.example.com/' + 'y'.repeat(30));
  return parts.join(rnd() < 0.9 ? ' ' : '\n');
}

/** Texts the warm-up tokenizes (about 300 tokens each). */
const WARM_UP_TEXTS = 80;

/**
 * Runs {@link WARM_UP_TEXTS} made-up texts through the tokenizer and the word rules (and a prediction
 * with `model` when given), then restarts the intern table, which forgets every token they made and
 * empties the word memos. Synchronous: no message is half built meanwhile.
 */
export function warmUpTokenBuilder(model?: ClassifierModel): void {
  const rnd = warmUpRandom(3);
  const words = englishWarmUpWords(3_000, 11);
  for (let k = 0; k < WARM_UP_TEXTS; k++) {
    const text = madeUpText(words, rnd, 300);
    const stems = new WordStemTokenizer(text);
    const counts = new TokCounter(0);
    for (const t = new TypedTokens(text, k % 3 === 0, false); t.next(); ) insertType(counts, t, stems, k % 2 === 0);
    // The options object has the shape the classify path passes (classifier.ts), so that the first real message
    // does not meet a new map where V8 optimised predictCounts for the warm-up's.
    if (model !== undefined) predictCounts(model, counts, { logScale: true, l2: true });
  }
  internBoundary(0);
}
