/**
 * Runs the content modules (mime, html) over a real message with a given analysis config, as
 * classify does, and returns the tags they set (sorted), their warnings and errors.
 */
import { runModule, type AnalysisRun } from '../../src/analysis/run.js';
import { envelopeOf, resolveSession } from '../../src/analysis/session.js';
import type { AnalysisConfig, FileExtensionInput } from '../../src/analysis/types.js';
import { StaticResolver } from '../../src/dns/index.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';

export interface ContentOutcome {
  tags: string[];
  warnings: string[];
  errors: string[];
}

export async function runContent(module: string, message: string | Uint8Array, config: AnalysisConfig = {}): Promise<ContentOutcome> {
  const s = resolveSession({});
  const msg = await analyzeMessage(message, envelopeOf(s));
  const run: AnalysisRun = {
    session: s,
    message: messageContextOf(msg),
    dns: new StaticResolver({}),
    lists: { get: () => undefined },
    config,
    tags: new Set(),
    matches: [],
    errors: [],
    warnings: [],
  };
  if (!(await runModule(run, module))) throw new Error(`no module ${module}`);
  // The message's own warnings (MIME limits) and the module's, as classify reports them.
  return { tags: [...run.tags].sort(), warnings: [...msg.warnings, ...run.warnings], errors: run.errors.map((e) => e.message) };
}

/** A small `SpamFileExtension` table of our own (same shape as Stalwart's). */
export const EXTENSIONS: FileExtensionInput[] = [
  { extension: 'exe', contentTypes: {}, isBad: true, isArchive: false, isNz: false },
  { extension: 'scr', contentTypes: {}, isBad: true, isArchive: false, isNz: false },
  { extension: 'html', contentTypes: { 'text/html': true }, isBad: true, isArchive: false, isNz: false },
  { extension: 'zip', contentTypes: {}, isBad: false, isArchive: true, isNz: false },
  { extension: 'rar', contentTypes: {}, isBad: false, isArchive: true, isNz: false },
  { extension: 'pdf', contentTypes: { 'application/pdf': true, 'application/x-pdf': true }, isBad: false, isArchive: false, isNz: true },
  { extension: 'txt', contentTypes: ['text/plain'], isBad: false, isArchive: false, isNz: false },
];

/** Joins header lines and a body into a CRLF message. */
export function mail(headers: string[], body = 'Hello.'): string {
  return [...headers, '', body, ''].join('\r\n');
}

/** A multipart body: each part is [headers, body]; `--boundary--` closes it. */
export function multipart(boundary: string, parts: [string[], string][]): string {
  const out: string[] = [];
  for (const [h, b] of parts) out.push(`--${boundary}`, ...h, '', b);
  out.push(`--${boundary}--`, '');
  return out.join('\r\n');
}
