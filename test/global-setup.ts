/**
 * Vitest global setup: every test run gets its own temporary directory, removed when the run ends.
 *
 * Tests, the servers they start (test/servers) and the CLI processes they spawn make their scratch files with
 * `os.tmpdir()`. Pointing TMPDIR at one directory per run, before the test workers start (they inherit the
 * environment), means a failed or interrupted test cannot leave its files in the machine's /tmp: before this,
 * a developer's /tmp gained some 60 directories a run.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export default function setup(): () => void {
  const previous = process.env.TMPDIR;
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-test-'));
  // As /tmp: the private PostgreSQL and Postfix of the tests run as other users and must reach their own
  // directories below this one (mkdtemp makes it 0700).
  chmodSync(dir, 0o1777);
  process.env.TMPDIR = dir;
  return () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    rmSync(dir, { recursive: true, force: true });
  };
}
