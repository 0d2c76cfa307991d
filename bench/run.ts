/**
 * `npm run bench`: every benchmark suite, printed as tables. Select with `--only expr,regex,regex-memory,rules,classify,masscheck,classify-redis,startup,lookup,learn,step-floor,server,segment`.
 * Figures are reported as ratios against a baseline measured in the same run (shared, noisy machines).
 */
import { runClassifyBench } from './classify.js';

const only = (() => {
  const i = process.argv.indexOf('--only');
  return i >= 0 ? new Set((process.argv[i + 1] ?? '').split(',')) : undefined;
})();
const want = (name: string): boolean => only === undefined || only.has(name);

async function main(): Promise<void> {
  process.stdout.write(`spamrule benchmarks — node ${process.version}, ${new Date().toISOString()}\n`);
  if (want('expr')) {
    const { runExprBench } = await import('./expr.js');
    await runExprBench();
  }
  if (want('regex')) {
    const { runRegexBench } = await import('./regex.js');
    await runRegexBench();
  }
  if (want('regex-memory')) {
    const { runRegexMemoryBench } = await import('./regex-memory.js');
    await runRegexMemoryBench();
  }
  if (want('rules')) {
    const { runRulesBench } = await import('./rules.js');
    await runRulesBench();
  }
  if (want('classify')) await runClassifyBench();
  if (want('classify-redis')) {
    const { runClassifyRedisBench } = await import('./classify-redis.js');
    await runClassifyRedisBench();
  }
  if (want('masscheck')) {
    const { runMassCheck } = await import('./masscheck.js');
    await runMassCheck();
  }
  if (want('startup')) {
    const { runStartupBench } = await import('./startup.js');
    await runStartupBench();
  }
  if (want('server')) {
    const { runServerBench } = await import('./server.js');
    await runServerBench();
  }
  if (want('lookup')) {
    const { runLookupBench } = await import('./lookup.js');
    await runLookupBench();
  }
  if (want('segment')) {
    const { runSegmentBench } = await import('./segment.js');
    await runSegmentBench();
  }
  if (want('learn')) {
    const { runLearnBench } = await import('./learn.js');
    await runLearnBench();
  }
  if (want('step-floor')) {
    const { runStepFloorBench } = await import('./step-floor.js');
    await runStepFloorBench();
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`bench failed: ${e instanceof Error ? e.stack : String(e)}\n`);
  process.exitCode = 1;
});
