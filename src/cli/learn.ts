/**
 * `spamrule learn`: trains Stalwart's statistical classifier from labelled mail, like `sa-learn`.
 * Messages (files, folders, mbox files) become training samples in the model's store, then one
 * training run (in a child process) builds a new model once both classes have their minimum count.
 */
import { expandInputs, readMessages } from './inputs.js';
import { openError } from './errors.js';
import { numberArg } from '../util/index.js';

const HELP = `usage: spamrule learn (--model FILE | --db PATH | --pg URL | --redis URL) [options]
                      [--spam PATH...] [--ham PATH...]
       spamrule learn (--model FILE | ...) --forget [PATH...]

Stores each message as a training sample (spam or ham) and trains the classifier; "classify --model
FILE" and "serve --model FILE" then add its PROB_* tag. PATHs are .eml files, folders (recursively;
files that are not mail are skipped, and so are symbolic links, FIFOs, devices and sockets, with a
warning: a folder another user can write may hold links to files they cannot read) or mbox files; a
message over 50 MiB is skipped. Every sample stays in the store, so later runs train on top of earlier
ones, and several processes can share one store.

Where the model lives (one of):
  --model FILE        a SQLite file (created when missing); a postgres:// or redis:// URL is read as
                      --pg or --redis
  --db PATH           the registry of "spamrule serve --db PATH" (same SQLite file)
  --pg URL            PostgreSQL: postgres://user:password@host:port/database (a password left out comes
                      from PGPASSWORD or ~/.pgpass, out of sight of ps: docs/deployment.md)
  --redis URL         Redis: redis://host:port

Options:
  --spam PATH...      messages that are spam
  --ham PATH...       messages that are not spam
  --forget [PATH...]  remove these messages' samples and retrain from the remaining ones; with no
                      PATH, forget everything (model, trainer state and samples)
  --min-samples N     samples of each class needed before a model is built (default 100)
  --retrain           train afresh over every stored sample instead of on top of the current model
  --no-train          only store the samples (train later)
  --seed N            seed of the training run's shuffles (default 1)
  --quiet             no summary
`;

/**
 * The options {@link parse}'s switch takes (and `--help`, which `run` answers first), as parseArgs-style
 * descriptors for test/package/docs-cli.test.ts, which checks them against `--help` and the docs. `parse`
 * refuses any other `--` word as an unknown option. `--spam`, `--ham` and `--forget` take every following word
 * that is no option.
 */
