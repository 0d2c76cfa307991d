/**
 * Where the CLI finds the classifier (`--model FILE`, `--db PATH`, `--pg URL`, `--redis URL`): the
 * lookup-store configuration of each, and opening a model file that must already exist.
 */
import { existsSync } from 'node:fs';
import { openClassifier, sqliteModelConfig } from './index.js';
import type { SpamClassifier, SpamClassifierOptions } from './classifier.js';

/** The `x:StoreLookup` store object for the CLI's location flags; undefined when none is given. */
export function modelStoreConfig(flags: { model?: string; db?: string; pg?: string; redis?: string }): unknown {
  if (flags.model !== undefined) return sqliteModelConfig(flags.model);
  if (flags.pg !== undefined) {
    const u = new URL(flags.pg);
    return {
      '@type': 'PostgreSql',
      host: u.hostname,
      port: u.port === '' ? 5432 : Number(u.port),
      database: decodeURIComponent(u.pathname.replace(/^\//, '')) || 'postgres',
      authUsername: decodeURIComponent(u.username) || 'postgres',
      ...(u.password !== '' ? { authSecret: { '@type': 'Value', secret: decodeURIComponent(u.password) } } : {}),
    };
  }
  if (flags.redis !== undefined) return { '@type': 'Redis', url: flags.redis };
  // The registry's SQLite file: the classifier's keys sit beside the registry's tables.
  if (flags.db !== undefined) return sqliteModelConfig(flags.db);
  return undefined;
}

/**
 * Opens the classifier of an existing SQLite model file.
 * @throws Error when the file does not exist (a typo would otherwise create an empty model).
 */
export async function openModelFile(file: string, opts: Omit<SpamClassifierOptions, 'storeConfig'> = {}): Promise<SpamClassifier> {
  if (!existsSync(file)) throw new Error(`model file ${file} does not exist (train one with "spamrule learn --model ${file}")`);
  return openClassifier(sqliteModelConfig(file), { refreshMs: 0, ...opts });
}
