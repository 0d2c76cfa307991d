/**
 * Command-line parsing: Node's `util.parseArgs`, with one convenience it lacks. parseArgs refuses
 * `--score-spam -1` ("argument is ambiguous"), since a value that starts with a dash might be a
 * forgotten value followed by an option; a negative number is never an option of ours, so a long
 * option that takes a value and is followed by one is read as `--score-spam=-1`, as getopt_long reads it.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

/** A decimal number with a leading minus: `-1`, `-0.5`, `-.5`, `-1e3`. */
const NEGATIVE_NUMBER = /^-(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$/;

/**
 * `args` with each long option that takes a value (`type: 'string'` in `options`) and is followed by
 * a negative number joined to it (`--x`, `-1` → `--x=-1`). Arguments after `--` are left as they are.
 */
export function joinNegativeValues(args: readonly string[], options: ParseArgsConfig['options']): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--') {
      out.push(...args.slice(i));
      break;
    }
    const next = args[i + 1];
    if (next !== undefined && a.startsWith('--') && !a.includes('=') && options?.[a.slice(2)]?.type === 'string' && NEGATIVE_NUMBER.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/**
 * The number an option's value spells (`Number(text)`), or NaN for a blank value. `Number('')` and
 * `Number('  ')` are 0, so without this a value left empty (`--scan-timeout "$TIMEOUT"` with the
 * variable unset) was taken as 0, which for most of our flags means "no limit" or "score 0",
 * instead of being refused as the "expects a number" message it deserves. `undefined` (a flag
 * given last, with no value after it) is NaN too.
 */
export function numberArg(text: string | undefined): number {
  return text === undefined || text.trim() === '' ? NaN : Number(text);
}

/**
 * `util.parseArgs(config)` after {@link joinNegativeValues} on `config.args` (default: the process's
 * arguments after the script, as parseArgs takes them).
 * @throws what parseArgs throws (TypeError with a `code` of `ERR_PARSE_ARGS_*`) for unknown options,
 *   missing values and the like.
 */
export function parseCliArgs<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  const args = joinNegativeValues(config.args ?? process.argv.slice(2), config.options);
  return parseArgs({ ...config, args }) as ReturnType<typeof parseArgs<T>>;
}
