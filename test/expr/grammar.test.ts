import { describe, expect, it } from 'vitest';
import { GrammarError, MAX_NESTING, MAX_SOURCE_LENGTH, parse, unescapeString } from '../../grammar/index.js';

/** Compact rendering of a tree, to assert structure (precedence, associativity, nesting). */
function show(src: string): string {
  const go = (n: ReturnType<typeof parse>): string => {
    switch (n.type) {
      case 'Int':
      case 'Float':
        return `${n.type === 'Float' ? 'f' : ''}${n.value}`;
      case 'Str':
        return JSON.stringify(n.value);
      case 'Name':
        return n.name;
      case 'Global':
        return `$${n.name}`;
      case 'Capture':
        return `#${n.index}`;
      case 'Empty':
        return '()';
      case 'Array':
        return `[${n.items.map(go).join(',')}]`;
      case 'Index':
        return `${go(n.target)}[${go(n.index)}]`;
      case 'Unary':
        return `(${n.op}${go(n.operand)})`;
      case 'Binary':
        return `(${go(n.left)} ${n.op} ${go(n.right)})`;
      case 'Call':
        return `${n.name}(${n.args.map(go).join(',')})`;
    }
  };
  return go(parse(src));
}

function errorOf(src: string): string {
  try {
    parse(src);
  } catch (e) {
    expect(e).toBeInstanceOf(GrammarError);
    return (e as Error).message;
  }
  throw new Error(`no error for ${src}`);
}

describe('grammar: literals', () => {
  it('parses integers, floats, booleans and durations (in milliseconds)', () => {
    expect(show('007')).toBe('7');
    expect(show('1.5')).toBe('f1.5');
    expect(show('.5')).toBe('f0.5');
    expect(show('5.')).toBe('f5');
    expect(show('true')).toBe('1');
    expect(show('false')).toBe('0');
    expect(show('5d')).toBe('432000000');
    expect(show('1H')).toBe('3600000');
    expect(show('2m')).toBe('120000');
    expect(show('3s')).toBe('3000');
    expect(show('100ms')).toBe('100');
    expect(show('9223372036854775807')).toBe('9223372036854776000');
  });

  it('parses strings in both quotes with the D1 escapes', () => {
    expect(show(`'a"b'`)).toBe('"a\\"b"');
    expect(show(`"it's"`)).toBe('"it\'s"');
    expect(unescapeString('a\\nb\\tc\\rd')).toBe('a\nb\tc\rd');
    expect(unescapeString("couldn\\'t")).toBe("couldn't");
    expect(unescapeString('\\\\')).toBe('\\');
    expect(unescapeString('\\S+@\\d')).toBe('\\S+@\\d');
    expect(show("'a}b'")).toBe('"a}b"');
  });

  it('parses names, dotted variables, globals and captures', () => {
    expect(show('from.domain')).toBe('from.domain');
    expect(show('remote_ip.ptr')).toBe('remote_ip.ptr');
    expect(show('$SPF_FAIL')).toBe('$SPF_FAIL');
    expect(show('$0 + $12')).toBe('(#0 + #12)');
    expect(show('$99999999999')).toBe('$99999999999');
  });
});

describe('grammar: operators', () => {
  it('follows Stalwart precedence, all left-associative', () => {
    expect(show('1 + 2 * 3')).toBe('(1 + (2 * 3))');
    expect(show('8 / 2 / 2')).toBe('((8 / 2) / 2)');
    expect(show('1 - 2 - 3')).toBe('((1 - 2) - 3)');
    expect(show('a || b && c')).toBe('(a || (b && c))');
    expect(show('a & b | c ^ d')).toBe('((a && b) || (c ^ d))');
    expect(show('a ^ b == c')).toBe('(a ^ (b == c))');
    expect(show('a == b < c')).toBe('(a == (b < c))');
    expect(show('a < b + c')).toBe('(a < (b + c))');
    expect(show('1 <= 2 >= 3 > 4 != 5')).toBe('((((1 <= 2) >= 3) > 4) != 5)');
  });

  it('reads single = as equality consuming nothing else (D2)', () => {
    expect(show('1=1')).toBe('(1 == 1)');
    expect(show('rcpt=sender')).toBe('(rcpt == sender)');
    expect(errorOf('2 => 1')).toBe('unexpected ">" at 1:4');
  });

  it('nests unary operators (D5) and binds them tighter than binary ones', () => {
    expect(show('- -1')).toBe('(-(-1))');
    expect(show('!-1')).toBe('(!(-1))');
    expect(show('[-1]')).toBe('[(-1)]');
    expect(show('[!0]')).toBe('[(!0)]');
    expect(show('-2 * 3')).toBe('((-2) * 3)');
    expect(show('!1 == 0')).toBe('((!1) == 0)');
    expect(show("!contains('abc','b')")).toBe('(!contains("abc","b"))');
    expect(show('5--3')).toBe('(5 - (-3))');
  });

  it('indexes only after a name, a call, ) or ]', () => {
    expect(show('rcpt[0]')).toBe('rcpt[0]');
    expect(show("split(a, ',')[1]")).toBe('split(a,",")[1]');
    expect(show("('a')[0]")).toBe('"a"[0]');
    expect(show('[1,2,3][1]')).toBe('[1,2,3][1]');
    expect(show('recipients[0][1]')).toBe('recipients[0][1]');
    expect(errorOf("'abc'[0]")).toBe('missing operator before "[" at 1:6');
    expect(errorOf('$TAG[0]')).toBe('missing operator before "[" at 1:5');
  });

  it('parses calls (space before "(" allowed, flagged), arrays and empty parentheses', () => {
    const t = parse("len ('abc')");
    expect(t.type === 'Call' && t.adjacent).toBe(false);
    const u = parse("len('abc')");
    expect(u.type === 'Call' && u.adjacent).toBe(true);
    expect(show('[1,[2,3]]')).toBe('[1,[2,3]]');
    expect(show('[]')).toBe('[]');
    expect(show('()')).toBe('()');
    expect(show('')).toBe('()');
    expect(show('f()')).toBe('f()');
  });
});

