import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { capture } from '../helpers/capture.js';

describe('spamrule <command>', () => {
  it('refuses an unknown command with the usage and status 2, names of Object.prototype included', async () => {
    for (const name of ['frobnicate', 'constructor', 'toString', '__proto__']) {
      const r = await capture(() => main([name]));
      expect(r.result).toBe(2);
      expect(r.stderr).toContain(`spamrule: unknown command "${name}"`);
      expect(r.stderr).toContain('usage: spamrule <command> [options]');
    }
  });
});
