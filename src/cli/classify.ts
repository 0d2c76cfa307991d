/**
 * `spamrule classify`: classifies `.eml` files, folders and mbox files with a rule set and prints
 * a verdict per message (text, `--explain`, or `--json` lines) and a summary on stderr.
 */
import { parseCliArgs } from '../util/index.js';
import type { SpamEngine } from '../engine/engine.js';
import type { ClassifyResult } from '../engine/types.js';
import { expandInputs, readMessages } from './inputs.js';
import { ENGINE_OPTIONS, openEngine, RULESET_HELP } from './engine-setup.js';
import { parseSessionFlags, SESSION_HELP, type SessionFlags } from './session-flags.js';
import { optionError } from './errors.js';

const HELP = `usage: spamrule classify [options] PATH...

Classifies .eml files, folders (recursively) and mbox files; "-" reads standard input (a message or an mbox).
Files in folders that are not mail (e.g. .json sidecars) are skipped and counted; symbolic links, FIFOs,
devices and sockets inside folders are skipped with a warning (a link named as a PATH is followed). A
message over 50 MiB is skipped. A path that cannot be read, or that is no regular file or folder, is
reported and the others are classified; the exit status is then 1.

${RULESET_HELP}${SESSION_HELP}
Output:
  --json                  one JSON object per message: file, tags, score, required_score, action, scores,
                          headers, matches, errors, warnings, and classifier (with --model)
  --explain               per tag: its score (or reject/discard) and what set it: a module, a rule (scope,
                          element), the classifier (--model) or upstream (--tag)
  --quiet                 no per-message output, only the summary
  --no-progress           no progress bar on stderr (shown on a terminal for many files or a large mbox)
  -e, --exit-code         exit 5 when a message is spam, reject or discard (as SpamAssassin's -e)

Exit status: 0 done; 5 with -e and a message spam, reject or discard; 1 a path or message could not be
read (takes precedence over 5); 2 bad options, or a rule set that cannot be read. A rule that does not
compile is refused with a warning and the others run, as Stalwart skips it; "spamrule lint" exits 1 on it.
`;

