import { describe, expect, it } from 'vitest';
import { ExprEvalError, type EvalContext } from '../../../src/expr/types.js';
import { Float, type Value } from '../../../src/expr/value.js';
import { LookupMap, MemoryStore, StaticLookupList } from '../../../src/lookup/memory.js';
import type { LookupStore, SqlParam, SqlResult } from '../../../src/lookup/types.js';
import { callAsync } from './helpers.js';

/** A store whose every operation rejects, as a down Redis/SQL server would. */
class DownStore implements LookupStore {
  readonly type = 'Redis';
  readonly error = new Error('connection refused');
  keyGet = (): Promise<never> => Promise.reject(this.error);
  keyExists = (): Promise<never> => Promise.reject(this.error);
  keySet = (): Promise<never> => Promise.reject(this.error);
  counterGet = (): Promise<never> => Promise.reject(this.error);
  counterIncr = (): Promise<never> => Promise.reject(this.error);
  sqlQuery = (): Promise<never> => Promise.reject(this.error);
  close = async (): Promise<void> => {};
}

/** A SQL store that records its calls and answers with a fixed result. */
class FakeSql extends MemoryStore {
  calls: [string, SqlParam[]][] = [];
  constructor(private readonly result: SqlResult) {
    super('sql');
  }
  async sqlQuery(query: string, params: SqlParam[]): Promise<SqlResult> {
    this.calls.push([query, params]);
    return this.result;
  }
}

function context(lookups?: LookupMap): EvalContext {
  return { variable: () => '', global: () => 0, lookups };
}

describe('key and counter functions', () => {
  it('round-trips keys and counters on a writable store (the repo vectors)', async () => {
    const c = context(new LookupMap().set('sql', new MemoryStore('sql')));
    expect(await callAsync(c, 'key_get', 'sql', 'hello')).toBe('');
    expect(await callAsync(c, 'key_exists', 'sql', 'hello')).toBe(0);
    expect(await callAsync(c, 'key_set', 'sql', 'hello', 'world')).toBe(1);
    expect(await callAsync(c, 'key_get', 'sql', 'hello')).toBe('world');
    expect(await callAsync(c, 'key_exists', 'sql', 'hello')).toBe(1);
    expect(await callAsync(c, 'key_set', 'sql', 'n', new Float(2))).toBe(1);
    expect(await callAsync(c, 'key_get', 'sql', 'n')).toBe('2.0'); // values are stored as ts(value)
    expect(await callAsync(c, 'counter_get', 'sql', 'county')).toBe(0);
    expect(await callAsync(c, 'counter_incr', 'sql', 'county', 1)).toBe(1);
    expect(await callAsync(c, 'counter_incr', 'sql', 'county', '5')).toBe(6);
    expect(await callAsync(c, 'counter_incr', 'sql', 'county', 'x')).toBe(6); // to_integer failure → 0
    expect(await callAsync(c, 'counter_get', 'sql', 'county')).toBe(6);
    expect(await callAsync(c, 'key_get', 'sql', 'county')).toBe(''); // counters are a separate namespace
  });
  it('uses the default store for "" and "*"', async () => {
    const c = context(new LookupMap());
    expect(await callAsync(c, 'key_set', '', 'k', 'v')).toBe(1);
    expect(await callAsync(c, 'key_get', '*', 'k')).toBe('v');
  });
  it('returns "" for an unknown namespace or without a registry', async () => {
    for (const c of [context(new LookupMap()), context()]) {
      expect(await callAsync(c, 'key_get', 'nope', 'k')).toBe('');
      expect(await callAsync(c, 'key_exists', 'nope', 'k')).toBe('');
      expect(await callAsync(c, 'key_set', 'nope', 'k', 'v')).toBe('');
      expect(await callAsync(c, 'counter_get', 'nope', 'k')).toBe('');
      expect(await callAsync(c, 'counter_incr', 'nope', 'k', 1)).toBe('');
    }
  });
  it('answers static sets (Integer 1), maps (the value) and glob patterns', async () => {
    const lookups = new LookupMap()
      .set('spam-traps', new StaticLookupList('spam-traps', ['spamtrap@example.org', '*.trap.test', 'a?c']))
      .set('m', new StaticLookupList('m', [{ key: 'k', value: 'v' }, { key: 'x*', value: 'glob' }]));
    const c = context(lookups);
    expect(await callAsync(c, 'key_exists', 'spam-traps', 'spamtrap@example.org')).toBe(1);
    expect(await callAsync(c, 'key_exists', 'spam-traps', 'SPAMTRAP@example.org')).toBe(0);
    expect(await callAsync(c, 'key_exists', 'spam-traps', 'mx.trap.test')).toBe(1);
    expect(await callAsync(c, 'key_exists', 'spam-traps', 'abc')).toBe(1);
    expect(await callAsync(c, 'key_exists', 'spam-traps', 'abbc')).toBe(0);
    expect(await callAsync(c, 'key_get', 'spam-traps', 'spamtrap@example.org')).toBe(1);
    expect(await callAsync(c, 'key_get', 'spam-traps', 'other')).toBe('');
    expect(await callAsync(c, 'key_get', 'm', 'k')).toBe('v');
    expect(await callAsync(c, 'key_get', 'm', 'xyz')).toBe('glob');
  });
  it('turns NotSupported on static lists into ExprEvalError', async () => {
    const c = context(new LookupMap().set('list', new StaticLookupList('list', ['a'])));
    for (const [fn, args] of [['key_set', ['list', 'k', 'v']], ['counter_get', ['list', 'k']], ['counter_incr', ['list', 'k', 1]]] as const) {
      const err = await callAsync(c, fn, ...args).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ExprEvalError);
      expect((err as Error).message).toBe(`${fn} on lookup store "list" failed: lookup store "list" does not support ${fn}`);
    }
  });
  it('turns store rejections into ExprEvalError naming the namespace, keeping the cause', async () => {
    const down = new DownStore();
    const c = context(new LookupMap().set('redis', down));
    const calls: [string, Value[]][] = [['key_get', ['redis', 'k']], ['key_exists', ['redis', 'k']], ['key_set', ['redis', 'k', 'v']],
      ['counter_get', ['redis', 'k']], ['counter_incr', ['redis', 'k', 1]], ['sql_query', ['redis', 'SELECT 1', []]]];
    for (const [fn, args] of calls) {
      const err = await callAsync(c, fn, ...args).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(ExprEvalError);
      expect((err as Error).message).toBe(`${fn} on lookup store "redis" failed: connection refused`);
      expect((err as Error).cause).toBe(down.error);
    }
  });
});

