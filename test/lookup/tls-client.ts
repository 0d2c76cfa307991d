/**
 * Child process of test/lookup/store-tls.test.ts: opens lookup stores and reports what they did, as JSON on
 * stdout. It runs with `NODE_EXTRA_CA_CERTS` naming the test CA (test/servers/tls.ts), so a certificate the CA
 * signed passes the chain check, and the only thing left to refuse one for is its name: what these tests are
 * about. (A CA cannot be added to a running Node 20 process, hence the child.)
 *
 * argv[2]: JSON `[{ namespace, config, pinned?, sql? }]`. Each store writes then reads back the keys `k0`…`k19`
 * (spread over a cluster's slots), runs `sql` (a SQL store) and is closed. Output, in order:
 * `[{ ok: true, rows? } | { ok: false, error }]` (`rows`: what `sql` returned).
 */
import { createLookupStore } from '../../src/lookup/index.js';

interface Case {
  namespace: string;
  config: unknown;
  pinned?: { addresses: Record<string, string>; allowedHosts: string[] };
  sql?: string;
}

const cases = JSON.parse(process.argv[2] ?? '[]') as Case[];
const results: ({ ok: true; rows?: unknown } | { ok: false; error: string })[] = [];
for (const c of cases) {
  let store;
  try {
    store = createLookupStore(c.namespace, c.config, { breaker: { enabled: false }, cache: { enabled: false }, ...(c.pinned ? { pinned: c.pinned } : {}) });
    for (let i = 0; i < 20; i++) await store.keySet(`k${i}`, `v${i}`);
    for (let i = 0; i < 20; i++) {
      const v = await store.keyGet(`k${i}`);
      if (v !== `v${i}`) throw new Error(`k${i} read back as ${JSON.stringify(v)}`);
    }
    results.push({ ok: true, ...(c.sql !== undefined ? { rows: await store.sqlQuery!(c.sql, []) } : {}) });
  } catch (e) {
    results.push({ ok: false, error: (e as Error).message });
  } finally {
    await store?.close().catch(() => undefined);
  }
}
process.stdout.write(JSON.stringify(results));
