/**
 * `spamrule eval`: evaluate one expression, or a batch file in the format of `expr-vectors.json`
 * (docs/expression-language.md), printing results in the vectors' typed JSON (`{"int": 1}`,
 * `{"str": "x"}`, `{"parseError": "…"}`, …).
 */
import { readFile } from 'node:fs/promises';
import { parseCliArgs, parseJsonText } from '../util/index.js';
import { runVector, type ExprVector } from '../expr/index.js';
import { optionError } from './errors.js';

const HELP = `usage: spamrule eval 'EXPR' [--vars JSON] [--globals JSON] [--allow-variables a,b]
       spamrule eval --batch FILE

Evaluates an expression of the Stalwart expression language and prints the result as typed JSON
({"int":1}, {"float":2.5}, {"str":"x"}, {"array":[…]}, {"const":"relaxed"}, {"parseError":"…"},
{"evalError":"…"}).

  --vars JSON             variable values, e.g. '{"subject":"hello","size":10}' (strings, numbers,
                          arrays, {"float":x}, {"const":"name"})
  --globals JSON          $TAG values, e.g. '{"SPF_FAIL":1}'
  --allow-variables LIST  comma-separated allow-list (the parse context); default: all
  --batch FILE            a JSON array of vectors ({id, expr, vars, globals, store, …}); prints one
                          line {"id":…,"result":…} per vector
  -h, --help              this text

An expression that starts with "-" goes after "--", which ends the options: spamrule eval -- '-1 + 2'

Exit status: 0 on success, 1 if the (single) expression fails to parse or evaluate, 2 on usage errors.`;

function parseJsonObject(name: string, text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = parseJsonText(text);
  } catch (e) {
    throw new Error(`--${name} is not valid JSON (${(e as Error).message})`);
  }
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw new Error(`--${name} must be a JSON object`);
  return v as Record<string, unknown>;
}

/**
 * The word of `argv` that parseArgs took for an unknown option when it is really an expression that
 * starts with "-" (`spamrule eval '- -1'`), else undefined. parseArgs names only the first letters
 * of such a word (`'- '`), so the word is found again in `argv`.
 */
function expressionTakenForOption(argv: readonly string[], e: unknown): string | undefined {
  const m = /^Unknown option '([^']*)'/.exec(e instanceof Error ? e.message : '');
  if (m === null) return undefined;
  const word = argv.find((a) => a !== '--' && a.startsWith(m[1]!)) ?? m[1]!;
  return /^--?[A-Za-z][A-Za-z0-9-]*(=.*)?$/.test(word) ? undefined : word; // a mistyped option is not an expression
}

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  vars: { type: 'string' },
  globals: { type: 'string' },
  'allow-variables': { type: 'string' },
  batch: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Entry point; returns the exit status. */
export async function run(argv: string[]): Promise<number> {
  let args;
  try {
    args = parseCliArgs({
      args: argv,
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (e) {
    const expr = expressionTakenForOption(argv, e);
    process.stderr.write(
      expr === undefined
        ? optionError('eval', e)
        : `spamrule eval: unknown option '${expr}' (an expression that starts with "-" goes after "--": spamrule eval -- ${JSON.stringify(expr)}; see spamrule eval --help)\n`,
    );
    return 2;
  }
  const { values, positionals } = args;
  if (values.help === true) {
    process.stdout.write(HELP + '\n');
    return 0;
  }
  if (values.batch !== undefined) {
    if (positionals.length > 0) {
      process.stderr.write('spamrule eval: give either an expression or --batch, not both\n');
      return 2;
    }
    let vectors: unknown;
    try {
      vectors = parseJsonText(await readFile(values.batch, 'utf8'));
    } catch (e) {
      process.stderr.write(`spamrule eval: cannot read ${values.batch}: ${(e as Error).message}\n`);
      return 2;
    }
    if (!Array.isArray(vectors)) {
      process.stderr.write('spamrule eval: the batch file must hold a JSON array of vectors\n');
      return 2;
    }
    for (const v of vectors as ExprVector[]) {
      let result;
      try {
        result = await runVector(v);
      } catch (e) {
        result = { evalError: `bad vector: ${(e as Error).message}` };
      }
      process.stdout.write(JSON.stringify({ id: v.id, result }) + '\n');
    }
    return 0;
  }
  if (positionals.length !== 1) {
    process.stderr.write(`spamrule eval: expected exactly one expression\n\n${HELP}\n`);
    return 2;
  }
  let vector: ExprVector;
  try {
    const allow = values['allow-variables'];
    vector = {
      id: 'cli',
      expr: positionals[0]!,
      vars: parseJsonObject('vars', values.vars),
      globals: parseJsonObject('globals', values.globals),
      ...(allow !== undefined ? { allowedVariables: allow.split(',').map((s) => s.trim()).filter((s) => s !== '') } : {}),
    };
    const result = await runVector(vector);
    process.stdout.write(JSON.stringify(result) + '\n');
    return 'parseError' in result || 'evalError' in result ? 1 : 0;
  } catch (e) {
    process.stderr.write(`spamrule eval: ${(e as Error).message}\n`);
    return 2;
  }
}