/** The parseArgs option descriptors of this command (also read by test/package/docs-cli.test.ts). */
export const OPTIONS = {
  ...ENGINE_OPTIONS,
  json: { type: 'boolean' },
  explain: { type: 'boolean' },
  quiet: { type: 'boolean' },
  'no-progress': { type: 'boolean' },
  'exit-code': { type: 'boolean', short: 'e' },
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
    process.stderr.write(optionError('classify', e));
    return 2;
  }
  const v = args.values;
  if (v.help) {
    process.stdout.write(HELP);
    return 0;
  }
  if (args.positionals.length === 0) {
    process.stderr.write(`spamrule classify: no PATH given\n\n${HELP}`);
    return 2;
  }
  // Three ways to print a verdict: one at a time. --json already carries what --explain shows (each
  // tag's score and source in "scores" and "matches").
  const forms = (['json', 'explain', 'quiet'] as const).filter((k) => v[k] === true);
  if (forms.length > 1) {
    const why = forms.includes('quiet') ? '--quiet prints no verdicts' : '--json already gives each tag\'s score and source ("scores", "matches")';
    process.stderr.write(`spamrule classify: ${forms.map((f) => `--${f}`).join(' and ')} cannot be used together: ${why}\n`);
    return 2;
  }

  let flags: SessionFlags;
  try {
    flags = parseSessionFlags(v);
  } catch (e) {
    process.stderr.write(`spamrule classify: ${(e as Error).message}\n`);
    return 2;
  }

  let engine: SpamEngine;
  try {
    ({ engine } = await openEngine(v, flags, (m) => process.stderr.write(`spamrule classify: ${m}\n`)));
  } catch (e) {
    process.stderr.write(`spamrule classify: ${(e as Error).message}\n`);
    return 2;
  }

  const session = flags.session;
  const upstream = v.tag ?? [];

  // Like grep or SpamAssassin: a path that cannot be read is reported and the run goes on (exit 1 at the end).
  const inputs = expandInputs(args.positionals);
  const unreadable = (path: string, message: string) => process.stderr.write(`spamrule classify: ${path}: ${message}\n`);
  for (const p of inputs.problems) unreadable(p.path, p.message);
  // Links and special files inside folders are left out on purpose (src/cli/inputs.ts): said, not failed.
  for (const w of inputs.warnings) process.stderr.write(`spamrule classify: ${w.path}: ${w.message}\n`);
  let failed = inputs.problems.length;

  // Progress on a terminal when there is a lot to do: many files, or a large mbox (by bytes read).
  const progress = !v['no-progress'] && process.stderr.isTTY === true && (inputs.files.length > 20 || inputs.bytes > PROGRESS_BYTES);
  const summary = new Summary();
  const required = engine.getThresholds().scoreSpam;
  const tagKind = (tag: string): TagKind | undefined => engine.tags.lookup(tag)?.kind;
  const out = process.stdout;
  let done = 0;
  let bytes = 0;
  let flagged = 0;
  const onReadError = (file: string, e: Error) => {
    if (progress) process.stderr.write('\r\x1b[K');
    unreadable(file, e.message);
    failed++;
  };
  try {
    for await (const m of readMessages(inputs.files, onReadError)) {
      const r = await engine.classify(m.raw, { session, tags: upstream });
      summary.add(r);
      done++;
      bytes += m.raw.length;
      if (r.action !== 'allow') flagged++;
      if (!v.quiet) {
        if (v.json) out.write(JSON.stringify(toJson(m.name, r, required)) + '\n');
        else out.write(v.explain ? explain(m.name, r, tagKind) : oneLine(m.name, r));
      }
      if (progress && done % 25 === 0) summary.progress(done, inputs.bytes > 0 ? bytes / inputs.bytes : 0);
    }
  } catch (e) {
    process.stderr.write(`\nspamrule classify: ${(e as Error).message}\n`);
    failed++;
  }
  // Connections and DNS queries still in c-ares: without this, a run that met a silent DNS server exited about
  // a second after its last message.
  await engine.close();
  if (progress) process.stderr.write('\r\x1b[K');
  process.stderr.write(summary.render());
  if (inputs.skipped > 0) process.stderr.write(`skipped ${inputs.skipped} ${inputs.skipped === 1 ? 'file that is' : 'files that are'} not mail\n`);
  if (failed > 0) {
    process.stderr.write(`${failed} path${failed === 1 ? '' : 's'} could not be read\n`);
    return 1;
  }
  return v['exit-code'] && flagged > 0 ? 5 : 0;
}

/** Inputs larger than this (bytes) show progress on a terminal even as one file (a large mbox). */
const PROGRESS_BYTES = 2 * 1024 * 1024;

/**
 * The `--json` record of one message. `required_score` is the spam threshold (SpamAssassin's name),
 * `scores` each tag's score (0 for a Reject or Discard tag, which decides the action instead: see
 * `action`), `headers` the X-Spam-Result and X-Spam-Score values (and X-Spam-LLM), `classifier` the statistical
 * classifier's verdict when a model classified the message (confidence 0–1, its `PROB_*` tag, the
 * model's generation), `llm` the LLM step's category, confidence and explanation when it recognised one.
 */
export function toJson(file: string, r: ClassifyResult, requiredScore?: number): object {
  return {
    file,
    tags: r.tags,
    score: r.score,
    ...(requiredScore !== undefined ? { required_score: requiredScore } : {}),
    action: r.action,
    scores: Object.fromEntries(r.tags.map((t) => [t, r.scores[t] ?? 0])),
    headers: r.headers,
    matches: [...r.analysis, ...r.matches],
    errors: r.errors,
    warnings: r.warnings,
    ...(r.classifier !== undefined ? { classifier: r.classifier } : {}),
    ...(r.llm !== undefined ? { llm: r.llm } : {}),
  };
}

/** Zero-score `X_*` tags (header-presence markers) are hidden in text output, as in X-Spam-Result. */
function shown(r: ClassifyResult): string[] {
  return r.tags.filter((t) => !(t.startsWith('X_') && (r.scores[t] ?? 0) === 0));
}

function oneLine(name: string, r: ClassifyResult): string {
  const visible = shown(r);
  const tags = visible.length > 0 ? visible.join(' ') : '-';
  return `${name}\t${r.action}\t${r.score.toFixed(2)}\t${tags}\n`;
}

