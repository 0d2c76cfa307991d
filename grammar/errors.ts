/** Errors and positions of the grammar layer (README.md, deviation D6: every error names a position). */

/** 1-based line and column, 0-based offset (UTF-16 code units). */
export interface Position {
  line: number;
  column: number;
  offset: number;
}

/** A syntax error: `problem` names what is wrong, `offset` where (0-based). */
export class GrammarError extends Error {
  constructor(
    readonly problem: string,
    readonly offset: number,
    readonly position: Position,
  ) {
    super(`${problem} at ${position.line}:${position.column}`);
    this.name = 'GrammarError';
  }
}

/** Line/column of an offset. Line breaks are LF, CR LF and lone CR (as the lexer counts them). */
export function positionAt(source: string, offset: number): Position {
  let line = 1;
  let col = 1;
  const end = Math.min(offset, source.length);
  for (let i = 0; i < end; i++) {
    const c = source.charCodeAt(i);
    if (c === 10 || (c === 13 && source.charCodeAt(i + 1) !== 10)) {
      line++;
      col = 1;
    } else if (c !== 13) col++;
  }
  return { line, column: col, offset };
}

export function grammarError(source: string, problem: string, offset: number): GrammarError {
  return new GrammarError(problem, offset, positionAt(source, offset));
}

/** Shows a token or name in messages the way users wrote it, quoted. */
export function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? text.slice(0, 40) + '…' : text);
}