describe('sql_query', () => {
  it('passes an Array as parameters, or one value, keeping strings and numbers', async () => {
    const sql = new FakeSql('Main domain');
    const c = context(new LookupMap().set('sql', sql));
    expect(await callAsync(c, 'sql_query', 'sql', 'SELECT description FROM domains WHERE name = ?', 'foobar.org')).toBe('Main domain');
    await callAsync(c, 'sql_query', 'sql', 'SELECT ?, ?, ?', ['a', 2, new Float(1.5)]);
    await callAsync(c, 'sql_query', 'sql', 'SELECT ?', [[1, 2]]);
    expect(sql.calls.map(([, p]) => p)).toEqual([['foobar.org'], ['a', 2, 1.5], ['1\r\n2']]);
  });
  it('maps {float} results to Float, recursively', async () => {
    const c = context(new LookupMap().set('sql', new FakeSql([[1, { float: 2.5 }], ['x', '']])));
    expect(await callAsync(c, 'sql_query', 'sql', 'SELECT a, b FROM t', [])).toEqual([[1, new Float(2.5)], ['x', '']]);
  });
  it('rejects non-SQL or unknown stores and empty queries', async () => {
    const c = context(new LookupMap().set('mem', new MemoryStore('mem')).set('sql', new FakeSql('')));
    await expect(callAsync(c, 'sql_query', 'mem', 'SELECT 1', [])).rejects.toThrow(new ExprEvalError('Store not found or is not a SQL store'));
    await expect(callAsync(c, 'sql_query', 'nope', 'SELECT 1', [])).rejects.toThrow('Store not found or is not a SQL store');
    await expect(callAsync(context(), 'sql_query', 'sql', 'SELECT 1', [])).rejects.toThrow('Store not found or is not a SQL store');
    await expect(callAsync(c, 'sql_query', 'sql', '', [])).rejects.toThrow(new ExprEvalError('Empty query string'));
  });
});

describe('directory functions', () => {
  it('ask the context, or give 0 without a directory', async () => {
    const c: EvalContext = {
      ...context(),
      isLocalDomain: (d) => d === 'foobar.org',
      isLocalAddress: async (a) => a === 'john@foobar.org',
    };
    expect(await callAsync(c, 'is_local_domain', 'foobar.org')).toBe(1);
    expect(await callAsync(c, 'is_local_domain', 'unknown.org')).toBe(0);
    expect(await callAsync(c, 'is_local_address', 'john@foobar.org')).toBe(1);
    expect(await callAsync(c, 'is_local_address', 'unknown@foobar.org')).toBe(0);
    expect(await callAsync(context(), 'is_local_domain', 'foobar.org')).toBe(0);
    const failing: EvalContext = { ...context(), isLocalDomain: () => Promise.reject(new Error('ldap down')) };
    await expect(callAsync(failing, 'is_local_domain', 'x')).rejects.toThrow(new ExprEvalError('is_local_domain failed: ldap down'));
  });
});
