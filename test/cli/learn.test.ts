/**
 * `spamrule learn` and `classify --model`: folders and mbox files of labelled mail (with non-mail files
 * mixed in) train a SQLite model file; classify then adds PROB_* tags; --forget removes samples.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { run as learn } from '../../src/cli/learn.js';
import { openModelFile } from '../../src/classifier/cli.js';
import { capture } from '../helpers/capture.js';
import { hamMessage, spamMessage } from '../classifier/helpers.js';
import { REPO_ROOT } from '../helpers/shared-data.js';
import { freePort } from '../servers/index.js';

const CLI = [process.execPath, '--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts')] as const;

const dir = mkdtempSync(join(tmpdir(), 'spamrule-learn-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const spamDir = join(dir, 'spam');
const hamDir = join(dir, 'ham');
mkdirSync(spamDir);
mkdirSync(hamDir);
for (let i = 0; i < 12; i++) writeFileSync(join(spamDir, `${i}.eml`), spamMessage(i));
writeFileSync(join(spamDir, 'notes.json'), '{"not": "mail"}');
writeFileSync(join(spamDir, 'image.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2, 3]));
writeFileSync(join(spamDir, 'empty.eml'), '');
// Ham as one mbox file.
writeFileSync(join(hamDir, 'ham.mbox'), Array.from({ length: 10 }, (_, i) => `From alice@corp.example Mon Jan  1 00:00:00 2024\n${hamMessage(i)}`).join('\n'));
const model = join(dir, 'model.sqlite');

describe('spamrule learn', () => {
  it('stores spam and ham from folders and mbox files, skips what is not mail, and trains a model', async () => {
    const { result, stderr } = await capture(() => learn(['--model', model, '--min-samples', '10', '--spam', spamDir, '--ham', join(hamDir, 'ham.mbox')]));
    expect(stderr).toMatch(/stored 12 spam and 10 ham samples; skipped 3 files that are not mail\n/);
    expect(stderr).toMatch(/trained model generation 1 on 24 samples/);
    expect(result).toBe(0);
  }, 120_000);

  it('classify --model adds the classifier\'s PROB_* tag', async () => {
    const msg = join(dir, 'new.eml');
    writeFileSync(msg, spamMessage(77));
    const { result, stdout } = await capture(() => classify(['--json', '--model', model, msg]));
    expect(result).toBe(0);
    const rec = JSON.parse(stdout.trim()) as { tags: string[]; score: number; scores: Record<string, number>; classifier: { confidence: number; tag: string; generation: number } };
    expect(rec.tags).toContain('PROB_SPAM_HIGH');
    // The verdict says what the model answered, and the default rule set scores the tag as Stalwart's does.
    expect(rec.classifier).toMatchObject({ tag: 'PROB_SPAM_HIGH', generation: 1 });
    expect(rec.classifier.confidence).toBeGreaterThanOrEqual(0.85);
    expect(rec.scores.PROB_SPAM_HIGH).toBe(8);
    expect(rec.score).toBeGreaterThanOrEqual(8);
    const explained = await capture(() => classify(['--explain', '--model', model, msg]));
    expect(explained.stdout).toMatch(/PROB_SPAM_HIGH +8\.00 {2}classifier \(spam confidence 0\.\d{3}, model generation 1\)\n/);
    expect(explained.stdout).not.toMatch(/set upstream/);
    const missing = await capture(() => classify(['--model', join(dir, 'nope.sqlite'), msg]));
    expect(missing.result).toBe(2);
    expect(missing.stderr).toMatch(/does not exist/);
  }, 120_000);

  it('says when there are too few samples, and --forget removes samples and rebuilds', async () => {
    const m2 = join(dir, 'small.sqlite');
    const few = await capture(() => learn(['--model', m2, '--spam', join(spamDir, '0.eml'), '--ham', join(hamDir, 'ham.mbox')]));
    expect(few.stderr).toMatch(/not enough samples for a model yet: 10 ham and 1 spam, 100 of each needed/);
    expect(few.stderr).not.toMatch(/learned again/);
    // The same spam message learned again as ham: stored, then counted once with its latest label.
    const again = await capture(() => learn(['--model', m2, '--ham', join(spamDir, '0.eml')]));
    expect(again.stderr).toMatch(/stored 0 spam and 1 ham sample\n/);
    expect(again.stderr).toMatch(/not enough samples for a model yet: 11 ham and 0 spam/);
    expect(again.stderr).toMatch(/1 sample was a message learned again since the last training: counted once, with its latest label/);

    const forget = await capture(() => learn(['--model', model, '--min-samples', '10', '--forget', join(spamDir, '0.eml'), join(spamDir, '1.eml')]));
    expect(forget.stderr).toMatch(/forgot 2 samples/);
    expect(forget.stderr).toMatch(/trained model generation 2/);
    const c = await openModelFile(model);
    expect(c.generation).toBe(2);
    await c.store.store.close();

    const all = await capture(() => learn(['--model', model, '--forget']));
    expect(all.stderr).toMatch(/forgot the model/);
    const c2 = await openModelFile(model);
    expect(c2.generation).toBe(0);
    await c2.store.store.close();

    const bad = await capture(() => learn(['--spam', spamDir]));
    expect(bad.result).toBe(2);
    expect(bad.stderr).toMatch(/exactly one of --model/);
  }, 120_000);

  it('a store that cannot be reached is an error, and the process exits (no Redis client left retrying)', async () => {
    // A closed loopback port; a Redis client left open would retry for ever and keep the process alive.
    const port = await freePort();
    const child = spawn(CLI[0], [...CLI.slice(1), 'learn', '--redis', `redis://127.0.0.1:${port}`, '--spam', join(spamDir, '0.eml')], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((resolve) => {
      const t = setTimeout(() => {
        child.kill('SIGKILL');
        resolve(null);
      }, 45_000);
      child.on('exit', (c) => {
        clearTimeout(t);
        resolve(c);
      });
    });
    expect(stderr).toMatch(/^spamrule learn: cannot open the model in --redis: /m);
    expect(code).toBe(2);
  }, 60_000);

  it('classify --model refuses a database that holds no model, without changing it, and a damaged one', async () => {
    const foreign = join(dir, 'foreign.sqlite');
    const db = new Database(foreign);
    db.exec('CREATE TABLE t (x INTEGER)');
    db.close();
    const msg = join(dir, 'some.eml');
    writeFileSync(msg, spamMessage(5));
    const r = await capture(() => classify(['--model', foreign, msg]));
    expect(r.result).toBe(2);
    expect(r.stderr).toMatch(/holds no spamrule model/);
    const after = new Database(foreign, { readonly: true });
    expect((after.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((t) => t.name)).toEqual(['t']);
    after.close();

    const damaged = join(dir, 'damaged.sqlite');
    expect((await capture(() => learn(['--model', damaged, '--spam', join(spamDir, '0.eml')]))).result).toBe(0);
    const w = new Database(damaged);
    w.prepare("INSERT INTO spamrule_kv (k, v) VALUES ('classifier:current', 'banana') ON CONFLICT (k) DO UPDATE SET v = excluded.v").run();
    w.close();
    const d = await capture(() => classify(['--model', damaged, msg]));
    expect(d.result).toBe(2);
    expect(d.stderr).toMatch(/classifier:current holds "banana", not a generation number/);
  }, 60_000);

  it('--model naming a folder is refused by learn and classify, and nothing is written into it', async () => {
    const folder = join(dir, 'models');
    mkdirSync(folder);
    const l = await capture(() => learn(['--model', folder, '--spam', join(spamDir, '0.eml')]));
    expect(l.result).toBe(2);
    expect(l.stderr).toMatch(/--model .*models is a folder: name the model's file, e\.g\. .*models\/model\.sqlite/);
    const c = await capture(() => classify(['--model', folder, join(spamDir, '0.eml')]));
    expect(c.result).toBe(2);
    expect(c.stderr).toMatch(/--model .*models is a folder/);
    expect(readdirSync(folder)).toEqual([]);
  });

  it('a store that fails while samples are stored: the error, and how many were stored before it', async () => {
    const locked = join(dir, 'locked.sqlite');
    expect((await capture(() => learn(['--model', locked, '--spam', join(spamDir, '0.eml')]))).result).toBe(0);
    // Another process holds the write lock past the store's 5 s wait.
    const other = new Database(locked);
    other.exec('BEGIN IMMEDIATE');
    try {
      const r = await capture(() => learn(['--model', locked, '--spam', join(spamDir, '1.eml')]));
      expect(r.result).toBe(1);
      expect(r.stderr).toMatch(/database is locked/);
      expect(r.stderr).toMatch(/^spamrule learn: 0 spam and 0 ham samples were stored before the failure; they stay, and the model in use is unchanged$/m);
    } finally {
      other.exec('COMMIT');
      other.close();
    }
  }, 60_000);

  it('a --pg URL that does not parse says how to write the password, without repeating it', async () => {
    for (const url of ['postgres://u:se#cret@127.0.0.1/db', 'postgres://u:se%zzcret@127.0.0.1/db']) {
      const r = await capture(() => learn(['--pg', url, '--spam', join(spamDir, '0.eml')]));
      expect(r.result).toBe(2);
      expect(r.stderr).toMatch(/--pg: not a postgres:\/\/ URL .*%23/);
      expect(r.stderr).not.toMatch(/se.?.?.?cret/);
    }
  });
});
