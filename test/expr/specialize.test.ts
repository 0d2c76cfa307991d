/**
 * The compiler's specialised paths (src/expr/specialize.ts, slots.ts) must give exactly what the
 * library functions give: every case is checked against the reference interpreter and against
 * the expected value, with the edge cases the fast paths hand back to the library.
 */
import { describe, expect, it } from 'vitest';
import {
  compileExpression, compileIfBlock, encodeValue, Float, interpretExpression, type EvalContext, type Value,
} from '../../src/expr/index.js';
import { LookupMap, MemoryStore, StaticLookupList } from '../../src/lookup/index.js';

function ctx(vars: Record<string, Value>, extra: Partial<EvalContext> = {}): EvalContext {
  return { variable: (n) => vars[n] ?? '', global: () => 0, ...extra };
}

/** The compiled result of `source`; the interpreter must give the same (encoded) value. */
function ev(source: string, short: Record<string, Value>): unknown {
  // `v` in the tests stands for the `value` variable.
  const src = source.replace(/\bv\b/g, 'value');
  const vars: Record<string, Value> = {};
  for (const [k, x] of Object.entries(short)) vars[k === 'v' ? 'value' : k] = x;
  const c = compileExpression(src);
  const got = c.evalSync(ctx(vars));
  expect(encodeValue(interpretExpression(src).evalSync(ctx(vars)))).toEqual(encodeValue(got));
  return got;
}

describe('contains with a literal needle', () => {
  it.each<[Value, string, number]>([
    ['xabcx', 'abc', 1],
    ['xabx', 'abc', 0],
    ['anything', '', 1],
    ['', '', 1],
    [123, '2', 1],
    [new Float(1.5), '.5', 1],
    [['a', 'b'], 'a', 1],
    [['ab', 'c'], 'a', 0], // arrays test membership, not substrings
    [[1, 2], '1', 1], // loose == of Integer 1 and '1'
    [[0], 'zz', 1], // 0 == non-numeric String
    [[], '', 0],
    [[new Float(2.5)], '2.5', 1], // Float element against the needle's numeric form
    [[1], '1.0', 1],
    [['1.0'], '1', 0], // two Strings compare as Strings
    [[['a']], 'a', 0], // a nested Array never equals a String
    [['x', 'SEO', 'y'], 'SEO', 1],
  ])('contains(%j, %j) = %d', (v, needle, want) => {
    expect(ev(`contains(v, ${JSON.stringify(needle)})`, { v })).toBe(want);
  });
  it('a number literal needle is compared as its string form on Strings, loosely in arrays', () => {
    expect(ev('contains(v, 12)', { v: 'a12b' })).toBe(1);
    expect(ev('contains(v, 12)', { v: ['12'] })).toBe(1);
    expect(ev('contains(v, 12)', { v: ['a12b'] })).toBe(0);
  });
  it('reads the haystack of an indexed or computed argument too', () => {
    expect(ev("contains(v[1], 'b')", { v: ['a', 'b'] })).toBe(1);
    expect(ev("contains(to_lowercase(v), 'abc')", { v: 'xABCx' })).toBe(1);
  });
});

describe('contains / is_intersect with a constant array of Strings', () => {
  it.each<[Value, number]>([
    ['to', 1],
    ['TO', 0],
    ['t', 0],
    [0, 1], // 0 == 'to' (a non-numeric String parses to 0)
    [1, 0],
    [new Float(0), 1],
    [['to'], 0], // an Array never equals a String
    ['', 0],
  ])('contains([to, cc, bcc], %j) = %d', (v, want) => {
    expect(ev("contains(['to', 'cc', 'bcc'], v)", { v })).toBe(want);
  });
  it('numeric String elements match numbers by value', () => {
    expect(ev("contains(['1.0', 'x'], v)", { v: 1 })).toBe(1);
    expect(ev("contains(['1.0', 'x'], v)", { v: '1' })).toBe(0);
  });
  it.each<[Value, number]>([
    [['x', 'www'], 1],
    [['x', 'y'], 0],
    [[], 0],
    ['ftp', 1],
    ['FTP', 0],
    [0, 1], // 0 == any non-numeric String
    [[7, 'y'], 0],
    [[0], 1],
    [[['ftp']], 0], // nested arrays never equal Strings
  ])('is_intersect([www, ftp], %j) = %d', (v, want) => {
    expect(ev("is_intersect(['www', 'ftp'], v)", { v })).toBe(want);
  });
  it('is_intersect with an array expression of variables', () => {
    expect(ev("is_intersect(['nobody', 'www'], [name, subject])", { name: 'x', subject: 'www' })).toBe(1);
    expect(ev("is_intersect(['nobody', 'www'], [name, subject])", { name: 'x', subject: 'y' })).toBe(0);
  });
});

