/**
 * `spamrule mass-check`: SpamAssassin's `masses/mass-check` and `hit-frequencies` in one command.
 * Classifies a labelled spam corpus and a ham corpus (files, folders, mbox files, read as `spamrule
 * learn` reads them) with a rule set loaded as `classify` loads it, then prints how the rule set did
 * (flag rates, the confusion table) and how each tag did (src/cli/hit-frequencies.ts); `--log DIR`
 * also writes mass-check's `spam.log` and `ham.log`.
 */
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { numberArg, parseCliArgs } from '../util/index.js';
import type { SpamEngine } from '../engine/engine.js';
import type { ClassifyResult } from '../engine/types.js';
import { isGlob } from '../lookup/glob.js';
import { VERSION } from '../util/version.js';
import { ENGINE_OPTIONS, openEngine, RULESET_HELP } from './engine-setup.js';
import { optionError } from './errors.js';
import { hitFrequencies, logLine, renderTable, SORT_KEYS, sortRows, type SortKey, type TagRow, type TagScore } from './hit-frequencies.js';
import { expandInputs, readMessages } from './inputs.js';
import { parseSessionFlags, SESSION_HELP, type SessionFlags } from './session-flags.js';

const HELP = `usage: spamrule mass-check --spam PATH... --ham PATH... [options]

Classifies a spam corpus and a ham corpus and reports how the rule set does on them, as SpamAssassin's
mass-check and hit-frequencies do: messages read, the share of spam and of ham flagged (flagged: an
action other than allow, i.e. a score at or over the spam threshold, or a Reject/Discard tag), the
confusion table (TP spam flagged, FN spam missed, FP ham flagged, TN ham passed), the time taken, then
per tag (rule tags, built-in module tags, PROB_* with --model, upstream --tag) hit-frequencies' columns:
  OVERALL%  share of all messages with the tag      SPAM%, HAM%  share of spam, of ham with the tag
  S/O       SPAM% / (SPAM% + HAM%)                  SCORE        the tag's score in the rule set
  RANK      hit-frequencies' ranking, 0-1: S/O^3 x 2000 + SPAM% x 3, scaled over every tag the rule
            set scores or a message got (for a tag scored below 0: 1 - S/O and HAM% instead)
PATHs are .eml files, folders (recursively) and mbox files, read as "spamrule learn" reads them: files
in folders that are not mail are skipped and counted; symbolic links, FIFOs, devices and sockets inside
folders are skipped with a warning; a message over 50 MiB is skipped. A path or message that cannot be
read is reported and the rest is checked (exit status 1).

Corpora:
  --spam PATH...          messages that are spam (every word up to the next option)
  --ham PATH...           messages that are not spam

${RULESET_HELP}${SESSION_HELP}
Output:
  --sort KEY              order of the tags: rank (default, as hit-frequencies), overall, so, spam, ham
                          (highest first) or name
  --min-hits N            hide tags that fewer than N messages carry (default 1; 0 also lists the rule
                          set's scored tags that never hit)
  --json                  one JSON document instead of the text (shape: docs/mass-check.md)
  --log DIR               also write DIR/spam.log and DIR/ham.log in mass-check's format, one line per
                          message: "Y" (flagged) or ".", the score (whole points), the path (mbox:
                          path#N), the tags comma-separated; hit-frequencies reads them
  --no-progress           no progress line on stderr (shown on a terminal)

Exit status: 0 done; 1 a path or message could not be read; 2 bad options, a rule set that cannot be
read, or a --log folder that cannot be written.
`;

/** Splits `--spam a b --ham c` (every following word that is no option) from the other arguments. */
function splitCorpora(argv: string[]): { spam: string[]; ham: string[]; rest: string[] } | string {
  const out = { spam: [] as string[], ham: [] as string[], rest: [] as string[] };
  let mode: 'spam' | 'ham' | undefined;
  for (const w of argv) {
    const eq = /^--(spam|ham)=(.*)$/s.exec(w);
    if (w === '--spam' || w === '--ham') mode = w === '--spam' ? 'spam' : 'ham';
    else if (eq !== null) {
      out[eq[1] as 'spam' | 'ham'].push(eq[2]!);
      mode = undefined;
    } else if (w.startsWith('-') && w !== '-') {
      mode = undefined;
      out.rest.push(w);
    } else if (mode !== undefined) out[mode].push(w);
    else out.rest.push(w);
  }
  if ([...out.spam, ...out.ham].includes('-')) return 'standard input ("-") cannot be a corpus: name files, folders or mbox files';
  return out;
}

/** The tallies of one class. */
interface ClassTally {
  messages: number;
  flagged: number;
  /** Messages whose result has `errors` (a rule, module or store failed; the rest still ran). */
  classifyErrors: number;
}

/**
 * The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). `--spam` and
 * `--ham` are not among them: {@link splitCorpora} takes them (and the paths after them) off first.
 */
