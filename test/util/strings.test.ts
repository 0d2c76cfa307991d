/**
 * Caches that outlive a message keep copies, not views into the message (src/util/strings.ts): a host
 * name, id or word cut from a large body must not keep that body alive in the process-wide caches
 * (host names, registrable domains, the classifier's detected languages, shape codes and interned
 * tokens, lookup and DNS answers).
 */
import v8 from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { buildTokens, trainFacts } from '../../src/classifier/index.js';
import { SpamEngine } from '../../src/engine/index.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { detach } from '../../src/util/index.js';

v8.setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

/** Heap bytes in use after a full collection. */
function heapAfterGc(): number {
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

const MB = 1024 * 1024;

/** A string of `n` characters nothing else shares (a fresh one each call). */
function bigText(n: number, seed: number): string {
  return `seed${seed} ` + 'lorem ipsum dolor sit amet '.repeat(Math.ceil(n / 27));
}

describe('detach', () => {
  it('gives the same code units, lone surrogates and non-Latin-1 text included', () => {
    for (const s of ['', 'short', 'exactly13char', 'a longer host.example.com', 'naïve café ünïcödé text', '日本語のテキストです。とても長い', 'lone \uD800 surrogate \uDC00 here']) {
      const big = `${'x'.repeat(100)}${s}${'y'.repeat(100)}`;
      const cut = big.slice(100, 100 + s.length);
      expect(detach(cut)).toBe(s);
    }
  });

  it('keeps nothing of the string a value was cut from alive, where the cut itself does', () => {
    const kept: string[] = [];
    const before = heapAfterGc();
    for (let i = 0; i < 40; i++) kept.push(bigText(MB, i).slice(5, 25));
    const viaCuts = heapAfterGc() - before;
    kept.length = 0;
    const before2 = heapAfterGc();
    for (let i = 0; i < 40; i++) kept.push(detach(bigText(MB, i + 100).slice(5, 25)));
    const viaCopies = heapAfterGc() - before2;
    expect(kept.every((s) => s.length === 20)).toBe(true);
    // 40 bodies of 1 MB: the cuts keep them (the measurement sees retention), the copies do not.
    expect(viaCuts).toBeGreaterThan(30 * MB);
    expect(viaCopies).toBeLessThan(2 * MB);
  });
});

describe('process-wide caches keep no message alive', () => {
  it('analysing and tokenising large messages with unique hosts, ids and words keeps none of their bodies', async () => {
    const engine = new SpamEngine({ rules: [] });
    const message = (i: number): string => {
      const host = `host${i}uniquename.example${i % 7}.com`;
      const body = bigText(400_000, i).replace(/(.{70})/g, '$1\r\n');
      return [
        `From: Sender <s${i}@${host}>`,
        'To: rcpt@example.org',
        `Subject: report ${i} for you`,
        `Message-ID: <${i}.abcdef@${host}>`,
        'Content-Type: text/plain',
        '',
        `See https://${host}/track/id${i}x9y8z7w6v5u4t3 and mail bob@mx${i}.${host}, ref ${i}QWERTY${i}ZXCVBNM${i}`,
        `word${'q'.repeat(10)}${i} ${body}`,
        '',
      ].join('\r\n');
    };
    // Warm the caches' own structures first.
    for (let i = 0; i < 3; i++) {
      await engine.classify(message(-1 - i));
      const m = messageContextOf(await analyzeMessage(message(-10 - i)));
      await buildTokens(m, trainFacts(m), () => false);
    }
    const before = heapAfterGc();
    const n = 30;
    for (let i = 0; i < n; i++) {
      const r = await engine.classify(message(i));
      expect(r.errors ?? []).toEqual([]);
      const m = messageContextOf(await analyzeMessage(message(i)));
      expect((await buildTokens(m, trainFacts(m), () => false)).size).toBeGreaterThan(10);
    }
    const grown = heapAfterGc() - before;
    // 30 bodies of about 400 KB (12 MB) went through; before the caches kept copies, each stayed alive.
    expect(grown).toBeLessThan(3 * MB);
  }, 120_000);
});