describe('grammar: white space and termination', () => {
  it('accepts any Unicode white space, tabs included (D3)', () => {
    expect(show('1\t+\u00a02\u2003*\u30003\r\n')).toBe('(1 + (2 * 3))');
    expect(errorOf('1 +\ufeff2')).toBe('invalid character "\ufeff" at 1:4');
  });

  it('ends the expression at a } outside a string', () => {
    expect(show('1 + 2 } garbage (')).toBe('(1 + 2)');
    expect(show('}')).toBe('()');
  });
});

describe('grammar: errors name the problem and the position (D6)', () => {
  it.each([
    ['5 6', 'missing operator before "6" at 1:3'],
    ["contains('abc' 'b')", 'missing \',\' or operator before "\'b\'" at 1:16'],
    ['1, 2', "unexpected ',' outside a function call or array at 1:2"],
    ['[1,]', 'unexpected "]" at 1:4'],
    ['[,1]', "unexpected ',' at 1:2"],
    ['(1', 'unmatched open parenthesis at 1:3'],
    ['1)', 'unmatched close parenthesis at 1:2'],
    ['(1]', "mismatched brackets: expected ')' but found ']' at 1:3"],
    ['[1)', "mismatched brackets: expected ']' but found ')' at 1:3"],
    ['[1', "missing ']' at 1:3"],
    ['1 +', 'unexpected end of expression at 1:4'],
    ["'abc", 'unterminated string at 1:1'],
    ['1 # c', 'invalid character "#" at 1:3'],
    ['é', 'invalid character "é" at 1:1'],
    ['{1}', 'invalid character "{" at 1:1'],
    ['2.*3', 'invalid number "2.*3" at 1:1'],
    ['1.2.3', 'invalid number "1.2.3" at 1:1'],
    ['1.5:', 'invalid number "1.5:" at 1:1'],
    ['9223372036854775808', 'integer "9223372036854775808" out of range at 1:1'],
    ['$', '"$" must be followed by a tag name or a capture number at 1:1'],
    ['1 +\n  (2 *\n  )', 'unexpected ")" at 3:3'],
    ['(1 } xyz', 'unmatched open parenthesis at 1:4'],
    ["'}' + (1 } x", 'unmatched open parenthesis at 1:10'],
  ])('%j → %s', (src, message) => {
    expect(errorOf(src)).toBe(message);
  });

  it('carries line, column and offset', () => {
    try {
      parse('1 +\n\t5 6');
    } catch (e) {
      expect((e as GrammarError).position).toEqual({ line: 2, column: 4, offset: 7 });
      return;
    }
    throw new Error('expected an error');
  });
});

describe('grammar: hostile input', () => {
  it('refuses nesting deeper than the limit without overflowing the stack', () => {
    expect(errorOf('('.repeat(30000) + '1' + ')'.repeat(30000))).toBe(
      `expression nested too deeply (more than ${MAX_NESTING} levels) at 1:${MAX_NESTING + 1}`,
    );
    expect(errorOf('['.repeat(5000))).toMatch(/^expression nested too deeply/);
    expect(errorOf('!'.repeat(5000) + '1')).toMatch(/^expression nested too deeply/);
    expect(errorOf('-'.repeat(5000) + '1')).toMatch(/^expression nested too deeply/);
    expect(show('('.repeat(MAX_NESTING) + '1' + ')'.repeat(MAX_NESTING))).toBe('1');
  });

  it('refuses a 1 MB source before lexing it', () => {
    const big = '1 + '.repeat(262144) + '1';
    expect(errorOf(big)).toBe(`expression too long (${big.length} characters, limit ${MAX_SOURCE_LENGTH}) at 1:${MAX_SOURCE_LENGTH + 1}`);
  });

  it('refuses operator chains deeper than the tree limit but accepts long realistic ones', () => {
    expect(errorOf('1' + '+1'.repeat(20000))).toMatch(/^expression too complex/);
    expect(show('a' + ' || a'.repeat(500)).startsWith('(((')).toBe(true);
  });

  it('reuses one parser: an error does not poison the next parse', () => {
    expect(errorOf('(1')).toBe('unmatched open parenthesis at 1:3');
    expect(show('(1)')).toBe('1');
    expect(errorOf("'x")).toBe('unterminated string at 1:1');
    expect(show('2')).toBe('2');
  });
});