export const OPTIONS = {
  ...ENGINE_OPTIONS,
  json: { type: 'boolean' },
  log: { type: 'string' },
  sort: { type: 'string' },
  'min-hits': { type: 'string' },
  'no-progress': { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

export async function run(argv: string[]): Promise<number> {
  const split = splitCorpora(argv);
  const usage = (m: string): number => {
    process.stderr.write(`spamrule mass-check: ${m} (see spamrule mass-check --help)\n`);
    return 2;
  };
  if (typeof split === 'string') return usage(split);
  let args;
  try {
    args = parseCliArgs({
      args: split.rest,
      allowPositionals: true,
      options: OPTIONS,
    });
  } catch (e) {
    process.stderr.write(optionError('mass-check', e));
    return 2;
  }
  const v = args.values;
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (args.positionals.length > 0) return usage(`${args.positionals[0]}: say --spam or --ham before the paths`);
  if (split.spam.length === 0 && split.ham.length === 0) return usage('nothing to check: give --spam and --ham PATHs');
  const sort = (v.sort ?? 'rank') as SortKey;
  if (!SORT_KEYS.includes(sort)) return usage(`--sort expects one of ${SORT_KEYS.join(', ')}, got "${v.sort}"`);
  const minHits = v['min-hits'] === undefined ? 1 : numberArg(v['min-hits']);
  if (!Number.isInteger(minHits) || minHits < 0) return usage(`--min-hits expects a whole number of messages (0 or more), got "${v['min-hits']}"`);

  let flags: SessionFlags;
  try {
    flags = parseSessionFlags(v);
  } catch (e) {
    return usage((e as Error).message);
  }

  // The logs are opened before any message is read: a folder that cannot be written is said at once.
  let logs: { spam: number; ham: number } | undefined;
  if (v.log !== undefined) {
    try {
      mkdirSync(v.log, { recursive: true });
      const header = `# mass-check results from spamrule ${VERSION}, on ${new Date().toUTCString()}\n`;
      logs = { spam: openSync(join(v.log, 'spam.log'), 'w'), ham: openSync(join(v.log, 'ham.log'), 'w') };
      writeSync(logs.spam, header);
      writeSync(logs.ham, header);
    } catch (e) {
      process.stderr.write(`spamrule mass-check: cannot write the --log folder ${v.log}: ${(e as Error).message}\n`);
      if (logs !== undefined) for (const fd of [logs.spam, logs.ham]) closeSync(fd);
      return 2;
    }
  }
  const closeLogs = (): void => {
    if (logs !== undefined) for (const fd of [logs.spam, logs.ham]) closeSync(fd);
  };

  const say = (m: string): void => void process.stderr.write(`spamrule mass-check: ${m}\n`);
  let engine: SpamEngine;
  let ruleSetTags: string[];
  try {
    const opened = await openEngine(v, flags, say);
    engine = opened.engine;
    ruleSetTags = opened.set.tags.map((t) => t.tag).filter((t) => typeof t === 'string' && t !== '' && !isGlob(t));
  } catch (e) {
    say((e as Error).message);
    closeLogs();
    return 2;
  }

  const tally = { spam: { messages: 0, flagged: 0, classifyErrors: 0 } as ClassTally, ham: { messages: 0, flagged: 0, classifyErrors: 0 } as ClassTally };
  const hits = new Map<string, { spam: number; ham: number }>();
  let readErrors = 0;
  let skipped = 0;
  const progress = !v['no-progress'] && process.stderr.isTTY === true;
  const t0 = performance.now();
  const options = { session: flags.session, tags: v.tag ?? [] };
  try {
    for (const kind of ['spam', 'ham'] as const) {
      const inputs = expandInputs(split[kind]);
      skipped += inputs.skipped;
      for (const p of inputs.problems) say(`${p.path}: ${p.message}`);
      readErrors += inputs.problems.length;
      // Links and special files inside folders are left out on purpose (src/cli/inputs.ts): said, not failed.
      for (const w of inputs.warnings) say(`${w.path}: ${w.message}`);
      const onReadError = (file: string, e: Error): void => {
        if (progress) process.stderr.write('\r\x1b[K');
        say(`${file}: ${e.message}`);
        readErrors++;
      };
      for await (const m of readMessages(inputs.files, onReadError)) {
        let r: ClassifyResult;
        try {
          r = await engine.classify(m.raw, options);
        } catch (e) {
          // classify reports problems in the result; a throw is a bug, counted and said, never the end of the run.
          say(`${m.name}: cannot classify: ${(e as Error).message}`);
          tally[kind].classifyErrors++;
          continue;
        }
        const t = tally[kind];
        const flagged = r.action !== 'allow';
        t.messages++;
        if (flagged) t.flagged++;
        if (r.errors.length > 0) t.classifyErrors++;
        for (const tag of new Set(r.tags)) {
          const h = hits.get(tag) ?? hits.set(tag, { spam: 0, ham: 0 }).get(tag)!;
          h[kind]++;
        }
        if (logs !== undefined) writeSync(logs[kind], logLine(flagged, r.score, m.name, r.tags));
        const done = tally.spam.messages + tally.ham.messages;
        if (progress && done % 25 === 0) {
          process.stderr.write(`\r${done} messages, ${(done / ((performance.now() - t0) / 1000)).toFixed(0)} msg/s`);
        }
      }
    }
  } catch (e) {
    // A log that could not be written (disk full): the figures so far are still printed.
    say((e as Error).message);
    readErrors++;
  } finally {
    closeLogs();
    // Connections and DNS queries still open (docs/dns.md), and the model's store.
    await engine.close();
  }
  if (progress) process.stderr.write('\r\x1b[K');
  const seconds = (performance.now() - t0) / 1000;

  const scoreOf = (tag: string): TagScore => {
    const a = engine.tags.lookup(tag);
    return a === undefined ? 0 : a.kind === 'score' ? a.score : a.kind;
  };
  const names = new Set([...hits.keys(), ...ruleSetTags]);
  const counts = [...names].map((name) => ({ name, spamHits: hits.get(name)?.spam ?? 0, hamHits: hits.get(name)?.ham ?? 0, score: scoreOf(name) }));
  const rows = sortRows(hitFrequencies(counts, tally.spam.messages, tally.ham.messages), sort).filter((r) => r.spamHits + r.hamHits >= minHits);
  const report: Report = { threshold: engine.getThresholds().scoreSpam, spam: tally.spam, ham: tally.ham, skipped, readErrors, seconds, rows };
  process.stdout.write(v.json ? JSON.stringify(toJson(report), null, 2) + '\n' : renderSummary(report) + '\n' + renderTable(rows, tally.spam.messages, tally.ham.messages));
  return readErrors > 0 ? 1 : 0;
}

interface Report {
  threshold: number;
  spam: ClassTally;
  ham: ClassTally;
  /** Files in folders that are not mail. */
  skipped: number;
  /** Paths and messages that could not be read. */
  readErrors: number;
  seconds: number;
  rows: TagRow[];
}

const pct = (a: number, b: number): number => (b === 0 ? 0 : (a / b) * 100);

/** The summary lines of the text output (ends with a newline). */
function renderSummary(r: Report): string {
  const n = r.spam.messages + r.ham.messages;
  const { spam, ham } = r;
  const plural = (k: number, one: string, many: string): string => `${k} ${k === 1 ? one : many}`;
  return [
    `spam:            ${plural(spam.messages, 'message', 'messages')}, ${spam.flagged} flagged (${pct(spam.flagged, spam.messages).toFixed(2)}%)`,
    `ham:             ${plural(ham.messages, 'message', 'messages')}, ${ham.flagged} flagged (${pct(ham.flagged, ham.messages).toFixed(2)}%)`,
    `confusion:       TP ${spam.flagged}  FN ${spam.messages - spam.flagged}  FP ${ham.flagged}  TN ${ham.messages - ham.flagged}`,
    `threshold:       ${r.threshold.toFixed(2)} (flagged: score at or over it, or a Reject/Discard tag)`,
    `skipped:         ${plural(r.skipped, 'file that is not mail', 'files that are not mail')}`,
    `read errors:     ${plural(r.readErrors, 'path or message', 'paths or messages')}`,
    `classify errors: ${plural(spam.classifyErrors + ham.classifyErrors, 'message', 'messages')} with a rule, module or store error`,
    `elapsed:         ${r.seconds.toFixed(2)} s, ${(r.seconds > 0 ? n / r.seconds : 0).toFixed(1)} messages/s`,
  ].join('\n') + '\n';
}

/** The `--json` document (docs/mass-check.md): percentages 0–100, S/O and RANK 0–1, unrounded. */
function toJson(r: Report): object {
  const side = (t: ClassTally) => ({ messages: t.messages, flagged: t.flagged, flagged_percent: pct(t.flagged, t.messages), classify_errors: t.classifyErrors });
  const n = r.spam.messages + r.ham.messages;
  return {
    threshold: r.threshold,
    spam: side(r.spam),
    ham: side(r.ham),
    confusion: { tp: r.spam.flagged, fn: r.spam.messages - r.spam.flagged, fp: r.ham.flagged, tn: r.ham.messages - r.ham.flagged },
    skipped: r.skipped,
    read_errors: r.readErrors,
    classify_errors: r.spam.classifyErrors + r.ham.classifyErrors,
    elapsed_seconds: r.seconds,
    messages_per_second: r.seconds > 0 ? n / r.seconds : 0,
    tags: r.rows.map((t) => ({
      name: t.name,
      overall: t.overall,
      spam_percent: t.spamPercent,
      ham_percent: t.hamPercent,
      so: t.so,
      rank: t.rank,
      score: t.score,
      spam_hits: t.spamHits,
      ham_hits: t.hamHits,
    })),
  };
}