describe('starts_with / ends_with / is_empty / contains_ignore_case', () => {
  it.each<[string, Value, number]>([
    ["starts_with(v, 'www.')", 'www.example', 1],
    ["starts_with(v, 'www.')", 'ww', 0],
    ["starts_with(v, '')", '', 1],
    ["starts_with(v, '12')", 123, 1],
    ["ends_with(v, 'c')", ['ab', 'c'], 1], // to_string joins with CRLF
    ["ends_with(v, '.onion')", 'x.onion', 1],
    ["ends_with(v, '.5')", new Float(2.5), 1],
    ['is_empty(v)', '', 1],
    ['is_empty(v)', [], 1],
    ['is_empty(v)', 0, 0],
    ['is_empty(v)', 'x', 0],
    ['is_empty(v)', [''], 0],
    ["contains_ignore_case(v, 'MDaemon')", 'by mdaemon', 1],
    ["contains_ignore_case(v, 'abc')", ['ABC'], 1],
    ["contains_ignore_case(v, 'abc')", ['xABCx'], 0],
    ["contains_ignore_case(v, '2')", 123, 1],
    ["contains_ignore_case(v, '')", 'x', 1],
  ])('%s with v = %j → %d', (src, v, want) => {
    expect(ev(src, { v })).toBe(want);
  });
  it('string == against a variable keeps loose equality for non-Strings', () => {
    expect(ev("v == 'x-mailer'", { v: 'x-mailer' })).toBe(1);
    expect(ev("v == '1'", { v: 1 })).toBe(1);
    expect(ev("v != '1'", { v: new Float(1) })).toBe(0);
    expect(ev("v == 'a'", { v: ['a'] })).toBe(0);
  });
});

describe('key_exists on static lists answers without a promise', () => {
  const lookups = new LookupMap().set('static', new StaticLookupList('static', ['a.com', '*.b.com'])).set('mem', new MemoryStore('mem'));
  it('returns plain Integers for a static list, with globs', () => {
    const c = compileExpression("key_exists('static', domain)") as ReturnType<typeof compileExpression> & {
      evalMaybe(ctx: EvalContext): unknown;
    };
    expect(c.isAsync).toBe(true);
    expect(c.evalMaybe(ctx({ domain: 'a.com' }, { lookups }))).toBe(1);
    expect(c.evalMaybe(ctx({ domain: 'x.b.com' }, { lookups }))).toBe(1);
    expect(c.evalMaybe(ctx({ domain: 'c.com' }, { lookups }))).toBe(0);
  });
  it('other stores still go through the library (same value as the interpreter)', async () => {
    const mem = new MemoryStore('mem');
    await mem.keySet('k', 'v');
    const l = new LookupMap().set('mem', mem);
    const c = compileExpression("key_exists('mem', domain)");
    const i = interpretExpression("key_exists('mem', domain)");
    for (const d of ['k', 'z']) {
      expect(await c.evalAsync(ctx({ domain: d }, { lookups: l }))).toBe(await i.evalAsync(ctx({ domain: d }, { lookups: l })));
    }
    expect(await c.evalAsync(ctx({ domain: 'k' }, { lookups: l }))).toBe(1);
    expect(lookups.get('mem')).toBeDefined();
  });
  it('an unknown store rejects exactly as the library does', async () => {
    const c = compileExpression("key_exists('nope', domain)");
    const i = interpretExpression("key_exists('nope', domain)");
    const ce = await c.evalAsync(ctx({ domain: 'x' }, { lookups })).catch((e: Error) => e.message);
    const ie = await i.evalAsync(ctx({ domain: 'x' }, { lookups })).catch((e: Error) => e.message);
    expect(ce).toBe(ie);
    expect(ce).toBe('');
    // No promise at all for an unknown namespace (spec §4.3: `""`, not an error).
    const m = c as typeof c & { evalMaybe(ctx: EvalContext): unknown };
    expect(m.evalMaybe(ctx({ domain: 'x' }, { lookups }))).toBe('');
    expect(m.evalMaybe(ctx({ domain: 'x' }))).toBe('');
  });
});

