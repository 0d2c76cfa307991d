/**
 * The `headers` module: Stalwart's generic header checks (docs/analysis.md). Sets one
 * `X_HDR_<NAME>` tag per top-level header name present.
 */
import { headerTag } from '../message/headers.js';
import type { AnalysisContext } from './types.js';

export async function headers(ctx: AnalysisContext): Promise<void> {
  for (const h of ctx.message.headers) ctx.tag(headerTag(h.name));
}
