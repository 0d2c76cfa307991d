import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  DNSBL_TAG_VARIABLES, EXPRESSION_CONSTANTS, EXPRESSION_VARIABLES, SPAM_DEFAULT_VARIABLES, SPAM_RULE_VARIABLES,
  compileExpression,
} from '../../src/expr/index.js';
import { hasSharedData, sharedPath } from '../helpers/shared-data.js';

describe('name tables', () => {
  it('has the 92 variables and 19 constants of spec §3.2', () => {
    expect(EXPRESSION_VARIABLES).toHaveLength(92);
    expect(new Set(EXPRESSION_VARIABLES).size).toBe(92);
    expect(EXPRESSION_CONSTANTS).toHaveLength(19);
    expect(SPAM_DEFAULT_VARIABLES).toHaveLength(40);
  });

  it.skipIf(!hasSharedData)('matches the schema enums ExpressionVariable and ExpressionConstant', () => {
    const schema = JSON.parse(readFileSync(sharedPath('schema', 'registry-subset.json'), 'utf8')) as {
      enums: Record<string, { name: string }[]>;
    };
    expect([...EXPRESSION_VARIABLES]).toEqual(schema.enums.ExpressionVariable!.map((e) => e.name));
    expect([...EXPRESSION_CONSTANTS]).toEqual(schema.enums.ExpressionConstant!.map((e) => e.name));
  });

  it('gives each SpamRule scope its allow-list (spec §3.3)', () => {
    expect(SPAM_RULE_VARIABLES.Any).toBe(SPAM_RULE_VARIABLES.Domain);
    expect(SPAM_RULE_VARIABLES.Any).toBe(SPAM_RULE_VARIABLES.Body);
    expect(SPAM_RULE_VARIABLES.Any).toEqual(['value', ...SPAM_DEFAULT_VARIABLES]);
    expect(SPAM_RULE_VARIABLES.Email.slice(0, 6)).toEqual(['email', 'value', 'name', 'local', 'domain', 'sld']);
    expect(SPAM_RULE_VARIABLES.Header.slice(0, 7)).toEqual(['name', 'name_lower', 'value', 'value_lower', 'attributes', 'raw', 'raw_lower']);
    expect(SPAM_RULE_VARIABLES.Ip.slice(0, 7)).toEqual(['ip', 'value', 'reverse_ip', 'ip_reverse', 'octets', 'is_v4', 'is_v6']);
    expect(SPAM_RULE_VARIABLES.Url.slice(0, 11)).toEqual([
      'url', 'url_original', 'value', 'path_query', 'path', 'query', 'scheme', 'authority', 'host', 'sld', 'port',
    ]);
    expect(DNSBL_TAG_VARIABLES).toBe(SPAM_RULE_VARIABLES.Ip);
    for (const list of Object.values(SPAM_RULE_VARIABLES)) for (const n of list) expect(EXPRESSION_VARIABLES).toContain(n);
  });

  it('every listed variable compiles in its own scope and a foreign one does not', () => {
    for (const [scope, list] of Object.entries(SPAM_RULE_VARIABLES)) {
      for (const n of list) expect(compileExpression(n, { allowedVariables: list }).source, `${scope}:${n}`).toBe(n);
    }
    expect(() => compileExpression('url', { allowedVariables: SPAM_RULE_VARIABLES.Ip })).toThrow(
      'variable "url" not allowed in this context at 1:1',
    );
    expect(() => compileExpression('rcpt', { allowedVariables: SPAM_RULE_VARIABLES.Any })).toThrow(/not allowed/);
  });
});
