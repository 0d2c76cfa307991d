/**
 * `spamrule classify --llm-url …` against a real completion server on loopback: the tag, the header and the
 * `llm` record reach --json and the text output, the key comes from a variable or a file (never a flag's
 * value) and is not printed; bad LLM flags are clear errors (exit 2) before any message is read. And
 * `serve`'s configuration file: `analysis.llm` validated with the engine's check, a `File` key path taken
 * relative to the file, the flags over the file's fields.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run as classify } from '../../src/cli/classify.js';
import { llmFlags, llmKeyProblem } from '../../src/cli/llm-flags.js';
import { readServeConfig } from '../../src/server/config.js';
import { capture } from '../helpers/capture.js';
import { tempDir } from '../servers/common.js';
import { startLlmServer, type LlmServer } from '../servers/index.js';

const dir = tempDir('llm-cli');
const MAIL = join(dir, 'm.eml');
writeFileSync(MAIL, 'From: a@example.org\r\nTo: b@example.com\r\nSubject: Sale\r\n\r\nHalf price today.\r\n');

let server: LlmServer;
beforeAll(async () => {
  server = await startLlmServer();
  server.answer = 'Commercial,High,A sale.';
});
afterAll(async () => {
  await server?.stop();
});

describe('classify --llm-*', () => {
  it('--json carries the tag, the llm record and X-Spam-LLM; the key from --llm-api-key-env is sent, never printed', async () => {
    process.env.SPAMRULE_TEST_CLI_KEY = 'sk-cli-secret';
    const promptFile = join(dir, 'prompt.txt');
    writeFileSync(promptFile, 'Say what this is.\n');
    try {
      const flags = ['--llm-url', server.url(), '--llm-model', 'llama3.2', '--llm-timeout', '3000', '--llm-prompt-file', promptFile, '--llm-api-key-env', 'SPAMRULE_TEST_CLI_KEY'];
      const j = await capture(() => classify(['--json', '--no-progress', ...flags, MAIL]));
      expect(j.result).toBe(0);
      const rec = JSON.parse(j.stdout.trim()) as { tags: string[]; llm: unknown; headers: Record<string, string>; matches: unknown[] };
      expect(rec.tags).toContain('LLM_COMMERCIAL_HIGH');
      expect(rec.llm).toEqual({ category: 'COMMERCIAL', confidence: 'HIGH', explanation: 'A sale.' });
      expect(rec.headers['X-Spam-LLM']).toBe('COMMERCIAL (A sale.)');
      expect(rec.matches).toContainEqual({ module: 'llm', tag: 'LLM_COMMERCIAL_HIGH' });
      const last = server.requests.at(-1)!;
      expect(last.headers.authorization).toBe('Bearer sk-cli-secret');
      expect(last.json).toMatchObject({ model: 'llama3.2', messages: [{ role: 'user', content: 'Say what this is.\n\nSubject: Sale\n\nHalf price today.\r\n' }] });
      const x = await capture(() => classify(['--explain', '--no-progress', ...flags, MAIL]));
      expect(x.stdout).toMatch(/LLM_COMMERCIAL_HIGH\s+\S+\s+module llm/);
      expect(x.stdout).toContain('X-Spam-LLM: COMMERCIAL (A sale.)');
      expect(j.stdout + j.stderr + x.stdout + x.stderr).not.toContain('sk-cli-secret');
    } finally {
      delete process.env.SPAMRULE_TEST_CLI_KEY;
    }
  });

  it.each([
    [['--llm-model', 'm'], /^spamrule classify: --llm-model needs --llm-url URL/],
    [['--llm-url', 'http://127.0.0.1:1/v1/chat/completions'], /--llm-url needs --llm-model NAME/],
    [['--llm-url', 'ftp://example.org/', '--llm-model', 'm'], /LLM settings: "url" must be an http: or https: URL/],
    [['--llm-url', 'http://127.0.0.1:1/', '--llm-model', 'm', '--llm-timeout', 'soon'], /--llm-timeout expects milliseconds/],
    [['--llm-url', 'http://127.0.0.1:1/', '--llm-model', 'm', '--llm-api-key-env', 'SPAMRULE_TEST_NO_SUCH_VAR'], /--llm-api-key-env: secret environment variable "SPAMRULE_TEST_NO_SUCH_VAR" is not set/],
    [['--llm-url', 'http://127.0.0.1:1/', '--llm-model', 'm', '--llm-api-key-file', '/nonexistent/key'], /--llm-api-key-file: secret file "\/nonexistent\/key" cannot be read/],
    [['--llm-url', 'http://127.0.0.1:1/', '--llm-model', 'm', '--llm-api-key-env', 'A', '--llm-api-key-file', 'B'], /name two keys: give one/],
    [['--llm-url', 'http://127.0.0.1:1/', '--llm-model', 'm', '--llm-prompt-file', '/nonexistent/prompt'], /--llm-prompt-file: cannot read/],
  ])('%j is refused (exit 2) before any message is read', async (args, message) => {
    const before = server.requests.length;
    const r = await capture(() => classify([...args, MAIL]));
    expect(r.result).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(server.requests.length).toBe(before);
  });
});

describe('serve: analysis.llm in the configuration file, the flags over it', () => {
  it('validates it with the engine\'s check and takes a File key path relative to the file', () => {
    const file = join(dir, 'serve.json');
    const llm = { url: 'https://api.openai.com/v1/chat/completions', model: 'gpt-4o-mini', prompt: 'Classify.', categories: ['Spam', 'Ham'], confidence: [], responsePosConfidence: null, temperature: 0.1, httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'File', filePath: 'keys/openai' } }, httpHeaders: { 'OpenAI-Organization': 'org-1' } };
    writeFileSync(file, JSON.stringify({ analysis: { llm } }));
    const c = readServeConfig(file);
    expect(c.analysis?.llm).toEqual({ ...llm, httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'File', filePath: join(dir, 'keys/openai') } } });
    for (const [bad, where] of [
      [{ model: 'm' }, 'analysis.llm: "url" is required'],
      [{ url: 'http://x/', model: 'm', categories: ['Only'] }, 'analysis.llm: "categories" must be an array of at least 2'],
      [{ url: 'http://x/', model: 'm', temperature: 2 }, 'analysis.llm: "temperature" must be a number from 0 to 1'],
      [{ url: 'http://x/', model: 'm', categories: ['Spam', 'Ham\r\nX-Injected: 1'] }, 'analysis.llm: "categories": "Ham\\r\\nX-Injected: 1" cannot be part of a tag: it holds the control character U+000D at 3'],
      [{ url: 'http://x/', model: 'm', confidence: ['High', 'Low\u2028X-Injected: 1'] }, 'analysis.llm: "confidence": "Low\u2028X-Injected: 1" cannot be part of a tag: it holds the control character U+2028 at 3'],
      [{ url: 'http://x/', model: 'm', apiKey: 'sk-1' }, 'analysis.llm: unknown field "apiKey"'],
      [{ url: 'http://x/', model: 'm', httpAuth: { '@type': 'Bearer', bearerToken: 'sk-1' } }, 'analysis.llm: "httpAuth.bearerToken" must be a secret'],
      [{ url: 'http://x/', model: 'm', httpHeaders: { 'X-A': 'a\r\nX-B: b' } }, 'analysis.llm: "httpHeaders.X-A" must be a string without CR, LF or NUL'],
    ] as const) {
      writeFileSync(file, JSON.stringify({ analysis: { llm: bad } }));
      expect(() => readServeConfig(file)).toThrow(where);
    }
  });

  it('the flags replace the endpoint, model and timeout and keep the file\'s other fields', () => {
    const base = { url: 'http://a/', model: 'a', prompt: 'P', categories: ['X', 'Y'] };
    expect(llmFlags({ 'llm-url': 'http://b/v1/chat/completions', 'llm-timeout': '2500' }, base)).toEqual({ ...base, url: 'http://b/v1/chat/completions', timeoutMs: 2500 });
    expect(llmFlags({}, base)).toBe(base);
    expect(llmFlags({}, undefined)).toBeUndefined();
    expect(() => llmFlags({ 'llm-timeout': '5' }, false)).toThrow('--llm-timeout needs --llm-url URL');
  });

  it('refuses to start with a key it cannot read (serve checks it once, not per message)', () => {
    const auth = (variableName: string) => ({ url: 'http://a/', model: 'a', httpAuth: { '@type': 'Bearer' as const, bearerToken: { '@type': 'EnvironmentVariable' as const, variableName } } });
    expect(llmKeyProblem(auth('SPAMRULE_TEST_UNSET_KEY'))).toBe('analysis.llm.httpAuth: secret environment variable "SPAMRULE_TEST_UNSET_KEY" is not set');
    process.env.SPAMRULE_TEST_SET_KEY = 'k';
    try {
      expect(llmKeyProblem(auth('SPAMRULE_TEST_SET_KEY'))).toBeUndefined();
    } finally {
      delete process.env.SPAMRULE_TEST_SET_KEY;
    }
    expect(llmKeyProblem({ url: 'http://a/', model: 'a' })).toBeUndefined();
    expect(llmKeyProblem(undefined)).toBeUndefined();
    // A key with a line break inside (a key file with a blank line at its end) would fail every request.
    const file = join(tempDir('llm-key'), 'key');
    writeFileSync(file, 'sk-hunter5\n\n');
    const problem = llmKeyProblem({ url: 'http://a/', model: 'a', httpAuth: { '@type': 'Bearer', bearerToken: { '@type': 'File', filePath: file } } });
    expect(problem).toBe('analysis.llm.httpAuth: the key holds U+000A at 10, which an HTTP header cannot carry (a line break inside it?)');
    expect(() => llmFlags({ 'llm-url': 'http://a/', 'llm-model': 'm', 'llm-api-key-file': file })).toThrow(/^--llm-api-key-file: the key holds U\+000A at 10/);
  });
});
