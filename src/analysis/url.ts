/**
 * The `url` module: Stalwart's built-in url analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function url(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
