import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { run } from '../../src/cli/eval.js';
import { capture } from '../helpers/capture.js';

describe('spamrule eval', () => {
  it('evaluates one expression with variables and globals', async () => {
    const r = await capture(() =>
      run(["'x' + size + $SPF_FAIL", '--vars', '{"size": 6}', '--globals', '{"SPF_FAIL": 1}']),
    );
    expect(r.result).toBe(0);
    expect(r.stdout).toBe('{"str":"x61"}\n');
  });

  it('prints floats, arrays and constants in the vectors encoding', async () => {
    expect((await capture(() => run(['7 / 2']))).stdout).toBe('{"float":3.5}\n');
    expect((await capture(() => run(["[1, 'a']"]))).stdout).toBe('{"array":[{"int":1},{"str":"a"}]}\n');
    expect((await capture(() => run(['relaxed']))).stdout).toBe('{"const":"relaxed"}\n');
    expect((await capture(() => run(['subject', '--vars', '{"subject": {"float": "NaN"}}']))).stdout).toBe('{"float":"NaN"}\n');
  });

  it('reports a parse error with its position and exits 1', async () => {
    const r = await capture(() => run(['1 +\n  foo']));
    expect(r.result).toBe(1);
    expect(r.stdout).toBe('{"parseError":"unknown variable \\"foo\\" at 2:3"}\n');
  });

  it('applies --allow-variables', async () => {
    const r = await capture(() => run(['sender', '--allow-variables', 'rcpt,value']));
    expect(r.result).toBe(1);
    expect(r.stdout).toBe('{"parseError":"variable \\"sender\\" not allowed in this context at 1:1"}\n');
  });

  it('runs a batch file, one line per vector, with stores', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'spamrule-eval-'));
    const file = join(dir, 'v.json');
    writeFileSync(
      file,
      JSON.stringify([
        { id: 'a', expr: '1 + 1' },
        { id: 'b', expr: "key_set('m', 'k', 'v') + key_get('m', 'k')", store: { m: { keys: {}, counters: {} } } },
        { id: 'c', kind: 'ifBlock', expr: { match: [{ if: "matches('^(a)', rcpt)", then: '$1' }], else: 'false' }, vars: { rcpt: 'abc' } },
        { id: 'd', expr: "key_set('spam-traps', 'a', 'b')", store: { 'spam-traps': { entries: ['x'] } } },
      ]),
    );
    const r = await capture(() => run(['--batch', file]));
    expect(r.result).toBe(0);
    const lines = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { id: string; result: Record<string, unknown> });
    expect(lines.slice(0, 3)).toEqual([
      { id: 'a', result: { int: 2 } },
      { id: 'b', result: { str: '1v' } },
      { id: 'c', result: { str: 'a' } },
    ]);
    expect(lines[3]!.id).toBe('d');
    expect(Object.keys(lines[3]!.result)).toEqual(['evalError']);
  });

  it('prints help, and rejects bad usage with status 2', async () => {
    const h = await capture(() => run(['--help']));
    expect(h.result).toBe(0);
    expect(h.stdout).toContain('spamrule eval --batch FILE');
    expect((await capture(() => run([]))).result).toBe(2);
    expect((await capture(() => run(['1', '--vars', '[1]']))).result).toBe(2);
    expect((await capture(() => run(['--batch', '/nonexistent/file.json']))).result).toBe(2);
  });
});
