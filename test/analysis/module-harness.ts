/**
 * Runs one analysis module over a real message and a session, as classify does, and returns the
 * tags it set (sorted), its warnings and errors. DNS defaults to a static resolver with no records
 * (every name NXDOMAIN); `queries` lists what the module asked.
 */
import { runModule, type AnalysisRun } from '../../src/analysis/run.js';
import { envelopeOf, resolveSession } from '../../src/analysis/session.js';
import type { SessionInput } from '../../src/analysis/types.js';
import { StaticResolver, type StaticZone } from '../../src/dns/index.js';
import type { DnsAnswer, DnsType, Resolver } from '../../src/dns/types.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';

export interface ModuleOutcome {
  tags: string[];
  warnings: string[];
  errors: string[];
  queries: string[];
}

/** A resolver that records every query (`"A example.org"`) before answering from `inner`. */
export class RecordingResolver implements Resolver {
  readonly queries: string[] = [];
  constructor(private readonly inner: Resolver) {}
  query<T extends DnsType>(name: string, type: T): Promise<DnsAnswer<T>> {
    this.queries.push(`${type} ${name}`);
    return this.inner.query(name, type);
  }
}

export async function runOne(
  module: string,
  message: string | Uint8Array,
  session: SessionInput = {},
  dns: { zone?: StaticZone; resolver?: Resolver } = {},
): Promise<ModuleOutcome> {
  const s = resolveSession(session);
  const msg = await analyzeMessage(message, envelopeOf(s));
  const resolver = new RecordingResolver(dns.resolver ?? new StaticResolver(dns.zone ?? {}));
  const run: AnalysisRun = {
    session: s,
    message: messageContextOf(msg),
    dns: resolver,
    lists: { get: () => undefined },
    config: {},
    tags: new Set(),
    matches: [],
    errors: [],
    warnings: [],
  };
  if (!(await runModule(run, module))) throw new Error(`no module ${module}`);
  return {
    tags: [...run.tags].sort(),
    warnings: run.warnings,
    errors: run.errors.map((e) => e.message),
    queries: resolver.queries,
  };
}

/** Joins header lines and a body into a CRLF message. */
export function mail(headers: string[], body = 'Hello.'): string {
  return [...headers, '', body, ''].join('\r\n');
}
