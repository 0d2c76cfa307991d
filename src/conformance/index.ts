/**
 * Conformance runner for `stalwart-antispam-suite/v1` files: Stalwart's own spam-filter test cases
 * (message, session, DNS mocks, lists, expected tags). Per case it runs only the steps the case
 * names, with the file's DNS mocks, lists and test-mode behaviour, and compares the final tag set
 * (or, for `compare: "header"`, the `X-Spam-Result`/`X-Spam-Score` text with whitespace collapsed). A suite
 * with `testMode.llm` gets the harness's mock chat-completion server, here on a loopback port of its own
 * (src/conformance/llm-mock.ts), for the LLM step to ask over HTTP.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseJsonText } from '../util/index.js';
import type { FileExtensionInput, LlmSettings, TestMode } from '../analysis/types.js';
import { SpamEngine } from '../engine/engine.js';
import { parseRuleBundle, type RuleBundle } from '../engine/load.js';
import { LookupMap, MemoryStore, StaticLookupList } from '../lookup/memory.js';
import { SpamClassifier } from '../classifier/classifier.js';
import { ClassifierStore } from '../classifier/store.js';
import { caseSession, parseSuite, SuiteList, SuiteResolver, type SuiteCase, type SuiteFile } from './suite.js';
import { startLlmMock, suiteLlmSettings, type LlmMock } from './llm-mock.js';

export { parseSuite, SuiteList, SuiteResolver, caseSession, type SuiteCase, type SuiteFile } from './suite.js';
export { startLlmMock, suiteLlmSettings, mockReply, type LlmMock } from './llm-mock.js';

type PyzorTestAnswer = NonNullable<TestMode['pyzor']>[number];

/** Steps of the harness that are not built here (none now); a case naming them lists them as skipped. */
export const UNBUILT_STEPS: ReadonlySet<string> = new Set<string>();
/** The classifier file's pseudo-step: the `PROB_*` tag of the verdict is already among the result's tags. */
const PROB_TAGS_STEP = 'addProbTagsFromHeaders';

/**
 * The classifier the harness trains before the `classifier` file: the suite's `classifierTraining`
 * samples, the suite's minimum counts, one training run (seeded, in this thread).
 */
export async function suiteClassifier(suite: SuiteFile): Promise<SpamClassifier> {
  const s = suite as SuiteFile & {
    classifierTraining?: { spam?: string[]; ham?: string[] };
    settings?: { classifier?: { minHamSamples?: number; minSpamSamples?: number } };
  };
  const min = s.settings?.classifier ?? {};
  const c = new SpamClassifier(new ClassifierStore(new MemoryStore('classifier')), {
    settings: { minHamSamples: min.minHamSamples ?? 10, minSpamSamples: min.minSpamSamples ?? 10 },
    refreshMs: 0,
  });
  for (const m of s.classifierTraining?.spam ?? []) await c.learn(m, true);
  for (const m of s.classifierTraining?.ham ?? []) await c.learn(m, false);
  await c.train({ seed: 1 });
  return c;
}

export interface ConformanceOptions {
  /** The rule set (Stalwart's `spam-filter-rules.json`); default: `../stalwart-spam-filter/spam-filter-rules.json` beside the suite's folder. */
  rulesFile?: string;
  /** Only cases of these files (`from`, `helo`, …). */
  files?: readonly string[];
  /** Only these case ids (`from#3`). */
  ids?: readonly string[];
}

/** One case's result, as `spamrule conformance` prints it. */
export interface CaseOutcome {
  id: string;
  /** Sorted, upper-cased tags (compare `tags`). */
  tags?: string[];
  /** `X-Spam-Result: … X-Spam-Score: …`, whitespace collapsed (compare `header`). */
  header?: string;
  /** Steps the case names that are not built here. */
  skipped?: string[];
  /** Whether the result equals the case's expectation. */
  pass: boolean;
  /** Expected tags we did not set, and tags we set that were not expected (compare `tags`). */
  missing?: string[];
  extra?: string[];
  /** The expected header (compare `header`, when it differs). */
  expectedHeader?: string;
}

/** Collapses whitespace runs to one space and drops leading whitespace (the harness's comparison). */
export function collapse(s: string): string {
  return s.replace(/\s+/g, ' ').replace(/^ /, '').trimEnd();
}

/**
 * The suite's canned Pyzor answers (`testMode.pyzor.responses`: `{digest, code, count, wlCount}`), those
 * that are well formed; none when the file has none.
 */
export function suitePyzorResponses(suite: SuiteFile): PyzorTestAnswer[] {
  const p = suite.testMode?.pyzor as { responses?: unknown } | undefined;
  const list = Array.isArray(p?.responses) ? (p.responses as Record<string, unknown>[]) : [];
  const num = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 0;
  return list
    .filter((r) => r !== null && typeof r === 'object' && typeof r.digest === 'string' && num(r.code) && num(r.count) && num(r.wlCount))
    .map((r) => ({ digest: (r.digest as string).toLowerCase(), code: r.code as number, count: r.count as number, wlCount: r.wlCount as number }));
}

/**
 * Builds the engine a suite file implies: the rule set, its scores and lists, the file's lists and DNS, test
 * mode (DNSBL answers, redirects, Pyzor answers: no network), Pyzor on with Stalwart's defaults, and the LLM
 * step with `llm` (the suite's `testMode.llm` pointed at a mock server, {@link suiteLlmSettings}), as the
 * harness configures it.
 */
