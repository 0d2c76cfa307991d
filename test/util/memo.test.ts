/**
 * Per-message memos (src/util/memo.ts): values kept on their key object, so a message's memoised data
 * dies in the first young-generation collection after the message, where an old WeakMap keeps it until
 * a full collection.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import type { RawHeader } from '../../src/message/headers.js';
import { mimeView } from '../../src/message/text-parts.js';
import { MemoSlot, type MemoHolder } from '../../src/util/index.js';

const run = promisify(execFile);

/** Bytes that survived V8's young-generation collections in a child process memoising 100,000 short-lived keys' values (fixtures/memo-scavenge.mts). */
async function survivedScavenges(mode: 'slot' | 'weakmap' | 'none'): Promise<number> {
  const child = fileURLToPath(new URL('./fixtures/memo-scavenge.mts', import.meta.url));
  const memo = new URL('../../src/util/memo.ts', import.meta.url).href;
  const { stdout } = await run(process.execPath, ['--import', 'tsx', '--trace-gc-nvp', child, memo, mode], { maxBuffer: 64 * 1024 * 1024 });
  expect(stdout).toContain('done 2000000');
  let survived = 0;
  for (const line of stdout.split('\n')) {
    if (!line.includes('gc=s ')) continue;
    survived += Number(/new_space_survived=(\d+)/.exec(line)?.[1] ?? 0);
  }
  return survived;
}

const MB = 1024 * 1024;

describe('MemoSlot', () => {
  it('keeps one value per key and per slot, like a WeakMap', () => {
    const a = new MemoSlot<MemoHolder, string>();
    const b = new MemoSlot<MemoHolder, number>();
    const k1: MemoHolder = {};
    const k2: MemoHolder = {};
    expect(a.get(k1)).toBeUndefined();
    a.set(k1, 'one');
    b.set(k1, 1);
    a.set(k2, 'two');
    expect([a.get(k1), b.get(k1), a.get(k2), b.get(k2)]).toEqual(['one', 1, 'two', undefined]);
    a.set(k1, 'again');
    expect(a.get(k1)).toBe('again');
    // The key stays the plain data it was.
    const header: RawHeader = { name: 'Subject', raw: ' hi\r\n' };
    const c = new MemoSlot<RawHeader, string>();
    c.set(header, 'memo');
    expect(JSON.stringify(header)).toBe('{"name":"Subject","raw":" hi\\r\\n"}');
    expect({ ...header }).toEqual({ name: 'Subject', raw: ' hi\r\n' });
    expect(c.get(header)).toBe('memo');
  });

  it('lets a dropped key take its value with it in young-generation collections, where a module-level WeakMap keeps it', async () => {
    const [slot, weakmap, none] = await Promise.all([survivedScavenges('slot'), survivedScavenges('weakmap'), survivedScavenges('none')]);
    // 100,000 values of ~1.5 KB: the WeakMap's survive the scavenges (tens of MB), the slot's no more than without a memo.
    expect(weakmap - none).toBeGreaterThan(20 * MB);
    expect(slot - none).toBeLessThan(2 * MB);
  }, 60_000);

  it("holds the MIME view of a message on its context (built once, dies with it)", async () => {
    const raw = 'From: a@example.com\r\nTo: b@example.org\r\nSubject: hi\r\nContent-Type: text/plain\r\n\r\nHello there.\r\n';
    const ctx = messageContextOf(await analyzeMessage(raw));
    const view = mimeView(ctx);
    expect(mimeView(ctx)).toBe(view);
    expect(ctx.view).toBe(view);
  });
});
