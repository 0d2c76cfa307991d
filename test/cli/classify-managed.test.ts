/**
 * `classify --db` and `classify --server` use the rule set (and StoreLookups) managed over JMAP
 * (issue 4): a rule and a SQLite lookup store created through the API decide the classification.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { createLookupStore } from '../../src/lookup/index.js';
import { capture } from '../helpers/capture.js';
import { REPO_ROOT } from '../helpers/shared-data.js';
import { startHarness, type Harness } from '../jmap/harness.js';

let h: Harness;
const HAM = join(REPO_ROOT, 'examples', 'mail', 'ham-meeting.eml');

beforeAll(async () => {
  h = await startHarness();
  const listsDb = join(h.dir, 'lists.db');
  const seed = createLookupStore('partners', { '@type': 'Sqlite', path: listsDb });
  await seed.keySet('example.net', '1');
  await seed.close();
  const r = await h.call([
    ['x:StoreLookup/set', { create: { s: { namespace: 'partners', store: { '@type': 'Sqlite', path: listsDb } } } }, 's'],
    [
      'x:SpamRule/set',
      {
        create: {
          r: {
            '@type': 'Any',
            name: 'KNOWN_PARTNER',
            priority: 10,
            condition: { match: [{ if: "key_exists('partners', from.domain)", then: "'FROM_PARTNER'" }], else: "'FROM_STRANGER'" },
          },
        },
      },
      'r',
    ],
  ]);
  expect(r[0]![1].created.s.id).toBeTypeOf('string');
  expect(r[1]![1].created.r.id).toBeTypeOf('string');
});
afterAll(() => h.close());

describe('classify with the managed rule set', () => {
  it('--db PATH reads rules and stores from the server database', async () => {
    const { result, stdout } = await capture(() => classify(['--json', '--db', h.db, HAM]));
    expect(result).toBe(0);
    const rec = JSON.parse(stdout.trim()) as { tags: string[]; errors: unknown[] };
    expect(rec.errors).toEqual([]);
    expect(rec.tags).toContain('FROM_PARTNER');
    expect(rec.tags).not.toContain('FROM_STRANGER');
  });

  it('--server URL reads them over JMAP with a token', async () => {
    const { result, stdout } = await capture(() => classify(['--json', '--server', h.server.url, '--token', h.admin, HAM]));
    expect(result).toBe(0);
    expect((JSON.parse(stdout.trim()) as { tags: string[] }).tags).toContain('FROM_PARTNER');
  });

  it('--server without a token is a usage error', async () => {
    const { result, stderr } = await capture(() => classify(['--server', h.server.url, HAM]));
    expect(result).toBe(2);
    expect(stderr).toMatch(/needs a token/);
  });
});