export function suiteEngine(suite: SuiteFile, bundle: RuleBundle, fileExtensions: readonly FileExtensionInput[], llm?: LlmSettings): SpamEngine {
  const lookups = new LookupMap();
  for (const [ns, entries] of bundle.lists) lookups.set(ns, new StaticLookupList(ns, entries));
  for (const [ns, l] of Object.entries(suite.lists ?? {})) {
    const base = l.replacesRealList === true ? undefined : lookups.get(ns);
    lookups.set(ns, new SuiteList(l.entries, base));
  }
  return new SpamEngine({
    rules: bundle.rules,
    tags: bundle.tags,
    lookups,
    thresholds: { scoreSpam: suite.settings?.spam?.scoreSpam ?? 5 },
    dns: new SuiteResolver(suite.dns),
    analysis: {
      dnsblServers: bundle.dnsblServers,
      fileExtensions,
      pyzor: true,
      ...(llm !== undefined ? { llm } : {}),
      testMode: { dnsbl: true, httpRedirect: true, pyzor: suitePyzorResponses(suite) },
    },
  });
}

/** Runs one case on a suite engine. Never throws for a case (a failure is a non-passing outcome). */
export async function runCase(engine: SpamEngine, suite: SuiteFile, c: SuiteCase): Promise<CaseOutcome> {
  const steps = c.modules.filter((s) => !UNBUILT_STEPS.has(s) && s !== PROB_TAGS_STEP);
  const skipped = c.modules.filter((s) => UNBUILT_STEPS.has(s));
  const r = await engine.classify(c.message, { session: caseSession(suite, c), steps });
  if (r.skipped) skipped.push(...r.skipped);
  const out: CaseOutcome = { id: c.id, pass: false };
  if (c.compare === 'header') {
    const llm = r.headers['X-Spam-LLM'];
    out.header = collapse(`X-Spam-Result: ${r.headers['X-Spam-Result']}${llm !== undefined ? ` X-Spam-LLM: ${llm}` : ''} X-Spam-Score: ${r.headers['X-Spam-Score']}`);
    out.pass = out.header === collapse(c.expectHeader ?? '');
    if (!out.pass) out.expectedHeader = c.expectHeader ?? '';
  } else {
    const tags = [...new Set(r.tags.map((t) => t.toUpperCase()))].sort();
    const expect = new Set(c.expect ?? []);
    out.tags = tags;
    out.missing = [...expect].filter((t) => !tags.includes(t)).sort();
    out.extra = tags.filter((t) => !expect.has(t));
    out.pass = out.missing.length === 0 && out.extra.length === 0;
    if (out.pass) {
      delete out.missing;
      delete out.extra;
    }
  }
  if (skipped.length > 0) out.skipped = skipped;
  return out;
}

/**
 * Reads a suite file and runs its cases (filtered by `opts`), in file order. Throws `Error` when
 * the suite or the rule set cannot be read.
 */
export async function runSuite(path: string, opts: ConformanceOptions = {}): Promise<CaseOutcome[]> {
  let json: unknown;
  try {
    json = parseJsonText(readFileSync(path, 'utf8'));
  } catch (e) {
    throw new Error(`cannot read suite ${path}: ${(e as Error).message}`);
  }
  const suite = parseSuite(json, path);
  // A folder (Stalwart's published spam-filter folder) stands for the spam-filter-rules.json in it.
  const given = opts.rulesFile ?? join(dirname(path), '..', 'stalwart-spam-filter');
  const rulesFile = existsSync(given) && statSync(given).isDirectory() ? join(given, 'spam-filter-rules.json') : given;
  let rulesJson: Record<string, unknown>;
  try {
    rulesJson = parseJsonText(readFileSync(rulesFile, 'utf8')) as Record<string, unknown>;
  } catch (e) {
    const hint = opts.rulesFile === undefined ? ' (give Stalwart\'s spam-filter-rules.json, or the folder holding it, with --rules)' : '';
    throw new Error(`cannot read rule set ${rulesFile}: ${(e as Error).message}${hint}`);
  }
  const bundle = parseRuleBundle(rulesJson, rulesFile);
  const ext = Array.isArray(rulesJson.SpamFileExtension) ? (rulesJson.SpamFileExtension as FileExtensionInput[]) : [];
  // The harness's mock LLM server, when the suite's cases may ask it (only cases naming the `llm` step do).
  const mock: LlmMock | undefined = suite.testMode?.llm !== undefined ? await startLlmMock() : undefined;
  try {
    return await runCases(suite, suiteEngine(suite, bundle, ext, mock === undefined ? undefined : suiteLlmSettings(suite, mock.url)), opts);
  } finally {
    await mock?.close();
  }
}

/** The cases of a suite (filtered by `opts`) on its engine, in file order. */
async function runCases(suite: SuiteFile, engine: SpamEngine, opts: ConformanceOptions): Promise<CaseOutcome[]> {
  const files = opts.files && opts.files.length > 0 ? new Set(opts.files) : undefined;
  const ids = opts.ids && opts.ids.length > 0 ? new Set(opts.ids) : undefined;
  const out: CaseOutcome[] = [];
  let classifier: SpamClassifier | undefined;
  for (const c of suite.cases) {
    if (files !== undefined && !files.has(c.file)) continue;
    if (ids !== undefined && !ids.has(c.id)) continue;
    if (c.compare !== 'tags' && c.compare !== 'header') continue;
    // Only the classifier file runs with a model (the harness trains right before it).
    if (c.file === 'classifier') classifier ??= await suiteClassifier(suite);
    engine.classifier = c.file === 'classifier' ? classifier : undefined;
    try {
      out.push(await runCase(engine, suite, c));
    } catch (e) {
      out.push({ id: c.id, pass: false, skipped: [`error: ${(e as Error).message}`] });
    }
  }
  return out;
}
