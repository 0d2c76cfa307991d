import { describe, expect, it } from 'vitest';
import { SpamEngine } from '../../src/engine/index.js';
import { capNames, MAX_NAME_LENGTH, parseAddresses } from '../../src/message/headers.js';

describe('display names are capped, addresses never', () => {
  it('keeps the address after a 100,000-character display name', () => {
    const name = 'N'.repeat(100_000);
    expect(parseAddresses(` "${name}" <alice@example.org>\r\n`)).toEqual([{ name: name.slice(0, MAX_NAME_LENGTH), address: 'alice@example.org' }]);
    expect(parseAddresses(` ${name} <alice@example.org>, bob@example.net\r\n`).map((m) => m.address)).toEqual(['alice@example.org', 'bob@example.net']);
    expect(parseAddresses(` (${name}) alice@example.org\r\n`).map((m) => m.address)).toEqual(['alice@example.org']);
  });

  it('keeps quotes, comments and brackets balanced when it shortens', () => {
    const long = 'x'.repeat(5000);
    expect(capNames(`"${long}\\"q" <a@b.example>`)).toBe(`"${'x'.repeat(MAX_NAME_LENGTH)}" <a@b.example>`);
    expect(capNames(`(${long} (nested)) <a@b.example>`)).toBe(`(${'x'.repeat(MAX_NAME_LENGTH)}) <a@b.example>`);
    expect(capNames('short <a@b.example>')).toBe('short <a@b.example>');
  });

  it('classify sees the From address of such a message', async () => {
    const msg = [`From: "${'Z'.repeat(100_000)}" <alice@sender.example>`, 'To: b@example.org', 'Subject: hi', '', 'body', ''].join('\r\n');
    const engine = new SpamEngine({
      analysis: false,
      rules: [{ '@type': 'Any', name: 'FROM_DOMAIN', condition: { match: [{ if: "from.domain == 'sender.example'", then: "'FROM_OK'" }], else: 'false' } }],
    });
    expect((await engine.classify(msg)).tags.filter((t) => !t.startsWith('X_HDR_'))).toEqual(['FROM_OK']);
  });
});
