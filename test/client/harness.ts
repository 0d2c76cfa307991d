/**
 * A real `createJmapServer` on loopback for the client suites, with a deterministic condition
 * validator (unbalanced parentheses are an error) and inert lookup stores, so these tests exercise
 * the client and the wire, not the engine or database adapters.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createJmapServer, PERMISSIONS, type JmapServer, type JmapServerOptions, type Permission } from '../../src/jmap/index.js';
import { capture } from '../helpers/capture.js';

export interface ClientHarness {
  server: JmapServer;
  dir: string;
  admin: string;
  token(perms: Permission[], name?: string): string;
  /** `--server URL --token ADMIN` */
  conn: string[];
  close(): Promise<void>;
}

function balanced(expr: string): boolean {
  let depth = 0;
  for (const c of expr) {
    if (c === '(') depth++;
    else if (c === ')' && --depth < 0) return false;
  }
  return depth === 0;
}

export async function startServer(opts: Partial<JmapServerOptions> = {}): Promise<ClientHarness> {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-client-'));
  const server = await createJmapServer({
    db: join(dir, 'jmap.db'),
    log: () => undefined,
    engine: { loadRules: () => undefined },
    createLookupStore: () => ({ close: async () => undefined }),
    validateCondition: (_scope, condition) => {
      const problems: { path: string; message: string }[] = [];
      condition.match.forEach((m, i) => {
        if (!balanced(m.if)) problems.push({ path: `condition/match/${i}/if`, message: 'unbalanced parentheses' });
        if (!balanced(m.then)) problems.push({ path: `condition/match/${i}/then`, message: 'unbalanced parentheses' });
      });
      if (!balanced(condition.else)) problems.push({ path: 'condition/else', message: 'unbalanced parentheses' });
      return problems;
    },
    ...opts,
  });
  const token = (perms: Permission[], name = 'test') => server.tokens.create(name, perms).token;
  const admin = token([...PERMISSIONS], 'admin');
  return {
    server,
    dir,
    admin,
    token,
    conn: ['--server', server.url, '--token', admin],
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Runs a CLI module's `run(argv)` in-process and captures its output and exit status. */
export async function cli(run: (argv: string[]) => Promise<number>, argv: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const r = await capture(() => run(argv));
  return { code: r.result, stdout: r.stdout, stderr: r.stderr };
}
