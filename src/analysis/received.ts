/**
 * The `received` module: Stalwart's built-in received analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function received(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
