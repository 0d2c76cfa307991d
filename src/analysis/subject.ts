/**
 * The `subject` module: Stalwart's built-in subject analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function subject(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
