/**
 * The `mime` module: Stalwart's built-in mime analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function mime(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
