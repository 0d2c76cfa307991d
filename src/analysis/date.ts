/**
 * The `date` module: Stalwart's built-in date analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function date(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
