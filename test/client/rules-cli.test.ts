/** `spamrule rules …` in-process against a real JMAP server on loopback: output, exit status, server state. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../src/cli/rules.js';
import { JmapClient, type SpamRule } from '../../src/client/index.js';
import { cli, startServer, type ClientHarness } from './harness.js';

describe('spamrule rules', () => {
  let h: ClientHarness;
  let client: JmapClient;
  const rules = (...argv: string[]) => cli(run, [...argv, ...h.conn]);
  beforeAll(async () => {
    h = await startServer();
    client = new JmapClient({ server: h.server.url, token: h.admin });
  });
  afterAll(() => h?.close());

  it('create from flags, then get shows the rule', async () => {
    const c = await rules('create', '--name', 'long subject', '--scope', 'Header', '--priority', '10', '--if', 'len(subject) > 200', '--then', "'LONG_SUBJ'", '--if', 'is_empty(subject)', '--then', "'NO_SUBJ'", '--description', 'subject checks');
    expect(c.stderr).toBe('');
    expect(c.code).toBe(0);
    const id = (await client.findRule('LONGSUBJECT'))!.id;
    expect(c.stdout).toBe(`created LONGSUBJECT (id ${id})\n`);
    const g = await rules('get', 'long subject');
    expect(g.code).toBe(0);
    expect(g.stdout).toBe(
      [
        'name:         LONGSUBJECT',
        `id:           ${id}`,
        'scope:        Header',
        'priority:     10',
        'enabled:      yes',
        'description:  subject checks',
        'condition:',
        '  if   len(subject) > 200',
        "  then 'LONG_SUBJ'",
        '  if   is_empty(subject)',
        "  then 'NO_SUBJ'",
        '  else false',
        '',
      ].join('\n'),
    );
    const j = await rules('get', 'LONGSUBJECT', '--json');
    expect(JSON.parse(j.stdout)).toEqual({
      id,
      '@type': 'Header',
      name: 'LONGSUBJECT',
      description: 'subject checks',
      enable: true,
      priority: 10,
      condition: {
        match: [
          { if: 'len(subject) > 200', then: "'LONG_SUBJ'" },
          { if: 'is_empty(subject)', then: "'NO_SUBJ'" },
        ],
        else: 'false',
      },
    });
  });

  it('create from a file (object, or array with an index-keyed match) and --disabled', async () => {
    const one = join(h.dir, 'one.json');
    writeFileSync(one, JSON.stringify({ '@type': 'Url', name: 'file_one', priority: 300, condition: { match: { '0': { if: 'true', then: "'F1'" } }, else: 'false' } }));
    const r1 = await rules('create', '--file', one);
    expect(r1.code).toBe(0);
    expect(r1.stdout).toMatch(/^created FILE_ONE \(id [a-z0-9]+\)\n$/);
    const many = join(h.dir, 'many.json');
    writeFileSync(many, JSON.stringify([{ '@type': 'Any', name: 'file_two', condition: { else: "'F2'" } }, { '@type': 'Any', name: 'file_three', condition: { else: "'F3'" } }]));
    const r2 = await rules('create', '--file', many, '--json');
    expect(r2.code).toBe(0);
    const out = JSON.parse(r2.stdout);
    expect(Object.keys(out)).toEqual(['FILE_TWO', 'FILE_THREE']);
    expect(out.FILE_TWO).toMatchObject({ name: 'FILE_TWO', priority: 500, enable: true });
    const r3 = await rules('create', '--name', 'off rule', '--disabled', '--else', "'OFF'");
    expect(r3.code).toBe(0);
    expect((await client.findRule('OFFRULE'))).toMatchObject({ enable: false, priority: 500, condition: { match: [], else: "'OFF'" } });
    expect((await client.findRule('FILE_ONE'))!.condition.match).toEqual([{ if: 'true', then: "'F1'" }]);
  });

  it('list prints an aligned table by priority then name, with --filter and --json', async () => {
    const l = await rules('list', '--filter', 'file');
    expect(l.code).toBe(0);
    expect(l.stdout).toBe(['NAME        SCOPE  PRIORITY  ENABLED', 'FILE_ONE    Url         300  yes', 'FILE_THREE  Any         500  yes', 'FILE_TWO    Any         500  yes', ''].join('\n'));
    const all = await rules('list', '--json');
    expect((JSON.parse(all.stdout) as SpamRule[]).map((r) => r.name)).toEqual(['LONGSUBJECT', 'FILE_ONE', 'FILE_THREE', 'FILE_TWO', 'OFFRULE']);
    const none = await rules('list', '--filter', 'zzz');
    expect(none.stdout).toBe('NAME  SCOPE  PRIORITY  ENABLED\n');
  });

  it('update with typed --set (expressions stay strings) and with a --file PatchObject', async () => {
    const u = await rules('update', 'file_one', '--set', 'condition/else=false', '--set', 'priority=250', '--set', 'condition/match/0/then=\'F1B\'', '--set', 'description=changed');
    expect(u.stderr).toBe('');
    expect(u.stdout).toBe('updated FILE_ONE\n');
    expect(await client.findRule('FILE_ONE')).toMatchObject({ priority: 250, description: 'changed', condition: { match: [{ if: 'true', then: "'F1B'" }], else: 'false' } });
    const patch = join(h.dir, 'patch.json');
    writeFileSync(patch, JSON.stringify({ enable: false, 'condition/match/1': { if: 'false', then: "'NEVER'" } }));
    const f = await rules('update', 'FILE_ONE', '--file', patch, '--json');
    expect(f.code).toBe(0);
    expect(JSON.parse(f.stdout)).toMatchObject({ name: 'FILE_ONE', enable: false, condition: { match: [{ if: 'true', then: "'F1B'" }, { if: 'false', then: "'NEVER'" }] } });
    const j = await rules('update', 'FILE_ONE', '--set', 'description:=null', '--set', 'enable=true');
    expect(j.code).toBe(0);
    expect(await client.findRule('FILE_ONE')).toMatchObject({ description: null, enable: true });
  });

  it('enable, disable and delete several rules by name', async () => {
    const d = await rules('disable', 'file_two', 'file_three');
    expect(d.stdout).toBe('disabled FILE_TWO\ndisabled FILE_THREE\n');
    expect((await client.findRule('FILE_TWO'))!.enable).toBe(false);
    const e = await rules('enable', 'FILE_TWO');
    expect(e.stdout).toBe('enabled FILE_TWO\n');
    expect((await client.findRule('FILE_TWO'))!.enable).toBe(true);
    const x = await rules('delete', 'FILE_TWO', 'FILE_THREE');
    expect(x.code).toBe(0);
    expect(x.stdout).toBe('deleted FILE_TWO\ndeleted FILE_THREE\n');
    expect(await client.findRule('FILE_TWO')).toBeUndefined();
  });

  it('shows SetErrors with their properties and description, and exits 1', async () => {
    const dup = await rules('create', '--name', 'LONGSUBJECT');
    expect(dup.code).toBe(1);
    const id = (await client.findRule('LONGSUBJECT'))!.id;
    expect(dup.stderr).toBe(`spamrule rules create: rule LONGSUBJECT: alreadyExists [name]: name "LONGSUBJECT" is already used by ${id}\n`);
    const bad = await rules('create', '--name', 'broken', '--priority', '100000', '--if', 'len(subject', '--then', "'X'");
    expect(bad.code).toBe(1);
    expect(bad.stdout).toBe('');
    expect(bad.stderr).toBe(
      'spamrule rules create: rule BROKEN: invalidProperties [priority, condition/match/0/if]: priority: must be in -99999..99999; condition/match/0/if: unbalanced parentheses\n',
    );
    const upd = await rules('update', 'LONGSUBJECT', '--set', 'name=OTHER');
    expect(upd.code).toBe(1);
    expect(upd.stderr).toMatch(/^spamrule rules update: rule LONGSUBJECT: invalidProperties \[name\]: name: .+\n$/);
    const missing = await rules('delete', 'LONGSUBJECT', 'nope');
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe('spamrule rules delete: no rule named NOPE\n');
    expect(await client.findRule('LONGSUBJECT')).toBeDefined();
  });

  it('shows method errors (forbidden) and request errors (bad token, no server)', async () => {
    const ro = h.token(['sysSpamRuleGet', 'sysSpamRuleQuery'], 'readonly');
    const f = await cli(run, ['enable', 'LONGSUBJECT', '--server', h.server.url, '--token', ro]);
    expect(f.code).toBe(1);
    expect(f.stderr).toMatch(/^spamrule rules enable: rule LONGSUBJECT: forbidden.*\n$/);
    const q = await cli(run, ['list', '--server', h.server.url, '--token', h.token(['sysStoreLookupGet'], 'stores')]);
    expect(q.code).toBe(1);
    expect(q.stderr).toMatch(/^spamrule rules list: x:SpamRule\/query failed: forbidden(: .+)?\n$/);
    const t = await cli(run, ['list', '--server', h.server.url, '--token', 'srt_wrong']);
    expect(t.code).toBe(1);
    expect(t.stderr).toBe(`spamrule rules list: ${h.server.url}/.well-known/jmap: HTTP 401: The token is unknown or revoked.\n`);
    const saved = { s: process.env.SPAMRULE_SERVER, t: process.env.SPAMRULE_TOKEN };
    delete process.env.SPAMRULE_SERVER;
    delete process.env.SPAMRULE_TOKEN;
    try {
      const n = await cli(run, ['list']);
      expect(n.code).toBe(1);
      expect(n.stderr).toBe('spamrule rules list: no server: pass --server URL or set SPAMRULE_SERVER\n');
      process.env.SPAMRULE_SERVER = h.server.url;
      process.env.SPAMRULE_TOKEN = h.admin;
      const env = await cli(run, ['list', '--filter', 'longsubject']);
      expect(env.code).toBe(0);
      expect(env.stdout).toBe('NAME         SCOPE   PRIORITY  ENABLED\nLONGSUBJECT  Header        10  yes\n');
    } finally {
      if (saved.s === undefined) delete process.env.SPAMRULE_SERVER;
      else process.env.SPAMRULE_SERVER = saved.s;
      if (saved.t === undefined) delete process.env.SPAMRULE_TOKEN;
      else process.env.SPAMRULE_TOKEN = saved.t;
    }
  });

  it('usage errors exit 2 with the help; --help exits 0', async () => {
    const help = await cli(run, ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: spamrule rules <command> \[options\]\n/);
    for (const [argv, msg] of [
      [[], 'spamrule rules: no command given'],
      [['frobnicate'], 'spamrule rules frobnicate: unknown command "frobnicate"'],
      [['get'], 'spamrule rules get: get takes exactly one NAME'],
      [['create', '--name', 'x', '--if', 'true'], 'spamrule rules create: --if and --then come in pairs (got 1 --if, 0 --then)'],
      [['create', '--name', 'x', '--scope', 'Nope'], 'spamrule rules create: --scope must be one of Any, Url, Domain, Email, Ip, Header, Body'],
      [['create'], 'spamrule rules create: create needs --file FILE or --name NAME'],
      [['update', 'X'], 'spamrule rules update: update needs --set PROP=VALUE or --file PATCH.json'],
      [['update', 'LONGSUBJECT', '--set', 'priority=high'], 'spamrule rules update: --set priority expects an integer, got "high"'],
      [['delete'], 'spamrule rules delete: delete needs at least one NAME'],
    ] as [string[], string][]) {
      const r = await rules(...argv);
      expect(r.code, argv.join(' ')).toBe(argv[0] === 'update' && argv.length > 2 ? 1 : 2);
      expect(r.stderr.split('\n')[0]).toBe(msg);
    }
    const unknown = await cli(run, ['list', '--bogus']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe("spamrule rules: unknown option '--bogus' (see spamrule rules --help)\n");
  });
});
