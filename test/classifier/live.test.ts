/**
 * `liveClassifier` (exported by the package, docs/classifier.md): a long-running engine's classifier
 * that opens its store at once, classifies with the current model, and switches to a newer generation
 * trained by another classifier on the same store within `refreshMs`, without a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_RULES, DEFAULT_TAGS, liveClassifier, openClassifier, SpamEngine, sqliteModelConfig } from '../../src/index.js';
import { hamMessage, spamMessage } from './helpers.js';

const settings = { minHamSamples: 10, minSpamSamples: 10 };
const dir = mkdtempSync(join(tmpdir(), 'spamrule-live-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('liveClassifier', () => {
  it('classifies with no model as no verdict, then picks up each generation another classifier trains', async () => {
    const file = join(dir, 'model.sqlite');
    const trainer = await openClassifier(sqliteModelConfig(file), { settings, refreshMs: 0 });
    const live = liveClassifier(sqliteModelConfig(file), { settings, refreshMs: 50, preload: false });
    const engine = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS });
    engine.classifier = live;
    const opts = { session: { rcptTo: ['user@example.org'] } };

    const before = await engine.classify(spamMessage(90), opts);
    expect(before.classifier).toBeUndefined();
    expect(before.tags.some((t) => t.startsWith('PROB_'))).toBe(false);

    for (let i = 0; i < 12; i++) await trainer.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await trainer.learn(hamMessage(i), false);
    expect(await trainer.train({ seed: 1 })).toMatchObject({ ready: true, generation: 1 });

    /** Classifies until the live classifier answers with `generation` (a refresh runs in the background). */
    const until = async (generation: number): Promise<Awaited<ReturnType<SpamEngine['classify']>>> => {
      for (let i = 0; i < 100; i++) {
        const r = await engine.classify(spamMessage(91), opts);
        if (r.classifier?.generation === generation) return r;
        await live.idle();
        await new Promise((res) => setTimeout(res, 60));
      }
      throw new Error(`generation ${generation} never picked up`);
    };
    const first = await until(1);
    expect(first.classifier!.tag).toBe('PROB_SPAM_HIGH');
    expect(first.tags).toContain('PROB_SPAM_HIGH');
    expect(first.scores.PROB_SPAM_HIGH).toBe(8);

    for (let i = 12; i < 16; i++) await trainer.learn(spamMessage(i), true);
    expect(await trainer.train({ seed: 1 })).toMatchObject({ ready: true, generation: 2 });
    expect((await until(2)).classifier!.generation).toBe(2);

    await live.idle();
    await live.store.store.close();
    await trainer.store.store.close();
  }, 120_000);

  it('a refresh that meets a damaged model reports it once to onError and keeps the model in use; a good one is picked up after', async () => {
    const file = join(dir, 'damaged.sqlite');
    const trainer = await openClassifier(sqliteModelConfig(file), { settings, refreshMs: 0 });
    for (let i = 0; i < 12; i++) await trainer.learn(spamMessage(i), true);
    for (let i = 0; i < 10; i++) await trainer.learn(hamMessage(i), false);
    expect(await trainer.train({ seed: 1 })).toMatchObject({ ready: true, generation: 1 });
    const errors: string[] = [];
    const live = liveClassifier(sqliteModelConfig(file), { settings, refreshMs: 20, preload: false }, (e) => errors.push(e.message));
    const engine = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS });
    engine.classifier = live;
    const opts = { session: { rcptTo: ['user@example.org'] } };
    expect((await engine.classify(spamMessage(91), opts)).classifier?.generation).toBe(1);

    // A newer generation whose model record is damaged (another process wrote it, a disk went bad).
    const store = trainer.store.store;
    const good = (await store.keyGet('classifier:gen:1:model')) as string;
    const next = await store.counterIncr('classifier:gen', 1);
    await store.keySet(`classifier:gen:${next}:model`, good.slice(0, good.length >> 1));
    await store.keySet('classifier:current', String(next));
    for (let i = 0; i < 8; i++) {
      expect((await engine.classify(spamMessage(91), opts)).classifier?.generation).toBe(1);
      await live.idle();
      await new Promise((res) => setTimeout(res, 30));
    }
    // Every refresh met it; it is said once, naming the record.
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(new RegExp(`classifier:gen:${next}:model is damaged`));

    // A good model again: picked up, and a later failure would be reported anew.
    await store.keySet(`classifier:gen:${next}:model`, good);
    let gen = 0;
    for (let i = 0; i < 100 && gen !== next; i++) {
      gen = (await engine.classify(spamMessage(91), opts)).classifier?.generation ?? 0;
      await live.idle();
      await new Promise((res) => setTimeout(res, 30));
    }
    expect(gen).toBe(next);
    expect(errors).toHaveLength(1);

    await live.idle();
    await live.store.store.close();
    await trainer.store.store.close();
  }, 120_000);
});
