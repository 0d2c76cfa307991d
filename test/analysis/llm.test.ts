/**
 * The llm module against a real OpenAI-compatible server on loopback (test/servers/llm.ts): the tags each
 * reply gives, the X-Spam-LLM header and the result's `llm`, the prompt and request it sends (what the server
 * received), and when it sends nothing (no body part, training, off).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { LlmSettings } from '../../src/analysis/index.js';
import { cutUtf8, parseLlmReply } from '../../src/analysis/llm.js';
import { LLM_DEFAULTS } from '../../src/analysis/llm/settings.js';
import { runModule, type AnalysisRun } from '../../src/analysis/run.js';
import { envelopeOf, resolveSession } from '../../src/analysis/session.js';
import { StaticResolver } from '../../src/dns/index.js';
import { DEFAULT_RULES, DEFAULT_TAGS, SpamEngine, type EngineOptions, type SpamRuleInput } from '../../src/engine/index.js';
import { analyzeMessage, messageContextOf } from '../../src/message/index.js';
import { tempDir } from '../servers/common.js';
import { useLlmServer } from '../servers/index.js';

const server = useLlmServer('Legitimate,High,A test message.');

const SEEN: SpamRuleInput = { '@type': 'Any', name: 'ALWAYS', priority: 1, condition: { match: [{ if: 'true', then: "'SEEN'" }], else: 'false' } };
const settings = (extra: Partial<LlmSettings> = {}): LlmSettings => ({ url: server().url(), model: 'test-model', prompt: 'Classify.', ...extra });
const engineWith = (llm: Partial<LlmSettings> = {}, extra: Partial<EngineOptions> = {}): SpamEngine => new SpamEngine({ rules: [SEEN], analysis: { llm: settings(llm) }, ...extra });
const llmTags = (tags: readonly string[]): string[] => tags.filter((t) => t.startsWith('LLM_'));
const MSG = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: Cheap watches\r\n\r\nBuy now, limited offer.\r\n';

describe('llm module with a real completion server', () => {
  it('tags LLM_<CATEGORY>_<CONFIDENCE> for each default category and confidence, in any case and with spaces', async () => {
    const engine = engineWith();
    for (const category of ['Unsolicited', 'Commercial', 'Harmful', 'Legitimate']) {
      for (const confidence of ['High', 'Medium', 'Low']) {
        server().answer = ` ${category.toLowerCase()} , ${confidence.toUpperCase()} ,Because.`;
        const r = await engine.classify(MSG);
        expect(llmTags(r.tags)).toEqual([`LLM_${category.toUpperCase()}_${confidence.toUpperCase()}`]);
        expect(r.analysis).toContainEqual({ module: 'llm', tag: `LLM_${category.toUpperCase()}_${confidence.toUpperCase()}` });
        expect(r.tags).toContain('SEEN');
      }
    }
    expect(server().requests).toHaveLength(12);
  });

  it('tags LLM_<CATEGORY> without a recognised confidence, or with no confidence position', async () => {
    server().answer = 'Commercial';
    expect(llmTags((await engineWith().classify(MSG)).tags)).toEqual(['LLM_COMMERCIAL']);
    server().answer = 'Commercial,Somewhat,Shop advert';
    const r = await engineWith().classify(MSG);
    expect(llmTags(r.tags)).toEqual(['LLM_COMMERCIAL']);
    expect(r.llm).toEqual({ category: 'COMMERCIAL', explanation: 'Shop advert' });
    server().answer = 'Harmful,High,Phishing';
    expect(llmTags((await engineWith({ responsePosConfidence: null }).classify(MSG)).tags)).toEqual(['LLM_HARMFUL']);
  });

  it('sets nothing for a category that is not configured, nor a header, nor a warning', async () => {
    server().answer = 'Spam,High,Looks like spam';
    const r = await engineWith().classify(MSG);
    expect(llmTags(r.tags)).toEqual([]);
    expect(r.llm).toBeUndefined();
    expect(r.headers['X-Spam-LLM']).toBeUndefined();
    expect(r.warnings.filter((w) => w.startsWith('llm:'))).toEqual([]);
    // Operator categories (trimmed, any case), another separator and other positions.
    server().answer = 'Sure! | Phishing | certain | Asks for a password';
    const custom = await engineWith({ categories: [' phishing ', 'Clean'], confidence: ['Certain', 'Unsure'], separator: '|', responsePosCategory: 1, responsePosConfidence: 2, responsePosExplanation: 3 }).classify(MSG);
    expect(llmTags(custom.tags)).toEqual(['LLM_PHISHING_CERTAIN']);
    expect(custom.headers['X-Spam-LLM']).toBe('PHISHING (Asks for a password)');
  });

  it('writes X-Spam-LLM: <category> (<explanation>) between X-Spam-Result and X-Spam-Score, and the result\'s llm', async () => {
    server().answer = 'Commercial,High,A store\tadvertises\r\nshoes\u00a0and\u2028bags\u0007now.';
    const r = await engineWith().classify(MSG);
    expect(r.llm).toEqual({ category: 'COMMERCIAL', confidence: 'HIGH', explanation: 'A store advertises  shoes and bags now.' });
    expect(r.headers['X-Spam-LLM']).toBe('COMMERCIAL (A store advertises  shoes and bags now.)');
    expect(Object.keys(r.headers)).toEqual(['X-Spam-Result', 'X-Spam-LLM', 'X-Spam-Score']);
    // No explanation field: the tag, but no header (Stalwart writes the header only with an explanation).
    server().answer = 'Commercial,High';
    const bare = await engineWith().classify(MSG);
    expect(llmTags(bare.tags)).toEqual(['LLM_COMMERCIAL_HIGH']);
    expect(bare.llm).toEqual({ category: 'COMMERCIAL', confidence: 'HIGH' });
    expect(Object.keys(bare.headers)).toEqual(['X-Spam-Result', 'X-Spam-Score']);
  });

  it('cuts the explanation to 255 bytes on a character boundary', async () => {
    server().answer = `Legitimate,Low,${'x'.repeat(300)}`;
    expect((await engineWith().classify(MSG)).llm!.explanation).toBe('x'.repeat(255));
    server().answer = `Legitimate,Low,${'é'.repeat(200)}`; // 2 bytes each: 127 fit in 255
    const e = (await engineWith().classify(MSG)).llm!.explanation!;
    expect(e).toBe('é'.repeat(127));
    expect(Buffer.byteLength(e)).toBe(254);
  });

  it('sends Stalwart\'s prompt, the subject and the first body text, cut to their byte bounds', async () => {
    await engineWith().classify(MSG);
    expect(server().requests).toHaveLength(1);
    const req = server().requests[0]!;
    expect(req.method).toBe('POST');
    expect(req.path).toBe('/v1/chat/completions');
    expect(req.json).toEqual({ model: 'test-model', messages: [{ role: 'user', content: 'Classify.\n\nSubject: Cheap watches\n\nBuy now, limited offer.\r\n' }], temperature: 0.5 });
    // An HTML body is sent as its text; a long subject and body are cut (a 3-byte character is not split).
    server().requests.length = 0;
    const html = `From: a@example.org\r\nSubject: ${'€'.repeat(10)}\r\nContent-Type: text/html\r\n\r\n<html><head><title>t</title></head><body><p>${'ab'.repeat(50)}</p></body></html>\r\n`;
    await engineWith({ maxSubjectBytes: 8, maxBodyBytes: 11 }).classify(html);
    const content = (server().requests[0]!.json!.messages as { content: string }[])[0]!.content;
    expect(content).toBe(`Classify.\n\nSubject: €€\n\n${'ab'.repeat(5)}a`);
    // The default prompt and bounds.
    server().requests.length = 0;
    const big = `From: a@example.org\r\nSubject: s\r\n\r\n${'y'.repeat(10_000)}\r\n`;
    await new SpamEngine({ rules: [SEEN], analysis: { llm: { url: server().url(), model: 'm' } } }).classify(big);
    const sent = (server().requests[0]!.json!.messages as { content: string }[])[0]!.content;
    expect(sent).toBe(`${LLM_DEFAULTS.prompt}\n\nSubject: s\n\n${'y'.repeat(4096)}`);
  });

  it('Text models: POST {model, prompt, temperature} and read choices[0].text', async () => {
    server().answer = 'Harmful,Medium,Malware link';
    const r = await engineWith({ url: server().url('/v1/completions'), modelType: 'Text', temperature: 0.2 }).classify(MSG);
    expect(llmTags(r.tags)).toEqual(['LLM_HARMFUL_MEDIUM']);
    expect(server().requests[0]!.path).toBe('/v1/completions');
    expect(server().requests[0]!.json).toEqual({ model: 'test-model', prompt: 'Classify.\n\nSubject: Cheap watches\n\nBuy now, limited offer.\r\n', temperature: 0.2 });
  });

  it('sends the Bearer key from an environment variable or a file, Basic credentials, extra headers and JSON', async () => {
    process.env.SPAMRULE_TEST_LLM_KEY = 'sk-test-123';
    try {
      await engineWith({ httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_TEST_LLM_KEY' } }, httpHeaders: { 'X-Org': 'acme', 'Content-Type': 'text/plain' } }).classify(MSG);
    } finally {
      delete process.env.SPAMRULE_TEST_LLM_KEY;
    }
    let h = server().requests[0]!.headers;
    expect(h.authorization).toBe('Bearer sk-test-123');
    expect(h['x-org']).toBe('acme');
    expect(h['content-type']).toBe('application/json');
    expect(Number(h['content-length'])).toBe(Buffer.byteLength(server().requests[0]!.body));
    await engineWith({ httpAuth: { '@type': 'Basic', username: 'ops', secret: { '@type': 'Value', secret: 'pa ss' } } }).classify(MSG);
    h = server().requests[1]!.headers;
    expect(h.authorization).toBe(`Basic ${Buffer.from('ops:pa ss').toString('base64')}`);
    // A key file (one trailing newline trimmed, as `echo` writes it).
    const keyFile = join(tempDir('llm-key'), 'key');
    writeFileSync(keyFile, 'sk-from-file\n');
    await engineWith({ httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'File', filePath: keyFile } } }).classify(MSG);
    expect(server().requests[2]!.headers.authorization).toBe('Bearer sk-from-file');
    // No key configured: no Authorization header.
    await engineWith().classify(MSG);
    expect(server().requests[3]!.headers.authorization).toBeUndefined();
  });

  it('an unset key variable: nothing sent, a warning that names the variable (never a key)', async () => {
    const r = await engineWith({ httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'EnvironmentVariable', variableName: 'SPAMRULE_TEST_LLM_UNSET' } } }).classify(MSG);
    expect(server().requests).toHaveLength(0);
    expect(r.warnings).toContain('llm: API key: secret environment variable "SPAMRULE_TEST_LLM_UNSET" is not set; no LLM tag set');
    expect(r.tags).toContain('SEEN');
  });
});

describe('llm tags in the default rule set', () => {
  it('are scored as Stalwart\'s published rule set scores them', async () => {
    const engine = new SpamEngine({ rules: DEFAULT_RULES, tags: DEFAULT_TAGS, analysis: { llm: settings() } });
    for (const [answer, tag, score] of [['Unsolicited,High,x', 'LLM_UNSOLICITED_HIGH', 3], ['Harmful,Medium,x', 'LLM_HARMFUL_MEDIUM', 2], ['Commercial,Low,x', 'LLM_COMMERCIAL_LOW', 0.5], ['Legitimate,High,x', 'LLM_LEGITIMATE_HIGH', -3]] as const) {
      server().answer = answer;
      expect((await engine.classify(MSG)).scores[tag]).toBe(score);
    }
    expect(DEFAULT_TAGS.filter((t) => t.tag.startsWith('LLM_'))).toHaveLength(12);
  });
});

describe('llm module: when nothing is sent', () => {
  it('a message without a body part', async () => {
    const image = 'From: a@example.org\r\nSubject: pic\r\nContent-Type: image/png\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw0KGgo=\r\n';
    const r = await engineWith().classify(image);
    expect(server().requests).toHaveLength(0);
    expect(llmTags(r.tags)).toEqual([]);
    expect(r.warnings.filter((w) => w.startsWith('llm:'))).toEqual([]);
  });

  it('off unless configured, and off for `llm: false` or the module switched off', async () => {
    await new SpamEngine({ rules: [SEEN] }).classify(MSG);
    await new SpamEngine({ rules: [SEEN], analysis: { llm: false } }).classify(MSG);
    await new SpamEngine({ rules: [SEEN], analysis: { llm: settings(), modules: { llm: false } } }).classify(MSG);
    expect(server().requests).toHaveLength(0);
  });

  it('training (a train-mode session) sends nothing', async () => {
    const session = resolveSession({}, { train: true });
    const msg = await analyzeMessage(MSG, envelopeOf(session));
    const run: AnalysisRun = {
      session, message: messageContextOf(msg), dns: new StaticResolver({}), lists: { get: () => undefined }, config: { llm: settings() },
      tags: new Set(), matches: [], errors: [], warnings: [],
    };
    expect(await runModule(run, 'llm')).toBe(true);
    expect(server().requests).toHaveLength(0);
    expect([...run.tags]).toEqual([]);
    // The same run out of training asks.
    const asked: AnalysisRun = { ...run, session: resolveSession({}), tags: new Set() };
    await runModule(asked, 'llm');
    expect(server().requests).toHaveLength(1);
    expect([...asked.tags]).toEqual(['LLM_LEGITIMATE_HIGH']);
    expect(asked.llm).toEqual({ category: 'LEGITIMATE', confidence: 'HIGH', explanation: 'A test message.' });
  });
});

describe('reply parsing and cutting (Stalwart\'s rules)', () => {
  const s = { ...LLM_DEFAULTS };
  it('reads fields by position; empty fields are skipped, the category position wins a clash', () => {
    expect(parseLlmReply('Legitimate,,Fine', s)).toEqual({ category: 'LEGITIMATE', explanation: 'Fine' });
    expect(parseLlmReply(',High,Fine', s)).toBeUndefined();
    expect(parseLlmReply('Harmful,High', { ...s, responsePosConfidence: 0 })).toEqual({ category: 'HARMFUL' });
    expect(parseLlmReply('Harmful;High;x', { ...s, separator: ';;' })).toEqual({ category: 'HARMFUL', confidence: 'HIGH', explanation: 'x' });
    expect(parseLlmReply('Harmful,High,a,b', s)).toEqual({ category: 'HARMFUL', confidence: 'HIGH', explanation: 'a' });
  });
  it('an explanation keeps no line break of any kind, control character or lone surrogate (a model server writes it)', () => {
    const v = parseLlmReply('Harmful,High,a\r\nX-Evil: 1\u2028b\u2029c\u0085d\u000be\u0000f\ud800g\udfffh😀', s);
    expect(v?.explanation).toBe('a  X-Evil: 1 b c d e f\ufffdg\ufffdh😀');
    // Every character left can be written as UTF-8 and as strict JSON (the rspamd reply).
    expect(v?.explanation).not.toMatch(/[\p{Cc}\p{Zl}\p{Zp}\p{Cs}]/u);
    expect(JSON.stringify(v)).not.toMatch(/\\u[dD][89a-fA-F]/);
  });
  it('cuts UTF-8 on a character boundary, never over the bound', () => {
    expect(cutUtf8('h\u00e9llo', 2)).toBe('h');
    expect(cutUtf8('h\u00e9llo', 3)).toBe('h\u00e9');
    expect(cutUtf8('😀😀', 5)).toBe('😀');
    expect(cutUtf8('abc', 0)).toBe('');
    expect(cutUtf8('abc', 10)).toBe('abc');
  });
});
