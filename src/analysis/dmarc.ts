/**
 * The `dmarc` module: Stalwart's built-in dmarc analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function dmarc(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
