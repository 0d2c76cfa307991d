/**
 * Checks `SpamEngine` options at construction, so that a mistake made from JavaScript (where the
 * types do not reach) is an error where it is made rather than a setting silently ignored:
 * `{ threshold: … }`, `timeBudgetMs: -5`, `analysis.modules.htlm`.
 */
import { MODULE_NAMES } from '../analysis/index.js';
import { pyzorSettingsProblem } from '../analysis/pyzor/settings.js';
import { closestName } from '../util/suggest.js';

const ENGINE_KEYS = [
  'rules', 'tags', 'thresholds', 'lookups', 'system', 'analysis', 'dns', 'dnsBudget', 'authResults', 'trustReceived', 'timeBudgetMs', 'ruleWaitMs', 'classifier',
] as const;
const ANALYSIS_KEYS = ['dnsblServers', 'dnsblLimits', 'allowedIps', 'blockedIps', 'fileExtensions', 'followRedirects', 'pyzor', 'testMode', 'modules'] as const;
const THRESHOLD_KEYS = ['scoreSpam', 'scoreReject', 'scoreDiscard'] as const;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function unknownKeys(where: string, v: Record<string, unknown>, known: readonly string[]): void {
  for (const k of Object.keys(v)) {
    if (known.includes(k) || v[k] === undefined) continue;
    const close = closestName(k, known);
    throw new TypeError(`${where}: unknown option "${k}"${close === undefined ? ` (the options are ${known.join(', ')})` : ` (did you mean "${close}"?)`}`);
  }
}

function milliseconds(where: string, v: unknown): void {
  if (v === undefined) return;
  if (typeof v !== 'number' || Number.isNaN(v) || v < 0) throw new TypeError(`${where}: expected milliseconds (a number ≥ 0; 0 = none), got ${JSON.stringify(v)}`);
}

/**
 * Throws `TypeError` naming the option for an unknown key (with the one meant, when close), a wrong
 * type, a negative time, a threshold that is no number, an unknown analysis module, or unusable
 * `analysis.pyzor` settings (an unknown field, a port out of range, …).
 */
export function checkEngineOptions(opts: unknown): void {
  if (opts === undefined) return;
  if (!isObject(opts)) throw new TypeError('SpamEngine: the options must be an object');
  unknownKeys('SpamEngine', opts, ENGINE_KEYS);
  for (const k of ['rules', 'tags'] as const) {
    if (opts[k] !== undefined && !Array.isArray(opts[k])) throw new TypeError(`SpamEngine: "${k}" must be an array`);
  }
  milliseconds('SpamEngine: "timeBudgetMs"', opts.timeBudgetMs);
  milliseconds('SpamEngine: "ruleWaitMs"', opts.ruleWaitMs);
  const t = opts.thresholds;
  if (t !== undefined) {
    if (!isObject(t)) throw new TypeError('SpamEngine: "thresholds" must be an object');
    unknownKeys('SpamEngine: thresholds', t, THRESHOLD_KEYS);
    for (const k of THRESHOLD_KEYS) {
      if (t[k] !== undefined && (typeof t[k] !== 'number' || !Number.isFinite(t[k]))) throw new TypeError(`SpamEngine: "thresholds.${k}" must be a number, got ${JSON.stringify(t[k])}`);
    }
  }
  const a = opts.analysis;
  if (a !== undefined && a !== false) {
    if (!isObject(a)) throw new TypeError('SpamEngine: "analysis" must be an object or false');
    unknownKeys('SpamEngine: analysis', a, ANALYSIS_KEYS);
    const pyzor = pyzorSettingsProblem(a.pyzor);
    if (pyzor !== undefined) throw new TypeError(`SpamEngine: analysis.pyzor: ${pyzor}`);
    const m = a.modules;
    if (m !== undefined) {
      if (!isObject(m)) throw new TypeError('SpamEngine: "analysis.modules" must be an object ({ html: false })');
      for (const name of Object.keys(m)) {
        if (MODULE_NAMES.includes(name)) continue;
        const close = closestName(name, MODULE_NAMES);
        throw new TypeError(`SpamEngine: analysis.modules: unknown module "${name}"${close === undefined ? ` (the modules are ${MODULE_NAMES.join(', ')})` : ` (did you mean "${close}"?)`}`);
      }
    }
  }
}
