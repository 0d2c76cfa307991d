/**
 * The LLM step through the mail-path listeners (worker threads, `analysis.llm` in the pool's spec) against a
 * real completion server on loopback: each listener adds `X-Spam-LLM` where Stalwart puts it (between
 * `X-Spam-Result` and `X-Spam-Score`) and removes a forged upstream copy; without a verdict it adds none.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startLlmServer, type LlmServer } from '../servers/index.js';
import { defaultSpec, http, milterOptneg, milterPacket, milterReplies, raw, startAll, type Started } from './harness.js';

let llm: LlmServer;
let s: Started;
beforeAll(async () => {
  llm = await startLlmServer();
  llm.answer = 'Commercial,Medium,Sells\twatches.';
  const spec = defaultSpec();
  spec.engine = { ...spec.engine, analysis: { ...spec.engine?.analysis, llm: { url: llm.url(), model: 'm', timeoutMs: 5_000 } } };
  s = await startAll({ workers: 1, spec });
}, 60_000);
afterAll(async () => {
  await s?.close();
  await llm?.stop();
});

const MSG = 'From: a@example.org\r\nTo: b@example.com\r\nSubject: watches\r\nX-Spam-LLM: LEGITIMATE (forged upstream)\r\n\r\nCheap watches.\r\n';

describe('X-Spam-LLM through the listeners', () => {
  it('rspamd: the LLM tag among the symbols, X-Spam-LLM among the headers to add, any copy removed', async () => {
    const { host, port } = s.hostPort('rspamd');
    const r = await http(`http://${host}:${port}/checkv2`, { method: 'POST', body: MSG });
    const j = JSON.parse(r.body) as { symbols: Record<string, unknown>; milter: { add_headers: Record<string, { value: string }>; remove_headers: Record<string, number> } };
    expect(Object.keys(j.symbols)).toContain('LLM_COMMERCIAL_MEDIUM');
    expect(Object.keys(j.milter.add_headers)).toEqual(['X-Spam-Result', 'X-Spam-LLM', 'X-Spam-Score']);
    expect(j.milter.add_headers['X-Spam-LLM']!.value).toBe('COMMERCIAL (Sells watches.)');
    expect(j.milter.remove_headers).toEqual({ 'X-Spam-Result': 0, 'X-Spam-LLM': 0, 'X-Spam-Score': 0 });
  });

  it('spamd PROCESS: ours in Stalwart\'s order, the forged copy gone', async () => {
    const { host, port } = s.hostPort('spamd');
    const r = await raw(host, port, `PROCESS SPAMC/1.5\r\nContent-length: ${Buffer.byteLength(MSG)}\r\n\r\n${MSG}`);
    const text = r.reply.toString('utf8');
    const message = text.slice(text.indexOf('\r\n\r\n') + 4);
    expect(message).toMatch(/^X-Spam-Result: [^]*\r\nX-Spam-LLM: COMMERCIAL \(Sells watches\.\)\r\nX-Spam-Score: /);
    expect(message).not.toContain('forged upstream');
  });

  it('milter: X-Spam-LLM added between the two, the forged copy deleted', async () => {
    const { host, port } = s.hostPort('milter');
    const r = await raw(host, port, Buffer.concat([
      milterOptneg(), milterPacket('M', '<a@example.org>\x00'), milterPacket('R', '<b@example.com>\x00'),
      milterPacket('L', 'From\x00a@example.org\x00'), milterPacket('L', 'Subject\x00watches\x00'), milterPacket('L', 'X-Spam-LLM\x00LEGITIMATE (forged upstream)\x00'),
      milterPacket('N'), milterPacket('B', 'Cheap watches.\r\n'), milterPacket('E'), milterPacket('Q'),
    ]), { timeoutMs: 15_000 });
    const replies = milterReplies(r.reply);
    const added = replies.filter((x) => x[0] === 'h').map((x) => x[1].split('\0')[0]);
    expect(added).toEqual(['X-Spam-Result', 'X-Spam-LLM', 'X-Spam-Score']);
    expect(replies.find((x) => x[0] === 'h' && x[1].startsWith('X-Spam-LLM'))![1]).toContain('COMMERCIAL (Sells watches.)');
    // The upstream copy is deleted (`m` with an empty value).
    expect(replies.some((x) => x[0] === 'm' && x[1].includes('X-Spam-LLM'))).toBe(true);
  });

  it('no verdict (an unknown category): no X-Spam-LLM added, the forged copy still removed', async () => {
    llm.answer = 'Maybe,High,unsure';
    try {
      const { host, port } = s.hostPort('spamd');
      const r = await raw(host, port, `PROCESS SPAMC/1.5\r\nContent-length: ${Buffer.byteLength(MSG)}\r\n\r\n${MSG}`);
      const text = r.reply.toString('utf8');
      expect(text).not.toContain('X-Spam-LLM');
      expect(text).toMatch(/X-Spam-Result: /);
    } finally {
      llm.answer = 'Commercial,Medium,Sells\twatches.';
    }
  });
});
