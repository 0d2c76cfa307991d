/**
 * How often spamrule's Pyzor digests equal pyzor 1.0.0's on the SpamAssassin corpus (docs/analysis.md, "pyzor"):
 * runs the real `pyzor digest` on every message (mbox From line stripped, as classify reads the files) and
 * compares it with both digest modes. `pyzor` runs take a while (about 0.1 s each), so its outputs are cached,
 * one file per message, under $PYZOR_DIGEST_CACHE (default /tmp/pyzor-digests); a second run reads the cache.
 *
 *   npx tsx bench/pyzor/agreement.ts [--list N]   # N: how many differing messages to name per mode (default 10)
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pyzorDigest } from '../../src/analysis/pyzor/digest.js';
import { pyzorModeDigest } from '../../src/analysis/pyzor/pyzor-mode.js';
import { parseMimeTree } from '../../src/message/index.js';
import { loadCorpus } from '../../test/helpers/corpus.js';

const cache = process.env.PYZOR_DIGEST_CACHE ?? '/tmp/pyzor-digests';
const listIdx = process.argv.indexOf('--list');
const list = listIdx >= 0 ? Number(process.argv[listIdx + 1]) : 10;
const home = mkdtempSync(join(tmpdir(), 'pyzor-home-')); // an empty pyzor homedir: no ~/.pyzor read

/** `pyzor digest` of a message, from the cache or a run of the client ('' when pyzor prints none). */
function theirs(group: string, file: string, raw: Buffer): string {
  const path = join(cache, group, file);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  const r = spawnSync('/usr/bin/pyzor', ['--homedir', home, 'digest'], { input: raw, encoding: 'utf8', timeout: 60_000 });
  if (r.error !== undefined) throw new Error(`pyzor digest: ${r.error.message} (is Debian's "pyzor" package installed?)`);
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, r.stdout);
  return r.stdout.trim();
}

const corpus = loadCorpus();
const modes = { pyzor: { same: 0, differ: [] as string[] }, stalwart: { same: 0, differ: [] as string[] } };
/** Per kind of message (as spamrule's MIME tree sees it): messages, and how many of them each mode gets right. */
const kinds = new Map<string, { n: number; pyzor: number; stalwart: number }>();
let pyzorFailed = 0;
let ms = 0;
for (const m of corpus) {
  const want = theirs(m.group, m.file, m.raw);
  if (want === '') pyzorFailed++;
  const t0 = performance.now();
  const mine = pyzorModeDigest(m.raw);
  ms += performance.now() - t0;
  const name = `${m.group}/${m.file}`;
  if (('digest' in mine ? mine.digest : '') === want) modes.pyzor.same++;
  else modes.pyzor.differ.push(name);
  const { message } = parseMimeTree(m.raw);
  const stalwartOk = (pyzorDigest(message) ?? 'da39a3ee5e6b4b0d3255bfef95601890afd80709') === want;
  if (stalwartOk) modes.stalwart.same++;
  else modes.stalwart.differ.push(name);
  const kind = message.parts.length === 1 && message.parts[0]!.kind === 'text' ? 'single-part plain text'
    : message.parts.some((p) => p.kind === 'html') ? 'with an HTML part' : 'other';
  const k = kinds.get(kind) ?? { n: 0, pyzor: 0, stalwart: 0 };
  k.n++;
  if (modes.pyzor.differ.at(-1) !== name) k.pyzor++;
  if (stalwartOk) k.stalwart++;
  kinds.set(kind, k);
}
const pct = (n: number): string => `${((100 * n) / corpus.length).toFixed(2)}%`;
process.stdout.write(`${corpus.length} messages; pyzor printed no digest for ${pyzorFailed}\n`);
for (const [mode, r] of Object.entries(modes)) {
  process.stdout.write(`digest '${mode}': ${r.same} of ${corpus.length} equal (${pct(r.same)})\n`);
  for (const f of r.differ.slice(0, list)) process.stdout.write(`  differs: ${f}\n`);
}
for (const [kind, k] of kinds) process.stdout.write(`${kind}: ${k.n} messages; 'pyzor' ${k.pyzor}, 'stalwart' ${k.stalwart}\n`);
process.stdout.write(`'pyzor' mode: ${(ms / corpus.length).toFixed(2)} ms per message on average\n`);
