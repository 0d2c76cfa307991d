/** `parseCliArgs` reads `--flag -1` as `--flag=-1` (a negative number is a value, not an option) and is parseArgs otherwise. */
import { describe, expect, it } from 'vitest';
import { joinNegativeValues, parseCliArgs } from '../../src/util/index.js';

const options = { score: { type: 'string' }, quiet: { type: 'boolean' }, n: { type: 'string', short: 'n' } } as const;

describe('joinNegativeValues', () => {
  it('joins a long string option to the negative number after it', () => {
    expect(joinNegativeValues(['--score', '-1', 'a.eml'], options)).toEqual(['--score=-1', 'a.eml']);
    for (const v of ['-0.5', '-.5', '-12', '-1e3', '-2.5E-2']) expect(joinNegativeValues(['--score', v], options)).toEqual([`--score=${v}`]);
  });
  it('leaves everything else alone', () => {
    // Not a number, a boolean option, an option already given its value, an unknown option, after `--`.
    expect(joinNegativeValues(['--score', '-q'], options)).toEqual(['--score', '-q']);
    expect(joinNegativeValues(['--score', '-1x'], options)).toEqual(['--score', '-1x']);
    expect(joinNegativeValues(['--quiet', '-1'], options)).toEqual(['--quiet', '-1']);
    expect(joinNegativeValues(['--score=2', '-1'], options)).toEqual(['--score=2', '-1']);
    expect(joinNegativeValues(['--other', '-1'], options)).toEqual(['--other', '-1']);
    expect(joinNegativeValues(['--', '--score', '-1'], options)).toEqual(['--', '--score', '-1']);
  });
});

describe('parseCliArgs', () => {
  it('gives the negative value to its option', () => {
    const r = parseCliArgs({ args: ['--score', '-3.5', '--quiet', 'x'], options, allowPositionals: true });
    expect(r.values).toEqual({ score: '-3.5', quiet: true });
    expect(r.positionals).toEqual(['x']);
  });
  it('still refuses what parseArgs refuses', () => {
    expect(() => parseCliArgs({ args: ['--score', '-q'], options: { ...options, q: { type: 'boolean', short: 'q' } } })).toThrow(/ambiguous/);
    expect(() => parseCliArgs({ args: ['--nope'], options })).toThrow(/Unknown option/);
  });
});
