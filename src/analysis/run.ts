/**
 * Runs the built-in analysis modules over one message: builds the {@link AnalysisContext}, calls
 * the modules in Stalwart's order (or the steps a caller names), and records which module set
 * which tag. A module that throws is reported and the others still run.
 */
import { quoteTag, tagNameProblem, type WaitClock } from '../util/index.js';
import type { Resolver } from '../dns/types.js';
import type { LookupRegistry } from '../lookup/types.js';
import type { MessageContext } from '../message/context.js';
import { MODULES } from './index.js';
import type { AnalysisConfig, AnalysisContext, AnalysisModule, LlmVerdict, ModuleMatch, Session } from './types.js';

export type { ModuleMatch } from './types.js';

export interface ModuleError {
  module: string;
  message: string;
}

/** Module names as Stalwart's harness names its steps (`message_id`, `reply_to`) → ours. */
const STEP_ALIASES: Readonly<Record<string, string>> = { message_id: 'messageid', reply_to: 'replyto', helo: 'ehlo', spam_trap: 'spamtrap' };

/** Step name (ours and the harness's aliases) → module: one lookup per module and message. */
const BY_STEP = new Map<string, readonly [string, AnalysisModule]>(MODULES.map((m) => [m[0], m]));
for (const [alias, name] of Object.entries(STEP_ALIASES)) BY_STEP.set(alias, BY_STEP.get(name)!);

/** Our module name for a step name, or `undefined` when no such module exists. */
export function moduleName(step: string): string | undefined {
  return BY_STEP.get(step)?.[0];
}

export interface AnalysisRun {
  readonly session: Session;
  readonly message: MessageContext;
  readonly dns: Resolver;
  readonly lists: LookupRegistry;
  readonly config: AnalysisConfig;
  /** The shared tag set (upstream tags already in it). */
  readonly tags: Set<string>;
  readonly matches: ModuleMatch[];
  readonly errors: ModuleError[];
  readonly warnings: string[];
  /** Network waits other than DNS (redirect hops), which the classify time budget leaves out. */
  readonly waits?: WaitClock;
  /** The LLM step's verdict, once it has one (`ClassifyResult.llm`). */
  llm?: LlmVerdict;
}

class Context implements AnalysisContext {
  constructor(
    private readonly run: AnalysisRun,
    private readonly module: string,
  ) {}
  get session(): Session {
    return this.run.session;
  }
  get message(): MessageContext {
    return this.run.message;
  }
  get dns(): Resolver {
    return this.run.dns;
  }
  get lists(): LookupRegistry {
    return this.run.lists;
  }
  get config(): AnalysisConfig {
    return this.run.config;
  }
  tag(name: string): void {
    if (typeof name !== 'string' || name === '' || this.run.tags.has(name)) return;
    // A DNSBL server's tag expression can build a tag from an answer or an element (README A21).
    const problem = tagNameProblem(name);
    if (problem !== undefined) {
      this.warn(`tag ${quoteTag(name)} is not set: ${problem}`);
      return;
    }
    this.run.tags.add(name);
    this.run.matches.push({ module: this.module, tag: name });
  }
  hasTag(name: string): boolean {
    return this.run.tags.has(name);
  }
  warn(message: string): void {
    this.run.warnings.push(`${this.module}: ${message}`);
  }
  setLlmVerdict(verdict: LlmVerdict): void {
    this.run.llm = verdict;
  }
  networkWait<T>(p: Promise<T>): Promise<T> {
    return this.run.waits === undefined ? p : this.run.waits.time(p);
  }
}

/** Is module `name` switched on in `config.modules` (default on)? */
export function moduleEnabled(config: AnalysisConfig, name: string): boolean {
  return config.modules?.[name] !== false;
}

/**
 * Runs one module by name (ours or the harness's alias). Returns false when there is no such module.
 * A synchronous module gives a synchronous answer: most modules never wait, and a promise per
 * module and message showed in profiles.
 */
export function runModule(run: AnalysisRun, step: string): boolean | Promise<boolean> {
  const m = BY_STEP.get(step);
  if (m === undefined) return false;
  const [name, fn] = m;
  let pending: void | Promise<void>;
  try {
    pending = fn(new Context(run, name));
  } catch (e) {
    failed(run, name, e);
    return true;
  }
  if (pending === undefined) return true;
  return Promise.resolve(pending).then(
    () => true,
    (e: unknown) => {
      failed(run, name, e);
      return true;
    },
  );
}

/** Records a module's throw (or rejection) as an error of the run. */
function failed(run: AnalysisRun, name: string, e: unknown): void {
  run.errors.push({ module: name, message: e instanceof Error ? e.message : String(e) });
}

/** Runs every enabled module in Stalwart's order. */
export async function runModules(run: AnalysisRun): Promise<void> {
  for (const [name] of MODULES) {
    if (moduleEnabled(run.config, name)) await runModule(run, name);
  }
}
