/**
 * What the milter (src/server/milter.ts) answers at end of message when the message got no verdict:
 * the operator's two choices (`busyAction`, `errorAction`) and the answer each {@link NotScanned}
 * reason gets ({@link unscannedAnswer}).
 */
import type { NotScanned } from './scan.js';

/**
 * What the milter answers when a message cannot be scanned because every scan slot and the waiting
 * room are full (`limits.maxConcurrentScans`, `limits.maxWaitingScans`): `tempfail` (the default),
 * `SMFIR_TEMPFAIL`, so that the MTA answers its client 4xx and the client retries later (Postfix:
 * `451 4.7.1 Service unavailable - try again later`); `accept`, the message continues unscanned with an
 * `X-Spam-Note` header (fail open: whoever floods the filter gets mail through unscanned). Postfix's
 * `milter_default_action` names the same two choices for a milter that is down.
 */
export type MilterBusyAction = 'tempfail' | 'accept';
/** The values of {@link MilterBusyAction}, for validating a setting. */
export const MILTER_BUSY_ACTIONS: readonly MilterBusyAction[] = ['tempfail', 'accept'];

/**
 * What the milter answers when a message's scan failed: it ran over the time limit (`timeout`: the
 * pool's `timeoutMs`, serve's `limits.scanTimeoutMs`), or its worker thread failed or another scan
 * error came (`error`).
 *
 * - `accept` (the default, the behaviour before this setting existed): the message continues unscanned
 *   with `X-Spam-Note: not scanned: <why>`, earlier copies of our headers deleted. Fail open: a sender who
 *   can build a message that is slow to scan, or that makes a worker fail, gets it delivered unscanned.
 * - `tempfail`: `SMFIR_TEMPFAIL`, so that the MTA answers its client 4xx (Postfix: `451 4.7.1 Service
 *   unavailable - try again later`) and the client retries. Fail closed: nothing passes unscanned, but a
 *   message that fails on every attempt (one that always takes longer than the time limit) is deferred
 *   at each retry until the sending MTA's queue lifetime runs out (Postfix `maximal_queue_lifetime`,
 *   5 days by default) and then bounced to its sender, and a broken worker defers all mail.
 *
 * Postfix's `milter_default_action` (default `tempfail`) names the same two choices for a milter that
 * is down or does not answer. The trade-off is documented in docs/deployment.md ("Limits and
 * back-pressure", "Scan failures").
 */
export type MilterErrorAction = 'accept' | 'tempfail';
/** The values of {@link MilterErrorAction}, for validating a setting. */
export const MILTER_ERROR_ACTIONS: readonly MilterErrorAction[] = ['accept', 'tempfail'];

/** The milter's answers to messages it could not scan, as {@link milterPolicy} fills them in. */
export interface MilterPolicy {
  busyAction: MilterBusyAction;
  errorAction: MilterErrorAction;
}

/**
 * The policy with its defaults: `busyAction` `tempfail`, `errorAction` `accept`.
 * @throws TypeError for a value that is not one of the choices, naming them.
 */
export function milterPolicy(opts: { busyAction?: MilterBusyAction; errorAction?: MilterErrorAction }): MilterPolicy {
  const busyAction = opts.busyAction ?? 'tempfail';
  if (!MILTER_BUSY_ACTIONS.includes(busyAction)) throw new TypeError(`milter busyAction must be one of ${MILTER_BUSY_ACTIONS.join(', ')}, not ${JSON.stringify(busyAction)}`);
  const errorAction = opts.errorAction ?? 'accept';
  if (!MILTER_ERROR_ACTIONS.includes(errorAction)) throw new TypeError(`milter errorAction must be one of ${MILTER_ERROR_ACTIONS.join(', ')}, not ${JSON.stringify(errorAction)}`);
  return { busyAction, errorAction };
}

/**
 * How the milter answers a message that was not scanned for `reason`: `tempfail` (`SMFIR_TEMPFAIL`
 * alone: the MTA defers the message) or `note` (copies of our headers already in the message deleted,
 * `X-Spam-Note` saying why added, continue). The outcome is counted under `reason` either way.
 *
 * - `busy`: `policy.busyAction`;
 * - `timeout`, `error` (worker failure, other scan errors): `policy.errorAction`;
 * - `too_large` (over `limits.maxSize`): always `note`. The size cap is the operator's own limit, not
 *   a failure: deferring would defer a legitimate large message at every retry until it bounces;
 * - `session` (connection data from the MTA that the engine cannot use, such as an address that is not
 *   one): `note`, as it would fail the same way at every retry;
 * - `buffer_full`: `tempfail` (the buffer budget is full now; milter.ts answers it before any scan);
 * - `closing` (the pool closed under the scan), `abandoned` (the MTA has gone; nobody reads the
 *   answer): `note`, as before these settings.
 */
export function unscannedAnswer(reason: NotScanned, policy: MilterPolicy): 'tempfail' | 'note' {
  switch (reason) {
    case 'busy':
      return policy.busyAction === 'tempfail' ? 'tempfail' : 'note';
    case 'timeout':
    case 'error':
      return policy.errorAction === 'tempfail' ? 'tempfail' : 'note';
    case 'buffer_full':
      return 'tempfail';
    case 'too_large':
    case 'session':
    case 'closing':
    case 'abandoned':
      return 'note';
  }
}
