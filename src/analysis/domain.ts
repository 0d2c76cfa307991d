/**
 * The `domain` module: Stalwart's built-in domain analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function domain(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
