/**
 * Idempotent import of SpamRules through `x:SpamRule/set` (issue 4): existing rules are found by
 * their (normalised) name first, so running an import twice creates nothing new. Identical rules are
 * skipped; changed ones are updated with a PatchObject of the changed properties (never `name`, which
 * is immutable after create — docs/jmap.md), or skipped with `existing: 'skip'`.
 */
import { validateRegistryObject } from '../engine/schema.js';
import type { RuleInput } from './bundle.js';
import { JmapClient } from './client.js';
import { formatSetError, JmapMethodError } from './errors.js';
import type { SpamRule } from './types.js';

export interface ImportOptions {
  /** Objects per `x:SpamRule/set` call; default 50, capped by the Session's `maxObjectsInSet`. */
  batch?: number;
  /** What to do with a rule whose name exists and whose content differs; default `update`. */
  existing?: 'update' | 'skip';
  /** Compute the report without sending any `/set`. */
  dryRun?: boolean;
}

export interface ImportReport {
  created: string[];
  updated: string[];
  skipped: string[];
  /** Rule name and a readable reason (formatted SetError or method error). */
  failed: { name: string; error: string }[];
  /** Number of `/set` calls sent. */
  batches: number;
}

const PATCHABLE = ['@type', 'description', 'enable', 'priority', 'condition'] as const;

/** The PatchObject that turns `have` into `want` (top-level properties only), empty when equal. */
export function rulePatch(have: SpamRule, want: RuleInput): Record<string, unknown> {
  const patch: Record<string, unknown> = {};
  for (const p of PATCHABLE) {
    // Both sides are plain JSON with arrays for lists and the same key order from normalizeRule / the server.
    if (JSON.stringify(canonical(have[p])) !== JSON.stringify(canonical(want[p]))) patch[p] = want[p];
  }
  return patch;
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v !== null && typeof v === 'object')
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  return v;
}

type Op = { kind: 'create'; key: string; rule: RuleInput } | { kind: 'update'; key: string; rule: RuleInput; patch: Record<string, unknown> };

/**
 * Imports `rules` (already normalised, see `normalizeRule`). Throws {@link JmapRequestError} when the
 * server cannot be reached or refuses the request as a whole; per-rule refusals and method errors
 * of a batch are reported in `failed` and the import goes on with the next batch.
 */
export async function importRules(client: JmapClient, rules: RuleInput[], opts: ImportOptions = {}): Promise<ImportReport> {
  const report: ImportReport = { created: [], updated: [], skipped: [], failed: [], batches: 0 };
  const existing = new Map((await client.getAll<SpamRule>('SpamRule')).map((r) => [r.name, r]));
  const seen = new Set<string>();
  const ops: Op[] = [];
  for (const rule of rules) {
    if (seen.has(rule.name)) {
      report.failed.push({ name: rule.name, error: 'the file names this rule more than once; only the first is imported' });
      continue;
    }
    seen.add(rule.name);
    const have = existing.get(rule.name);
    if (have === undefined) {
      ops.push({ kind: 'create', key: `r${ops.length}`, rule });
      continue;
    }
    const patch = rulePatch(have, rule);
    if (Object.keys(patch).length === 0 || opts.existing === 'skip') report.skipped.push(rule.name);
    else ops.push({ kind: 'update', key: have.id, rule, patch });
  }
  if (opts.dryRun) {
    for (const op of ops) (op.kind === 'create' ? report.created : report.updated).push(op.rule.name);
    return report;
  }

  const { maxObjectsInSet } = await client.limits();
  const size = Math.max(1, Math.min(opts.batch ?? 50, maxObjectsInSet));
  for (let i = 0; i < ops.length; i += size) {
    const chunk = ops.slice(i, i + size);
    const create: Record<string, Record<string, unknown>> = {};
    const update: Record<string, Record<string, unknown>> = {};
    for (const op of chunk) {
      if (op.kind === 'create') create[op.key] = { ...op.rule };
      else update[op.key] = op.patch;
    }
    report.batches++;
    let res;
    try {
      res = await client.setRules({
        ...(Object.keys(create).length ? { create } : {}),
        ...(Object.keys(update).length ? { update } : {}),
      });
    } catch (e) {
      if (!(e instanceof JmapMethodError)) throw e;
      for (const op of chunk) report.failed.push({ name: op.rule.name, error: e.message });
      continue;
    }
    for (const op of chunk) {
      if (op.kind === 'create') {
        const err = res.notCreated?.[op.key];
        if (res.created?.[op.key]) report.created.push(op.rule.name);
        else report.failed.push({ name: op.rule.name, error: err ? formatSetError('create', err) : 'not created (no reason given)' });
      } else {
        const err = res.notUpdated?.[op.key];
        if (res.updated && op.key in res.updated) report.updated.push(op.rule.name);
        else report.failed.push({ name: op.rule.name, error: err ? formatSetError('update', err) : 'not updated (no reason given)' });
      }
    }
  }
  return report;
}

