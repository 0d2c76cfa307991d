/**
 * A lookup store that is down, seen from `serve`: each scan still answers, the rules that failed
 * because of it are counted per namespace in `spamrule_store_errors_total`, and the log says so at
 * `warn`, once a minute per store rather than once per scan.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { http, startAll, type Started } from './harness.js';
import { freePort } from '../servers/index.js';

let s: Started;
beforeAll(async () => {
  // A Redis store on a closed loopback port: every lookup fails (then fast, once the breaker opens).
  const port = await freePort();
  s = await startAll({
    workers: 1,
    spec: {
      rules: [
        { '@type': 'Any', name: 'reads_down', priority: 1, condition: { match: [{ if: "key_exists('down', 'someone@example.org')", then: "'LISTED'" }], else: 'false' } },
        { '@type': 'Any', name: 'needs_no_store', priority: 2, condition: { match: [{ if: 'true', then: "'RAN'" }], else: 'false' } },
      ],
      stores: [{ namespace: 'down', config: { '@type': 'Redis', url: `redis://127.0.0.1:${port}`, timeout: 500 } }],
    },
  });
}, 60_000);
afterAll(async () => s?.close());

describe('a lookup store that is down, under serve', () => {
  it('is counted per namespace and logged once, and every scan still answers', async () => {
    for (let i = 0; i < 3; i++) {
      const r = await http(`${s.server.addresses.rspamd}/checkv2`, { method: 'POST', body: `From: a@example.org\r\nSubject: ${i}\r\n\r\nhello\r\n` });
      expect(r.status).toBe(200);
      const symbols = Object.keys((JSON.parse(r.body) as { symbols: Record<string, unknown> }).symbols);
      expect(symbols).toContain('RAN');
      expect(symbols).not.toContain('LISTED');
    }
    const counted = (await s.server.metrics.storeErrors.get()).values;
    expect(counted).toEqual([expect.objectContaining({ labels: { namespace: 'down' }, value: 3 })]);
    const rules = (await s.server.metrics.ruleErrors.get()).values[0]?.value;
    expect(rules).toBe(3);
    const warned = s.logs.filter((l) => l.msg === 'lookup store failing');
    expect(warned).toHaveLength(1);
    expect(warned[0]).toMatchObject({ store: 'down', level: 40 });
    expect(String(warned[0]!.error)).toMatch(/lookup store "down"/);
  }, 60_000);
});
