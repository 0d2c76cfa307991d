/**
 * Where the CLI finds the classifier (`--model FILE|URL`, `--db PATH`, `--pg URL`, `--redis URL`): the
 * lookup-store configuration of each, and opening a model that must already exist.
 */
import { existsSync } from 'node:fs';
import { requireSqlite } from '../lookup/drivers.js';
import { openClassifier, sqliteModelConfig } from './index.js';
import { modelFileProblem, modelLocationKind, modelLocationName, modelStoreConfig } from './location.js';

export { modelFileProblem, modelLocationKind, modelLocationName, modelStoreConfig } from './location.js';
import type { SpamClassifier, SpamClassifierOptions } from './classifier.js';

/**
 * Opens the classifier of an existing model: a SQLite file, or a PostgreSQL or Redis URL
 * ({@link modelLocationKind}).
 * @throws Error when the file does not exist (a typo would otherwise create an empty model) or is a folder,
 * when the store cannot be reached, or when a PostgreSQL or Redis store holds no trained model yet.
 */
export async function openModelFile(file: string, opts: Omit<SpamClassifierOptions, 'storeConfig'> = {}): Promise<SpamClassifier> {
  if (modelLocationKind(file) !== 'file') {
    const c = await openClassifier(modelStoreConfig({ model: file }), { refreshMs: 0, ...opts });
    if (c.generation === 0) {
      await c.close().catch(() => {});
      const flag = modelLocationKind(file) === 'pg' ? '--pg' : '--redis';
      throw new Error(`${modelLocationName(file)} holds no trained spamrule model (train one with "spamrule learn ${flag} URL")`);
    }
    return c;
  }
  if (!existsSync(file)) throw new Error(`model file ${file} does not exist (train one with "spamrule learn --model ${file}")`);
  const problem = modelFileProblem(file);
  if (problem !== undefined) throw new Error(problem);
  if (!isModelFile(file)) throw new Error(`${file} holds no spamrule model (no classifier samples or generations; train one with "spamrule learn --model ${file}")`);
  return openClassifier(sqliteModelConfig(file), { refreshMs: 0, ...opts });
}

/**
 * Whether a SQLite file holds the classifier's records (a `learn --model` file, or a `--db` registry
 * learned into), read without writing: opening it as a store would add the store's tables to any
 * database given by mistake. @throws the driver's error for a file that is not a SQLite database.
 */
function isModelFile(file: string): boolean {
  const Sqlite = requireSqlite();
  const db = new Sqlite(file, { readonly: true, fileMustExist: true });
  try {
    const tables = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name));
    const has = (table: string): boolean => tables.has(table) && db.prepare(`SELECT 1 FROM ${table} WHERE k >= 'classifier:' AND k < 'classifier;' LIMIT 1`).get() !== undefined;
    return has('spamrule_counter') || has('spamrule_kv');
  } finally {
    db.close();
  }
}
