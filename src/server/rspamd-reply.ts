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
        'X-Spam-Score': { value: r.headers['X-Spam-Score'], order: 0 },
      },
      // Copies of our headers already in the message (forged upstream) go first.
      remove_headers: { 'X-Spam-Result': 0, 'X-Spam-Score': 0 },
    },
  };
}


/** What a scan may ask the worker to serialise besides the verdict. */
export interface ReplyFormat {
  format: 'rspamd';
  /** Spam threshold for `required_score`. */
  requiredScore: number;
}