/** A tag's kind in the rule set's SpamTag table: a score, or an action it forces. */
type TagKind = 'score' | 'reject' | 'discard';

/**
 * `--explain`: per visible tag, its score (or `reject`/`discard` for a tag that forces that action)
 * and what set it: a module, rules, the statistical classifier, or upstream (`--tag`).
 */
function explain(name: string, r: ClassifyResult, kindOf: (tag: string) => TagKind | undefined): string {
  const lines = [`${name}: ${r.action}, score ${r.score.toFixed(2)}`];
  const byTag = new Map<string, string[]>();
  for (const m of r.matches) {
    const where = m.element === '' ? m.scope : `${m.scope} ${JSON.stringify(m.element)} (${m.location})`;
    const branch = m.branch >= 0 ? `match/${m.branch}` : 'else';
    (byTag.get(m.tag) ?? byTag.set(m.tag, []).get(m.tag)!).push(`rule ${m.rule} [${branch}] on ${where}`);
  }
  for (const m of r.analysis) (byTag.get(m.tag) ?? byTag.set(m.tag, []).get(m.tag)!).unshift(`module ${m.module}`);
  const c = r.classifier;
  if (c !== undefined) (byTag.get(c.tag) ?? byTag.set(c.tag, []).get(c.tag)!).unshift(`classifier (spam confidence ${c.confidence.toFixed(3)}, model generation ${c.generation})`);
  const visible = shown(r);
  for (const tag of visible) {
    const kind = kindOf(tag);
    const s = kind === 'reject' || kind === 'discard' ? kind : (r.scores[tag] ?? 0).toFixed(2);
    const why = byTag.get(tag) ?? ['set upstream (--tag)'];
    lines.push(`  ${tag.padEnd(32)} ${s.padStart(7)}  ${why[0]}`);
    for (const w of why.slice(1)) lines.push(`  ${''.padEnd(32)} ${''.padStart(7)}  ${w}`);
  }
  const hidden = r.tags.length - visible.length;
  if (hidden > 0) lines.push(`  (+${hidden} zero-score X_* header-presence tags; see --json)`);
  for (const e of r.errors) lines.push(`  ! ${e.source}${e.element ? ` on ${JSON.stringify(e.element)}` : ''}: ${e.message}`);
  for (const w of r.warnings) lines.push(`  ~ ${w}`);
  if (r.headers['X-Spam-LLM'] !== undefined) lines.push(`  X-Spam-LLM: ${r.headers['X-Spam-LLM']}`);
  lines.push(`  X-Spam-Score: ${r.headers['X-Spam-Score']}`);
  return lines.join('\n') + '\n';
}

class Summary {
  private readonly t0 = performance.now();
  private n = 0;
  private errors = 0;
  private readonly actions: Record<string, number> = {};
  private readonly tagCounts = new Map<string, number>();

  add(r: ClassifyResult): void {
    this.n++;
    if (r.errors.length > 0) this.errors++;
    this.actions[r.action] = (this.actions[r.action] ?? 0) + 1;
    for (const t of shown(r)) this.tagCounts.set(t, (this.tagCounts.get(t) ?? 0) + 1);
  }

  /** `frac`: share of the input bytes read so far (0–1). */
  progress(done: number, frac: number): void {
    const s = (performance.now() - this.t0) / 1000;
    const width = 30;
    frac = Math.min(1, Math.max(0, frac));
    const bar = '='.repeat(Math.round(frac * width)).padEnd(width, ' ');
    process.stderr.write(`\r[${bar}] ${done} messages, ${(done / s).toFixed(0)} msg/s`);
  }

  render(): string {
    const s = (performance.now() - this.t0) / 1000;
    const rate = s > 0 ? this.n / s : 0;
    const acts = Object.entries(this.actions).map(([a, c]) => `${a} ${c}`).join(', ');
    const top = [...this.tagCounts.entries()].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 10);
    const lines = [
      `${this.n} message${this.n === 1 ? '' : 's'} in ${s.toFixed(2)} s (${rate.toFixed(0)} msg/s); ${acts || 'none'}; ${this.errors} with rule/store errors`,
    ];
    if (top.length > 0) lines.push('top tags: ' + top.map(([t, c]) => `${t} ${c}`).join(', '));
    return lines.join('\n') + '\n';
  }
}
