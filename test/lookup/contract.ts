/**
 * The behaviour every writable lookup store shares (docs/lookup-stores.md), run against each
 * adapter on a real server. Keys are prefixed per suite so reruns against one server don't collide.
 */
import { expect, it } from 'vitest';
import type { LookupStore } from '../../src/lookup/index.js';

export function kvContract(store: () => LookupStore, prefix: string): void {
  const k = (s: string) => `${prefix}:${s}`;

  it('key_get of a missing key is null; key_set then key_get returns the string', async () => {
    const s = store();
    expect(await s.keyGet(k('missing'))).toBeNull();
    expect(await s.keyExists(k('missing'))).toBe(false);
    await s.keySet(k('a'), 'value-1');
    expect(await s.keyGet(k('a'))).toBe('value-1');
    expect(await s.keyExists(k('a'))).toBe(true);
    await s.keySet(k('a'), 'value-2');
    expect(await s.keyGet(k('a'))).toBe('value-2');
  });

  it('keeps UTF-8 keys and values intact', async () => {
    const s = store();
    await s.keySet(k('ünïcode-✓'), 'välue ✓ 日本');
    expect(await s.keyGet(k('ünïcode-✓'))).toBe('välue ✓ 日本');
  });

  it('a key set with a TTL expires', async () => {
    const s = store();
    await s.keySet(k('ttl'), 'soon-gone', 150);
    expect(await s.keyGet(k('ttl'))).toBe('soon-gone');
    await new Promise((r) => setTimeout(r, 400));
    expect(await s.keyGet(k('ttl'))).toBeNull();
    expect(await s.keyExists(k('ttl'))).toBe(false);
  });

  it('counters start at 0, add (negative too) and are a namespace apart from keys', async () => {
    const s = store();
    expect(await s.counterGet(k('c'))).toBe(0);
    expect(await s.counterIncr(k('c'), 5)).toBe(5);
    expect(await s.counterIncr(k('c'), -2)).toBe(3);
    expect(await s.counterGet(k('c'))).toBe(3);
    expect(await s.keyGet(k('c'))).toBeNull();
    await s.keySet(k('c'), 'text');
    expect(await s.counterGet(k('c'))).toBe(3);
  });

  it('concurrent increments are not lost', async () => {
    const s = store();
    const results = await Promise.all(Array.from({ length: 50 }, () => s.counterIncr(k('race'), 1)));
    expect(await s.counterGet(k('race'))).toBe(50);
    expect([...results].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
  });

  it('many concurrent reads of one message all resolve', async () => {
    const s = store();
    await Promise.all(Array.from({ length: 20 }, (_, i) => s.keySet(k(`many-${i}`), `v${i}`)));
    const got = await Promise.all(Array.from({ length: 200 }, (_, i) => s.keyGet(k(`many-${i % 25}`))));
    expect(got.slice(0, 25)).toEqual([...Array.from({ length: 20 }, (_, i) => `v${i}`), null, null, null, null, null]);
  });
}

/** `sql_query` result shapes of §4.3, for a store whose placeholder is `ph(i)` (1-based). */
export function sqlContract(store: () => LookupStore, ph: (i: number) => string, table: string): void {
  it('sql_query shapes results as the spec says', async () => {
    const s = store();
    const q = (sql: string, args: (string | number)[] = []) => s.sqlQuery!(sql, args);
    await q(`DROP TABLE IF EXISTS ${table}`);
    expect(await q(`CREATE TABLE ${table} (name VARCHAR(100), n INTEGER, f DOUBLE PRECISION, note VARCHAR(100))`)).toBe(0);
    expect(await q(`INSERT INTO ${table} (name, n, f, note) VALUES (${ph(1)}, ${ph(2)}, ${ph(3)}, NULL), (${ph(4)}, ${ph(5)}, ${ph(6)}, 'x')`, ['alice', 7, 1.5, 'bob', 9, 2])).toBe(2);
    // no rows → ""
    expect(await q(`SELECT name FROM ${table} WHERE name = ${ph(1)}`, ['nobody'])).toBe('');
    // one row, one column → the value, typed
    expect(await q(`SELECT name FROM ${table} WHERE n = ${ph(1)}`, [7])).toBe('alice');
    expect(await q(`SELECT n FROM ${table} WHERE name = ${ph(1)}`, ['bob'])).toBe(9);
    expect(await q(`SELECT f FROM ${table} WHERE name = ${ph(1)}`, ['alice'])).toEqual({ float: 1.5 });
    expect(await q(`SELECT f FROM ${table} WHERE name = ${ph(1)}`, ['bob'])).toEqual({ float: 2 });
    // one row, one NULL column → [""]
    expect(await q(`SELECT note FROM ${table} WHERE name = ${ph(1)}`, ['alice'])).toEqual(['']);
    // one row, several columns → an Array
    expect(await q(`SELECT name, n, note FROM ${table} WHERE name = ${ph(1)}`, ['bob'])).toEqual(['bob', 9, 'x']);
    // several rows → Array of Arrays
    expect(await q(`select name, n from ${table} order by n`)).toEqual([
      ['alice', 7],
      ['bob', 9],
    ]);
    // arguments are parameters, never spliced into the text
    expect(await q(`SELECT n FROM ${table} WHERE name = ${ph(1)}`, ["alice' OR '1'='1"])).toBe('');
    // other statements → affected rows
    expect(await q(`UPDATE ${table} SET n = n + 1 WHERE n > ${ph(1)}`, [0])).toBe(2);
    expect(await q(`DELETE FROM ${table} WHERE name = ${ph(1)}`, ['alice'])).toBe(1);
  });
}
