/**
 * `spamrule import FILE`: loads Stalwart's published `spam-filter-rules.json` and sends its SpamRules,
 * SpamTags, SpamDnsblServers, HttpLookups and SpamFileExtensions through `x:<type>/set` in batches,
 * idempotently (existing names are skipped when identical and updated otherwise). SpamTag scores
 * and MemoryLookupKey lists (not managed over JMAP) can also go to files the engine loads:
 * `--tags-out` (for `--scores`) and `--lists-out` (for `--list`).
 */
import { join } from 'node:path';
import { parseCliArgs } from '../util/index.js';
import { importObjects, importRules, readStalwartBundle, writeListsDir, writeTagsFile, type ImportableType, type ImportReport } from '../client/index.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, connectionFrom, reportError, usageError } from '../client/cli-util.js';
import { optionError } from './errors.js';

const HELP = `usage: spamrule import FILE [options]

Imports the SpamRules, SpamTags, SpamDnsblServers, HttpLookups and SpamFileExtensions of a
Stalwart spam-filter bundle (spam-filter-rules.json, or a JSON array of SpamRules) into a JMAP
server. Objects are matched by name (tag, namespace, extension): new ones are created, identical
ones skipped, changed ones updated, so running the import again duplicates nothing.

Options:
  --batch N             SpamRules per x:SpamRule/set call (default 50; capped by maxObjectsInSet)
  --skip-existing       leave rules that already exist alone even when they differ
  --dry-run             report what would be created/updated/skipped; change nothing
  --tags-out FILE       write the bundle's SpamTag scores as JSON (use with "classify --scores FILE" or
                        "lint --scores FILE")
  --lists-out DIR       write one NAMESPACE.txt per MemoryLookupKey list, one key per line
                        (use with "classify --list NAMESPACE=DIR/NAMESPACE.txt")
  --files-only          only write --tags-out/--lists-out; do not contact a server
  --json                print the report as JSON
  -h, --help            this help
${CONNECTION_HELP}
Exit status: 0 success, 1 a rule failed or the server could not be reached, 2 bad usage.
`;

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  ...CONNECTION_OPTIONS,
  batch: { type: 'string' },
  'skip-existing': { type: 'boolean' },
  'dry-run': { type: 'boolean' },
  'tags-out': { type: 'string' },
  'lists-out': { type: 'string' },
  'files-only': { type: 'boolean' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Entry point: returns the exit status (0 ok, 1 failures, 2 usage). */
export async function run(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseCliArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    process.stderr.write(optionError('import', e));
    return 2;
  }
  const v = parsed.values;
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (parsed.positionals.length !== 1) return usageError('import', 'expected exactly one FILE', HELP);
  let batch = 50;
  if (v.batch !== undefined) {
    if (!/^\d+$/u.test(v.batch) || Number(v.batch) < 1) return usageError('import', `--batch expects a positive integer, got "${v.batch}"`, HELP);
    batch = Number(v.batch);
  }
  if (v['files-only'] && v['tags-out'] === undefined && v['lists-out'] === undefined)
    return usageError('import', '--files-only needs --tags-out or --lists-out', HELP);

  const file = parsed.positionals[0]!;
  const summary: Record<string, unknown> = {};
  const lines: string[] = [];
  try {
    const bundle = readStalwartBundle(file);
    // Local files first: they do not depend on the server being reachable.
    if (v['tags-out'] !== undefined) {
      const n = writeTagsFile(v['tags-out'], bundle.tags);
      summary.tags = { file: v['tags-out'], count: n };
      lines.push(`SpamTag: ${n} scores written to ${v['tags-out']}`);
    }
    const listsOut = v['lists-out'];
    if (listsOut !== undefined) {
      const { counts, skipped } = writeListsDir(listsOut, bundle.memoryKeys);
      summary.lists = { dir: listsOut, counts, skipped: skipped.length };
      const total = Object.values(counts).reduce((a, b) => a + b, 0);
      lines.push(
        `MemoryLookupKey: ${total} keys in ${Object.keys(counts).length} lists written to ${listsOut}` +
          (Object.keys(counts).length ? `: ${Object.entries(counts).map(([ns, c]) => `${join(listsOut, `${ns}.txt`)} (${c})`).join(', ')}` : ''),
      );
      for (const k of skipped) lines.push(`  left out (a list file cannot express it): ${k.namespace} ${JSON.stringify(k.key)}`);
    }
    const other = Object.entries(bundle.other);
    if (other.length) {
      summary.notImported = bundle.other;
      lines.push(`not imported (not managed over JMAP): ${other.map(([k, n]) => `${k} (${n})`).join(', ')}`);
    }

    let report: ImportReport | undefined;
    let failed = 0;
    if (!v['files-only']) {
      const client = connectionFrom(v);
      report = await importRules(client, bundle.rules, { batch, existing: v['skip-existing'] ? 'skip' : 'update', dryRun: v['dry-run'] === true });
      summary.rules = report;
      const verb = v['dry-run'] ? 'would be ' : '';
      lines.unshift(
        `SpamRule: ${report.created.length} ${verb}created, ${report.updated.length} ${verb}updated, ${report.skipped.length} skipped, ` +
          `${report.failed.length} failed (${bundle.rules.length} in ${file}, ${report.batches} batch${report.batches === 1 ? '' : 'es'})`,
      );
      for (const f of report.failed) process.stderr.write(`spamrule import: ${f.name}: ${f.error}\n`);
      failed += report.failed.length;
      // The rest of the filter configuration, so a server's whole setup lives in its registry.
      const objects: Record<string, ImportReport> = {};
      const lists: [ImportableType, Record<string, unknown>[]][] = [
        ['SpamTag', bundle.tags], ['SpamDnsblServer', bundle.dnsblServers], ['HttpLookup', bundle.httpLookups], ['SpamFileExtension', bundle.fileExtensions],
      ];
      for (const [type, list] of lists) {
        if (list.length === 0) continue;
        const r = await importObjects(client, type, list, { batch, existing: v['skip-existing'] ? 'skip' : 'update', dryRun: v['dry-run'] === true });
        objects[type] = r;
        const verb = v['dry-run'] ? 'would be ' : '';
        lines.splice(
          lines.length - (other.length ? 1 : 0), 0,
          `${type}: ${r.created.length} ${verb}created, ${r.updated.length} ${verb}updated, ${r.skipped.length} skipped, ${r.failed.length} failed (${list.length} in ${file}, ${r.batches} batch${r.batches === 1 ? '' : 'es'})`,
        );
        for (const f of r.failed) process.stderr.write(`spamrule import: ${type} ${f.name}: ${f.error}\n`);
        failed += r.failed.length;
      }
      if (Object.keys(objects).length > 0) summary.objects = objects;
    }
    if (listsOut === undefined && bundle.memoryKeys.length > 0) {
      // Not sent anywhere: say so, or the rules that read these namespaces warn later with no hint why.
      const counts = new Map<string, number>();
      for (const k of bundle.memoryKeys) counts.set(k.namespace, (counts.get(k.namespace) ?? 0) + 1);
      summary.listsNotWritten = Object.fromEntries(counts);
      lines.push(
        `MemoryLookupKey: ${bundle.memoryKeys.length} keys in ${counts.size} list${counts.size === 1 ? '' : 's'} not imported ` +
          `(${[...counts].map(([ns, c]) => `${ns} ${c}`).join(', ')}): JMAP does not manage them; write them with --lists-out DIR ` +
          `and load them with --list NAMESPACE=DIR/NAMESPACE.txt (classify, serve)`,
      );
    }
    process.stdout.write(v.json ? JSON.stringify(summary, null, 2) + '\n' : lines.join('\n') + '\n');
    return failed > 0 ? 1 : 0;
  } catch (e) {
    return reportError('import', e);
  }
}
