/**
 * Settings shared by the property-based fuzz tests (fast-check): a fixed seed, so that CI runs the same
 * inputs every time and a failure names a case that reproduces, and a run count that a fuzzing campaign
 * raises from the environment without editing the tests:
 *
 *   SPAMRULE_FUZZ_RUNS=20000 SPAMRULE_FUZZ_SEED=7 npx vitest run test/expr/fuzz.test.ts
 *
 * `runs(n)` is n unless SPAMRULE_FUZZ_RUNS is set (then that count for every property); the seed is 0x5eed
 * unless SPAMRULE_FUZZ_SEED is set. fast-check prints the seed, path and shrunk counterexample of a failure.
 */
import fc from 'fast-check';

const envRuns = Number(process.env.SPAMRULE_FUZZ_RUNS ?? '');
const envSeed = Number(process.env.SPAMRULE_FUZZ_SEED ?? '');

/** The fixed seed of every fuzz property (SPAMRULE_FUZZ_SEED overrides it). */
export const FUZZ_SEED = Number.isFinite(envSeed) && process.env.SPAMRULE_FUZZ_SEED ? envSeed : 0x5eed;

/** `n`, or SPAMRULE_FUZZ_RUNS when set: how many inputs a property is checked on. */
export function runs(n: number): number {
  return Number.isInteger(envRuns) && envRuns > 0 ? envRuns : n;
}

/** fast-check parameters for a property checked on `n` inputs (see runs()), with the fixed seed. */
export function fuzzParams<T>(n: number, extra: fc.Parameters<T> = {}): fc.Parameters<T> {
  return { seed: FUZZ_SEED, numRuns: runs(n), endOnFailure: true, ...extra };
}
