/** Scoring of a message's tags into a score and an action (Stalwart's spam filter, docs/compiler.md). */
import type { SpamTagTable } from './tags.js';
import type { Action, SpamThresholds } from './types.js';

/**
 * Sums the scores of `tags` (a tag without a SpamTag scores 0) and decides the action: a Reject tag
 * wins over a Discard tag, so that the result does not depend on set order (Stalwart: hash order),
 * and both end scoring without a score; otherwise `scoreReject`, then `scoreDiscard` (each when
 * above 0), then `scoreSpam`. The score is rounded to hundredths. `scores`: each tag's score.
 */
export function scoreTags(
  tags: Iterable<string>,
  table: SpamTagTable,
  thresholds: Required<SpamThresholds>,
): { score: number; action: Action; scores: Record<string, number> } {
  let score = 0;
  let tagAction: Action | undefined;
  const scores: Record<string, number> = {};
  for (const tag of tags) {
    const a = table.lookup(tag);
    if (a === undefined) scores[tag] = 0;
    else if (a.kind === 'score') {
      scores[tag] = a.score;
      score += a.score;
    } else if (a.kind === 'reject') tagAction = 'reject';
    else if (a.kind === 'discard' && tagAction === undefined) tagAction = 'discard';
  }
  score = Math.round(score * 100) / 100;
  const { scoreSpam, scoreReject, scoreDiscard } = thresholds;
  let action: Action;
  if (tagAction !== undefined) action = tagAction;
  else if (scoreReject > 0 && score >= scoreReject) action = 'reject';
  else if (scoreDiscard > 0 && score >= scoreDiscard) action = 'discard';
  else if (score >= scoreSpam) action = 'spam';
  else action = 'allow';
  return { score, action, scores };
}
