/**
 * Reading classify/learn inputs from a folder someone else can write (a user's Junk folder trained from
 * root's cron): symbolic links and special files (a FIFO that never ends, /dev/zero, a socket) inside it
 * are skipped with a warning, a special file named on the command line is refused, a file swapped after
 * the walk is refused, and a message is read as a bounded stream (mbox split as it is read, 50 MiB cap).
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expandInputs, MAX_MESSAGE_BYTES, readMessages, type InputFile } from '../../src/cli/inputs.js';
import { MboxSplitter, splitMbox } from '../../src/cli/mbox.js';

const dir = mkdtempSync(join(tmpdir(), 'spamrule-inputs-'));
const MAIL = 'From: a@example.com\r\nSubject: hi\r\n\r\nhello\r\n';
let socketServer: Server;

async function all(files: readonly (InputFile | string)[]): Promise<{ names: string[]; raws: string[]; errors: string[] }> {
  const out = { names: [] as string[], raws: [] as string[], errors: [] as string[] };
  for await (const m of readMessages(files, (f, e) => out.errors.push(`${f}: ${e.message}`))) {
    out.names.push(m.name);
    out.raws.push(m.raw.toString('latin1'));
  }
  return out;
}

beforeAll(async () => {
  // The "Junk folder": two messages, and everything its owner could plant beside them.
  const junk = join(dir, 'Junk');
  mkdirSync(join(junk, 'sub'), { recursive: true });
  writeFileSync(join(junk, 'a.eml'), MAIL);
  writeFileSync(join(junk, 'sub', 'b.eml'), MAIL.replace('hi', 'sub'));
  writeFileSync(join(dir, 'secret'), 'root:$6$hash-of-a-secret:19000:0:99999:7:::\n');
  mkdirSync(join(dir, 'elsewhere'));
  writeFileSync(join(dir, 'elsewhere', 'c.eml'), MAIL.replace('hi', 'elsewhere'));
  symlinkSync(join(dir, 'secret'), join(junk, 'zz-shadow-link'));
  symlinkSync(join(dir, 'elsewhere'), join(junk, 'zz-dir-link'));
  symlinkSync('/dev/zero', join(junk, 'zz-zero-link'));
  symlinkSync(join(dir, 'gone'), join(junk, 'zz-dangling'));
  execFileSync('mkfifo', [join(junk, 'zz-fifo')]);
  symlinkSync(join(junk, 'zz-fifo'), join(junk, 'zz-fifo-link'));
  socketServer = createServer();
  await new Promise<void>((resolve) => socketServer.listen(join(junk, 'zz-socket'), resolve));
});

afterAll(async () => {
  await new Promise<void>((resolve) => socketServer.close(() => resolve()));
  rmSync(dir, { recursive: true, force: true });
});

describe('a folder walk', () => {
  it('reads the regular files only; links (to files, folders, devices, FIFOs) and special files are skipped with a warning', async () => {
    const junk = join(dir, 'Junk');
    const r = expandInputs([junk]);
    expect(r.files.map((f) => f.path)).toEqual([join(junk, 'a.eml'), join(junk, 'sub', 'b.eml')]);
    expect(r.problems).toEqual([]);
    const link = 'skipped: a symbolic link: links inside folders are not followed (name the file itself to read it)';
    expect(r.warnings).toEqual([
      { path: join(junk, 'zz-dangling'), message: link },
      { path: join(junk, 'zz-dir-link'), message: link },
      { path: join(junk, 'zz-fifo'), message: 'skipped: a FIFO, not a regular file' },
      { path: join(junk, 'zz-fifo-link'), message: link },
      { path: join(junk, 'zz-shadow-link'), message: link },
      { path: join(junk, 'zz-socket'), message: 'skipped: a socket, not a regular file' },
      { path: join(junk, 'zz-zero-link'), message: link },
    ]);
    const read = await all(r.files);
    expect(read.errors).toEqual([]);
    expect(read.raws.join('')).not.toContain('hash-of-a-secret');
    expect(read.names).toEqual([join(junk, 'a.eml'), join(junk, 'sub', 'b.eml')]);
  });

  it('refuses a file swapped after the walk: for a link (O_NOFOLLOW) or for another file (its inode)', async () => {
    const d = join(dir, 'swap');
    mkdirSync(d);
    writeFileSync(join(d, 'one.eml'), MAIL);
    writeFileSync(join(d, 'two.eml'), MAIL);
    const r = expandInputs([d]);
    expect(r.files).toHaveLength(2);
    rmSync(join(d, 'one.eml'));
    symlinkSync(join(dir, 'secret'), join(d, 'one.eml'));
    writeFileSync(join(d, 'other'), 'Subject: planted\r\n\r\nx\r\n');
    renameSync(join(d, 'other'), join(d, 'two.eml'));
    const read = await all(r.files);
    expect(read.raws).toEqual([]);
    expect(read.errors).toHaveLength(2);
    expect(read.errors[0]).toMatch(new RegExp(`^${join(d, 'one.eml')}: ELOOP`));
    expect(read.errors[1]).toBe(`${join(d, 'two.eml')}: replaced after its folder was listed; not read`);
  });
});

describe('paths named on the command line', () => {
  it('a link to a regular file is followed (the user named it); a FIFO, a device or a link to one is refused, naming what it is', async () => {
    const junk = join(dir, 'Junk');
    const r = expandInputs([join(junk, 'zz-shadow-link'), join(junk, 'zz-fifo'), join(junk, 'zz-fifo-link'), '/dev/zero', join(junk, 'zz-socket')]);
    expect(r.files.map((f) => f.path)).toEqual([join(junk, 'zz-shadow-link')]);
    expect(r.problems).toEqual([
      { path: join(junk, 'zz-fifo'), message: 'not a regular file (a FIFO); to read standard input, give -' },
      { path: join(junk, 'zz-fifo-link'), message: 'not a regular file (a FIFO); to read standard input, give -' },
      { path: '/dev/zero', message: 'not a regular file (a character device); to read standard input, give -' },
      { path: join(junk, 'zz-socket'), message: 'not a regular file (a socket); to read standard input, give -' },
    ]);
  });

  it('reading refuses what is no longer a regular file when opened, without blocking on a FIFO', async () => {
    const read = await all([join(dir, 'Junk', 'zz-fifo'), '/dev/zero']);
    expect(read.errors).toEqual([`${join(dir, 'Junk', 'zz-fifo')}: not a regular file (a FIFO); not read`, '/dev/zero: not a regular file (a character device); not read']);
  });
});

describe('bounded reading', () => {
  it('a file over the message cap is reported and not read further (a sparse 80 MiB file costs nothing)', async () => {
    const big = join(dir, 'big.eml');
    writeFileSync(big, 'Subject: big\r\n\r\n');
    truncateSync(big, 80 * 1024 * 1024);
    const read = await all([big]);
    expect(read.raws).toEqual([]);
    expect(read.errors).toEqual([`${big}: larger than the 50 MiB message limit; skipped`]);
  });

  it('an mbox is split as it is read; a message over the cap is skipped, the others are read, names keep their numbers', async () => {
    const mbox = join(dir, 'big.mbox');
    const big = `From x@y Mon\nSubject: 2\n\n${'z'.repeat(MAX_MESSAGE_BYTES)}\n`;
    writeFileSync(mbox, `From x@y Mon\nSubject: 1\n\n>From a\n${big}From x@y Tue\nSubject: 3\n\nbody\n`);
    const read = await all([mbox]);
    expect(read.names).toEqual([`${mbox}#1`, `${mbox}#3`]);
    expect(read.raws).toEqual(['Subject: 1\n\nFrom a\n', 'Subject: 3\n\nbody\n']);
    expect(read.errors).toEqual([`${mbox}#2: larger than the 50 MiB message limit; skipped`]);
  });

  it('a file holding one message keeps its name, with or without a leading From line', async () => {
    const one = join(dir, 'one.mbox');
    writeFileSync(one, `From x@y Mon\n${MAIL}`);
    expect((await all([one])).names).toEqual([one]);
    const plain = join(dir, 'plain.eml');
    writeFileSync(plain, MAIL);
    expect(await all([plain])).toEqual({ names: [plain], raws: [MAIL], errors: [] });
  });
});

describe('MboxSplitter', () => {
  const inputs = [
    'From a@b Mon\nSubject: 1\n\n>From here\n\nFrom c@d Tue\nSubject: 2\n\nbody\n',
    'From a@b Mon\nSubject: 1\n\nFrom c@d\nFrom e@f\nSubject: 3\n\nFro\nFrom\n>>From x\n',
    'Subject: not an mbox\n\nFrom here on it is still one message\n',
    'Fr',
    '',
    'From only a separator line',
    'From a\r\nSubject: crlf\r\n\r\nx\r\nFrom b\r\nSubject: two\r\n',
  ];

  it.each(inputs.map((s) => [s]))('gives the same messages whatever the chunking: %j', (text) => {
    const whole = splitMbox(Buffer.from(text)).map((b) => b.toString());
    for (const size of [1, 2, 3, 5, 7, 64]) {
      const s = new MboxSplitter(Infinity);
      const out: string[] = [];
      const buf = Buffer.from(text);
      for (let i = 0; i < buf.length; i += size) out.push(...s.push(buf.subarray(i, i + size)).map((p) => p.raw!.toString()));
      out.push(...s.end().map((p) => p.raw!.toString()));
      expect(out).toEqual(whole);
    }
  });

  it('splits at From lines, unescapes >From, leaves a plain message whole', () => {
    expect(splitMbox(Buffer.from(inputs[1]!)).map((b) => b.toString())).toEqual(['Subject: 1\n\n', 'Subject: 3\n\nFro\nFrom\n>From x\n']);
    expect(splitMbox(Buffer.from(inputs[2]!)).map((b) => b.toString())).toEqual([inputs[2]]);
  });

  it('drops the bytes of a message over the cap as they come, and says so in its place', () => {
    const s = new MboxSplitter(10);
    const out = [...s.push(Buffer.from('From a\nshort\nFrom b\n')), ...s.push(Buffer.from('x'.repeat(50))), ...s.push(Buffer.from('\nFrom c\nok\n')), ...s.end()];
    expect(out).toEqual([{ raw: Buffer.from('short\n') }, { tooLarge: true }, { raw: Buffer.from('ok\n') }]);
    const plain = new MboxSplitter(10);
    plain.push(Buffer.from('Subject: way over ten bytes'));
    expect(plain.wholeInputOver).toBe(true);
  });
});

describe('spamrule learn over a user-writable folder (as root from cron)', () => {
  it('stores the messages, none of the planted links, ends despite a FIFO, and refuses /dev/zero at once', async () => {
    const { run: learn } = await import('../../src/cli/learn.js');
    const { capture } = await import('../helpers/capture.js');
    const model = join(dir, 'model.sqlite');
    const r = await capture(() => learn(['--model', model, '--no-train', '--spam', join(dir, 'Junk')]));
    expect(r.stderr).toContain(`spamrule learn: ${join(dir, 'Junk', 'zz-shadow-link')}: skipped: a symbolic link`);
    expect(r.stderr).toContain(`spamrule learn: ${join(dir, 'Junk', 'zz-fifo')}: skipped: a FIFO, not a regular file`);
    expect(r.stderr).toMatch(/stored 2 spam and 0 ham samples/);
    expect(r.result).toBe(0);
    const Database = (await import('better-sqlite3')).default;
    const db = new Database(model, { readonly: true });
    const samples = db.prepare("select v from spamrule_kv where k like 'classifier:sample:%'").all() as { v: string }[];
    db.close();
    expect(samples.map((s) => Buffer.from(s.v, 'base64').toString()).join('')).not.toContain('hash-of-a-secret');
    const zero = await capture(() => learn(['--model', model, '--no-train', '--spam', '/dev/zero']));
    expect(zero.result).toBe(1);
    expect(zero.stderr).toContain('spamrule learn: /dev/zero: not a regular file (a character device); to read standard input, give -');
  });
});
