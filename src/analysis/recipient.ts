/**
 * The `recipient` module: Stalwart's built-in recipient analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function recipient(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