/** The property that identifies an object of each registry type across imports (Stalwart's names). */
export const IMPORT_KEYS = { SpamTag: 'tag', SpamDnsblServer: 'name', HttpLookup: 'namespace', SpamFileExtension: 'extension' } as const;
export type ImportableType = keyof typeof IMPORT_KEYS;

/**
 * Imports SpamTag, SpamDnsblServer, HttpLookup or SpamFileExtension objects through
 * `x:<type>/set`, idempotently like {@link importRules}: objects are matched by their key property
 * ({@link IMPORT_KEYS}), new ones created, identical ones skipped, changed ones updated with a
 * PatchObject of the changed top-level properties. The report names objects by their key. Throws
 * {@link JmapRequestError} when the server cannot be reached.
 */
export async function importObjects(
  client: JmapClient,
  type: ImportableType,
  objects: Record<string, unknown>[],
  opts: ImportOptions = {},
): Promise<ImportReport> {
  const key = IMPORT_KEYS[type];
  const report: ImportReport = { created: [], updated: [], skipped: [], failed: [], batches: 0 };
  if (objects.length === 0) return report;
  const existing = new Map((await client.getAll<Record<string, unknown>>(type)).map((o) => [String(o[key]), o]));
  const seen = new Set<string>();
  const ops: { kind: 'create' | 'update'; key: string; name: string; body: Record<string, unknown> }[] = [];
  for (const raw of objects) {
    // Compared in the stored shape (defaults applied, lists as arrays), as the server keeps it.
    const v = validateRegistryObject(type, raw);
    const o = v.ok ? (v.value as Record<string, unknown>) : raw;
    const name = String(o[key]);
    if (seen.has(name)) {
      report.failed.push({ name, error: `the file names this ${type} more than once; only the first is imported` });
      continue;
    }
    seen.add(name);
    const have = existing.get(name);
    if (have === undefined) {
      ops.push({ kind: 'create', key: `o${ops.length}`, name, body: o });
      continue;
    }
    const patch: Record<string, unknown> = {};
    for (const [p, v] of Object.entries(o)) if (p !== key && JSON.stringify(canonical(have[p])) !== JSON.stringify(canonical(v))) patch[p] = v;
    if (Object.keys(patch).length === 0 || opts.existing === 'skip') report.skipped.push(name);
    else ops.push({ kind: 'update', key: String(have.id), name, body: patch });
  }
  if (opts.dryRun) {
    for (const op of ops) (op.kind === 'create' ? report.created : report.updated).push(op.name);
    return report;
  }
  const { maxObjectsInSet } = await client.limits();
  const size = Math.max(1, Math.min(opts.batch ?? 50, maxObjectsInSet));
  for (let i = 0; i < ops.length; i += size) {
    const chunk = ops.slice(i, i + size);
    const create = Object.fromEntries(chunk.filter((op) => op.kind === 'create').map((op) => [op.key, op.body]));
    const update = Object.fromEntries(chunk.filter((op) => op.kind === 'update').map((op) => [op.key, op.body]));
    report.batches++;
    let res;
    try {
      res = await client.set<Record<string, unknown>>(type, {
        ...(Object.keys(create).length ? { create } : {}),
        ...(Object.keys(update).length ? { update } : {}),
      });
    } catch (e) {
      if (!(e instanceof JmapMethodError)) throw e;
      for (const op of chunk) report.failed.push({ name: op.name, error: e.message });
      continue;
    }
    for (const op of chunk) {
      if (op.kind === 'create') {
        const err = res.notCreated?.[op.key];
        if (res.created?.[op.key]) report.created.push(op.name);
        else report.failed.push({ name: op.name, error: err ? formatSetError('create', err) : 'not created (no reason given)' });
      } else {
        const err = res.notUpdated?.[op.key];
        if (res.updated && op.key in res.updated) report.updated.push(op.name);
        else report.failed.push({ name: op.name, error: err ? formatSetError('update', err) : 'not updated (no reason given)' });
      }
    }
  }
  return report;
}
