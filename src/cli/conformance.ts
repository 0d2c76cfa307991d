/**
 * `spamrule conformance FILE`: runs a `stalwart-antispam-suite/v1` file (Stalwart's own spam-filter
 * test cases as JSON) and prints one JSON line per case: `{"id", "tags": [...]}` or, for header
 * cases, `{"id", "header": "X-Spam-Result: … X-Spam-Score: …"}`, plus `"skipped"` for steps not
 * built here. `--diff` adds what is missing/extra and exits 1 when a case fails.
 */
import { parseArgs } from 'node:util';
import { runSuite } from '../conformance/index.js';

const HELP = `usage: spamrule conformance FILE [--file NAME]... [--id ID]... [--rules PATH] [--diff] [--summary]

Runs Stalwart's spam-filter test cases (stalwart-antispam-suite/v1 JSON): per case only the steps
the case names, with the file's DNS mocks, lookup lists and test-mode behaviour.

  --file NAME   only cases of this test file (repeatable): from, helo, received, …
  --id ID       only this case (repeatable): from#3
  --rules PATH  Stalwart's spam-filter-rules.json (default: ../stalwart-spam-filter/ beside the suite)
  --diff        add "pass", "missing", "extra" (or "expectedHeader") to each line; exit 1 on a failure
  --summary     print the pass count per file on stderr
`;

export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        file: { type: 'string', multiple: true },
        id: { type: 'string', multiple: true },
        rules: { type: 'string' },
        diff: { type: 'boolean' },
        summary: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    process.stderr.write(`spamrule conformance: ${(e as Error).message}\n\n${HELP}`);
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
  const outcomes = await runSuite(args.positionals[0]!, opts);
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
