/**
 * The `ip` module: Stalwart's built-in ip analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function ip(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