/** A context counting how often each variable is asked for. */
function counting(vars: Record<string, Value>): { c: EvalContext; reads: Map<string, number> } {
  const reads = new Map<string, number>();
  return {
    reads,
    c: {
      variable: (n) => {
        reads.set(n, (reads.get(n) ?? 0) + 1);
        return vars[n] ?? '';
      },
      global: () => 0,
    },
  };
}

describe('per-evaluation variable slots', () => {
  const src = "contains(subject, 'a') || contains(subject, 'b') || contains(subject, 'c')";
  it('an expression reads a repeated variable once per evaluation, afresh for each one', () => {
    const e = compileExpression(src);
    const one = counting({ subject: 'zzc' });
    expect(e.evalSync(one.c)).toBe(1);
    expect(one.reads.get('subject')).toBe(1);
    const two = counting({ subject: 'zzz' });
    expect(e.evalSync(two.c)).toBe(0);
    expect(two.reads.get('subject')).toBe(1);
    // The same context again is a new evaluation: read again (variables may differ per call).
    expect(e.evalSync(one.c)).toBe(1);
    expect(one.reads.get('subject')).toBe(2);
  });
  it('an if-block shares slots between its if and then expressions', () => {
    const { block } = compileIfBlock({ match: [{ if: "contains(subject, 'x')", then: "subject + '!'" }], else: 'subject' });
    const a = counting({ subject: 'xy' });
    expect(block!.evalSync(a.c)).toEqual({ value: 'xy!', branch: 0 });
    expect(a.reads.get('subject')).toBe(1);
    const b = counting({ subject: 'q' });
    expect(block!.evalSync(b.c)).toEqual({ value: 'q', branch: -1 });
    expect(b.reads.get('subject')).toBe(1);
  });
  it('captures still flow from an if to its then alongside slotted variables', () => {
    const { block } = compileIfBlock({
      match: [
        { if: "matches('^(re|fw):', subject)", then: "$1 + ':' + subject" },
        { if: "contains(subject, 'q')", then: '$1' },
      ],
      else: "'none'",
    });
    expect(block!.evalSync(counting({ subject: 're: hi' }).c)).toEqual({ value: 're:re: hi', branch: 0 });
    // A failed `matches` clears the buffer, so the second branch sees no group 1.
    expect(block!.evalSync(counting({ subject: 'q' }).c)).toEqual({ value: '', branch: 1 });
    expect(block!.evalSync(counting({ subject: 'z' }).c)).toEqual({ value: 'none', branch: -1 });
  });
  it('an expression without captures accepts a missing capture buffer', () => {
    expect(compileExpression("starts_with(value, 'a') && value == 'ab'").evalSync(ctx({ value: 'ab' }))).toBe(1);
  });
  it('async blocks get no slots: interleaved evaluations keep their own values', async () => {
    const mem = new MemoryStore('mem');
    const lookups = new LookupMap().set('mem', mem);
    const { block } = compileIfBlock({ match: [{ if: "key_exists('mem', subject) || subject == 'b'", then: 'subject' }], else: "'no'" });
    const [x, y] = await Promise.all([
      block!.evalAsync(ctx({ subject: 'b' }, { lookups })),
      block!.evalAsync(ctx({ subject: 'c' }, { lookups })),
    ]);
    expect(x).toEqual({ value: 'b', branch: 0 });
    expect(y).toEqual({ value: 'no', branch: -1 });
  });
});
