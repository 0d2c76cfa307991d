/**
 * The `messageid` module: Stalwart's built-in messageid analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function messageid(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
