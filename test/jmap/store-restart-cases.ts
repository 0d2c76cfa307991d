/**
 * Shared by test/jmap/store-restart.test.ts (the JMAP server's own engine) and test/server/store-restart.test.ts
 * (`spamrule serve`'s scan workers): a StoreLookup "trusted" that works against Redis server A, the changes that
 * leave it unable to start, the rules that use it, and how many commands and connections A sees.
 */
import { expect } from 'vitest';
import type { ClassifyResult } from '../../src/engine/index.js';
import { redisCli } from '../servers/index.js';

export const NAMESPACE = 'trusted';

/** `TRUSTED_A`/`TRUSTED_B`: the value the store holds for the sender's domain (A and B hold different ones). */
export const rules = {
  t: { '@type': 'Any', name: 'TRUSTED', condition: { match: [{ if: "key_exists('trusted', from.domain)", then: "key_get('trusted', from.domain)" }], else: 'false' } },
  s: { '@type': 'Any', name: 'SUBJECT', condition: { match: [{ if: "contains(subject, 'quarterly')", then: "'SUBJECT_SEEN'" }], else: 'false' } },
};
export const mail = 'From: a@listed.example\r\nTo: b@example.com\r\nSubject: quarterly report\r\n\r\nhello\r\n';

/** The secret no test sets, under the prefix the tests' store policy allows. */
export const UNSET_VARIABLE = 'SPAMRULE_RESTART_TEST_UNSET';
export const policy = { allowedHosts: ['*.restart.test'], secretEnvPrefixes: ['SPAMRULE_RESTART_'] };

/**
 * The store policy's resolver: a zone the test rewrites. A name in `flips` answers its first address once (the
 * check at the `/set`), then its second (the check when the store starts).
 */
export function zone(): { names: Map<string, string[]>; flips: Map<string, [string, string]>; resolve(host: string): Promise<string[]> } {
  const names = new Map<string, string[]>();
  const flips = new Map<string, [string, string]>();
  const asked = new Map<string, number>();
  return {
    names,
    flips,
    async resolve(host) {
      const flip = flips.get(host);
      if (flip === undefined) return names.get(host) ?? [];
      const n = asked.get(host) ?? 0;
      asked.set(host, n + 1);
      return [n === 0 ? flip[0] : flip[1]];
    },
  };
}

/** The store at Redis server A (port `a`), by a name the zone sends to 127.0.0.1. */
export const storeAt = (host: string, port: number): Record<string, unknown> => ({ '@type': 'Redis', url: `redis://${host}:${port}`, timeout: 2000 });

/**
 * Changes to a working store after which it cannot start, each with the error its lookups then give:
 * a name that gives no address (tried again), a name that resolves to a refused address when the store starts
 * (it did not at the `/set`), a store whose construction throws (a secret that cannot be read).
 */
export const failures = (b: number, z: ReturnType<typeof zone>): [string, () => Record<string, unknown>, RegExp][] => [
  ['a name that gives no address', () => storeAt('new.restart.test', b), /lookup store "trusted": not started: "new\.restart\.test" gave no address \(tried again every 0\.2 s\)/],
  [
    'a name the store policy refuses when the store starts',
    () => {
      z.flips.set('flip.restart.test', ['127.0.0.1', '169.254.169.254']);
      return storeAt('flip.restart.test', b);
    },
    /lookup store "trusted": not started: refused by the store policy: url: host "flip\.restart\.test" resolves to 169\.254\.169\.254/,
  ],
  [
    'a store whose construction throws (its secret cannot be read)',
    () => ({ '@type': 'PostgreSql', host: 'old.restart.test', port: b, authSecret: { '@type': 'EnvironmentVariable', variableName: UNSET_VARIABLE }, timeout: 2000 }),
    /lookup store "trusted": not started: secret environment variable "SPAMRULE_RESTART_TEST_UNSET" is not set/,
  ],
];

/** Commands Redis server `port` has run, but those the test sends itself (INFO, PING, CLIENT). */
export function commandsRun(port: number): number {
  let n = 0;
  for (const m of redisCli(port, 'INFO', 'commandstats').matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm))
    if (!/^(info|ping|client)/.test(m[1]!)) n += Number(m[2]);
  return n;
}

/** Connections to Redis server `port` other than the one asking. */
export function clientsConnected(port: number): number {
  return redisCli(port, 'CLIENT', 'LIST')
    .split('\n')
    .filter((l) => l.trim() !== '' && !/ cmd=client\|list /.test(l)).length;
}

/**
 * A verdict of `mail` while the store is not started: the rule that uses it failed with `error` (an entry in
 * `errors` naming the namespace), nothing of the store's answered, and the other rule still tagged.
 */
export function expectStoreDown(v: ClassifyResult, error: RegExp): void {
  expect(v.tags).toContain('SUBJECT_SEEN');
  expect(v.tags).not.toContain('TRUSTED_A');
  const failed = v.errors.filter((e) => e.store === NAMESPACE);
  expect(failed.map((e) => e.source)).toEqual(['TRUSTED']);
  expect(failed[0]!.message).toMatch(error);
}
