/**
 * A small JavaScript/TypeScript lexer for the tag catalogue (./catalogue.ts): the string literals
 * of a source file, comments skipped, and the literal head of each template literal with a
 * substitution (`` `SOURCE_ASN_${n}` `` → head `SOURCE_ASN_`). Not a parser: enough to read the
 * tag names the analysis modules write as literals, in their `.ts` sources or compiled `.js`.
 */

/** The literals of one source file. */
export interface SourceLiterals {
  /** Complete string values: quoted strings and templates without a substitution. */
  strings: string[];
  /** The text before the first `${` of each template that has one. */
  templateHeads: string[];
}

/** Keywords after which `/` starts a regular expression, not a division. */
const REGEX_AFTER_WORD = new Set(['return', 'typeof', 'case', 'in', 'of', 'instanceof', 'new', 'delete', 'void', 'throw', 'else', 'do', 'yield', 'await']);

const isWordChar = (c: string): boolean => /[A-Za-z0-9_$]/.test(c);

/** Reads the string literals of `src` (see {@link SourceLiterals}). Never throws: an unterminated token ends the scan. */
export function sourceLiterals(src: string): SourceLiterals {
  const strings: string[] = [];
  const templateHeads: string[] = [];
  /** Open `${` substitutions: brace depth inside each, innermost last. */
  const templateDepth: number[] = [];
  /** The last significant character or word before the current position ('' at the start). */
  let prev = '';
  let i = 0;
  const n = src.length;

  /** Reads a quoted string from `i` (at the quote); returns its value and moves past it. */
  const quoted = (q: string): string => {
    let v = '';
    i++;
    while (i < n && src[i] !== q) {
      if (src[i] === '\\') {
        v += src[i + 1] ?? '';
        i += 2;
      } else if (src[i] === '\n') break;
      else v += src[i++];
    }
    i++;
    return v;
  };

  /** Reads template text from `i` (after `` ` `` or `}`) up to its end or the next `${`. */
  const templateChunk = (head: boolean): void => {
    let v = '';
    while (i < n) {
      const c = src[i]!;
      if (c === '\\') {
        v += src[i + 1] ?? '';
        i += 2;
      } else if (c === '`') {
        i++;
        if (head) strings.push(v);
        prev = 'x';
        return;
      } else if (c === '$' && src[i + 1] === '{') {
        i += 2;
        if (head) templateHeads.push(v);
        templateDepth.push(0);
        prev = '(';
        return;
      } else {
        v += c;
        i++;
      }
    }
  };

  while (i < n) {
    const c = src[i]!;
    const next = src[i + 1];
    if (c === '/' && next === '/') {
      const e = src.indexOf('\n', i);
      i = e < 0 ? n : e;
    } else if (c === '/' && next === '*') {
      const e = src.indexOf('*/', i + 2);
      i = e < 0 ? n : e + 2;
    } else if (c === "'" || c === '"') {
      strings.push(quoted(c));
      prev = 'x';
    } else if (c === '`') {
      i++;
      templateChunk(true);
    } else if (c === '/') {
      const regex = prev === '' || (/^[A-Za-z_$]/.test(prev) ? REGEX_AFTER_WORD.has(prev) : !/[\w$)\]]/.test(prev));
      if (regex) {
        i++;
        let inClass = false;
        while (i < n && src[i] !== '\n') {
          const r = src[i]!;
          if (r === '\\') i++;
          else if (r === '[') inClass = true;
          else if (r === ']') inClass = false;
          else if (r === '/' && !inClass) break;
          i++;
        }
        i++;
        while (i < n && /[a-z]/.test(src[i]!)) i++;
        prev = 'x';
      } else {
        i++;
        prev = '/';
      }
    } else if (c === '{' && templateDepth.length > 0) {
      templateDepth[templateDepth.length - 1]!++;
      prev = c;
      i++;
    } else if (c === '}' && templateDepth.length > 0 && templateDepth[templateDepth.length - 1] === 0) {
      templateDepth.pop();
      i++;
      templateChunk(false);
    } else if (c === '}' && templateDepth.length > 0) {
      templateDepth[templateDepth.length - 1]!--;
      prev = c;
      i++;
    } else if (isWordChar(c)) {
      let j = i;
      while (j < n && isWordChar(src[j]!)) j++;
      prev = src.slice(i, j);
      i = j;
    } else {
      if (!/\s/.test(c)) prev = c;
      i++;
    }
  }
  return { strings, templateHeads };
}
