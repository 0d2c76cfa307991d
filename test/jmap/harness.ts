/** Shared setup for the JMAP suites: a server on loopback with a temp database and tokens. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createJmapServer, PERMISSIONS, type JmapServer, type JmapServerOptions, type Permission } from '../../src/jmap/index.js';

export type Invocation = [string, Record<string, any>, string];

export interface Harness {
  server: JmapServer;
  dir: string;
  db: string;
  /** Token with every permission. */
  admin: string;
  token(perms: Permission[], name?: string): string;
  /** POSTs a Request; returns the methodResponses. */
  call(calls: Invocation[], token?: string, extra?: Record<string, unknown>): Promise<Invocation[]>;
  /** POSTs a raw body; returns status, headers and parsed JSON. */
  post(body: string, headers?: Record<string, string>): Promise<{ status: number; headers: Headers; json: any }>;
  close(): Promise<void>;
}

/**
 * POSTs a JMAP Request (the core and Stalwart capabilities, `extra` merged in) with `token` to the JMAP server at
 * `url` (a harness's, or `spamrule serve`'s managed one); returns the methodResponses.
 * @throws Error with the status and body for an answer other than HTTP 200.
 */
export async function jmapCall(url: string, token: string, calls: Invocation[], extra: Record<string, unknown> = {}): Promise<Invocation[]> {
  const res = await fetch(`${url}/jmap`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ using: ['urn:ietf:params:jmap:core', 'urn:stalwart:jmap'], methodCalls: calls, ...extra }),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`HTTP ${res.status}: ${text}`);
  return (JSON.parse(text) as { methodResponses: Invocation[] }).methodResponses;
}

export async function startHarness(opts: Partial<JmapServerOptions> = {}): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'spamrule-jmap-'));
  const db = join(dir, 'jmap.db');
  // The suites' store hosts are made-up names: resolving them through the system resolver would only wait for
  // a DNS server that is not there. Tests of the store policy's address check give their own resolver.
  const server = await createJmapServer({ db, log: () => undefined, resolveStoreHost: async () => [], ...opts });
  const token = (perms: Permission[], name = 'test') => server.tokens.create(name, perms).token;
  const admin = token([...PERMISSIONS], 'admin');
  const post = async (body: string, headers: Record<string, string> = {}) => {
    const res = await fetch(`${server.url}/jmap`, {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json', ...headers },
      body,
    });
    const text = await res.text();
    return { status: res.status, headers: res.headers, json: text === '' ? undefined : JSON.parse(text) };
  };
  const call = (calls: Invocation[], tok = admin, extra: Record<string, unknown> = {}) => jmapCall(server.url, tok, calls, extra);
  return {
    server,
    dir,
    db,
    admin,
    token,
    call,
    post,
    async close() {
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A minimal valid SpamRule. */
export function rule(name: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { '@type': 'Any', name, condition: { match: [{ if: 'len(subject) > 200', then: "'LONG_SUBJ'" }], else: 'false' }, ...extra };
}
