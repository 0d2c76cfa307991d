/**
 * Authentication results from a trusted `Authentication-Results` header (RFC 8601): when the MTA
 * passes no SPF/DKIM/ARC/DMARC/iprev result in the session, the topmost header whose authserv-id
 * the operator trusts supplies them. Headers of other authserv-ids are ignored (RFC 8601 §5: only
 * a receiver's own, trusted results may be used; others can be forged by the sender).
 */
import type { RawHeader } from '../message/headers.js';
import { DKIM_RESULTS, DMARC_POLICIES, DMARC_RESULTS, IPREV_RESULTS, SPF_RESULTS } from './session.js';
import type { DkimResult, DmarcPolicy, DmarcResult, IprevResult, Session, SpfResult } from './types.js';

/** One `method=result` of an Authentication-Results header, with its `ptype.property=value` pairs. */
export interface AuthResult {
  method: string;
  result: string;
  /** `header.d`, `smtp.mailfrom`, `policy.iprev`, … (lowercased names). */
  props: Record<string, string>;
  /** Comments after the result, e.g. `(p=REJECT sp=NONE)`. */
  comments: string[];
}

export interface AuthResultsHeader {
  authservId: string;
  results: AuthResult[];
}

/** Splits `s` into tokens: words, quoted strings (unquoted), `(comments)`, `=`, `;`, `/`; a stray `)` is skipped. */
function lex(s: string): { t: string; kind: 'word' | 'comment' | 'punct' }[] {
  const out: { t: string; kind: 'word' | 'comment' | 'punct' }[] = [];
  let i = 0;
  const n = Math.min(s.length, 65_536); // an A-R header is short; bound hostile ones
  while (i < n) {
    const c = s[i]!;
    // A `)` that closes no comment is skipped like white space: every branch below must consume at least one
    // character, and the word branch stops at `)`, so a stray one would otherwise be read as an empty word
    // forever (a sender's header looping the classify until the heap ran out).
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n' || c === ')') i++;
    else if (c === '(') {
      let depth = 1;
      let j = i + 1;
      let text = '';
      while (j < n && depth > 0) {
        const d = s[j]!;
        if (d === '\\' && j + 1 < n) {
          text += s[j + 1];
          j += 2;
          continue;
        }
        if (d === '(') depth++;
        else if (d === ')' && --depth === 0) break;
        text += d;
        j++;
      }
      out.push({ t: text.trim(), kind: 'comment' });
      i = j + 1;
    } else if (c === '"') {
      let j = i + 1;
      let text = '';
      while (j < n && s[j] !== '"') {
        if (s[j] === '\\' && j + 1 < n) j++;
        text += s[j];
        j++;
      }
      out.push({ t: text, kind: 'word' });
      i = j + 1;
    } else if (c === ';' || c === '=' || c === '/') {
      out.push({ t: c, kind: 'punct' });
      i++;
    } else {
      let j = i;
      while (j < n && !' \t\r\n();="/'.includes(s[j]!)) j++;
      out.push({ t: s.slice(i, j), kind: 'word' });
      i = j;
    }
  }
  return out;
}

/**
 * Parses an Authentication-Results header value (RFC 8601 §2.2): `authserv-id [version];
 * method[/version]=result [reason=…] ptype.property=value …; …`, or `authserv-id; none`.
 * Returns `undefined` when there is no authserv-id. Never throws.
 */
export function parseAuthenticationResults(value: string): AuthResultsHeader | undefined {
  const toks = lex(value);
  let i = 0;
  while (i < toks.length && toks[i]!.kind === 'comment') i++;
  const id = toks[i];
  if (id === undefined || id.kind !== 'word') return undefined;
  const out: AuthResultsHeader = { authservId: id.t.toLowerCase(), results: [] };
  i++;
  // Skip an optional version and comments up to the first ';'.
  while (i < toks.length && toks[i]!.t !== ';') i++;
  while (i < toks.length) {
    i++; // the ';'
    const start = i;
    while (i < toks.length && toks[i]!.t !== ';') i++;
    const words = toks.slice(start, i);
    if (words.length === 0) continue;
    let k = 0;
    while (k < words.length && words[k]!.kind === 'comment') k++;
    const method = words[k];
    if (method === undefined || method.kind !== 'word' || method.t.toLowerCase() === 'none') continue;
    k++;
    if (words[k]?.t === '/') k += 2; // method version
    if (words[k]?.t !== '=') continue;
    const result = words[k + 1];
    if (result === undefined || result.kind !== 'word') continue;
    const r: AuthResult = { method: method.t.toLowerCase(), result: result.t.toLowerCase(), props: {}, comments: [] };
    k += 2;
    while (k < words.length) {
      const w = words[k]!;
      if (w.kind === 'comment') {
        r.comments.push(w.t);
        k++;
      } else if (w.kind === 'word' && words[k + 1]?.t === '=' && words[k + 2] !== undefined) {
        r.props[w.t.toLowerCase()] = words[k + 2]!.t;
        k += 3;
      } else k++;
    }
    out.results.push(r);
  }
  return out;
}

