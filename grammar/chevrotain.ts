/**
 * Loads Chevrotain on first use. Its package entry imports several hundred modules (about 0.35 s of
 * start-up); the single-file build it ships beside that entry (`lib/chevrotain.mjs`, same API) loads in
 * about 20 ms. The package's `exports` only names the entry, so the file is found next to it. The load is
 * synchronous (`parse` is) and uses `require` of an ES module, which Node supports from 20.19 (the
 * package's `engines`).
 */
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import type * as Chevrotain from 'chevrotain';

let loaded: typeof Chevrotain | undefined;

/**
 * Chevrotain checks the token set and the grammar (ambiguities, left recursion) when the lexer and
 * parser are built; that is most of their construction time. The checks run under the test runner
 * (vitest sets VITEST) and with SPAMRULE_GRAMMAR_CHECKS=1, so a grammar change is still validated;
 * a released program skips them.
 */
export const SKIP_GRAMMAR_CHECKS = process.env.VITEST === undefined && process.env.SPAMRULE_GRAMMAR_CHECKS !== '1';

/** The Chevrotain module, loaded on the first call. @throws Error when Chevrotain cannot be loaded. */
export function chevrotain(): typeof Chevrotain {
  if (loaded !== undefined) return loaded;
  const require = createRequire(import.meta.url);
  const entry = require.resolve('chevrotain'); // <pkg>/lib/src/api.js
  try {
    loaded = require(join(dirname(entry), '..', 'chevrotain.mjs')) as typeof Chevrotain;
  } catch {
    // A Chevrotain release without the single-file build: its regular entry (same API, slower to load).
    loaded = require(entry) as typeof Chevrotain;
  }
  return loaded;
}
