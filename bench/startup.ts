/**
 * Start-up cost: `spamrule classify` of one message (the built command, `dist/src/cli/main.js`, as `npx
 * spamrule` runs it) and `import('spamrule')` alone, each against `node -e 0` in the same run. Passes
 * alternate so load on a shared machine hits both alike; the figure is the median per-pass ratio
 * (target: classify ≤ 4× `node -e 0`).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alternatingPasses, printTable } from './common.js';
import { REPO_ROOT } from '../test/helpers/shared-data.js';

const ROOT = REPO_ROOT;
const CLI = join(ROOT, 'dist', 'src', 'cli', 'main.js');
const INDEX = join(ROOT, 'dist', 'src', 'index.js');
const MESSAGE = join(ROOT, 'examples', 'mail', 'ham-meeting.eml');

function node(args: string[]): void {
  const r = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, NODE_OPTIONS: '' } });
  if (r.status !== 0) throw new Error(`node ${args.join(' ')} exited ${r.status}: ${r.stderr}`);
}

export async function runStartupBench(rounds = 15): Promise<void> {
  if (!existsSync(CLI)) throw new Error(`${CLI} not found: build first (npm run build)`);
  const bare = () => node(['-e', '0']);
  const classify = () => node([CLI, 'classify', '--quiet', MESSAGE]);
  const imp = () => node(['--input-type=module', '-e', `await import(${JSON.stringify(INDEX)})`]);
  bare(); // warm the file cache
  classify();
  const c = await alternatingPasses(bare, classify, rounds);
  const i = await alternatingPasses(bare, imp, rounds);
  const fmt = (ms: number) => ms.toFixed(0);
  printTable(`Start-up (${rounds} alternating passes; ms are the fastest pass)`, [
    { command: 'node -e 0 (baseline)', ms: fmt(Math.min(c.bestBaselineMs, i.bestBaselineMs)), 'x baseline (median ratio)': '1.00' },
    { command: "import('spamrule')", ms: fmt(i.bestCandidateMs), 'x baseline (median ratio)': (1 / i.medianRatio).toFixed(2) },
    { command: 'spamrule classify, one message', ms: fmt(c.bestCandidateMs), 'x baseline (median ratio)': (1 / c.medianRatio).toFixed(2) },
  ]);
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  runStartupBench().catch((e: unknown) => {
    process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exitCode = 1;
  });
}
