/**
 * Push over EventSource (RFC 8620 §7.3, docs/jmap.md "Push (EventSource)"): a real server, a real
 * HTTP client (node:http) reading the text/event-stream as it comes.
 */
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createJmapServer } from '../../src/jmap/index.js';
import { DEFAULT_PUSH, parseEventSourceParams } from '../../src/jmap/push.js';
import { expireSamples } from '../../src/jmap/training-samples.js';
import { rule, startHarness, type Harness } from './harness.js';
import { ALL, refusal, stream, until } from './sse.js';

const TAG = (tag: string) => ({ '@type': 'Score', tag, score: 1 });

let h: Harness;
let n = 0;
beforeAll(async () => {
  // Pings as often as once a second, so the ping test takes about two seconds.
  h = await startHarness({ push: { minPing: 1 } });
});
afterAll(() => h.close());

/** Creates a SpamRule; returns the /set response. */
async function createRule(): Promise<any> {
  const r = await h.call([['x:SpamRule/set', { create: { r: rule(`PUSH_${n++}`) } }, 's']]);
  return r[0]![1];
}

describe('event source (RFC 8620 §7.3)', () => {
  it('answers text/event-stream, uncached, at the URL the Session advertises', async () => {
    const session = (await (await fetch(`${h.server.url}/jmap/session`, { headers: { authorization: `Bearer ${h.admin}` } })).json()) as any;
    const url = (session.eventSourceUrl as string).replace('{types}', '*').replace('{closeafter}', 'no').replace('{ping}', '0');
    expect(url.startsWith(`${h.server.url}/jmap/eventsource/?`)).toBe(true);
    const s = await stream(h, url.slice(url.indexOf('?')));
    try {
      expect(s.headers['content-type']).toBe('text/event-stream');
      expect(s.headers['cache-control']).toBe('no-store');
      expect(s.headers['content-length']).toBeUndefined();
      await until(() => h.server.openEventStreams() === 1);
      // Without a slash too.
      const r = await new Promise<number>((ok) => request(`${h.server.url}/jmap/eventsource?types=*&closeafter=state&ping=0`, { headers: { authorization: `Bearer ${h.admin}` } }, (res) => {
        ok(res.statusCode!);
        res.destroy();
      }).end());
      expect(r).toBe(200);
    } finally {
      s.close();
    }
    await until(() => h.server.openEventStreams() === 0);
  });

  it('sends a state event whose state is the newState of the /set that caused it', async () => {
    const s = await stream(h, ALL);
    try {
      const set = await createRule();
      const ev = await s.next();
      expect(ev.event).toBe('state');
      expect(ev.data).toEqual({ '@type': 'StateChange', changed: { a: { 'x:SpamRule': set.newState } } });
      expect(ev.id).toContain(`x:SpamRule=${set.newState}`);
      // An update that changes nothing commits nothing and is not announced; the next change is.
      const id = set.created.r.id;
      const same = await h.call([['x:SpamRule/set', { update: { [id]: { priority: 500 } } }, 's']]);
      expect(same[0]![1].newState).toBe(set.newState);
      const destroyed = await h.call([['x:SpamRule/set', { destroy: [id] }, 's']]);
      const ev2 = await s.next();
      expect(ev2.data.changed.a).toEqual({ 'x:SpamRule': destroyed[0]![1].newState });
      expect(s.events.filter((e) => e.event === 'state')).toHaveLength(2);
    } finally {
      s.close();
    }
  });

  it('reports only the types asked for', async () => {
    const s = await stream(h, '?types=x:SpamTag,x:StoreLookup&closeafter=no&ping=0');
    try {
      await createRule();
      const tag = await h.call([['x:SpamTag/set', { create: { t: TAG('PUSH_TAG_1') } }, 's']]);
      const ev = await s.next();
      expect(ev.data.changed).toEqual({ a: { 'x:SpamTag': tag[0]![1].newState } });
      expect(s.events).toHaveLength(1); // the SpamRule change, committed first, was not sent
    } finally {
      s.close();
    }
  });

  it('closeafter=state ends the response after the first state event', async () => {
    const s = await stream(h, '?types=x:SpamRule&closeafter=state&ping=0');
    const set = await createRule();
    const ev = await s.next();
    expect(ev.data.changed.a['x:SpamRule']).toBe(set.newState);
    await s.ended;
    await createRule();
    expect(s.events).toHaveLength(1);
    await until(() => h.server.openEventStreams() === 0);
  });

  it('pings at the interval asked for, with {"interval": N}, and not at all for ping=0', async () => {
    const pinged = await stream(h, '?types=*&closeafter=no&ping=1');
    const quiet = await stream(h, ALL);
    try {
      const p1 = await pinged.next(2500);
      const p2 = await pinged.next(2500);
      expect(p1).toMatchObject({ event: 'ping', data: { interval: 1 } });
      expect(p1.id).toBeUndefined(); // a ping sets no event id (RFC 8620 §7.3)
      expect(p2.event).toBe('ping');
      expect(p1.at).toBeGreaterThanOrEqual(900);
      expect(p2.at - p1.at).toBeGreaterThanOrEqual(900);
      expect(p2.at - p1.at).toBeLessThan(1800);
      expect(quiet.events).toHaveLength(0);
    } finally {
      pinged.close();
      quiet.close();
    }
  });

  it('clamps a requested ping interval into [minPing, maxPing] (defaults 30 and 300)', () => {
    const q = (ping: string) => parseEventSourceParams(new URLSearchParams({ types: '*', closeafter: 'no', ping }), DEFAULT_PUSH).ping;
    expect(q('0')).toBe(0);
    expect(q('5')).toBe(30);
    expect(q('120')).toBe(120);
    expect(q('86400')).toBe(300);
    expect(q('99999999999999999999999')).toBe(300);
    expect(parseEventSourceParams(new URLSearchParams('types=x:SpamRule,x:SpamRule,x:SpamTag&closeafter=state&ping=0'))).toEqual({
      types: ['SpamRule', 'SpamTag'],
      closeAfterState: true,
      ping: 0,
    });
  });

  it('answers 400 with problem JSON for bad or missing parameters', async () => {
    for (const q of [
      '',
      '?closeafter=no&ping=0',
      '?types=*&ping=0',
      '?types=*&closeafter=no',
      '?types=&closeafter=no&ping=0',
      '?types=x:SpamRule,,x:SpamTag&closeafter=no&ping=0',
      '?types=Email&closeafter=no&ping=0',
      '?types=SpamRule&closeafter=no&ping=0',
      '?types=*&closeafter=yes&ping=0',
      '?types=*&closeafter=no&ping=-1',
      '?types=*&closeafter=no&ping=1.5',
      '?types=*&closeafter=no&ping=abc',
      '?types=*&closeafter=no&ping=0&ping=30',
    ]) {
      const r = await refusal(h, q);
      expect(r.status, q).toBe(400);
      expect(r.headers['content-type']).toBe('application/problem+json');
      expect(r.json).toMatchObject({ status: 400, title: 'Bad Request' });
      expect(typeof r.json.detail).toBe('string');
    }
    expect((await refusal(h, '?types=Email&closeafter=no&ping=0')).json.detail).toContain('unknown type "Email"');
    expect(h.server.openEventStreams()).toBe(0);
  });

  it('needs a token (401) and GET (405)', async () => {
    const none = await refusal(h, ALL, null);
    expect(none.status).toBe(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="spamrule"');
    expect((await refusal(h, ALL, 'nope')).status).toBe(401);
    const post = await refusal(h, ALL, h.admin, 'POST');
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET');
  });

  it('reports only the types the token may get; 403 when it may get none of them', async () => {
    const tagReader = h.token(['sysSpamTagGet', 'sysSpamRuleCreate'], 'tag-reader');
    const s = await stream(h, ALL, tagReader);
    try {
      await createRule();
      const tag = await h.call([['x:SpamTag/set', { create: { t: TAG('PUSH_TAG_2') } }, 's']]);
      const ev = await s.next();
      expect(ev.data.changed).toEqual({ a: { 'x:SpamTag': tag[0]![1].newState } });
      expect(ev.id).not.toContain('x:SpamRule');
      expect(s.events).toHaveLength(1);
    } finally {
      s.close();
    }
    const writer = h.token(['sysSpamRuleCreate', 'sysSpamRuleQuery', 'sysSpamRuleUpdate'], 'writer');
    const r = await refusal(h, ALL, writer);
    expect(r.status).toBe(403);
    expect(r.headers['content-type']).toBe('application/problem+json');
    expect(r.json.detail).toContain('no object type');
    const other = await refusal(h, '?types=x:SpamRule&closeafter=no&ping=0', tagReader);
    expect(other.status).toBe(403);
    expect(other.json.detail).toContain('x:SpamTag');
  });

  it('ends the stream of a token revoked meanwhile instead of sending to it', async () => {
    const tok = h.token(['sysSpamRuleGet'], 'revoked-push');
    const s = await stream(h, ALL, tok);
    h.server.tokens.revoke('revoked-push');
    await createRule();
    await s.ended;
    expect(s.events).toHaveLength(0);
  });

  it('announces changes made through the repository outside /set (sample expiry)', async () => {
    const s = await stream(h, '?types=x:SpamTrainingSample&closeafter=no&ping=0');
    try {
      await h.server.repo.transact('SpamTrainingSample', (w) => {
        w.objects.set('zz1', { blobId: 'b', isSpam: true, accountId: null, expiresAt: '2000-01-01T00:00:00Z', deleteAfterUse: false, from: null, subject: null, sampleId: 1 });
        return { result: null, touched: new Set(['zz1']) };
      });
      const first = await s.next();
      expect(await expireSamples(h.server.repo, undefined)).toBe(1);
      const second = await s.next();
      expect(first.data.changed.a['x:SpamTrainingSample']).toBe('s1');
      expect(second.data.changed.a['x:SpamTrainingSample']).toBe('s2');
    } finally {
      s.close();
    }
  });

  it('catches a reconnecting client up from Last-Event-ID, then closes with closeafter=state', async () => {
    const s = await stream(h, ALL);
    await createRule();
    const seen = await s.next();
    s.close();
    const tag = await h.call([['x:SpamTag/set', { create: { t: TAG('PUSH_TAG_3') } }, 's']]);
    // Reconnecting with the last id: what changed since is sent at once.
    const again = await stream(h, '?types=*&closeafter=state&ping=0', h.admin, { 'last-event-id': seen.id! });
    const ev = await again.next();
    expect(ev.data.changed).toEqual({ a: { 'x:SpamTag': tag[0]![1].newState } });
    await again.ended;
    // Up to date, or an id that is not ours: nothing until the next change.
    for (const id of [ev.id!, 'garbage', 'x:SpamRule=s1,x:Nope=s2']) {
      const quiet = await stream(h, ALL, h.admin, { 'last-event-id': id });
      try {
        const set = await createRule();
        expect((await quiet.next()).data.changed.a).toEqual({ 'x:SpamRule': set.newState });
      } finally {
        quiet.close();
      }
    }
  });

  it('does not take maxConcurrentRequests slots, and frees everything when clients go', async () => {
    const streams = await Promise.all(Array.from({ length: 6 }, () => stream(h, ALL)));
    try {
      expect(h.server.openEventStreams()).toBe(6);
      const set = await createRule(); // maxConcurrentRequests is 4
      for (const s of streams) expect((await s.next()).data.changed.a['x:SpamRule']).toBe(set.newState);
    } finally {
      for (const s of streams) s.close();
    }
    await until(() => h.server.openEventStreams() === 0);
  });
});

describe('event source limits and shutdown', () => {
  it('refuses streams beyond push.maxConnections with 503 and a limit problem', async () => {
    const small = await startHarness({ push: { maxConnections: 2 } });
    try {
      const a = await stream(small, ALL);
      const b = await stream(small, ALL);
      const r = await refusal(small, ALL);
      expect(r.status).toBe(503);
      expect(r.headers['retry-after']).toBe('30');
      expect(r.json).toMatchObject({ type: 'urn:ietf:params:jmap:error:limit', status: 503, limit: 'maxEventSourceConnections' });
      // The API still answers.
      expect((await small.call([['x:SpamRule/get', { ids: [] }, 'g']]))[0]![0]).toBe('x:SpamRule/get');
      a.close();
      await until(() => small.server.openEventStreams() === 1);
      const c = await stream(small, ALL);
      expect(small.server.openEventStreams()).toBe(2);
      b.close();
      c.close();
    } finally {
      await small.close();
    }
  });

  it('refuses a token more than push.maxConnectionsPerToken streams with 429; other tokens still get theirs', async () => {
    const small = await startHarness({ push: { maxConnections: 6, maxConnectionsPerToken: 2 } });
    try {
      // A token that may only read tags: the least a token needs to open a stream.
      const reader = small.token(['sysSpamTagGet'], 'tags only');
      const a = await stream(small, '?types=*&closeafter=no&ping=0', reader);
      const b = await stream(small, '?types=*&closeafter=no&ping=0', reader);
      const r = await refusal(small, '?types=*&closeafter=no&ping=0', reader);
      expect(r.status).toBe(429);
      expect(r.headers['retry-after']).toBe('30');
      expect(r.json).toMatchObject({ type: 'urn:ietf:params:jmap:error:limit', status: 429, limit: 'maxEventSourceConnectionsPerToken' });
      // The server's other streams are not taken: another token opens its own.
      const c = await stream(small, ALL);
      expect(small.server.openEventStreams()).toBe(3);
      a.close();
      await until(() => small.server.openEventStreams() === 2);
      const d = await stream(small, '?types=*&closeafter=no&ping=0', reader);
      b.close();
      c.close();
      d.close();
    } finally {
      await small.close();
    }
  });

  it('closes connections beyond maxConnections as soon as they are accepted, before any token is read', async () => {
    const { connect } = await import('node:net');
    const small = await startHarness({ maxConnections: 2 });
    try {
      const port = Number(new URL(small.server.url).port);
      const idle = await Promise.all(
        [0, 1].map(
          () =>
            new Promise<import('node:net').Socket>((resolve) => {
              const c = connect(port, '127.0.0.1', () => resolve(c));
              c.on('error', () => undefined);
            }),
        ),
      );
      const third = await new Promise<string>((resolve) => {
        const c = connect(port, '127.0.0.1', () => c.write('GET /jmap/session HTTP/1.1\r\nHost: x\r\n\r\n'));
        let out = '';
        c.on('data', (d: Buffer) => (out += d.toString()));
        c.on('error', () => undefined);
        c.on('close', () => resolve(out));
      });
      expect(third).toBe('');
      for (const c of idle) c.destroy();
      // Their slots free again: the API answers.
      const status = async (): Promise<number> => fetch(`${small.server.url}/jmap/session`, { headers: { authorization: `Bearer ${small.admin}` } }).then((r) => r.status, () => 0);
      while ((await status()) !== 200) await new Promise((r) => setTimeout(r, 20));
    } finally {
      await small.close();
    }
  });

  it('ends open streams cleanly when the server closes', async () => {
    const other = await startHarness({ push: { minPing: 1 } });
    const a = await stream(other, '?types=*&closeafter=no&ping=1');
    const b = await stream(other, ALL);
    await other.close();
    await a.ended; // a clean end of the chunked body, not a broken connection
    await b.ended;
    expect(other.server.openEventStreams()).toBe(0);
  });

  it('refuses push options outside what RFC 8620 §7.3 allows', async () => {
    // Checked before any database is opened.
    const db = join(tmpdir(), 'spamrule-push-never-created.db');
    await expect(createJmapServer({ db, push: { minPing: 60 } })).rejects.toThrow(/minPing/);
    await expect(createJmapServer({ db, push: { maxPing: 100 } })).rejects.toThrow(/maxPing/);
    await expect(createJmapServer({ db, push: { maxConnections: 0 } })).rejects.toThrow(/maxConnections/);
    await expect(createJmapServer({ db, push: { maxConnectionsPerToken: 0 } })).rejects.toThrow(/maxConnectionsPerToken/);
    await expect(createJmapServer({ db, maxConnections: 0 })).rejects.toThrow(/maxConnections/);
    expect(existsSync(db)).toBe(false);
  });
});
