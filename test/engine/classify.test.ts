import { describe, expect, it } from 'vitest';
import { SpamEngine, type SpamRuleInput, type SpamTagInput } from '../../src/engine/index.js';
import { LookupMap, StaticLookupList, type LookupStore } from '../../src/lookup/index.js';

const CRLF = '\r\n';
function mail(lines: string[]): string {
  return lines.join(CRLF);
}

/** A real multipart message exercising every scope. */
const MESSAGE = mail([
  'Received: from relay.sender.example (relay.sender.example [198.51.100.2])',
  '\tby mx.receiver.example with ESMTPS id 4F2B1; Mon, 2 Nov 2026 10:00:00 +0000',
  'From: "Alice Sender" <alice@sender.example>',
  'To: Bob <bob@receiver.example>, carol@receiver.example',
  'Cc: dave@other.example',
  'Subject: Hello World',
  'Date: Mon, 2 Nov 2026 10:00:00 +0000',
  'Message-ID: <abc123@mid.example.com>',
  'X-Mailer: PHPMailer 6.0',
  'MIME-Version: 1.0',
  'Content-Type: multipart/alternative; boundary="b1"',
  '',
  '--b1',
  'Content-Type: text/plain; charset=utf-8',
  '',
  'You won the lottery! Visit https://evil.example/claim?id=7 now.',
  '--b1',
  'Content-Type: text/html; charset=utf-8',
  '',
  '<html><body><p>You won the lottery!</p><a href="https://evil.example/claim?id=7">claim</a></body></html>',
  '--b1--',
  '',
]);

/** Tags set by rules and upstream, without the X_HDR_* header-presence tags analysis adds. */
function ruleTags(tags: string[]): string[] {
  return tags.filter((t) => !t.startsWith('X_HDR_'));
}

function r(scope: SpamRuleInput['@type'], name: string, priority: number, cond: string, tag: string): SpamRuleInput {
  return { '@type': scope, name, priority, enable: true, condition: { match: { '0': { if: cond, then: `'${tag}'` } }, else: 'false' } };
}

describe('classify: one rule per scope on a real message', () => {
  const cases: [SpamRuleInput['@type'], string, string, string, string][] = [
    ['Url', "host == 'evil.example' && path == '/claim' && query == 'id=7'", 'EVIL_URL', 'https://evil.example/claim?id=7', 'body_text'],
    ['Domain', "location == 'message_id' && value == 'mid.example.com'", 'MID_DOMAIN', 'mid.example.com', 'message_id'],
    ['Email', "location == 'from' && domain == 'sender.example' && name == 'alice sender'", 'FROM_SENDER', 'alice@sender.example', 'from'],
    ['Email', "location == 'cc' && local == 'dave'", 'CC_DAVE', 'dave@other.example', 'cc'],
    ['Ip', "location == 'tcp' && ip == '203.0.113.7' && is_v4 && octets[0] == 203", 'TCP_IP', '203.0.113.7', 'tcp'],
    ['Ip', "location == 'received' && ip == '198.51.100.2'", 'RCVD_IP', '198.51.100.2', 'received'],
    ['Header', "name_lower == 'x-mailer' && contains(value_lower, 'phpmailer')", 'XM_PHP', 'X-Mailer', 'body_text'],
    ['Body', "location == 'body_text' && contains(value, 'lottery')", 'LOTTERY', '', 'body_text'],
    ['Any', "subject == 'hello world' && from.domain == 'sender.example' && contains(to, 'bob@receiver.example')", 'ANY_OK', '', 'body_text'],
  ];
  for (const [scope, cond, tag, element, location] of cases) {
    it(`${scope}: ${tag}`, async () => {
      const engine = new SpamEngine({ analysis: false, rules: [r(scope, `R_${tag}`, 10, cond, tag)] });
      expect(engine.loadReport.errors).toEqual([]);
      const res = await engine.classify(MESSAGE, { envelope: { remoteIp: '203.0.113.7', heloDomain: 'relay.sender.example' } });
      expect(res.errors).toEqual([]);
      expect(res.tags).toContain(tag);
      const m = res.matches.find((x) => x.tag === tag)!;
      expect(m).toMatchObject({ rule: `R_${tag}`, scope, location, branch: 0 });
      if (element !== '') expect(m.element).toBe(element);
    });
  }
});

