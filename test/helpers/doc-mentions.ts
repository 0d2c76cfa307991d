/**
 * What README.md and docs/*.md say about spamrule's command line, read from the parts of Markdown that hold
 * commands and not from prose: fenced shell blocks, code spans and table cells. Used by
 * test/package/docs-cli.test.ts to keep the docs and the CLI in agreement.
 *
 * A flag is attributed to a subcommand when it follows `spamrule <sub>` (also `npx spamrule <sub>`) in the same
 * command (up to a pipe into another program, `;`, `&&`, `||` or a shell comment) in a fenced block that is not
 * code or data (`sh`, `text`, none), a code span or a table cell, or when a code span starts
 * with the subcommand's name (`learn --pg`, `rules list [--filter TEXT]`), or when it sits in a table column
 * the caller maps to a subcommand (README's "CLI flag" column: `classify`). A code span that starts with a
 * flag is a bare mention (`--dns system`): the caller checks it against every subcommand, and may count it for
 * the subcommands its section names. Commands of other
 * programs (`rspamc`, `spamc -L`, `postconf -e`, `sa-learn --spam`, `npm run bench -- --only learn`) are left
 * out, since neither form matches them.
 */

/** One `--flag` the docs mention. */
export interface FlagMention {
  /** The doc, relative to the repository (`docs/deployment.md`). */
  doc: string;
  /** 1-based line of the snippet that holds it. */
  line: number;
  /** The flag's name without dashes (`score-spam`). */
  flag: string;
  /** The subcommand it is given to; `''` for `spamrule` itself (`spamrule --help`); `undefined` for a bare mention. */
  command: string | undefined;
  /** The subcommands its section (heading to heading) names: `spamrule <sub>`, or a code span `<sub>` or `<sub> …`. */
  section: string[];
  /** The snippet it was read from, for failure messages. */
  snippet: string;
}

/** A table column whose flags belong to one subcommand (`{ doc: 'README.md', header: 'CLI flag', command: 'classify' }`). */
export interface FlagColumn {
  doc: string;
  header: string;
  command: string;
}

/** A Markdown table: its header cells and rows of cells (raw Markdown), with the line of each row. */
export interface MarkdownTable {
  line: number;
  header: string[];
  rows: { line: number; cells: string[] }[];
}

/** One piece of command text: a fenced block's logical line, a code span, or a code span inside a table cell. */
interface Snippet {
  line: number;
  text: string;
  kind: 'fence' | 'span';
  /** For a code span inside a table cell: that column's header. */
  column?: string;
}

const FENCE = /^\s*(`{3,}|~{3,})\s*([\w-]*)/;
/**
 * Fenced blocks that hold no command lines (code, data, configuration): not read. The others (`sh`, `text`
 * usage summaries, no language) are, for `spamrule <sub>` lines only.
 */
const NOT_COMMANDS = new Set(['ts', 'typescript', 'js', 'javascript', 'json', 'toml', 'sql', 'ini', 'yaml', 'cf', 'conf']);
/** A long option: `--rules`, `--8bitmime`, `--spam=PATH` (name only). Not `--` alone, not inside a word. */
const FLAG = /(?<![\w-])--([a-z0-9][a-z0-9-]*)/g;

/** The cells of a table row (`| a | b \| c |` → `['a', 'b \| c']`). */
export function tableCells(row: string): string[] {
  const body = row.trim().replace(/^\|/, '').replace(/\|$/, '');
  const cells: string[] = [];
  let cur = '';
  let inCode = false;
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c === '\\' && body[i + 1] === '|') {
      cur += '|';
      i++;
    } else if (c === '`') {
      inCode = !inCode;
      cur += c;
    } else if (c === '|' && !inCode) {
      cells.push(cur.trim());
      cur = '';
    } else cur += c;
  }
  cells.push(cur.trim());
  return cells;
}

