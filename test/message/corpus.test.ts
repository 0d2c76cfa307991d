import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { Float, type Value } from '../../src/expr/value.js';
import { analyzeMessage, GENERIC_VARIABLES, SCOPE_ORDER, type Scope } from '../../src/message/index.js';
import { loadCorpus } from '../helpers/corpus.js';

/** Each scope's allow-list (docs/expression-language.md, variables per scope): the generic variables plus the item's own. */
const ITEM_VARIABLES: Record<Scope, string[]> = {
  Url: ['url', 'value', 'url_original', 'path_query', 'path', 'query', 'scheme', 'authority', 'host', 'sld', 'port'],
  Domain: ['value'],
  Email: ['email', 'value', 'name', 'local', 'domain', 'sld'],
  Ip: ['ip', 'value', 'ip_reverse', 'octets', 'is_v4', 'is_v6', 'reverse_ip'],
  Header: ['name', 'name_lower', 'raw', 'raw_lower', 'value', 'value_lower', 'attributes'],
  Body: ['value'],
  Any: ['value'],
};

function isValue(v: Value): boolean {
  if (typeof v === 'string') return true;
  if (typeof v === 'number') return Number.isInteger(v);
  if (v instanceof Float) return true;
  return Array.isArray(v) && v.every(isValue);
}

/** Resolves every allowed variable of every element; returns a digest of all values and a count. */
async function digest(raw: Buffer): Promise<{ hash: string; elements: number; bad: string[] }> {
  const m = await analyzeMessage(raw);
  const h = createHash('sha1');
  const bad: string[] = [];
  let elements = 0;
  h.update(JSON.stringify([m.builtinTags, m.warnings, m.size]));
  const any = m.elements('Any')[0]!;
  const generic = [...GENERIC_VARIABLES].filter((n) => n !== 'location');
  for (const name of generic) {
    const v = any.variable(name);
    if (!isValue(v)) bad.push(`generic ${name}`);
    h.update(JSON.stringify(v));
  }
  for (const scope of SCOPE_ORDER) {
    for (const e of m.elements(scope)) {
      elements++;
      h.update(`${scope}|${e.location}|${e.label}`);
      // Generic variables are per message: every element must give the very same value.
      for (const name of generic) if (e.variable(name) !== any.variable(name)) bad.push(`${scope} generic ${name}`);
      if (e.variable('location') !== e.location) bad.push(`${scope} location`);
      for (const name of ITEM_VARIABLES[scope]) {
        const v = e.variable(name);
        if (!isValue(v)) bad.push(`${scope}.${name}`);
        h.update(JSON.stringify(v));
      }
    }
  }
  return { hash: h.digest('hex'), elements, bad };
}

describe('the SpamAssassin corpus', () => {
  it('analyses every message, resolves every allowed variable of every element, deterministically', async () => {
    const corpus = loadCorpus();
    expect(corpus.length).toBe(6046);
    const first: string[] = [];
    let elements = 0;
    const bad = new Set<string>();
    for (const msg of corpus) {
      const d = await digest(msg.raw);
      first.push(d.hash);
      elements += d.elements;
      for (const b of d.bad) bad.add(b);
    }
    expect([...bad]).toEqual([]);
    // Every message has at least its Any element and its headers.
    expect(elements).toBeGreaterThan(corpus.length * 10);
    for (let i = 0; i < corpus.length; i++) {
      const d = await digest(corpus[i]!.raw);
      if (d.hash !== first[i]) expect(`${corpus[i]!.group}/${corpus[i]!.file}`).toBe('deterministic');
    }
  }, 600_000);

  it('finds the elements real mail has (sanity totals over a sample)', async () => {
    const sample = loadCorpus({ step: 20 });
    const counts: Record<string, number> = {};
    let withFrom = 0;
    for (const msg of sample) {
      const m = await analyzeMessage(msg.raw);
      for (const s of SCOPE_ORDER) counts[s] = (counts[s] ?? 0) + m.elements(s).length;
      if (m.elements('Any')[0]!.variable('from') !== '') withFrom++;
    }
    expect(counts.Any).toBe(sample.length);
    expect(withFrom / sample.length).toBeGreaterThan(0.98);
    for (const s of ['Url', 'Domain', 'Email', 'Ip', 'Header', 'Body'] as const) expect(counts[s]! / sample.length).toBeGreaterThan(1);
  }, 120_000);
});
