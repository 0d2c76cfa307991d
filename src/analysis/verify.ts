/**
 * SPF (RFC 7208), DKIM (RFC 6376), ARC (RFC 8617) and DMARC (RFC 7489) verification with the
 * `mailauth` package, over spamrule's own resolver (so the per-message DNS budget, the cache and
 * static/offline resolvers apply). Used only when classify is asked to verify and the session
 * lacks the results.
 */
import type { DnsType, Resolver } from '../dns/types.js';
import type { AuthFields } from './auth-results.js';
import { DKIM_RESULTS, DMARC_POLICIES, DMARC_RESULTS, SPF_RESULTS } from './session.js';
import type { DkimResult, DmarcPolicy, DmarcResult, Session, SpfResult } from './types.js';

type NodeStyleResolver = (name: string, rr: string) => Promise<unknown[]>;

function dnsError(code: string, name: string): Error {
  return Object.assign(new Error(`${code} ${name}`), { code });
}

/** Adapts a {@link Resolver} to the `dns.promises.resolve`-shaped function mailauth calls. */
export function nodeStyleResolver(resolver: Resolver): NodeStyleResolver {
  return async (name, rr) => {
    const type = rr.toUpperCase();
    if (!['A', 'AAAA', 'MX', 'TXT', 'PTR'].includes(type)) throw dnsError('ENOTIMP', name);
    const a = await resolver.query(name, type as DnsType);
    if (a.status === 'nxdomain') throw dnsError('ENOTFOUND', name);
    if (a.status === 'error') throw dnsError('ESERVFAIL', name);
    if (type === 'TXT') return (a.records as string[]).map((r) => [r]);
    if (type === 'MX') return (a.records as { preference: number; exchange: string }[]).map((r) => ({ priority: r.preference, exchange: r.exchange }));
    return a.records as unknown[];
  };
}

function pick<T extends string>(v: unknown, allowed: readonly T[]): T | undefined {
  return typeof v === 'string' && (allowed as readonly string[]).includes(v.toLowerCase()) ? (v.toLowerCase() as T) : undefined;
}

interface MailauthResult {
  spf?: { status?: { result?: string } } | false;
  dkim?: { results?: { status?: { result?: string; comment?: string }; signingDomain?: string }[] };
  arc?: { status?: { result?: string } } | false;
  dmarc?: { status?: { result?: string }; policy?: string; p?: string } | false;
}

/**
 * Verifies the message and returns the results as session fields. Throws when mailauth cannot be
 * loaded or fails as a whole (the caller reports it and goes on without results).
 */
export async function verifyMessage(raw: Uint8Array, s: Session, resolver: Resolver): Promise<AuthFields> {
  const { authenticate } = (await import('mailauth')) as unknown as {
    authenticate: (msg: Buffer, opts: Record<string, unknown>) => Promise<MailauthResult>;
  };
  const opts: Record<string, unknown> = {
    ip: s.remoteIp,
    sender: s.mailFrom,
    mta: s.hostname,
    resolver: nodeStyleResolver(resolver),
    disableBimi: true,
  };
  if (s.heloDomain !== null && s.heloDomain !== '') opts.helo = s.heloDomain;
  const r = await authenticate(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength), opts);
  const f: AuthFields = {};
  if (r.spf) {
    const v = pick<SpfResult>(r.spf.status?.result, SPF_RESULTS);
    if (v !== undefined) f.spf = { mailFrom: v, ehlo: null };
  }
  const dkim: { result: DkimResult; domain: string }[] = [];
  for (const d of r.dkim?.results ?? []) {
    let v = pick<DkimResult>(d.status?.result, DKIM_RESULTS);
    // mailauth reports a body-hash mismatch as neutral; RFC 6376 §6.1.3 and Stalwart make it a failure.
    if (v === 'neutral' && /body hash/i.test(d.status?.comment ?? '')) v = 'fail';
    if (v !== undefined) dkim.push({ result: v, domain: (d.signingDomain ?? '').toLowerCase() });
  }
  if (dkim.length > 0) f.dkim = dkim;
  if (r.arc) {
    const v = pick<DkimResult>(r.arc.status?.result, DKIM_RESULTS);
    if (v !== undefined) f.arc = v;
  }
  if (r.dmarc) {
    const v = pick<DmarcResult>(r.dmarc.status?.result, DMARC_RESULTS);
    const p = pick<DmarcPolicy>(r.dmarc.policy ?? r.dmarc.p, DMARC_POLICIES);
    if (v !== undefined) f.dmarc = { result: v, policy: p ?? null };
  }
  return f;
}