/** Session fields an Authentication-Results header can supply. */
export type AuthFields = Partial<Pick<Session, 'spf' | 'dkim' | 'arc' | 'dmarc' | 'iprev'>>;

function pick<T extends string>(v: string, allowed: readonly T[]): T | undefined {
  return (allowed as readonly string[]).includes(v) ? (v as T) : undefined;
}

/** DMARC policy from `policy.published-domain-policy` (RFC 8601 registry) or a `p=…` comment. */
function dmarcPolicy(r: AuthResult): DmarcPolicy | undefined {
  const p = r.props['policy.published-domain-policy'] ?? r.comments.map((c) => /(?:^|\s)p=(\w+)/i.exec(c)?.[1]).find((x) => x !== undefined);
  return p === undefined ? undefined : pick(p.toLowerCase(), DMARC_POLICIES);
}

/** Maps one parsed header to session fields (results outside each enum are left out). */
export function authFields(h: AuthResultsHeader): AuthFields {
  const f: AuthFields = {};
  const dkim: { result: DkimResult; domain: string }[] = [];
  for (const r of h.results) {
    switch (r.method) {
      case 'spf': {
        const v = pick<SpfResult>(r.result, SPF_RESULTS);
        if (v !== undefined && f.spf === undefined) f.spf = { mailFrom: v, ehlo: null };
        break;
      }
      case 'dkim': {
        const v = pick<DkimResult>(r.result === 'policy' ? 'fail' : r.result, DKIM_RESULTS);
        const d = r.props['header.d'] ?? r.props['header.i']?.replace(/^.*@/, '') ?? '';
        if (v !== undefined) dkim.push({ result: v, domain: d.toLowerCase() });
        break;
      }
      case 'arc': {
        const v = pick<DkimResult>(r.result, DKIM_RESULTS);
        if (v !== undefined && f.arc === undefined) f.arc = v;
        break;
      }
      case 'dmarc': {
        const v = pick<DmarcResult>(r.result, DMARC_RESULTS);
        if (v !== undefined && f.dmarc === undefined) f.dmarc = { result: v, policy: dmarcPolicy(r) ?? null };
        break;
      }
      case 'iprev': {
        const v = pick<IprevResult>(r.result, IPREV_RESULTS);
        // The PTR name is usually given in a comment: `iprev=pass policy.iprev=192.0.2.1 (mail.example.net)`.
        const ptr = r.comments.map((c) => c.trim()).filter((c) => /^[a-z0-9.-]+\.[a-z]{2,}\.?$/i.test(c));
        if (v !== undefined && f.iprev === undefined) f.iprev = { result: v, ptr: ptr.map((p) => p.toLowerCase().replace(/\.$/, '')) };
        break;
      }
    }
  }
  if (dkim.length > 0) f.dkim = dkim;
  return f;
}

/**
 * Results of the topmost `Authentication-Results` header whose authserv-id is in `trusted`
 * (case-insensitive), or `undefined` when there is none.
 */
export function trustedAuthResults(headers: readonly RawHeader[], trusted: readonly string[]): AuthFields | undefined {
  if (trusted.length === 0) return undefined;
  const ids = new Set(trusted.map((t) => t.toLowerCase()));
  for (const h of headers) {
    if (h.name.toLowerCase() !== 'authentication-results') continue;
    const parsed = parseAuthenticationResults(h.raw);
    if (parsed !== undefined && ids.has(parsed.authservId)) return authFields(parsed);
  }
  return undefined;
}

/** Fills the session's missing authentication results from `f` (what the MTA passed always wins). */
export function mergeAuth(s: Session, f: AuthFields): void {
  if (s.spf.mailFrom === null && f.spf !== undefined) s.spf = { ...s.spf, mailFrom: f.spf.mailFrom };
  if (s.dkim.length === 0 && f.dkim !== undefined) s.dkim = f.dkim;
  if (s.arc === null && f.arc !== undefined) s.arc = f.arc;
  if (s.dmarc.result === null && f.dmarc !== undefined) s.dmarc = f.dmarc;
  if (s.iprev === null && f.iprev !== undefined) s.iprev = f.iprev;
}
