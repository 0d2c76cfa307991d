/**
 * Stalwart's built-in analysis modules, in Stalwart's order (`spam_filter_classify`): each reads
 * the session and the analysed message and adds tags before the SpamRules run (docs/analysis.md).
 */
import { date } from './date.js';
import { dmarc } from './dmarc.js';
import { domain } from './domain.js';
import { ehlo } from './ehlo.js';
import { from } from './from.js';
import { headers } from './headers.js';
import { html } from './html.js';
import { ip } from './ip.js';
import { llm } from './llm.js';
import { messageid } from './messageid.js';
import { mime } from './mime.js';
import { pyzor } from './pyzor.js';
import { received } from './received.js';
import { recipient } from './recipient.js';
import { replyto } from './replyto.js';
import { spamtrap } from './spamtrap.js';
import { subject } from './subject.js';
import type { AnalysisModule } from './types.js';
import { url } from './url.js';

/** Module name → function, in the order Stalwart runs them. */
export const MODULES: ReadonlyArray<readonly [string, AnalysisModule]> = [
  ['ip', ip],
  ['dmarc', dmarc],
  ['ehlo', ehlo],
  ['headers', headers],
  ['received', received],
  ['messageid', messageid],
  ['date', date],
  ['subject', subject],
  ['from', from],
  ['replyto', replyto],
  ['recipient', recipient],
  ['domain', domain],
  ['url', url],
  ['mime', mime],
  ['html', html],
  // Stalwart's enterprise builds only; here off until `analysis.llm` is set.
  ['llm', llm],
  ['spamtrap', spamtrap],
  ['pyzor', pyzor],
];

export const MODULE_NAMES: readonly string[] = MODULES.map(([n]) => n);

export type * from './types.js';
