/**
 * rspamd's `/checkv2` verdict JSON built from ours (a pure module: the worker threads build it too,
 * so that the listener's main thread only writes the text).
 *
 * Actions map to rspamd's names: `allow` → `no action`, `spam` → `add header`, `reject` and
 * `discard` → `reject`. `required_score` is the spam threshold.
 */
import type { Action, ClassifyResult } from '../engine/types.js';

/** rspamd's action names for ours. */
export const RSPAMD_ACTIONS: Record<Action, string> = {
  allow: 'no action',
  spam: 'add header',
  reject: 'reject',
  discard: 'reject',
};

export interface RspamdSymbol {
  name: string;
  score: number;
  metric_score: number;
  options?: string[];
}

/** The `/checkv2` reply (the subset of rspamd's that its clients read). */
export interface RspamdReply {
  is_skipped: boolean;
  score: number;
  required_score: number;
  action: string;
  symbols: Record<string, RspamdSymbol>;
  messages: Record<string, string>;
  time_real: number;
  milter: { add_headers: Record<string, { value: string; order: number }>; remove_headers: Record<string, number> };
}

const MAX_OPTIONS = 10;

/**
 * Builds rspamd's JSON verdict from ours (`ms`: scan time, milliseconds, reported as `time_real` in seconds). Options of a symbol are the elements its rules fired on.
 */
export function toRspamdReply(r: ClassifyResult, requiredScore: number, ms: number): RspamdReply {
  const options = new Map<string, Set<string>>();
  for (const m of r.matches) {
    if (m.element === '') continue;
    const set = options.get(m.tag) ?? options.set(m.tag, new Set()).get(m.tag)!;
    if (set.size < MAX_OPTIONS) set.add(m.element);
  }
  const symbols: Record<string, RspamdSymbol> = {};
  for (const tag of r.tags) {
    const score = r.scores[tag] ?? 0;
    const sym: RspamdSymbol = { name: tag, score, metric_score: score };
    const o = options.get(tag);
    if (o !== undefined && o.size > 0) sym.options = [...o];
    symbols[tag] = sym;
  }
  const messages: Record<string, string> = {};
  if (r.action === 'reject' || r.action === 'discard') messages.smtp_message = 'Message rejected as spam';
  return {
    is_skipped: false,
    score: r.score,
    required_score: requiredScore,
    action: RSPAMD_ACTIONS[r.action],
    symbols,
    messages,
    time_real: ms / 1000,
    milter: {
      add_headers: {
        'X-Spam-Result': { value: r.headers['X-Spam-Result'], order: 0 },
        ...(r.headers['X-Spam-LLM'] !== undefined ? { 'X-Spam-LLM': { value: r.headers['X-Spam-LLM'], order: 0 } } : {}),
        'X-Spam-Score': { value: r.headers['X-Spam-Score'], order: 0 },
      },
      // Copies of our headers already in the message (forged upstream) go first.
      remove_headers: { 'X-Spam-Result': 0, 'X-Spam-LLM': 0, 'X-Spam-Score': 0 },
    },
  };
}


/**
 * rspamd's protocol-1 reply (`/check`, `/symbols`), as rspamd still answers those endpoints: the verdict
 * and its symbols under the metric `default` (`is_spam` true for every action but `no action`), with
 * `messages` and `milter` beside it.
 */
export function toRspamdV1(r: RspamdReply): Record<string, unknown> {
  const metric: Record<string, unknown> = {
    is_spam: r.action !== 'no action',
    is_skipped: r.is_skipped,
    score: r.score,
    required_score: r.required_score,
    action: r.action,
  };
  for (const [name, sym] of Object.entries(r.symbols)) metric[name] = sym;
  return { default: metric, messages: r.messages, time_real: r.time_real, milter: r.milter };
}

/** What a scan may ask the worker to serialise besides the verdict. */
export interface ReplyFormat {
  /** `rspamd`: the `/checkv2` reply; `rspamd-v1`: the `/check` and `/symbols` one ({@link toRspamdV1}). */
  format: 'rspamd' | 'rspamd-v1';
  /** Spam threshold for `required_score`. */
  requiredScore: number;
}

/** The reply format of an rspamd scan endpoint: protocol 1 for `/check` and `/symbols`. */
export function replyFormatOf(path: string): ReplyFormat['format'] {
  return path === '/checkv2' ? 'rspamd' : 'rspamd-v1';
}

/** The rspamd reply in `reply`'s format (built in a worker thread, or on the main thread without a pool). */
export function rspamdReplyIn(reply: ReplyFormat, r: ClassifyResult, ms: number): RspamdReply | Record<string, unknown> {
  const v2 = toRspamdReply(r, reply.requiredScore, ms);
  return reply.format === 'rspamd-v1' ? toRspamdV1(v2) : v2;
}

/** The server's running totals since it started (`ServerMetrics.totals`), which `/stat` and `/auth` report. */
export interface StatTotals {
  /** When the server started, ms since the epoch. */
  started: number;
  /** Scanned messages by our action. */
  actions: Record<Action, number>;
  /** Milliseconds spent scanning, in all. */
  scanMs: number;
  /** Messages stored as samples. */
  learned: number;
  /** Connections accepted on the mail-path listeners. */
  connections: number;
}

/**
 * rspamd controller's `/stat` reply (what `rspamc stat` prints): messages scanned, per rspamd action,
 * treated as spam (every action but `no action`) and ham, learned, connections and the average scan
 * time (as a one-element `scan_times`, seconds). Counters rspamd keeps and spamrule has no equivalent
 * of (memory pools, fuzzy hashes, Bayes statfiles) are 0 or empty.
 */
export function rspamdStat(t: StatTotals, version: string): Record<string, unknown> {
  const actions: Record<string, number> = { reject: 0, 'soft reject': 0, 'rewrite subject': 0, 'add header': 0, greylist: 0, 'no action': 0 };
  let scanned = 0;
  for (const [a, n] of Object.entries(t.actions) as [Action, number][]) {
    actions[RSPAMD_ACTIONS[a]]! += n;
    scanned += n;
  }
  return {
    version,
    uptime: uptimeSeconds(t),
    read_only: false,
    scanned,
    learned: t.learned,
    actions,
    scan_times: scanned > 0 ? [t.scanMs / scanned / 1000] : [],
    spam_count: scanned - t.actions.allow,
    ham_count: t.actions.allow,
    connections: t.connections,
    control_connections: 0,
    pools_allocated: 0,
    pools_freed: 0,
    bytes_allocated: 0,
    chunks_allocated: 0,
    shared_chunks_allocated: 0,
    chunks_freed: 0,
    chunks_oversized: 0,
    fragmented: 0,
    total_learns: t.learned,
    statfiles: [],
    fuzzy_hashes: {},
  };
}

/** rspamd controller's `/auth` reply, which `rspamc uptime` reads. */
export function rspamdAuth(t: StatTotals, version: string): Record<string, unknown> {
  return { auth: 'ok', version, uptime: uptimeSeconds(t), error: 0 };
}

function uptimeSeconds(t: StatTotals): number {
  return Math.floor((Date.now() - t.started) / 1000);
}
