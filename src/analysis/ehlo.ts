/**
 * The `ehlo` module: Stalwart's built-in ehlo analysis (docs/analysis.md). Not built yet.
 */
import type { AnalysisContext } from './types.js';

export async function ehlo(_ctx: AnalysisContext): Promise<void> {
  // not built yet
}
