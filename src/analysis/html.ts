/**
 * The `html` module: Stalwart's built-in html analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function html(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
