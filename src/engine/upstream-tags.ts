/** Upstream tags (`ClassifyOptions.tags`): what the caller knows before classification starts. */
import { quoteTag, tagNameProblem } from '../util/index.js';
import type { ClassifyError } from './types.js';

/**
 * Adds the caller's upstream tags to `tags`; one that could not be a tag (a control character, too long:
 * README A21) is reported in `errors` (source `tags`) and left out; non-strings and `''` are ignored.
 */
export function addUpstreamTags(upstream: Iterable<unknown> | undefined, tags: Set<string>, errors: ClassifyError[]): void {
  for (const t of upstream ?? []) {
    if (typeof t !== 'string' || t === '') continue;
    const problem = tagNameProblem(t);
    if (problem === undefined) tags.add(t);
    else errors.push({ source: 'tags', message: `upstream tag ${quoteTag(t)} is not set: ${problem}` });
  }
}