/** The code spans of a piece of Markdown text (their content, trimmed), with their offsets. */
export function codeSpans(text: string): { text: string; index: number }[] {
  const out: { text: string; index: number }[] = [];
  const re = /(`+)([\s\S]*?[^`])\1(?!`)/g;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) out.push({ text: m[2]!.replace(/\s+/g, ' ').trim(), index: m.index });
  return out;
}

/** The fenced blocks of a doc, with their language and first line (1-based, the line after the fence). */
export function fencedBlocks(markdown: string): { lang: string; line: number; lines: string[] }[] {
  const out: { lang: string; line: number; lines: string[] }[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (open === null) continue;
    const block = { lang: open[2]!.toLowerCase(), line: i + 2, lines: [] as string[] };
    for (i++; i < lines.length && !lines[i]!.trim().startsWith(open[1]!); i++) block.lines.push(lines[i]!);
    out.push(block);
  }
  return out;
}

/** The tables of a doc (outside fenced blocks). */
export function markdownTables(markdown: string): MarkdownTable[] {
  const tables: MarkdownTable[] = [];
  const lines = withoutFences(markdown);
  for (let i = 0; i < lines.length; i++) {
    if (!lines[i]!.trim().startsWith('|') || !/^\s*\|[\s:|-]+\|\s*$/.test(lines[i + 1] ?? '')) continue;
    const table: MarkdownTable = { line: i + 1, header: tableCells(lines[i]!), rows: [] };
    for (i += 2; i < lines.length && lines[i]!.trim().startsWith('|'); i++) table.rows.push({ line: i + 1, cells: tableCells(lines[i]!) });
    tables.push(table);
    i--;
  }
  return tables;
}

/** The doc's lines with the fenced blocks blanked (line numbers kept). */
function withoutFences(markdown: string): string[] {
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (open === null) continue;
    lines[i] = '';
    for (i++; i < lines.length && !lines[i]!.trim().startsWith(open[1]!); i++) lines[i] = '';
    if (i < lines.length) lines[i] = '';
  }
  return lines;
}

/** Every snippet of command text in a doc. */
function snippets(markdown: string): Snippet[] {
  const out: Snippet[] = [];
  for (const block of fencedBlocks(markdown)) {
    if (NOT_COMMANDS.has(block.lang)) continue;
    // Logical lines: a trailing backslash continues the command on the next line.
    for (let i = 0; i < block.lines.length; i++) {
      const line = block.line + i;
      let text = block.lines[i]!;
      while (/\\\s*$/.test(text) && i + 1 < block.lines.length) text = text.replace(/\\\s*$/, ' ') + block.lines[++i]!;
      out.push({ line, text, kind: 'fence' });
    }
  }
  const lines = withoutFences(markdown);
  const tableLines = new Set<number>();
  for (const t of markdownTables(markdown)) {
    for (const r of t.rows) {
      tableLines.add(r.line);
      r.cells.forEach((cell, c) => {
        for (const s of codeSpans(cell)) out.push({ line: r.line, text: s.text, kind: 'span', column: t.header[c] });
      });
    }
    tableLines.add(t.line);
    tableLines.add(t.line + 1);
  }
  // Prose: paragraphs (code spans may run over a line break), without the table rows.
  const prose = lines.map((l, i) => (tableLines.has(i + 1) ? '' : l)).join('\n');
  const lineAt = (index: number): number => prose.slice(0, index).split('\n').length;
  for (const para of prose.matchAll(/[^\n]+(?:\n[^\n]+)*/g)) {
    for (const s of codeSpans(para[0])) out.push({ line: lineAt(para.index + s.index), text: s.text, kind: 'span' });
  }
  return out;
}

/** Quoted words blanked (`--if 'len(subject) > 2'` → `--if ''`): their content is a value, not an option. */
function unquote(text: string): string {
  return text.replace(/'[^']*'|"[^"]*"/g, "''");
}

/** The commands of a shell line: split at `;`, `&&`, `||`, a pipe into another program, and cut at a comment. */
function shellCommands(text: string): string[] {
  const noComment = text.replace(/(^|\s)#.*$/, '');
  return noComment.split(/;|&&|\|\||\s\|\s*(?=[A-Za-z.\/])/);
}

/**
 * The flag mentions of one doc. `commands` are the subcommand names; `columns` the table columns whose bare
 * flags belong to a subcommand.
 */
export function flagMentions(doc: string, markdown: string, commands: readonly string[], columns: readonly FlagColumn[]): FlagMention[] {
  const names = commands.map((c) => c.replace(/[-]/g, '\\-')).join('|');
  const invoked = invokedPattern(commands);
  const startsWithCommand = new RegExp(`^(${names})\\s+(?=\\S)`);
  const out: FlagMention[] = [];
  const sections = sectionCommands(markdown, commands);
  const add = (s: Snippet, part: string, command: string | undefined): void => {
    for (const m of unquote(part).matchAll(FLAG)) out.push({ doc, line: s.line, flag: m[1]!, command, section: sections[s.line - 1] ?? [], snippet: s.text });
  };
  for (const s of snippets(markdown)) {
    for (const cmd of shellCommands(s.text)) {
      const hits = [...cmd.matchAll(invoked)];
      if (hits.length > 0) {
        // Each `spamrule <sub>` owns the flags up to the next one.
        hits.forEach((h, i) => add(s, cmd.slice(h.index + h[0].length, hits[i + 1]?.index ?? cmd.length), h[1] ?? ''));
        continue;
      }
      if (s.kind !== 'span') continue;
      const text = cmd.trim();
      const lead = startsWithCommand.exec(text);
      if (lead !== null) add(s, text.slice(lead[0].length), lead[1]!);
      else if (/^--[a-z0-9]/.test(text)) {
        const column = columns.find((c) => c.doc === doc && c.header === s.column);
        add(s, text, column?.command);
      }
    }
  }
  return out;
}

/**
 * `spamrule <sub>`, also by path (`/usr/local/bin/spamrule serve`; group 1: the subcommand), or a bare
 * `spamrule` before one of its own flags (`spamrule --help`; not `/var/lib/spamrule --shell`).
 */
function invokedPattern(commands: readonly string[]): RegExp {
  const names = commands.map((c) => c.replace(/[-]/g, '\\-')).join('|');
  return new RegExp(`(?<![\\w.-])(?:[\\w.-]*/)*spamrule\\s+(${names})(?![\\w-])|(?<![\\w/.-])spamrule\\s+(?=--|-h\\b)`, 'g');
}

/**
 * The flags given to `spamrule <sub>` in plain text (a comment of examples/, a unit file's ExecStart): on each
 * line, each invocation owns the flags up to the next one, a pipe, `;`, `&&` or the end of the line.
 */
export function invokedFlags(text: string, commands: readonly string[]): { line: number; command: string; flag: string; text: string }[] {
  const invoked = invokedPattern(commands);
  const out: { line: number; command: string; flag: string; text: string }[] = [];
  text.split('\n').forEach((line, i) => {
    for (const cmd of line.split(/;|&&|\|\||\s\|\s*(?=[A-Za-z.\/])/)) {
      const hits = [...cmd.matchAll(invoked)];
      hits.forEach((h, j) => {
        for (const m of unquote(cmd.slice(h.index + h[0].length, hits[j + 1]?.index ?? cmd.length)).matchAll(FLAG)) out.push({ line: i + 1, command: h[1] ?? '', flag: m[1]!, text: line.trim() });
      });
    }
  });
  return out;
}

/** For each line of a doc (0-based), the subcommands its section names; a heading starts a section. */
function sectionCommands(markdown: string, commands: readonly string[]): string[][] {
  const lines = withoutFences(markdown);
  const named = (text: string): string[] =>
    commands.filter((c) => new RegExp(`(?<![\\w/.-])spamrule\\s+${c}(?![\\w-])`).test(text) || codeSpans(text).some((s) => s.text === c || s.text.startsWith(`${c} `)));
  const out: string[][] = [];
  for (let start = 0; start < lines.length; ) {
    let end = start + 1;
    while (end < lines.length && !/^#{1,6}\s/.test(lines[end]!)) end++;
    const names = named(markdown.split('\n').slice(start, end).join('\n'));
    for (let i = start; i < end; i++) out.push(names);
    start = end;
  }
  return out;
}

/**
 * The flags a `--help` text gives to other commands (`"spamrule learn --model FILE"`, `"classify --tag"`,
 * `spamrule token create --db PATH …` to the end of the line) and to its own command (the rest).
 */
export function helpFlags(help: string, own: string, commands: readonly string[]): { flag: string; command: string; line: string }[] {
  const names = commands.join('|');
  const other = new RegExp(`"(?:spamrule\\s+)?(${names})\\b([^"]*)"|(?<![\\w/.-])spamrule\\s+(${names})\\b([^\\n"]*)`, 'g');
  const out: { flag: string; command: string; line: string }[] = [];
  for (const line of help.split('\n')) {
    const rest = line.replace(other, (_all, q: string | undefined, qArgs: string | undefined, u: string | undefined, uArgs: string | undefined) => {
      const command = q ?? u!;
      for (const m of (qArgs ?? uArgs ?? '').matchAll(FLAG)) out.push({ flag: m[1]!, command, line: line.trim() });
      return '';
    });
    for (const m of rest.matchAll(FLAG)) out.push({ flag: m[1]!, command: own, line: line.trim() });
  }
  return out;
}
