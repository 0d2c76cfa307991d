import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { VERSION } from '../../src/util/version.js';
import { REPO_ROOT } from '../helpers/shared-data.js';

describe('VERSION', () => {
  it('is the version package.json gives', () => {
    expect(VERSION).toBe((JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string }).version);
  });
});
