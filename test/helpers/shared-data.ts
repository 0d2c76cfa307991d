/**
 * Locates the third-party data folder (`../shared/data` beside the checkout, or
 * `$SPAMRULE_SHARED_DATA`; README, "Two commands"): suites that need it skip when it is missing,
 * except under `CI=true`, where a missing folder fails.
 */
import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The checkout's root: the nearest folder above this file with a package.json. Found by walking up, not by a
 * fixed `../..`, because `npm run bench` runs a compiled copy of this file from `.bench-build/test/helpers/`.
 */
function findRepoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  while (!existsSync(join(dir, 'package.json'))) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}`);
    dir = up;
  }
  return dir;
}

const repoRoot = findRepoRoot();

export const SHARED_DATA = process.env.SPAMRULE_SHARED_DATA ?? resolve(repoRoot, '..', 'shared', 'data');

export const hasSharedData = existsSync(join(SHARED_DATA, 'expr-vectors.json'));

if (!hasSharedData && process.env.CI === 'true') {
  throw new Error(`shared data folder not found at ${SHARED_DATA} (set SPAMRULE_SHARED_DATA); required under CI=true`);
}

/** Path of a file inside the shared data folder. */
export function sharedPath(...parts: string[]): string {
  return join(SHARED_DATA, ...parts);
}

export const REPO_ROOT = repoRoot;
