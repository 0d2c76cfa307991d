/**
 * The engine of the commands that classify mail (`classify`, `mass-check`): their rule-set flags
 * (`--rules`, `--scores`, `--list`, `--db`, `--server`, `--model`, thresholds), their session and
 * analysis flags (src/cli/session-flags.ts) and upstream `--tag`s, turned into one ready
 * {@link SpamEngine}, so that both commands load a rule set exactly alike.
 */
import type { SpamEngine } from '../engine/engine.js';
import { openError } from './errors.js';
import { buildEngine, readRuleSet, RULESET_OPTIONS, thresholdsFrom, type LoadedRuleSet, type RuleSetFlags } from './ruleset.js';
import { SESSION_OPTIONS, type SessionFlags } from './session-flags.js';

/** parseArgs option descriptors: the rule set, the session and analysis, and upstream tags. */
export const ENGINE_OPTIONS = {
  ...RULESET_OPTIONS,
  db: { type: 'string' },
  model: { type: 'string' },
  server: { type: 'string' },
  token: { type: 'string' },
  ...SESSION_OPTIONS,
  tag: { type: 'string', multiple: true },
} as const;

/** The help text of the rule-set flags (the "Rules" section), ending with a blank line. */
export const RULESET_HELP = `Rules (default: spamrule's built-in rule set, see docs/default-rules.md):
  --rules FILE            SpamRule JSON (array, or a bundle such as Stalwart's spam-filter-rules.json);
                          repeatable. Bundles also bring their SpamTag scores and MemoryLookupKey lists.
  --scores FILE           scores.txt ("TAG = 1.5|reject|discard") or SpamTag JSON; repeatable; a tag
                          scored again replaces its earlier score (a file over a bundle's scores)
  --list NS=FILE          a static lookup list (one key per line, * globs); repeatable
  --db PATH               use the rule set managed by "spamrule serve --db PATH"
  --model FILE|URL        the statistical classifier trained by "spamrule learn --model FILE" (PROB_* tags),
                          or one kept in PostgreSQL (postgres://USER:PASSWORD@HOST/DB) or Redis (redis://HOST:PORT)
  --server URL            use the rule set of a running JMAP server (token: --token or SPAMRULE_TOKEN)
  --score-spam N          spam threshold (default 5.0); --score-reject N, --score-discard N (0 = off)
  --cache-dir DIR         on-disk cache of remote (HttpLookup) lists, filled by "spamrule lists update"
                          (default ~/.cache/spamrule/lists); the command itself makes no HTTP request

Upstream results:
  --tag NAME              a tag already set upstream (repeatable)

`;

/** The values of {@link ENGINE_OPTIONS} that {@link openEngine} reads. */
export interface EngineFlags extends RuleSetFlags {
  db?: string;
  model?: string;
  server?: string;
  token?: string;
}

/** What {@link openEngine} gives: the engine and the rule material it was built from. */
export interface OpenedEngine {
  engine: SpamEngine;
  /** The rules, SpamTags and lists loaded (for a command that lists the rule set's tags). */
  set: LoadedRuleSet;
}

/**
 * Loads the rule set named by the flags (the built-in one without `--rules`/`--db`/`--server`),
 * builds the engine with the session flags' analysis switches and opens the `--model` classifier,
 * which the engine then owns (`engine.close()` closes it). A rule that does not compile is refused
 * and reported through `say` (one line, no prefix), as Stalwart skips it; so are managed stores whose
 * configuration is refused. Throws `Error` with a readable message when the rule set, the database,
 * the server or the model cannot be read (the engine built so far is closed first); the command then
 * exits 2.
 */
export async function openEngine(v: EngineFlags, flags: SessionFlags, say: (line: string) => void): Promise<OpenedEngine> {
  let engine: SpamEngine | undefined;
  try {
    let set: LoadedRuleSet;
    if (v.db !== undefined || v.server !== undefined) {
      const { loadManagedRuleSet } = await import('./managed.js');
      set = await loadManagedRuleSet({ db: v.db, server: v.server, token: v.token ?? process.env.SPAMRULE_TOKEN }, v);
    } else set = readRuleSet(v);
    const listOpts = v['cache-dir'] !== undefined ? { listCacheDir: v['cache-dir'] } : {};
    engine = buildEngine(set, thresholdsFrom(v), say, { ...flags, ...listOpts });
    for (const e of engine.loadReport.errors) say(`rule ${e.rule} refused: ${e.path}: ${e.message}`);
    if (v.model !== undefined) {
      const { modelLocationKind, modelLocationName, openModelFile } = await import('../classifier/cli.js');
      const model = v.model;
      const c = await openModelFile(model).catch((e: unknown) => {
        // A model that does not exist or is a folder says so already; other failures come from the store.
        const m = (e as Error).message;
        if (/does not exist|is a folder|holds no trained/.test(m)) throw e;
        // Not the URL's password: the store's message names the host.
        throw new Error(modelLocationKind(model) === 'file' ? openError('the --model file', model, e) : `cannot open the model in ${modelLocationName(model)}: ${m}`);
      });
      // The engine owns it from here: engine.close() closes its model store.
      engine.classifier = c;
    }
    return { engine, set };
  } catch (e) {
    // The stores of an engine built before the model failed to open.
    await engine?.close().catch(() => undefined);
    throw e;
  }
}
