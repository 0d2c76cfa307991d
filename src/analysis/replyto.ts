/**
 * The `replyto` module: Stalwart's built-in replyto analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function replyto(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
