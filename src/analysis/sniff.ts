/**
 * Content sniffing for the mime module's MIME_GOOD / MIME_BAD (Stalwart asks the Rust `infer` crate):
 * magic numbers through the `file-type` package, then `infer`'s text matchers, which `file-type`
 * does not have: HTML (a leading `<html`, `<head`, `<body`, `<p`, `<div`, `<a`, `<!--`, … followed by
 * a space or `>`, case-insensitive, after leading white space), XML (`<?xml `) and shell scripts (`#!`).
 * Plain text is not recognised (no answer, so no tag).
 */
import type * as FileType from 'file-type';

// file-type and its readers (about 20 modules) load with the first attachment sniffed, not at start-up.
let fileType: Promise<typeof FileType> | undefined;

/**
 * `file-type` names that `infer` spells differently: Stalwart compares `infer`'s name with the
 * declared type, so these are renamed to `infer`'s.
 */
const INFER_NAMES: Readonly<Record<string, string>> = {
  'application/x-msdownload': 'application/vnd.microsoft.portable-executable',
  'application/x-rar-compressed': 'application/vnd.rar',
  'image/x-icon': 'image/vnd.microsoft.icon',
  'application/x-sqlite3': 'application/vnd.sqlite3',
  'application/x-deb': 'application/vnd.debian.binary-package',
  'application/x-elf': 'application/x-executable',
  'application/java-vm': 'application/java',
};

const HTML_PREFIXES = [
  '<!doctype html', '<html', '<head', '<script', '<iframe', '<h1', '<div', '<font', '<table', '<a', '<style',
  '<title', '<b', '<body', '<br', '<p', '<!--',
];

function isWs(c: number): boolean {
  return c === 32 || c === 9 || c === 10 || c === 12 || c === 13;
}

/** `infer`'s text matchers over the first bytes: `text/html`, `text/xml`, `text/x-shellscript` or undefined. */
export function sniffText(bytes: Uint8Array): string | undefined {
  if (bytes.length > 2 && bytes[0] === 0x23 && bytes[1] === 0x21) return 'text/x-shellscript';
  let i = 0;
  while (i < bytes.length && i < 4096 && isWs(bytes[i]!)) i++;
  const head = Buffer.from(bytes.buffer, bytes.byteOffset + i, Math.min(bytes.length - i, 32)).toString('latin1').toLowerCase();
  for (const p of HTML_PREFIXES) {
    if (head.startsWith(p) && head.length > p.length && (head[p.length] === ' ' || head[p.length] === '>')) return 'text/html';
  }
  if (head.startsWith('<?xml ')) return 'text/xml';
  return undefined;
}

/**
 * The MIME type the content looks like, or undefined when nothing is recognised. Never rejects
 * (a sniffer failure counts as "not recognised").
 */
export async function sniffContentType(bytes: Uint8Array): Promise<string | undefined> {
  if (bytes.length === 0) return undefined;
  try {
    const t = await (fileType ??= import('file-type')).then((m) => m.fileTypeFromBuffer(bytes));
    if (t !== undefined) return INFER_NAMES[t.mime] ?? t.mime;
  } catch {
    // A truncated or odd container: fall through to the text matchers.
  }
  return sniffText(bytes);
}