describe('ordering and $TAG visibility (Stalwart\'s rule evaluation, docs/default-rules.md)', () => {
  it('runs rules in ascending priority inside a scope; later rules see earlier tags', async () => {
    const engine = new SpamEngine({
      analysis: false,
      rules: [
        r('Any', 'A', 10, 'true', 'A_TAG'),
        r('Any', 'B_BEFORE', 5, '$A_TAG', 'B_SAW_A'),
        r('Any', 'C_AFTER', 20, '$A_TAG', 'C_SAW_A'),
      ],
    });
    const res = await engine.classify(MESSAGE);
    expect(ruleTags(res.tags)).toEqual(['A_TAG', 'C_SAW_A']);
  });

  it('runs scopes in Url → … → Any order regardless of priority', async () => {
    const engine = new SpamEngine({
      analysis: false,
      rules: [r('Any', 'ANY_FIRST_PRIO', -5, '$EVIL_URL', 'ANY_SAW_URL'), r('Url', 'URL_LATE_PRIO', 9999, "host == 'evil.example'", 'EVIL_URL')],
    });
    const res = await engine.classify(MESSAGE);
    expect(ruleTags(res.tags)).toEqual(['EVIL_URL', 'ANY_SAW_URL']);
  });

  it('skips disabled rules and uses upstream tags', async () => {
    const engine = new SpamEngine({
      analysis: false,
      rules: [
        { ...r('Any', 'OFF', 1, 'true', 'DISABLED_TAG'), enable: false },
        r('Any', 'COMPOSITE', 2, '$DMARC_POLICY_ALLOW && $SPF_FAIL', 'DMARC_ALLOW_SPF_FAIL'),
      ],
    });
    expect(engine.loadReport).toEqual({ loaded: 1, disabled: 1, errors: [] });
    expect(ruleTags((await engine.classify(MESSAGE)).tags)).toEqual([]);
    expect(ruleTags((await engine.classify(MESSAGE, { tags: ['DMARC_POLICY_ALLOW', 'SPF_FAIL'] })).tags)).toEqual([
      'DMARC_POLICY_ALLOW',
      'SPF_FAIL',
      'DMARC_ALLOW_SPF_FAIL',
    ]);
  });

  it('fires once per element (element-first loop) and picks the first true branch', async () => {
    const engine = new SpamEngine({
      analysis: false,
      rules: [
        {
          '@type': 'Email',
          name: 'RCPT',
          condition: {
            match: [
              { if: "location == 'to' && local == 'bob'", then: "'TO_BOB'" },
              { if: "location == 'to'", then: "'TO_OTHER'" },
            ],
            else: 'false',
          },
        },
      ],
    });
    const res = await engine.classify(MESSAGE);
    expect(res.matches.map((m) => [m.tag, m.element, m.branch])).toEqual([
      ['TO_BOB', 'bob@receiver.example', 0],
      ['TO_OTHER', 'carol@receiver.example', 1],
    ]);
  });
});

describe('scores, actions and headers', () => {
  const tags: SpamTagInput[] = [
    { '@type': 'Score', tag: 'BIG', score: 4.5 },
    { '@type': 'Score', tag: 'SMALL', score: 0.75 },
    { '@type': 'Score', tag: 'FREEMAIL_*', score: -1 },
    { '@type': 'Reject', tag: 'BLOCKED' },
  ];
  it('sums scores (globs included), applies scoreSpam and renders X-Spam-Result', async () => {
    const engine = new SpamEngine({
      analysis: false,
      rules: [r('Any', 'R1', 1, 'true', 'BIG'), r('Any', 'R2', 2, 'true', 'SMALL'), r('Any', 'R3', 3, 'true', 'FREEMAIL_TO'), r('Any', 'R4', 4, 'true', 'X_HIDDEN')],
      tags,
    });
    const res = await engine.classify(MESSAGE);
    expect(res.score).toBe(4.25);
    expect(res.action).toBe('allow');
    expect(res.headers['X-Spam-Result']).toBe('FREEMAIL_TO (-1.00),\r\n\tSMALL (0.75),\r\n\tBIG (4.50)');
    expect(res.headers['X-Spam-Score']).toBe('ham, score=4.25');
    engine.setThresholds({ scoreSpam: 4 });
    const spam = await engine.classify(MESSAGE);
    expect(spam.action).toBe('spam');
    expect(spam.headers['X-Spam-Score']).toBe('spam, score=4.25');
    engine.setThresholds({ scoreReject: 4.2 });
    expect((await engine.classify(MESSAGE)).action).toBe('reject');
  });

  it('a Reject tag rejects whatever the score', async () => {
    const engine = new SpamEngine({ analysis: false, rules: [r('Any', 'R', 1, "from.domain == 'sender.example'", 'BLOCKED')], tags });
    const res = await engine.classify(MESSAGE);
    expect(res.action).toBe('reject');
    expect(res.score).toBe(0);
  });
});

