/**
 * `dns_query(name, type)` (docs/expression-language.md): over the evaluation's resolver (the engine's,
 * `EvalContext.dns`), else the process-wide one (`setDnsResolver`, else `node:dns/promises` with system servers).
 */
import { Resolver } from 'node:dns/promises';
import { ExprEvalError, type DnsResolver } from '../types.js';
import { toStr, type Value } from '../value.js';
import { parseIp } from './ip.js';
import type { AsyncFunctionDef } from './types.js';

export type { DnsResolver };

let resolver: DnsResolver | undefined;

/** Sets the resolver `dns_query` uses (default: a `node:dns/promises` Resolver with system servers). */
export function setDnsResolver(r: DnsResolver | undefined): void {
  resolver = r;
}
function current(): DnsResolver {
  return (resolver ??= new Resolver());
}

/** "No such record" answers: an empty list for one family of `ip`, not a failure. */
function isNoData(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return code === 'ENODATA' || code === 'ENOTFOUND';
}

const stripDot = (h: string): string => (h.endsWith('.') ? h.slice(0, -1) : h);

async function query(name: string, type: string, r: DnsResolver): Promise<Value> {
  switch (type) {
    case 'ip': {
      // IPv4 then IPv6; fail only when neither family answers.
      const [a, aaaa] = await Promise.allSettled([r.resolve4(name), r.resolve6(name)]);
      if (a.status === 'rejected' && aaaa.status === 'rejected') throw a.reason;
      for (const s of [a, aaaa]) if (s.status === 'rejected' && !isNoData(s.reason)) throw s.reason;
      return [...(a.status === 'fulfilled' ? a.value : []), ...(aaaa.status === 'fulfilled' ? aaaa.value : [])];
    }
    case 'mx': {
      const mx = await r.resolveMx(name);
      return mx.sort((x, y) => x.priority - y.priority).map((m) => stripDot(m.exchange));
    }
    case 'txt': {
      // A record's character-strings are one text; several records are concatenated.
      const txt = await r.resolveTxt(name);
      return txt.map((chunks) => chunks.join('')).join('');
    }
    case 'ptr': {
      if (parseIp(name) === undefined) throw new ExprEvalError(`dns_query: "${name}" is not an IP address`);
      return (await r.reverse(name)).map(stripDot);
    }
    case 'ipv4':
      return r.resolve4(name);
    case 'ipv6':
      return r.resolve6(name);
    default:
      return '';
  }
}

export const DNS_FUNCTIONS: Record<string, AsyncFunctionDef> = {
  /**
   * `type` (case-insensitive): `ip` → IPv4 then IPv6 addresses; `mx` → exchanges by preference,
   * no trailing dot; `txt` → a String; `ptr` → host names (`name` must be an IP); `ipv4`/`ipv6` →
   * Arrays; any other type → `""`. Resolver failures reject with ExprEvalError (cause kept).
   */
  dns_query: {
    arity: 2,
    async: true,
    async fn([n, t], ctx) {
      const name = toStr(n!);
      const type = toStr(t!).toLowerCase();
      try {
        return await query(name, type, ctx.dns ?? current());
      } catch (e) {
        if (e instanceof ExprEvalError) throw e;
        const msg = e instanceof Error ? e.message : String(e);
        throw new ExprEvalError(`dns_query ${type} ${name} failed: ${msg}`, { cause: e });
      }
    },
  },
};
