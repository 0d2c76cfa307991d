/**
 * The `from` module: Stalwart's built-in from analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function from(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