describe('failures are reported, never thrown', () => {
  it('refuses rules that do not compile, naming rule, branch and position', () => {
    const engine = new SpamEngine({
      analysis: false,
      rules: [r('Any', 'GOOD', 1, 'true', 'OK'), r('Any', 'BAD', 2, 'nosuchvar == 1', 'X'), r('Header', 'WRONG_SCOPE', 3, "url == 'x'", 'Y')],
    });
    expect(engine.loadReport.loaded).toBe(1);
    expect(engine.loadReport.errors.map((e) => [e.rule, e.path])).toEqual([
      ['BAD', 'condition/match/0/if'],
      ['WRONG_SCOPE', 'condition/match/0/if'],
    ]);
    expect(engine.loadReport.errors[0]!.message).toMatch(/nosuchvar.*1:1|1:1.*nosuchvar/);
  });

  it('a store that fails makes its rule set no tag; the rest still runs', async () => {
    const down: LookupStore = {
      type: 'Redis',
      keyGet: () => Promise.reject(new Error('connection refused')),
      keyExists: () => Promise.reject(new Error('connection refused')),
      keySet: () => Promise.reject(new Error('connection refused')),
      counterGet: () => Promise.reject(new Error('connection refused')),
      counterIncr: () => Promise.reject(new Error('connection refused')),
      close: async () => {},
    };
    const lookups = new LookupMap().set('blocked', down).set('trusted', new StaticLookupList('trusted', ['sender.example']));
    const engine = new SpamEngine({
      analysis: false,
      lookups,
      rules: [
        r('Any', 'USES_DOWN_STORE', 1, "key_exists('blocked', from.domain)", 'BLOCKED'),
        r('Any', 'USES_STATIC', 2, "key_exists('trusted', from.domain)", 'TRUSTED'),
        r('Any', 'UNKNOWN_NS', 3, "key_exists('nope', from.domain)", 'NEVER'),
      ],
    });
    const res = await engine.classify(MESSAGE);
    expect(ruleTags(res.tags)).toEqual(['TRUSTED']);
    expect(res.errors).toHaveLength(1);
    expect(res.errors[0]).toMatchObject({ source: 'USES_DOWN_STORE', scope: 'Any' });
    expect(res.errors[0]!.message).toMatch(/connection refused/);
  });

  it('classifies malformed input without throwing', async () => {
    const engine = new SpamEngine({ analysis: false, rules: [r('Any', 'R', 1, 'is_empty(subject)', 'NO_SUBJECT')] });
    for (const raw of ['', '\x00\x01\x02', 'not a mail at all', 'Subject: =?utf-8?B?@@@?=\r\n\r\n', 'Content-Type: multipart/mixed; boundary=x\r\n\r\n--x\r\n--x']) {
      const res = await engine.classify(raw);
      expect(Array.isArray(res.tags)).toBe(true);
      expect(['allow', 'spam']).toContain(res.action);
    }
    expect(ruleTags((await engine.classify('')).tags)).toEqual(['NO_SUBJECT']);
  });

  it("gives system() only the values configured, never an inherited property ('constructor')", async () => {
    const engine = new SpamEngine({
      analysis: false,
      system: { hostname: 'mx.example' },
      rules: [r('Any', 'HOST', 1, "system('hostname') == 'mx.example'", 'HOST_OK'), r('Any', 'PROTO', 2, "system('constructor') != ''", 'INHERITED')],
    });
    expect(ruleTags((await engine.classify(MESSAGE)).tags)).toEqual(['HOST_OK']);
  });
});

describe('lookups of one message go out concurrently (issue 3)', () => {
  it('prefetches independent lookups for every element, applies results in canonical order', async () => {
    let inFlight = 0;
    let maxInFlight = 0;
    const slow: LookupStore = {
      type: 'Redis',
      keyGet: async () => null,
      keyExists: async (key) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 20));
        inFlight--;
        return key.startsWith('b');
      },
      keySet: async () => {},
      counterGet: async () => 0,
      counterIncr: async () => 0,
      close: async () => {},
    };
    const msg = mail(['From: x@example.com', 'Subject: links', '', 'https://a.example.com/ https://b1.example.com/ https://c.example.com/ https://b2.example.com/', '']);
    const engine = new SpamEngine({
      analysis: false,
      lookups: new LookupMap().set('slowlist', slow),
      rules: [
        r('Url', 'LISTED', 1, "key_exists('slowlist', host)", 'LISTED_HOST'),
        // Reads a $TAG, so it must see LISTED_HOST from earlier elements only, in element order.
        { '@type': 'Url', name: 'SECOND', priority: 2, condition: { match: [{ if: '$LISTED_HOST', then: "'AFTER_LISTED'" }], else: 'false' } },
      ],
    });
    const res = await engine.classify(msg);
    expect(maxInFlight).toBe(4);
    expect(res.matches.map((m) => [m.rule, m.element])).toEqual([
      ['LISTED', 'https://b1.example.com/'],
      ['SECOND', 'https://b1.example.com/'],
      ['SECOND', 'https://c.example.com/'],
      ['LISTED', 'https://b2.example.com/'],
      ['SECOND', 'https://b2.example.com/'],
    ]);
  });
});