export const OPTIONS = {
  model: { type: 'string' },
  db: { type: 'string' },
  pg: { type: 'string' },
  redis: { type: 'string' },
  spam: { type: 'string', multiple: true },
  ham: { type: 'string', multiple: true },
  forget: { type: 'string', multiple: true },
  'min-samples': { type: 'string' },
  retrain: { type: 'boolean' },
  'no-train': { type: 'boolean' },
  seed: { type: 'string' },
  quiet: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

type Mode = 'spam' | 'ham' | 'forget';

interface LearnArgs {
  spam: string[];
  ham: string[];
  forget: string[] | undefined;
  where: { model?: string; db?: string; pg?: string; redis?: string };
  minSamples: number;
  retrain: boolean;
  train: boolean;
  seed: number;
  quiet: boolean;
}

/** `--spam a b --ham c` style: a mode flag takes every following non-option word. */
function parse(argv: string[]): LearnArgs | string {
  const a: LearnArgs = { spam: [], ham: [], forget: undefined, where: {}, minSamples: 100, retrain: false, train: true, seed: 1, quiet: false };
  let mode: Mode | undefined;
  for (let i = 0; i < argv.length; i++) {
    const w = argv[i]!;
    const value = (): string | undefined => argv[++i];
    switch (w) {
      case '--spam':
      case '--ham':
        mode = w.slice(2) as Mode;
        break;
      case '--forget':
        mode = 'forget';
        a.forget ??= [];
        break;
      case '--model':
      case '--db':
      case '--pg':
      case '--redis': {
        const v = value();
        if (v === undefined) return `${w} needs a value`;
        a.where[w.slice(2) as 'model'] = v;
        mode = undefined;
        break;
      }
      case '--min-samples':
      case '--seed': {
        const v = numberArg(value());
        if (!Number.isInteger(v) || v < 0) return `${w} needs a non-negative integer`;
        if (w === '--seed') a.seed = v;
        else a.minSamples = v;
        mode = undefined;
        break;
      }
      case '--retrain':
        a.retrain = true;
        break;
      case '--no-train':
        a.train = false;
        break;
      case '--quiet':
        a.quiet = true;
        break;
      default:
        if (w.startsWith('--')) return `unknown option '${w}'`;
        if (mode === undefined) return `${w}: say --spam or --ham before the paths`;
        if (mode === 'forget') a.forget!.push(w);
        else a[mode].push(w);
    }
  }
  if (Object.keys(a.where).length !== 1) return 'give exactly one of --model, --db, --pg, --redis';
  if (a.forget === undefined && a.spam.length === 0 && a.ham.length === 0 && !a.retrain) return 'nothing to learn: give --spam and/or --ham PATHs';
  return a;
}

export async function run(argv: string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(HELP);
    return 0;
  }
  const a = parse(argv);
  if (typeof a === 'string') {
    process.stderr.write(`spamrule learn: ${a} (see spamrule learn --help)\n`);
    return 2;
  }
  const { modelFileProblem, modelLocationKind, modelLocationName, modelStoreConfig } = await import('../classifier/location.js');
  const folder = a.where.model === undefined ? undefined : modelFileProblem(a.where.model);
  if (folder !== undefined) {
    process.stderr.write(`spamrule learn: ${folder}\n`);
    return 2;
  }
  const { openClassifier, sampleHash } = await import('../classifier/index.js');
  const say = (s: string): void => {
    if (!a.quiet) process.stderr.write(s + '\n');
  };
  let classifier;
  try {
    classifier = await openClassifier(modelStoreConfig(a.where), {
      settings: { minHamSamples: a.minSamples, minSpamSamples: a.minSamples },
      refreshMs: 0,
    });
  } catch (e) {
    // Name the store: the driver's message ("file is not a database") does not say which file.
    const { model, db, pg } = a.where;
    const message =
      model !== undefined && modelLocationKind(model) === 'file' ? openError('the --model file', model, e)
      : model !== undefined ? `cannot open the model in ${modelLocationName(model)}: ${(e as Error).message}`
      : db !== undefined ? openError('the --db database', db, e)
      // Not the URL itself: it may hold a password.
      : `cannot open the model in ${pg !== undefined ? '--pg' : '--redis'}: ${(e as Error).message}`;
    process.stderr.write(`spamrule learn: ${message}\n`);
    return 2;
  }
  let failed = 0;
  const problem = (path: string, message: string): void => {
    process.stderr.write(`spamrule learn: ${path}: ${message}\n`);
    failed++;
  };
  // Links and special files inside folders are left out on purpose (src/cli/inputs.ts): said, not failed.
  const skippedEntry = (w: { path: string; message: string }): void => {
    process.stderr.write(`spamrule learn: ${w.path}: ${w.message}\n`);
  };
  const counts = { spam: 0, ham: 0, empty: 0, skipped: 0 };
  let storing = false;
  try {
    let retrain = a.retrain;
    if (a.forget !== undefined) {
      if (a.forget.length === 0) {
        await classifier.store.reset(true);
        say('forgot the model, its trainer state and every sample');
        if (a.spam.length === 0 && a.ham.length === 0) return 0;
      } else {
        const hashes = new Set<string>();
        const inputs = expandInputs(a.forget);
        for (const p of inputs.problems) problem(p.path, p.message);
        inputs.warnings.forEach(skippedEntry);
        for await (const m of readMessages(inputs.files, (f, e) => problem(f, e.message))) hashes.add(sampleHash(m.raw));
        const removed = await classifier.store.removeMessages(hashes);
        say(`forgot ${removed} sample${removed === 1 ? '' : 's'}`);
        // FTRL cannot subtract a sample: the model is rebuilt from the samples that remain.
        if (removed > 0) retrain = true;
      }
    }
    storing = true;
    for (const kind of ['spam', 'ham'] as const) {
      const inputs = expandInputs(a[kind]);
      counts.skipped += inputs.skipped;
      for (const p of inputs.problems) problem(p.path, p.message);
      inputs.warnings.forEach(skippedEntry);
      for await (const m of readMessages(inputs.files, (f, e) => problem(f, e.message))) {
        if (m.raw.length === 0) {
          counts.empty++;
          continue;
        }
        await classifier.learn(m.raw, kind === 'spam');
        counts[kind]++;
      }
    }
    storing = false;
    if (counts.spam + counts.ham > 0 || counts.skipped + counts.empty > 0) {
      say(`stored ${counts.spam} spam and ${counts.ham} ham sample${counts.ham === 1 ? '' : 's'}` +
        (counts.skipped > 0 ? `; skipped ${counts.skipped} ${counts.skipped === 1 ? 'file that is' : 'files that are'} not mail` : '') +
        (counts.empty > 0 ? `; skipped ${counts.empty} empty message${counts.empty === 1 ? '' : 's'}` : ''));
    }
    if (a.train && (counts.spam + counts.ham > 0 || retrain)) {
      const r = await classifier.train({ retrain, seed: a.seed });
      if (r.ready) {
        const n = r.ham + r.spam + r.replayed;
        say(`trained model generation ${r.generation} on ${n} sample${n === 1 ? '' : 's'} (${r.epochs} epoch${r.epochs === 1 ? '' : 's'}; ` +
          `${r.totalHam} ham and ${r.totalSpam} spam seen in all) in ${(r.ms / 1000).toFixed(1)} s`);
      } else {
        say(`not enough samples for a model yet: ${r.totalHam} ham and ${r.totalSpam} spam, ${a.minSamples} of each needed`);
      }
      // The same message learned again (same hash and account) counts once, with its latest label, as in
      // Stalwart; said here so that the totals above do not look short of what was stored.
      if (r.duplicates > 0) {
        say(r.duplicates === 1
          ? '1 sample was a message learned again since the last training: counted once, with its latest label'
          : `${r.duplicates} samples were messages learned again since the last training: each counted once, with its latest label`);
      }
      if (r.skipped > 0) say(`${r.skipped} sample${r.skipped === 1 ? '' : 's'} could not be read and were skipped`);
    }
  } catch (e) {
    // Samples stored before the failure stay; the previous model stays current.
    process.stderr.write(`spamrule learn: ${(e as Error).message}\n`);
    if (storing) {
      // Said so that a rerun after fixing the store knows what is already in (a sample stored twice counts once).
      process.stderr.write(`spamrule learn: ${counts.spam} spam and ${counts.ham} ham sample${counts.ham === 1 ? '' : 's'} were stored before the failure; they stay, and the model in use is unchanged\n`);
    }
    failed++;
  } finally {
    await classifier.store.store.close();
  }
  return failed > 0 ? 1 : 0;
}
