/**
 * Runs the network-facing content modules (ip, domain, url) over a real message as classify does, with a configuration
 * (DNSBL servers, test mode, redirects), lookup lists and a recording static resolver. Returns the tags,
 * warnings, errors, the DNS queries made and the analysed message (for its element sets).
 */
import { runModule, type AnalysisRun } from '../../src/analysis/run.js';
import { envelopeOf, resolveSession } from '../../src/analysis/session.js';
import type { AnalysisConfig, DnsblServerInput, SessionInput } from '../../src/analysis/types.js';
import { OffResolver, StaticResolver, type StaticZone } from '../../src/dns/index.js';
import type { Resolver } from '../../src/dns/types.js';
import { StaticLookupList } from '../../src/lookup/memory.js';
import type { LookupStore } from '../../src/lookup/types.js';
import type { MessageContext } from '../../src/message/context.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { RecordingResolver } from './module-harness.js';

export interface ContentOutcome {
  tags: string[];
  warnings: string[];
  errors: string[];
  queries: string[];
  message: MessageContext;
}

export interface ContentOptions {
  session?: SessionInput;
  zone?: StaticZone;
  resolver?: Resolver;
  /** namespace → keys (globs allowed, as MemoryLookupKey). */
  lists?: Record<string, string[]>;
  config?: AnalysisConfig;
  /** Training run (network checks skipped). */
  train?: boolean;
}

export async function runModules(modules: string[], message: string, opts: ContentOptions = {}): Promise<ContentOutcome> {
  const s = resolveSession(opts.session ?? {}, { train: opts.train ?? false });
  const msg = await analyzeMessage(message, envelopeOf(s));
  // An OffResolver is passed as is: the engine recognises DNS off by its class.
  const recorder = opts.resolver instanceof OffResolver ? undefined : new RecordingResolver(opts.resolver ?? new StaticResolver(opts.zone ?? {}));
  const resolver = recorder ?? opts.resolver!;
  const lists = new Map<string, LookupStore>();
  for (const [ns, keys] of Object.entries(opts.lists ?? {})) lists.set(ns, new StaticLookupList(ns, keys));
  const run: AnalysisRun = {
    session: s,
    message: messageContextOf(msg),
    dns: resolver,
    lists: { get: (ns) => lists.get(ns) },
    config: opts.config ?? {},
    tags: new Set(),
    matches: [],
    errors: [],
    warnings: [],
  };
  for (const m of modules) if (!(await runModule(run, m))) throw new Error(`no module ${m}`);
  return {
    tags: [...run.tags].sort(),
    warnings: run.warnings,
    errors: run.errors.map((e) => e.message),
    queries: recorder?.queries ?? [],
    message: run.message,
  };
}

/** A DNSBL server definition in Stalwart's JSON shape. */
export function server(
  scope: DnsblServerInput['@type'],
  name: string,
  zone: { match?: [string, string][]; else: string },
  tag: { match?: [string, string][]; else: string },
): DnsblServerInput {
  const m = (x?: [string, string][]): { if: string; then: string }[] => (x ?? []).map(([i, t]) => ({ if: i, then: t }));
  return { '@type': scope, name, enable: true, zone: { match: m(zone.match), else: zone.else }, tag: { match: m(tag.match), else: tag.else } };
}

/** Joins header lines and a body into a CRLF message. */
export function mail(headers: string[], body = 'Hello.'): string {
  return [...headers, '', body, ''].join('\r\n');
}
