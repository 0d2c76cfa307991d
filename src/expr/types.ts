/**
 * Contracts between the expression compiler and its callers (the rule engine, the CLI, JMAP
 * validation). The implementation lives in `compile.ts` (grammar → closures) and `functions/`.
 */
import type { LookupRegistry } from '../lookup/types.js';
import type { Value } from './value.js';

/** Where a parse error is: 1-based line and column, 0-based offset (README.md, deviation D6). */
export interface SourcePosition {
  line: number;
  column: number;
  offset: number;
}

/**
 * A compile-time error: bad syntax, unknown/disallowed name, wrong arity, unsafe or invalid regex.
 * `message` already names the problem and its position, e.g. `unknown variable "foo" at 1:1`.
 */
export class ExprParseError extends Error {
  constructor(
    message: string,
    readonly position?: SourcePosition,
  ) {
    super(message);
    this.name = 'ExprParseError';
  }
}

/**
 * Raised during evaluation by store functions (store down, NotSupported, bad SQL) and for a value
 * over the size limits of limits.ts (`value too large: …`).
 */
export class ExprEvalError extends Error {
  /** The lookup namespace whose store failed, for a store's failure (`key_*`, `counter_*`, `sql_query`). */
  readonly store: string | undefined;

  constructor(message: string, options?: { cause?: unknown; store?: string }) {
    super(message, options);
    this.name = 'ExprEvalError';
    this.store = options?.store;
  }
}

/** Parse context (docs/expression-language.md). An empty or absent list allows every name. */
export interface CompileOptions {
  allowedVariables?: readonly string[];
  allowedConstants?: readonly string[];
}

/**
 * Everything an evaluation may read. One context per (element × rule) evaluation or reused with
 * `captures` reset; the engine builds it.
 */
export interface EvalContext {
  /** Resolve an ExpressionVariable (`subject`, `from.domain`, `value`, …). Unknown → `""` or 0. */
  variable(name: string): Value;
  /** `$NAME`: Integer 1 if tag NAME is already set, else 0. */
  global(name: string): Value;
  /** Lookup namespaces for `key_*`, `counter_*`, `sql_query`. Absent → those return `""`. */
  lookups?: LookupRegistry;
  /** Server values for `system('hostname'|'domain'|'node_id'|'node_hostname'|'node_role')`. */
  system?: (name: string) => Value;
  /** Directory for `is_local_domain`/`is_local_address`; absent → 0. */
  isLocalDomain?: (domain: string) => boolean | Promise<boolean>;
  isLocalAddress?: (address: string) => boolean | Promise<boolean>;
  /**
   * The resolver of `dns_query` for this evaluation (the engine passes its own: `--dns`, the
   * per-message budget). Absent → the process-wide one (`setDnsResolver`, else the system's).
   */
  dns?: DnsResolver;
  /**
   * Most steps one `matches` search may take: a search whose pattern cost × subject length (UTF-16
   * code units) is over it fails with `RegexWorkError` before it starts (docs/expression-language.md,
   * "Regular expressions"). Absent → `DEFAULT_REGEX_WORK_LIMIT` (2^26); `Infinity` → no limit.
   */
  regexWorkLimit?: number;
}

/** The subset of `dns/promises.Resolver` that `dns_query` uses; replaceable for tests or caching. */
export interface DnsResolver {
  resolve4(name: string): Promise<string[]>;
  resolve6(name: string): Promise<string[]>;
  resolveMx(name: string): Promise<{ exchange: string; priority: number }[]>;
  resolveTxt(name: string): Promise<string[][]>;
  reverse(ip: string): Promise<string[]>;
}

/** A compiled expression or if-block. */
export interface CompiledExpression {
  /** The source, for explanations. */
  readonly source: string;
  /** True when evaluation may await a store (key_*, counter_*, sql_query, dns_query, is_local_*). */
  readonly isAsync: boolean;
  /**
   * Synchronous evaluation; throws if `isAsync`. Returns the value (never undefined). Arrays inside
   * the value may be compile-time constants shared by every evaluation: those are frozen, so copy
   * before changing. Throws ExprEvalError for a value over the size limits (limits.ts).
   */
  evalSync(ctx: EvalContext, captures?: string[]): Value;
  /** Evaluation that may await stores; rejects with ExprEvalError on store failure. */
  evalAsync(ctx: EvalContext, captures?: string[]): Promise<Value>;
}

/** `{match: [{if, then}], else}` as in the schema (`x:Expression`). */
export interface ExpressionObject {
  match: { if: string; then: string }[];
  else: string;
}

export interface CompiledIfBlock {
  readonly isAsync: boolean;
  /** True for the empty block (no match, empty else): evaluates to `undefined` without running. */
  readonly isEmpty: boolean;
  /**
   * Runs the block (docs/expression-language.md) with one capture buffer for all branches.
   * Returns `undefined` for the empty block; otherwise the value and which branch produced it
   * (index into `match`, or -1 for `else`). `evalSync` throws if `isAsync`.
   */
  evalSync(ctx: EvalContext): IfResult | undefined;
  evalAsync(ctx: EvalContext): Promise<IfResult | undefined>;
  /** Like `evalAsync`, but returns a plain value unless a store call really had to wait. */
  evalMaybe(ctx: EvalContext): IfResult | undefined | Promise<IfResult | undefined>;
}

export interface IfResult {
  value: Value;
  branch: number;
}

/** A compile error of one branch of an if-block, with the JSON-pointer-ish path used by JMAP. */
export interface IfBlockError {
  /** `else`, `match/0/if`, `match/0/then`, … (prefix with `condition/` for SpamRule). */
  path: string;
  message: string;
  position?: SourcePosition;
}
