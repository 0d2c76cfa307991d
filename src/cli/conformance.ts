/**
 * `spamrule conformance FILE`: runs a `stalwart-antispam-suite/v1` file (Stalwart's own spam-filter
 * test cases as JSON) and prints one JSON line per case: `{"id", "tags": [...]}` or, for header
 * cases, `{"id", "header": "X-Spam-Result: … X-Spam-Score: …"}`, plus `"skipped"` for steps not
 * built here. `--diff` adds what is missing/extra and exits 1 when a case fails.
 */
import { readFileSync } from 'node:fs';
import { parseCliArgs, parseJsonText } from '../util/index.js';
import { parseSuite, runSuite } from '../conformance/index.js';
import { optionError } from './errors.js';

const HELP = `usage: spamrule conformance FILE [--file NAME]... [--id ID]... [--rules PATH] [--diff] [--summary]

Runs Stalwart's spam-filter test cases (stalwart-antispam-suite/v1 JSON): per case only the steps
the case names, with the file's DNS mocks, lookup lists and test-mode behaviour.

  --file NAME   only cases of this test file (repeatable): from, helo, received, …
  --id ID       only this case (repeatable): from#3
  --rules PATH  Stalwart's spam-filter-rules.json, or the folder holding it (default: ../stalwart-spam-filter/
                beside the suite)
  --diff        add "pass", "missing", "extra" (or "expectedHeader") to each line; exit 1 on a failure
  --summary     print the pass count per file on stderr
`;

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  file: { type: 'string', multiple: true },
  id: { type: 'string', multiple: true },
  rules: { type: 'string' },
  diff: { type: 'boolean' },
  summary: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseCliArgs({
      args: argv,
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (e) {
    process.stderr.write(optionError('conformance', e));
    return 2;
  }
  const v = args.values;
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (args.positionals.length !== 1) {
    process.stderr.write(`spamrule conformance: expected one suite FILE\n\n${HELP}`);
    return 2;
  }
  const opts: { files?: string[]; ids?: string[]; rulesFile?: string } = {};
  if (v.file) opts.files = v.file;
  if (v.id) opts.ids = v.id;
  if (v.rules !== undefined) opts.rulesFile = v.rules;
  const suitePath = args.positionals[0]!;
  let outcomes;
  try {
    const unmatched = unmatchedFilters(suitePath, v.file ?? [], v.id ?? []);
    if (unmatched !== undefined) {
      process.stderr.write(`spamrule conformance: ${unmatched}\n`);
      return 2;
    }
    outcomes = await runSuite(suitePath, opts);
  } catch (e) {
    process.stderr.write(`spamrule conformance: ${(e as Error).message}\n`);
    return 1;
  }
  let failed = 0;
  const perFile = new Map<string, [number, number]>();
  for (const o of outcomes) {
    const file = o.id.split('#')[0]!;
    const row = perFile.get(file) ?? [0, 0];
    row[1]++;
    if (o.pass) row[0]++;
    else failed++;
    perFile.set(file, row);
    const line: Record<string, unknown> = { id: o.id };
    if (o.header !== undefined) line.header = o.header;
    if (o.tags !== undefined) line.tags = o.tags;
    if (o.skipped !== undefined) line.skipped = o.skipped;
    if (v.diff) {
      line.pass = o.pass;
      if (o.missing !== undefined) line.missing = o.missing;
      if (o.extra !== undefined) line.extra = o.extra;
      if (o.expectedHeader !== undefined) line.expectedHeader = o.expectedHeader;
    }
    process.stdout.write(JSON.stringify(line) + '\n');
  }
  if (v.summary) {
    for (const [f, [p, n]] of perFile) process.stderr.write(`${f.padEnd(20)} ${p}/${n}\n`);
    process.stderr.write(`${'total'.padEnd(20)} ${outcomes.length - failed}/${outcomes.length}\n`);
  }
  return v.diff && failed > 0 ? 1 : 0;
}

/**
 * Why `--file`/`--id` are wrong, or undefined when each names cases of the suite and together they
 * select at least one: a typo there used to run no case and report 0/0 with exit 0, which reads as
 * success. Names the filters that match no case, and the suite's test files.
 */
function unmatchedFilters(path: string, files: readonly string[], ids: readonly string[]): string | undefined {
  if (files.length === 0 && ids.length === 0) return undefined;
  let json: unknown;
  try {
    json = parseJsonText(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read suite ${path}: ${(e as Error).message}`);
  }
  const cases = parseSuite(json, path).cases;
  const knownFiles = [...new Set(cases.map((c) => c.file))].sort();
  const knownIds = new Set(cases.map((c) => c.id));
  const problems = [
    ...files.filter((f) => !knownFiles.includes(f)).map((f) => `--file ${f}`),
    ...ids.filter((i) => !knownIds.has(i)).map((i) => `--id ${i}`),
  ];
  // Each filter names something, but together they leave nothing (--file a --id b#1).
  const selected = cases.filter((c) => (files.length === 0 || files.includes(c.file)) && (ids.length === 0 || ids.includes(c.id)));
  if (problems.length === 0 && selected.length > 0) return undefined;
  const what = problems.length > 0 ? `${problems.join(', ')} ${problems.length === 1 ? 'matches' : 'match'} no case` : 'no case matches both --file and --id';
  return `${what} in ${path} (files: ${knownFiles.join(', ')}; ids are FILE#N, e.g. ${cases[0]?.id ?? 'from#1'})`;
}
