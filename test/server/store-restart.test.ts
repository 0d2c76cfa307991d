/**
 * Under `spamrule serve --db`, a StoreLookup changed over JMAP whose new configuration cannot start reaches the
 * scan workers as the JMAP server's own engine has it (test/jmap/store-restart.test.ts): the workers drop the old
 * configuration (its server gets no more commands, no connection stays open) and fail the namespace's lookups
 * with the reason, the other rules still running, counted in `spamrule_store_errors_total`; a name that gave no
 * address is tried again and the workers get the new configuration once it resolves. Real Redis servers on
 * 127.0.0.1 and a real worker pool (src/cli/serve-managed.ts, src/server/pool.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClassifyResult } from '../../src/engine/index.js';
import { startManaged } from '../../src/cli/serve-managed.js';
import type { ServeConfig } from '../../src/server/config.js';
import { ServerMetrics } from '../../src/server/metrics.js';
import { SpamEnginePool } from '../../src/server/index.js';
import { redisCli, startRedis, waitFor, type RedisServer } from '../servers/index.js';
import { jmapCall, type Invocation } from '../jmap/harness.js';
import { clientsConnected, commandsRun, expectStoreDown, failures, mail, NAMESPACE, policy, rules, storeAt, zone } from '../jmap/store-restart-cases.js';

let a: RedisServer;
let b: RedisServer;
let dir: string;
beforeAll(async () => {
  [a, b] = await Promise.all([startRedis(), startRedis()]);
  redisCli(a.port, 'SET', 'listed.example', 'TRUSTED_A');
  redisCli(b.port, 'SET', 'listed.example', 'TRUSTED_B');
  dir = mkdtempSync(join(tmpdir(), 'spamrule-restart-'));
}, 60_000);
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  rmSync(dir, { recursive: true, force: true });
});

/** Classifies until `done` holds of the verdict (each thread builds its stores when the rule set reaches it). */
async function classifyUntil(pool: SpamEnginePool, what: string, done: (v: ClassifyResult) => boolean): Promise<ClassifyResult> {
  let v: ClassifyResult | undefined;
  await waitFor(what, async () => done((v = await pool.classify(mail))), 15_000, 50);
  return v!;
}

/** A pool of two workers under a managed JMAP server, with the rules and the store "trusted" at A, working. */
async function managed(z: ReturnType<typeof zone>, name: string, logs: string[]) {
  z.names.set('old.restart.test', ['127.0.0.1']);
  const pool = new SpamEnginePool({ rules: [], workers: 2, engine: { analysis: false } });
  const c = { db: join(dir, `${name}.db`), managedStores: policy } as unknown as ServeConfig;
  const jmap = await startManaged(c, { host: '127.0.0.1', port: 0 }, pool, (l) => logs.push(l), undefined, undefined, {
    resolveStoreHost: (host) => z.resolve(host),
    storeRetryMs: 200,
  });
  const token = jmap.tokens.create('admin', ['sysSpamRuleCreate', 'sysStoreLookupCreate', 'sysStoreLookupUpdate', 'sysStoreLookupDestroy']).token;
  const r = await jmapCall(jmap.url, token, [
    ['x:SpamRule/set', { create: rules }, 'r'],
    ['x:StoreLookup/set', { create: { k: { namespace: NAMESPACE, store: storeAt('old.restart.test', a.port) } } }, 's'],
  ]);
  const id = r[1]![1].created?.k?.id as string;
  expect(id, JSON.stringify(r)).toBeTypeOf('string');
  await jmap.settled();
  return { pool, jmap, id, call: (methodCalls: Invocation[]) => jmapCall(jmap.url, token, methodCalls) };
}

describe('serve: a store changed to a configuration that cannot start', () => {
  it.each(failures(0, zone()).map(([what], i) => [what, i] as const))('%s: the workers drop the old store and fail its lookups', async (_what, i) => {
    const z = zone();
    const [, change, error] = failures(b.port, z)[i]!;
    const logs: string[] = [];
    const { pool, jmap, id, call } = await managed(z, `fail-${i}`, logs);
    try {
      await classifyUntil(pool, 'the store at A answered', (v) => v.tags.includes('TRUSTED_A'));
      expect(clientsConnected(a.port)).toBeGreaterThan(0);

      const [[, res]] = await call([['x:StoreLookup/set', { update: { [id]: { store: change() } } }, 'u']]);
      expect(res!.updated, JSON.stringify(res)).toHaveProperty(id);
      await jmap.settled();
      expect(logs.join('\n')).toMatch(/lookup store "trusted" not started: /);
      // What the workers get: the reason, not the old configuration.
      expect(pool.ruleSet.stores?.find((s) => s.namespace === NAMESPACE)).toEqual({ namespace: NAMESPACE, config: null, notStarted: expect.any(String) });

      await classifyUntil(pool, 'the workers took the change', (v) => !v.tags.includes('TRUSTED_A'));
      await waitFor('the old connections closed', () => clientsConnected(a.port) === 0, 5_000, 50);
      const before = commandsRun(a.port);
      const metrics = new ServerMetrics();
      // Six messages at once, so that both workers scan some.
      for (const v of await Promise.all(Array.from({ length: 6 }, () => pool.classify(mail)))) {
        metrics.countErrors(v);
        expectStoreDown(v, error);
      }
      expect(commandsRun(a.port)).toBe(before);
      expect(clientsConnected(a.port)).toBe(0);
      expect(await metrics.render()).toMatch(/^spamrule_store_errors_total\{namespace="trusted"\} 6$/m);
    } finally {
      await jmap.close();
      await pool.close();
    }
  }, 60_000);

  it('a name that gave no address is tried again: once it resolves, the workers get the new configuration', async () => {
    const z = zone();
    const [, change] = failures(b.port, z)[0]!;
    const { pool, jmap, id, call } = await managed(z, 'retry', []);
    try {
      await classifyUntil(pool, 'the store at A answered', (v) => v.tags.includes('TRUSTED_A'));
      await call([['x:StoreLookup/set', { update: { [id]: { store: change() } } }, 'u']]);
      await jmap.settled();
      await classifyUntil(pool, 'the lookups failed', (v) => v.errors.some((e) => e.store === NAMESPACE));
      // Retries that find the name still unresolved leave the workers' rule set as it is (no update per retry).
      const stores = pool.ruleSet.stores;
      await new Promise((r) => setTimeout(r, 500));
      expect(pool.ruleSet.stores).toBe(stores);

      z.names.set('new.restart.test', ['127.0.0.1']);
      const v = await classifyUntil(pool, 'the store at B answered', (r) => r.tags.includes('TRUSTED_B'));
      expect(v.errors).toEqual([]);
      expect(v.tags).toContain('SUBJECT_SEEN');
      expect(pool.ruleSet.stores?.find((s) => s.namespace === NAMESPACE)?.pinned?.addresses).toEqual({ 'new.restart.test': '127.0.0.1' });

      await call([['x:StoreLookup/set', { destroy: [id] }, 'd']]);
      await jmap.settled();
      expect(pool.ruleSet.stores?.find((s) => s.namespace === NAMESPACE)).toBeUndefined();
      const gone = await classifyUntil(pool, 'the namespace was removed', (r) => !r.tags.includes('TRUSTED_B'));
      expect(gone.errors).toEqual([]);
    } finally {
      await jmap.close();
      await pool.close();
    }
  }, 60_000);
});
