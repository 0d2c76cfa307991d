/**
 * The spam-trap step (src/analysis/spamtrap.ts) with real lookup stores: a SQLite store and a static
 * (`MemoryLookupKey`) list holding `spam-traps`; a store that fails; and what SPAM_TRAP changes downstream
 * (the statistical classifier is skipped, the rules still run, as in Stalwart).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClassifierStore, DEFAULT_SETTINGS, SpamClassifier } from '../../src/classifier/index.js';
import { DEFAULT_RULES, DEFAULT_TAGS, SpamEngine, type SpamRuleInput } from '../../src/engine/index.js';
import { createLookupStore, LookupMap, MemoryStore, StaticLookupList, type LookupStore } from '../../src/lookup/index.js';
import { hamMessage, spamMessage } from '../classifier/helpers.js';
import { tempDir } from '../servers/common.js';

const dir = tempDir('spamtrap');
const stores: LookupStore[] = [];
const sqlite = (file: string): LookupStore => {
  const s = createLookupStore('spam-traps', { '@type': 'Sqlite', path: join(dir, file) }, { cache: { enabled: false } });
  stores.push(s);
  return s;
};
afterAll(async () => {
  await Promise.all(stores.map((s) => s.close()));
});

const MSG = 'From: Spammer <spammer@example.net>\r\nTo: someone@example.org\r\nSubject: cheap\r\n\r\nBuy now.\r\n';
const SAW_TRAP: SpamRuleInput = { '@type': 'Any', name: 'SAW_TRAP', priority: 1, condition: { match: [{ if: '$SPAM_TRAP', then: "'RULE_SAW_TRAP'" }], else: 'false' } };

describe('spam-trap step', () => {
  let traps: LookupStore;
  let engine: SpamEngine;
  beforeAll(async () => {
    traps = sqlite('traps.db');
    await traps.keySet('trap@example.org', '1');
    engine = new SpamEngine({ rules: [SAW_TRAP], lookups: new LookupMap().set('spam-traps', traps) });
  });

  it('sets SPAM_TRAP when an envelope recipient is in a SQLite spam-traps store (RCPT TO lowercased), named in the result', async () => {
    const r = await engine.classify(MSG, { session: { rcptTo: ['someone@example.org', 'Trap@Example.ORG'] } });
    expect(r.tags).toContain('SPAM_TRAP');
    expect(r.analysis).toContainEqual({ module: 'spamtrap', tag: 'SPAM_TRAP' });
    // The rules still run and see it (Stalwart's pipeline goes on after the step).
    expect(r.tags).toContain('RULE_SAW_TRAP');
    expect(r.warnings.filter((w) => w.startsWith('spamtrap:'))).toEqual([]);
  });

  it('sets nothing for other recipients, for no recipient, or without a spam-traps namespace', async () => {
    expect((await engine.classify(MSG, { session: { rcptTo: ['someone@example.org', 'other@example.org'] } })).tags).not.toContain('SPAM_TRAP');
    expect((await engine.classify(MSG)).tags).not.toContain('SPAM_TRAP');
    // Headers are not envelope recipients.
    expect((await engine.classify(MSG.replace('someone@', 'trap@'), { session: { rcptTo: ['someone@example.org'] } })).tags).not.toContain('SPAM_TRAP');
    const none = await new SpamEngine({ lookups: new LookupMap() }).classify(MSG, { session: { rcptTo: ['trap@example.org'] } });
    expect(none.tags).not.toContain('SPAM_TRAP');
  });

  it('with the default rule set (the CLI\'s when no rules are given), a trapped message scores 15 and is spam; the same message to another recipient is not', async () => {
    const e = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS, lookups: new LookupMap().set('spam-traps', traps) });
    const trapped = await e.classify(MSG, { session: { rcptTo: ['trap@example.org'] } });
    expect(trapped.scores['SPAM_TRAP']).toBe(15);
    expect(trapped.action).not.toBe('allow');
    const clean = await e.classify(MSG, { session: { rcptTo: ['someone@example.org'] } });
    expect(clean.action).toBe('allow');
  });

  it('reads a static list with glob keys (the MemoryLookupKey spamtrap@* of Stalwart\'s suite)', async () => {
    const list = new StaticLookupList('spam-traps', [{ key: 'spamtrap@*', isGlobPattern: true }]);
    const e = new SpamEngine({ lookups: new LookupMap().set('spam-traps', list) });
    expect((await e.classify(MSG, { session: { rcptTo: ['SpamTrap@foobar.org'] } })).tags).toContain('SPAM_TRAP');
    expect((await e.classify(MSG, { session: { rcptTo: ['user@foobar.org'] } })).tags).not.toContain('SPAM_TRAP');
  });

  it('a store that fails: no tag, a warning per recipient, classify carries on', async () => {
    writeFileSync(join(dir, 'broken.db'), 'this is not an SQLite database, but it is long enough to have a header'.repeat(20));
    const broken = sqlite('broken.db');
    const e = new SpamEngine({ rules: [SAW_TRAP, { ...SAW_TRAP, name: 'ALWAYS', condition: { match: [{ if: 'true', then: "'SEEN'" }], else: 'false' } }], lookups: new LookupMap().set('spam-traps', broken) });
    const r = await e.classify(MSG, { session: { rcptTo: ['a@example.org', 'b@example.org'] } });
    expect(r.tags).not.toContain('SPAM_TRAP');
    expect(r.tags).toEqual(expect.arrayContaining(['SEEN', 'MISSING_DATE']));
    const w = r.warnings.filter((x) => x.startsWith('spamtrap:'));
    expect(w).toHaveLength(2);
    expect(w[0]).toMatch(/^spamtrap: lookup of "a@example\.org" in "spam-traps" failed \(lookup store "spam-traps": .*not a database.*\); that recipient was not checked$/);
    expect(r.errors).toEqual([]);
  });

  it('can be switched off like any module (--no-module spamtrap)', async () => {
    const off = new SpamEngine({ lookups: new LookupMap().set('spam-traps', traps), analysis: { modules: { spamtrap: false } } });
    expect((await off.classify(MSG, { session: { rcptTo: ['trap@example.org'] } })).tags).not.toContain('SPAM_TRAP');
  });
});

describe('SPAM_TRAP and the statistical classifier', () => {
  it('the classifier is skipped for a trapped message (no PROB_* tag, no confidence), and runs for the others', async () => {
    const c = new SpamClassifier(new ClassifierStore(new MemoryStore()), { settings: { ...DEFAULT_SETTINGS, minHamSamples: 10, minSpamSamples: 10 }, refreshMs: 0 });
    for (let i = 0; i < 15; i++) await c.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await c.learn(hamMessage(i), false);
    await c.train({ seed: 1 });
    const traps = new StaticLookupList('spam-traps', ['trap@example.org']);
    const e = new SpamEngine({ classifier: c, lookups: new LookupMap().set('spam-traps', traps) });
    const normal = await e.classify(spamMessage(30), { session: { rcptTo: ['user@example.org'] } });
    expect(normal.classifier?.tag).toBe('PROB_SPAM_HIGH');
    expect(normal.tags).toContain('PROB_SPAM_HIGH');
    const trapped = await e.classify(spamMessage(30), { session: { rcptTo: ['user@example.org', 'trap@example.org'] } });
    expect(trapped.tags).toContain('SPAM_TRAP');
    expect(trapped.classifier).toBeUndefined();
    expect(trapped.tags.filter((t) => t.startsWith('PROB_'))).toEqual([]);
  });
});
