/**
 * Issue 4 end to end: `spamrule import` loads Stalwart's published rule set through x:SpamRule/set,
 * then `spamrule classify --server` classifies real corpus mail with the managed set, giving exactly
 * the verdicts of the same bundle loaded from the file.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { run as importCmd } from '../../src/cli/import.js';
import { capture } from '../helpers/capture.js';
import { corpusDir } from '../helpers/corpus.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';
import { startHarness, type Harness } from '../jmap/harness.js';

describe.skipIf(!hasSharedData)('import over JMAP, then classify real mail with the managed rule set', () => {
  let h: Harness;
  beforeAll(async () => {
    h = await startHarness();
  });
  afterAll(() => h?.close());

  it('matches the verdicts of the file-loaded bundle on 60 corpus messages', async () => {
    const file = sharedPath('stalwart-spam-filter', 'spam-filter-rules.json');
    const tags = join(h.dir, 'scores.json');
    const lists = join(h.dir, 'lists');
    const imp = await capture(() => importCmd([file, '--server', h.server.url, '--token', h.admin, '--tags-out', tags, '--lists-out', lists]));
    expect(imp.result).toBe(0);
    expect(imp.stdout).not.toMatch(/MemoryLookupKey: .* not imported/);
    // Running it again duplicates nothing; without --lists-out it says where the static lists did not go.
    const again = await capture(() => importCmd([file, '--server', h.server.url, '--token', h.admin]));
    expect(again.result).toBe(0);
    expect(again.stdout).toMatch(/\nMemoryLookupKey: \d+ keys in 3 lists not imported \([^)]*trusted-domains \d+[^)]*\): JMAP does not manage them; write them with --lists-out DIR/);
    const r = await h.call([['x:SpamRule/query', { calculateTotal: true }, 'q']]);
    expect(r[0]![1].total).toBe(66);

    const dir = corpusDir();
    const msgs = ['spam-2', 'easy-ham-1'].flatMap((g) =>
      readdirSync(join(dir, g))
        .filter((f) => f.endsWith('.txt'))
        .sort()
        .slice(0, 30)
        .map((f) => join(dir, g, f)),
    );
    const listFlags = readdirSync(lists).flatMap((f) => ['--list', `${f.replace(/\.txt$/, '')}=${join(lists, f)}`]);
    const managed = await capture(() => classify(['--json', '--server', h.server.url, '--token', h.admin, '--scores', tags, ...listFlags, ...msgs]));
    const direct = await capture(() => classify(['--json', '--rules', file, ...msgs]));
    expect(managed.result).toBe(0);
    expect(direct.result).toBe(0);
    const pick = (out: string) =>
      out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l) as { tags: string[]; score: number; action: string })
        .map((x) => ({ tags: [...x.tags].sort(), score: x.score, action: x.action }));
    const a = pick(managed.stdout);
    expect(a).toHaveLength(60);
    expect(a).toEqual(pick(direct.stdout));
    expect(a.filter((x) => x.tags.some((t) => !t.startsWith('X_HDR_'))).length).toBeGreaterThan(10);
  }, 120_000);
});
