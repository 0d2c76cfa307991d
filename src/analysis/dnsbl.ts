/**
 * The DNSBL engine (Stalwart's `check_dnsbl`, `stalwart:crates/spam-filter/src/modules/dnsbl.rs`;
 * docs/analysis.md "DNSBL"): evaluates `SpamDnsblServer` definitions for one element (an IP, a domain,
 * an e-mail address or a URL) and turns each server's answer into a tag. Called by the ip, domain and
 * url modules; not a module of its own.
 *
 * Per server of the element's scope, in definition order, while the scope's per-message counter is
 * below its limit: evaluate `zone` (a non-string result skips the server), look the lowercased zone up
 * (A record; the first address is the answer, 255.255.255.255 when the answer is empty; NXDOMAIN or an
 * error set nothing), then evaluate `tag` with the answer's Ip variables; a string result is the tag.
 * Caching across messages (record TTL, "no record") is the resolver's (src/dns); inside one message the
 * same zone is asked once and counted once.
 */
import ipaddr from '../dns/ipaddr.js';
import type { Node } from '../../grammar/index.js';
import { OffResolver } from '../dns/off.js';
import {
  compileIfBlock, DNSBL_TAG_VARIABLES, parseExpression, SPAM_RULE_VARIABLES, type CompiledIfBlock, type EvalContext,
} from '../expr/index.js';
import type { Value } from '../expr/value.js';
import type { MessageContext } from '../message/context.js';
import { parseIp } from '../message/hostname.js';
import type { Location } from '../message/types.js';
import type { AnalysisContext, DnsblServerInput, ExpressionInput } from './types.js';
import { MemoSlot } from '../util/index.js';

/** The scopes a DNSBL server can check (Header/Body/Any servers are never invoked, as in Stalwart). */
export type DnsblScope = 'Ip' | 'Domain' | 'Email' | 'Url';

/** Default per-message query limit of each scope (Stalwart's `SpamDnsblSettings`). */
export const DEFAULT_DNSBL_LIMIT = 50;

export interface CompiledDnsblServer {
  readonly name: string;
  readonly scope: DnsblScope;
  readonly zone: CompiledIfBlock;
  readonly tag: CompiledIfBlock;
  /**
   * Some `if` of the tag block compiles to exactly 3 of Stalwart's RPN items (e.g. `ip == '127.0.0.2'`):
   * the test-mode answer synthesiser then answers only `…​.2` zones (Stalwart's `test_mode` quirk).
   */
  readonly threeItemCondition: boolean;
}

export interface CompiledDnsblSet {
  readonly byScope: Readonly<Record<DnsblScope, readonly CompiledDnsblServer[]>>;
  /** Servers dropped because an expression does not compile: `"<name>: <path>: <message>"`. */
  readonly errors: readonly string[];
}

const SCOPES: readonly DnsblScope[] = ['Ip', 'Domain', 'Email', 'Url'];

// Compiled once per server definition object (and per definition list), never per message.
const serverCache = new WeakMap<DnsblServerInput, CompiledDnsblServer | string>();
const setCache = new WeakMap<readonly DnsblServerInput[], CompiledDnsblSet>();
/** The list of a configuration without DNSBL servers: one key, not a new array (and WeakMap entry) per call. */
const NO_SERVERS: readonly DnsblServerInput[] = [];

function matchList(e: ExpressionInput | undefined): { if: string; then: string }[] {
  const m = e?.match;
  if (m === undefined || m === null) return [];
  if (Array.isArray(m)) return m;
  return Object.keys(m)
    .sort((a, b) => Number(a) - Number(b))
    .map((k) => m[k]!);
}

/** Number of RPN items Stalwart's compiler emits for an expression tree (docs/expression-language.md). */
export function rpnItemCount(n: Node): number {
  switch (n.type) {
    case 'Int': case 'Float': case 'Str': case 'Name': case 'Global': case 'Capture': return 1;
    case 'Empty': return 0;
    case 'Array': return n.items.reduce((a, x) => a + rpnItemCount(x), 1);
    case 'Index': return rpnItemCount(n.target) + rpnItemCount(n.index) + 1;
    case 'Unary': return rpnItemCount(n.operand) + 1;
    // `&&`/`||` add a JmpIf between the operands.
    case 'Binary': return rpnItemCount(n.left) + rpnItemCount(n.right) + (n.op === '&&' || n.op === '||' ? 2 : 1);
    case 'Call': return n.args.reduce((a, x) => a + rpnItemCount(x), 1);
  }
}

