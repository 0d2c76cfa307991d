/**
 * `SpamEngine` refuses options it cannot use, naming them (from JavaScript the types do not reach, and
 * an ignored setting gives wrong verdicts without a word).
 */
import { describe, expect, it } from 'vitest';
import { SpamEngine } from '../../src/engine/index.js';

describe('SpamEngine options', () => {
  it.each([
    [{ threshold: { scoreSpam: 3 } }, 'SpamEngine: unknown option "threshold" (did you mean "thresholds"?)'],
    [{ timeBudget: 100 }, 'SpamEngine: unknown option "timeBudget" (did you mean "timeBudgetMs"?)'],
    [{ timeBudgetMs: -5 }, 'SpamEngine: "timeBudgetMs": expected milliseconds (a number ≥ 0; 0 = none), got -5'],
    [{ ruleWaitMs: '2s' }, 'SpamEngine: "ruleWaitMs": expected milliseconds (a number ≥ 0; 0 = none), got "2s"'],
    [{ regexWorkLimit: -1 }, 'SpamEngine: "regexWorkLimit": expected steps (a number ≥ 0; 0 = none), got -1'],
    [{ regexCacheBytes: 1000 }, 'SpamEngine: "regexCacheBytes": expected bytes (a number ≥ 1048576, or Infinity), got 1000'],
    [{ regexWorkLimt: 1e8 }, 'SpamEngine: unknown option "regexWorkLimt" (did you mean "regexWorkLimit"?)'],
    [{ thresholds: { scoreSpam: 'five' } }, 'SpamEngine: "thresholds.scoreSpam" must be a number, got "five"'],
    [{ thresholds: { spam: 5 } }, 'SpamEngine: thresholds: unknown option "spam"'],
    [{ rules: 'x' }, 'SpamEngine: "rules" must be an array'],
    [{ analysis: { modules: { htlm: false } } }, 'SpamEngine: analysis.modules: unknown module "htlm" (did you mean "html"?)'],
    // ipaddr.js alone reads "10.1" as 10.0.0.1: the lists take what serve's configuration takes.
    [{ analysis: { allowedIps: ['10.1'] } }, 'SpamEngine: analysis.allowedIps[0]: "10.1" is neither an IP address nor a CIDR range'],
    [{ analysis: { blockedIps: ['192.0.2.0/24', '192.0.2.0/33'] } }, 'SpamEngine: analysis.blockedIps[1]: "192.0.2.0/33" is neither an IP address nor a CIDR range'],
    [{ analysis: { allowedIps: '10.0.0.1' } }, 'SpamEngine: analysis.allowedIps must be an array of IP addresses and CIDR ranges'],
    [{ analysis: { followRedirect: true } }, 'SpamEngine: analysis: unknown option "followRedirect" (did you mean "followRedirects"?)'],
    [{ analysis: { followRedirects: { allowPrivate: true } } }, 'SpamEngine: analysis.followRedirects: unknown field "allowPrivate" (the fields are maxHops, timeoutMs, allowedNetworks, ports)'],
    [{ analysis: { followRedirects: { allowedNetworks: ['intranet'] } } }, 'SpamEngine: analysis.followRedirects: allowed network "intranet" is neither an IP address nor a CIDR range (such as 10.0.0.0/8)'],
    [{ analysis: { followRedirects: { ports: [8080, 70000] } } }, 'SpamEngine: analysis.followRedirects: ports must be an array of port numbers (1–65535), got [8080,70000]'],
    [{ analysis: { followRedirects: 'yes' } }, 'SpamEngine: analysis.followRedirects: expected true, false or an object, got "yes"'],
    [{ analysis: { pyzor: 'public.pyzor.org' } }, 'SpamEngine: analysis.pyzor: expected true, false or an object ({ host, port, timeoutMs, blockCount, allowCount, ratio, digest, breaker })'],
    [{ analysis: { pyzor: { server: 'x' } } }, 'SpamEngine: analysis.pyzor: unknown field "server" (the fields are host, port, timeoutMs, blockCount, allowCount, ratio, digest, breaker)'],
    [{ analysis: { pyzor: { digest: 'spamassassin' } } }, 'SpamEngine: analysis.pyzor: "digest" must be "stalwart" or "pyzor", got "spamassassin"'],
    [{ analysis: { pyzor: { port: 70000 } } }, 'SpamEngine: analysis.pyzor: "port" must be an integer from 1 to 65535, got 70000'],
    [{ analysis: { pyzor: { timeoutMs: 0 } } }, 'SpamEngine: analysis.pyzor: "timeoutMs" must be milliseconds (a number > 0, at most 2147483647), got 0'],
    [{ analysis: { pyzor: { blockCount: 0 } } }, 'SpamEngine: analysis.pyzor: "blockCount" must be an integer from 1 to 1000, got 0'],
    [{ analysis: { pyzor: { ratio: 1.5 } } }, 'SpamEngine: analysis.pyzor: "ratio" must be a number from 0 to 1, got 1.5'],
    [{ analysis: { pyzor: { breaker: false } } }, 'SpamEngine: analysis.pyzor: "breaker" must be an object ({ enabled, failureThreshold, initialBackoffMs, maxBackoffMs })'],
    [{ analysis: { pyzor: { breaker: { threshold: 2 } } } }, 'SpamEngine: analysis.pyzor: "breaker": unknown field "threshold" (the fields are enabled, failureThreshold, initialBackoffMs, maxBackoffMs)'],
    [{ analysis: { pyzor: { breaker: { failureThreshold: 0 } } } }, 'SpamEngine: analysis.pyzor: "breaker.failureThreshold" must be an integer from 1 to 1000, got 0'],
    [{ analysis: { pyzor: { breaker: { maxBackoffMs: 1000 } } } }, 'SpamEngine: analysis.pyzor: "breaker.maxBackoffMs" (1000) must be at least "breaker.initialBackoffMs" (5000)'],
    [{ analysis: { llm: { url: 'http://a/', model: 'm', breaker: { enabled: 'no' } } } }, 'SpamEngine: analysis.llm: "breaker.enabled" must be true or false'],
    [{ analysis: { llm: { url: 'http://a/', model: 'm', breaker: { initialBackoffMs: '5s' } } } }, 'SpamEngine: analysis.llm: "breaker.initialBackoffMs" must be milliseconds (a number > 0), got "5s"'],
    [{ analysis: { llm: true } }, 'SpamEngine: analysis.llm: expected false or an object ({ url, model, prompt, … })'],
    [{ analysis: { llm: { model: 'm' } } }, 'SpamEngine: analysis.llm: "url" is required: the OpenAI-compatible endpoint (https://api.openai.com/v1/chat/completions)'],
    [{ analysis: { llm: { url: 'http://127.0.0.1:11434/v1/chat/completions' } } }, 'SpamEngine: analysis.llm: "model" is required: the model name sent to the endpoint'],
    [{ analysis: { llm: { url: 'x', model: 'm', modelType: 'Embedding' } } }, 'SpamEngine: analysis.llm: "url" is not a URL: "x"'],
    [{ analysis: { llm: { url: 'http://a/', model: 'm', modelType: 'Embedding' } } }, 'SpamEngine: analysis.llm: "modelType" must be "Chat" or "Text", got "Embedding"'],
    [{ analysis: { llm: { url: 'http://a/', model: 'm', responsePosConfidence: -1 } } }, 'SpamEngine: analysis.llm: "responsePosConfidence" must be an integer from 0 to 1000 or null, got -1'],
    [{ analysis: { llm: { url: 'http://a/', model: 'm', httpAuth: { '@type': 'Bearer', token: 'x' } } } }, 'SpamEngine: analysis.llm: "httpAuth.bearerToken" must be a secret'],
    [{ analysis: { llm: { url: 'http://a/', model: 'm', separator: '' } } }, 'SpamEngine: analysis.llm: "separator" must be a non-empty string'],
  ])('refuses %j', (opts, message) => {
    // Before, each was ignored: the engine ran with its defaults.
    expect(() => new SpamEngine(opts as never)).toThrow(new TypeError(message).message);
  });

  it('takes what it knows, undefined values included (as a spread of optional settings gives them)', () => {
    const e = new SpamEngine({ thresholds: { scoreSpam: 3 }, timeBudgetMs: 0, ruleWaitMs: Infinity, regexWorkLimit: 0, analysis: { modules: { html: false } }, dns: undefined });
    expect(e.getThresholds().scoreSpam).toBe(3);
    expect(() => new SpamEngine({ analysis: false })).not.toThrow();
    expect(() => new SpamEngine({ analysis: { pyzor: true } })).not.toThrow();
    expect(() => new SpamEngine({ analysis: { llm: false } })).not.toThrow();
    expect(() => new SpamEngine({ analysis: { llm: { url: 'https://api.openai.com/v1/chat/completions', model: 'gpt-4o-mini', responsePosExplanation: null, confidence: [] } } })).not.toThrow();
    expect(() => new SpamEngine({ analysis: { followRedirects: { maxHops: 2, allowedNetworks: ['10.0.0.0/8', '::1'], ports: [8080] } } })).not.toThrow();
    expect(() => new SpamEngine({ analysis: { pyzor: { host: '::1', port: 24441, timeoutMs: 2500, blockCount: 10, allowCount: 1, ratio: 0 } } })).not.toThrow();
    expect(() => new SpamEngine({ analysis: { pyzor: { breaker: { enabled: false, failureThreshold: 5, initialBackoffMs: 100, maxBackoffMs: 100 } } } })).not.toThrow();
    expect(() => new SpamEngine({ analysis: { llm: { url: 'http://a/', model: 'm', breaker: { maxBackoffMs: 300_000 } } } })).not.toThrow();
  });
});
