/**
 * What the milter (src/server/milter.ts) answers at end of message when the message got no verdict:
 * the operator's choice for a message refused as busy.
 */

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