function compileServer(s: DnsblServerInput): CompiledDnsblServer | string {
  const name = typeof s?.name === 'string' ? s.name : '?';
  const scope = s?.['@type'];
  if (!SCOPES.includes(scope as DnsblScope)) return `${name}: @type: scope ${String(scope)} is never checked`;
  const zoneMatch = matchList(s.zone);
  const tagMatch = matchList(s.tag);
  const zone = compileIfBlock({ match: zoneMatch, else: s.zone?.else ?? '' }, { allowedVariables: SPAM_RULE_VARIABLES[scope as DnsblScope] });
  if (zone.block === undefined || zone.errors.length > 0) return `${name}: zone/${zone.errors[0]?.path ?? ''}: ${zone.errors[0]?.message ?? 'empty'}`;
  const tag = compileIfBlock({ match: tagMatch, else: s.tag?.else ?? '' }, { allowedVariables: DNSBL_TAG_VARIABLES });
  if (tag.block === undefined || tag.errors.length > 0) return `${name}: tag/${tag.errors[0]?.path ?? ''}: ${tag.errors[0]?.message ?? 'empty'}`;
  let three = false;
  for (const m of tagMatch) {
    try {
      if (rpnItemCount(parseExpression(m.if)) === 3) three = true;
    } catch {
      // compiled above, so it parses
    }
  }
  return { name, scope: scope as DnsblScope, zone: zone.block, tag: tag.block, threeItemCondition: three };
}

/**
 * Compiles `SpamDnsblServer` definitions (disabled ones dropped), grouped by scope in definition order.
 * Memoized per list and per definition object. Never throws: a server whose expression does not compile
 * is dropped and listed in `errors`.
 */
export function compileDnsblServers(servers: readonly DnsblServerInput[] | undefined): CompiledDnsblSet {
  const list = servers ?? NO_SERVERS;
  const hit = setCache.get(list);
  if (hit !== undefined) return hit;
  const byScope: Record<DnsblScope, CompiledDnsblServer[]> = { Ip: [], Domain: [], Email: [], Url: [] };
  const errors: string[] = [];
  for (const s of list) {
    if (s === null || typeof s !== 'object' || s.enable === false) continue;
    let c = serverCache.get(s);
    if (c === undefined) {
      c = compileServer(s);
      serverCache.set(s, c);
    }
    if (typeof c === 'string') errors.push(c);
    else byScope[c.scope].push(c);
  }
  const out = { byScope, errors };
  setCache.set(list, out);
  return out;
}

/** The Ip variables (`ip`, `value`, `ip_reverse`, `octets`, `is_v4`, `is_v6`) of an address; undefined for other names. */
export function ipVariable(ip: string, bytes: readonly number[], name: string): Value | undefined {
  switch (name) {
    case 'ip': case 'value': return ip;
    case 'ip_reverse': return reverseOf(bytes);
    case 'octets': return [...bytes];
    case 'is_v4': return bytes.length === 4 ? 1 : 0;
    case 'is_v6': return bytes.length === 16 ? 1 : 0;
    case 'reverse_ip': return 0; // Stalwart's IpResolver has no case for it
    default: return undefined;
  }
}

/** Bytes of an IP string (4 or 16; empty when not an IP). */
export function ipBytes(ip: string): number[] {
  try {
    return ipaddr.parse(ip).toByteArray();
  } catch {
    return [];
  }
}

/** `d.c.b.a` for IPv4, 32 lowercase nibbles least significant first for IPv6; `""` when not an IP. */
function reverseOf(b: readonly number[]): string {
  if (b.length === 4) return `${b[3]}.${b[2]}.${b[1]}.${b[0]}`;
  if (b.length !== 16) return '';
  const out: string[] = [];
  for (let i = 15; i >= 0; i--) out.push((b[i]! & 15).toString(16), (b[i]! >> 4).toString(16));
  return out.join('.');
}

/** What a zone expression reads besides the generic variables and `location`. */
export type ElementVariables = (name: string) => Value | undefined;

/** Per-message state: query counters per scope and the zones already asked. */
interface MessageState {
  counters: Record<DnsblScope, number>;
  /** zone → answer address (`undefined`: no record or an error). */
  answers: Map<string, Promise<string | undefined>>;
}
const states = new MemoSlot<MessageContext, MessageState>();

function stateOf(m: MessageContext): MessageState {
  let s = states.get(m);
  if (s === undefined) {
    s = { counters: { Ip: 0, Domain: 0, Email: 0, Url: 0 }, answers: new Map() };
    states.set(m, s);
  }
  return s;
}

function limitOf(ctx: AnalysisContext, scope: DnsblScope): number {
  const l = ctx.config.dnsblLimits;
  const v = scope === 'Ip' ? l?.ip : scope === 'Domain' ? l?.domain : scope === 'Email' ? l?.email : l?.url;
  return typeof v === 'number' && v >= 0 ? v : DEFAULT_DNSBL_LIMIT;
}

