import { describe, expect, it } from 'vitest';
import { FUNCTIONS } from '../../../src/expr/functions/index.js';
import { Constant, Float } from '../../../src/expr/value.js';
import { call } from './helpers.js';

const relaxed = Constant.of('relaxed')!;

describe('the table', () => {
  it('holds every named function with its arity and kind', () => {
    const asyncNames = Object.entries(FUNCTIONS).filter(([, d]) => d.async).map(([n]) => n).sort();
    expect(asyncNames).toEqual(['counter_get', 'counter_incr', 'dns_query', 'is_local_address', 'is_local_domain',
      'key_exists', 'key_get', 'key_set', 'sql_query']);
    expect(Object.keys(FUNCTIONS)).toHaveLength(53);
    expect(FUNCTIONS.substring!.arity).toBe(3);
    expect(FUNCTIONS.if_then!.arity).toBe(3);
    expect(FUNCTIONS.key_set!.arity).toBe(3);
    expect(FUNCTIONS.matches).toBeUndefined();
  });
});

describe('array functions', () => {
  it('count', () => {
    expect(call('count', [1, 2])).toBe(2);
    expect(call('count', '')).toBe(0);
    expect(call('count', 'x')).toBe(1);
    expect(call('count', 0)).toBe(1);
  });
  it('sort by the §2.5 ordering', () => {
    expect(call('sort', [3, 1, 2], 1)).toEqual([1, 2, 3]);
    expect(call('sort', [3, 1, 2], 0)).toEqual([3, 2, 1]);
    expect(call('sort', ['b', 1, 'a', new Float(2.5)], 1)).toEqual(['a', 'b', 1, new Float(2.5)]);
    expect(call('sort', ['10', '9', 8], 1)).toEqual([8, '10', '9']);
    expect(call('sort', 'x', 1)).toEqual(['x']);
    expect(call('sort', '', 1)).toEqual([]);
    const input = [2, 1];
    call('sort', input, 1);
    expect(input).toEqual([2, 1]); // arguments are not mutated
  });
  it('dedup keeps first occurrences under ==', () => {
    expect(call('dedup', [1, '1', 1, 2])).toEqual([1, 2]);
    expect(call('dedup', 'a')).toEqual(['a']);
    expect(call('dedup', [relaxed, relaxed])).toEqual([relaxed, relaxed]); // constants never ==
  });
  it('winnow drops only empty strings', () => {
    expect(call('winnow', ['', 0, [], 'a', ''])).toEqual([0, [], 'a']);
    expect(call('winnow', '')).toBe('');
    expect(call('winnow', 5)).toBe(5);
  });
  it('is_intersect', () => {
    expect(call('is_intersect', [1, 2], ['2', 3])).toBe(1);
    expect(call('is_intersect', [1, 2], [3])).toBe(0);
    expect(call('is_intersect', ['a', 'b'], 'b')).toBe(1);
    expect(call('is_intersect', 'b', ['a', 'b'])).toBe(1);
    expect(call('is_intersect', 'b', 'b')).toBe(0);
  });
});

describe('type predicates, hash, if_then', () => {
  it('is_empty and is_number', () => {
    expect(call('is_empty', '')).toBe(1);
    expect(call('is_empty', [])).toBe(1);
    expect(call('is_empty', 0)).toBe(0);
    expect(call('is_empty', relaxed)).toBe(0);
    expect(call('is_number', 1)).toBe(1);
    expect(call('is_number', new Float(NaN))).toBe(1);
    expect(call('is_number', '1')).toBe(0);
  });
  it('hash gives lowercase hex for the four algorithms, "" otherwise', () => {
    expect(call('hash', 'abc', 'sha1')).toBe('a9993e364706816aba3e25717850c26c9cd0d89d');
    expect(call('hash', 'abc', 'md5')).toBe('900150983cd24fb0d6963f7d28e17f72');
    expect(call('hash', 'abc', 'sha256')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(call('hash', 'abc', 'sha512')).toHaveLength(128);
    expect(call('hash', 'abc', 'SHA1')).toBe('');
    expect(call('hash', ['a', 'b'], 'md5')).toBe(call('hash', 'a\r\nb', 'md5'));
  });
  it('if_then', () => {
    expect(call('if_then', 1, 'a', 'b')).toBe('a');
    expect(call('if_then', '', 'a', 'b')).toBe('b');
    expect(call('if_then', new Float(NaN), 'a', 'b')).toBe('a');
  });
});

describe('e-mail functions', () => {
  it('is_email runs the byte state machine', () => {
    expect(call('is_email', 'john@example.com')).toBe(1);
    expect(call('is_email', 'john@localhost')).toBe(0);
    expect(call('is_email', 'john@example.com.')).toBe(1);
    expect(call('is_email', '"john doe"@example.com')).toBe(1);
    expect(call('is_email', ' a@b.c')).toBe(0);
    expect(call('is_email', 'jöhn@example.com')).toBe(1);
    expect(call('is_email', 'a@@b.c')).toBe(0);
    expect(call('is_email', 'a..b@c.d')).toBe(0);
    expect(call('is_email', '.a@c.d')).toBe(0);
    expect(call('is_email', 'a@.c.d')).toBe(0);
    expect(call('is_email', '@c.d')).toBe(0);
    expect(call('is_email', 'a@c.')).toBe(1); // a trailing dot counts as a domain dot (as john@example.com.)
  });
  it('email_part splits at the last @ and trims', () => {
    expect(call('email_part', 'John@Example.com', 'local')).toBe('John');
    expect(call('email_part', 'John@Example.com', 'domain')).toBe('Example.com');
    expect(call('email_part', 'John@Example.com', 'other')).toBe('');
    expect(call('email_part', 'nodomain', 'local')).toBe('');
    expect(call('email_part', ' a@b ', 'local')).toBe('a');
    expect(call('email_part', 'a@b@c', 'local')).toBe('a@b');
    expect(call('email_part', ['a@b', 'c@d'], 'domain')).toEqual(['b', 'd']);
    expect(call('email_part', 5, 'local')).toBe('');
  });
});
