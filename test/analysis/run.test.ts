/**
 * The module runner: a module that throws, synchronously or by rejecting, is reported as the run's
 * error and the runner still answers that the module ran; an unknown step answers false.
 */
import { describe, expect, it } from 'vitest';
import { runModule, type AnalysisRun } from '../../src/analysis/run.js';

/** A run whose session cannot be read: every module that reads it fails. */
function brokenRun(): AnalysisRun {
  return {
    get session(): never {
      throw new Error('no session');
    },
    message: undefined as never,
    dns: undefined as never,
    lists: { get: () => undefined } as never,
    config: {},
    tags: new Set(),
    matches: [],
    errors: [],
    warnings: [],
  };
}

describe('runModule', () => {
  it('reports a synchronous module that throws, and answers synchronously', () => {
    const run = brokenRun();
    expect(runModule(run, 'received')).toBe(true);
    expect(run.errors).toEqual([{ module: 'received', message: 'no session' }]);
  });

  it('reports an async module that rejects', async () => {
    const run = brokenRun();
    // domain always waits (DNSBLs); ehlo and from wait only when DNS is on.
    const r = runModule(run, 'domain');
    expect(r).toBeInstanceOf(Promise);
    expect(await r).toBe(true);
    expect(run.errors).toEqual([{ module: 'domain', message: 'no session' }]);
  });

  it('answers false for a step that is no module', async () => {
    expect(await runModule(brokenRun(), 'nonesuch')).toBe(false);
  });
});