/** Is DNSBL evaluation pointless for this message (no servers, or DNS off and no test-mode answers)? */
export function dnsblDisabled(ctx: AnalysisContext, scope: DnsblScope): boolean {
  if (compileDnsblServers(ctx.config.dnsblServers).byScope[scope].length === 0) return true;
  return ctx.dns instanceof OffResolver && ctx.config.testMode?.dnsbl !== true;
}

class EvalCtx implements EvalContext {
  constructor(
    private readonly ctx: AnalysisContext,
    private readonly location: Location,
    private readonly own: ElementVariables,
  ) {}
  get lookups(): EvalContext['lookups'] {
    return this.ctx.lists;
  }
  variable(name: string): Value {
    if (name === 'location') return this.location;
    const o = this.own(name);
    if (o !== undefined) return o;
    const g = this.ctx.message.generic(name);
    return g !== undefined ? g : 0;
  }
  global(name: string): Value {
    return this.ctx.hasTag(name) ? 1 : 0;
  }
}

async function evalBlock(block: CompiledIfBlock, ec: EvalContext): Promise<Value | undefined> {
  const r = block.evalMaybe(ec);
  const v = r instanceof Promise ? await r : r;
  return v?.value;
}

/**
 * Checks one element against every server of `scope` (Stalwart's `check_dnsbl`) and tags the message.
 * `own` answers the element's own variables (e.g. `ip`, `ip_reverse`, `octets` for Ip; `value` for Domain);
 * generic variables come from the message. Never throws: an expression error is reported with `ctx.warn`.
 */
export async function checkDnsbl(ctx: AnalysisContext, scope: DnsblScope, own: ElementVariables, location: Location): Promise<void> {
  const servers = compileDnsblServers(ctx.config.dnsblServers).byScope[scope];
  if (servers.length === 0) return;
  const testMode = ctx.config.testMode?.dnsbl === true;
  if (!testMode && ctx.dns instanceof OffResolver) return;
  const state = stateOf(ctx.message);
  const limit = limitOf(ctx, scope);
  const zoneCtx = new EvalCtx(ctx, location, own);
  // Zones are evaluated and counted in server order; the queries then run concurrently and the tags
  // are evaluated in server order again. A zone that needs no store is evaluated without a turn of the
  // event loop, so the element's servers take their places under the scope's limit before the next
  // element's do, as in Stalwart, which checks one element against every server before the next.
  // (Evaluated across elements server by server, the last servers, e.g. the DNSWL whitelists, were
  // the first to be left out for every element.)
  const pending: { server: CompiledDnsblServer; answer: Promise<string | undefined> }[] = [];
  for (const server of servers) {
    if (state.counters[scope] >= limit) break;
    let zoneValue: Value | undefined;
    try {
      const r = server.zone.evalMaybe(zoneCtx);
      zoneValue = r instanceof Promise ? (await r)?.value : r?.value;
    } catch (e) {
      ctx.warn(`DNSBL ${server.name}: zone expression failed: ${e instanceof Error ? e.message : String(e)}`);
      continue;
    }
    if (typeof zoneValue !== 'string' || zoneValue === '') continue;
    const zone = zoneValue.toLowerCase();
    if (testMode && zone.includes('.11.20.')) {
      // Stalwart's test build: no DNS, no cache, no count; the answer is 127.0.<p1>.<p0>.
      const p = zone.split('.');
      if (server.threeItemCondition && p[0] !== '2') continue;
      pending.push({ server, answer: Promise.resolve(`127.0.${p[1]}.${p[0]}`) });
      continue;
    }
    let answer = state.answers.get(zone);
    if (answer === undefined) {
      // Checked again here: other elements' checks run concurrently and may have used up the limit meanwhile.
      if (state.counters[scope] >= limit) break;
      state.counters[scope]++;
      answer = ctx.dns.query(zone, 'A').then(
        (a) => (a.status === 'ok' ? (a.records.find((r) => parseIp(r)?.includes('.') === true) ?? '255.255.255.255') : undefined),
        () => undefined,
      );
      state.answers.set(zone, answer);
    }
    pending.push({ server, answer });
  }
  for (const { server, answer } of pending) {
    const ip = await answer;
    if (ip === undefined) continue;
    const bytes = ipBytes(ip);
    const tagCtx = new EvalCtx(ctx, location, (name) => ipVariable(ip, bytes, name));
    try {
      const t = await evalBlock(server.tag, tagCtx);
      if (typeof t === 'string' && t !== '') ctx.tag(t);
    } catch (e) {
      ctx.warn(`DNSBL ${server.name}: tag expression failed: ${e instanceof Error ? e.message : String(e)}`);
    }
  }
}
