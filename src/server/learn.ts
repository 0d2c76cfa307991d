/**
 * rspamd controller's `POST /learnspam` and `/learnham` (what `rspamc learn_spam|learn_ham` sends) on
 * the rspamd listener: the message becomes a classifier sample (docs/classifier.md). Off unless the
 * server was started with `--allow-learn`: the rspamd listener is the MTA's scan port, which the
 * MTA reaches without a password, while rspamd itself learns only on its controller port, behind a
 * password; whoever may learn may fill the model's disk and poison it. With it, the samples are
 * capped by the {@link LearnGate} (`limits.maxLearnSize`, `limits.learnPerMinute`).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { LearnGate } from './learn-gate.js';
import { takeMessage } from './rspamd.js';
import type { Scanner } from './scan.js';
import type { TellLearner } from './spamd.js';

function reply(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  // Sent already: the shutdown's grace period ended first (503).
  if (res.headersSent) return;
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/**
 * The handler of `path` (`/learnspam` or `/learnham`). Replies: 403 when learning is off (`allow`
 * false; rspamd's controller answers a request without its password 403), 404 without a learner
 * (no `--model`), 429 with `Retry-After` over `limits.learnPerMinute`, 413 over
 * `limits.maxLearnSize` (before the body is read when `Content-Length` says so; the connection is
 * then closed), what {@link takeMessage} refuses (405, 415, 400, 503 when the buffer budget is
 * full), 500 when the store fails; else 200 `{"success": true}`, or rspamd's 208 for a message
 * already learned with that class.
 */
export function rspamdLearnHandler(scanner: Scanner, learner: TellLearner | undefined, allow: boolean, gate: LearnGate): (req: IncomingMessage, res: ServerResponse, path: string) => void {
  const { metrics, log } = scanner;
  return (req, res, path) => {
    if (!allow) {
      req.resume();
      metrics.countLearn('rspamd', 'refused');
      return reply(res, 403, { error: 'learning is off on this listener: start serve with --model FILE --allow-learn (docs/deployment.md)' });
    }
    if (learner === undefined) {
      req.resume();
      return reply(res, 404, { error: 'learning needs serve --model' });
    }
    const cls = path === '/learnspam' ? 'spam' : 'ham';
    // The method first (405 takes nothing from the allowance), then the gate, before the body is read.
    if (req.method === 'POST') {
      const declared = Number(req.headers['content-length'] ?? NaN);
      const refused = gate.admit(Number.isFinite(declared) ? declared : undefined);
      if (refused !== undefined) {
        metrics.countLearn('rspamd', refused.reason === 'rate' ? 'rate_limited' : 'too_large');
        log.warn({ protocol: 'rspamd', class: cls, error: LearnGate.describe(refused) }, 'not learned');
        const headers: Record<string, string> = { connection: 'close', ...(refused.reason === 'rate' ? { 'retry-after': String(refused.retryAfterS) } : {}) };
        reply(res, refused.reason === 'rate' ? 429 : 413, { error: LearnGate.describe(refused) }, headers);
        // The body is not read: the connection ends with the reply.
        res.once('finish', () => req.destroy());
        return;
      }
    }
    // The same refusals as /checkv2 (405, 415, 413 past the learn size, 400), so that a compressed or
    // oversized body never becomes a training sample. rspamc sends POST.
    takeMessage(req, res, scanner, { methods: ['POST'], scan: false, maxSize: gate.maxSize, tooLargeMessage: LearnGate.describe({ reason: 'too_large', maxSize: gate.maxSize }) })
      .then(async (raw) => {
        if (raw === undefined) return;
        const { id, already } = await learner.learnNew(raw, cls === 'spam');
        metrics.countLearn('rspamd', already ? 'already' : 'learned');
        log.info({ protocol: 'rspamd', class: cls, sample: id }, already ? 'already learned' : 'learned');
        // rspamd's controller answers a message learned before with this class 208 and this error, which
        // rspamc prints and exits 0 on.
        if (already) reply(res, 208, { error: `sample ${id} has been already learned as ${cls}, ignore it` });
        else reply(res, 200, { success: true });
      })
      .catch((e: unknown) => reply(res, 500, { error: `learning failed: ${e instanceof Error ? e.message : String(e)}` }));
  };
}
