import PostalMime from 'postal-mime';
import { describe, expect, it } from 'vitest';
import { concatParts, installFastDecoders } from '../../src/message/postal-fast.js';

describe('postal-mime fast decoder finalize', () => {
  it('concatenates parts byte for byte as the Blob constructor does', async () => {
    const parts = [
      new Uint8Array([1, 2, 3]),
      '\n',
      new Uint8Array([9, 8, 7, 6]).subarray(1, 3),
      new Uint8Array([5, 5]).buffer,
      'é€',
      new DataView(new Uint8Array([0xff, 0, 0xfe]).buffer, 1, 2),
    ];
    const expected = new Uint8Array(await new Blob(parts).arrayBuffer());
    const got = new Uint8Array(concatParts(parts));
    expect([...got]).toEqual([...expected]);
    expect([...got]).toEqual([1, 2, 3, 10, 8, 7, 5, 5, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0, 0xfe]);
  });

  it('leaves postal-mime output unchanged for 7bit, base64 and quoted-printable parts', async () => {
    // This file does not import parse.ts, so postal-mime starts unpatched here.
    const raw = [
      'From: a@example.com',
      'Subject: t',
      'Content-Type: multipart/mixed; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'line one',
      'line two',
      '--b',
      'Content-Type: text/plain; charset=utf-8',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('caf\u00e9 base64 body\n').toString('base64'),
      '--b',
      'Content-Type: text/html; charset=utf-8',
      'Content-Transfer-Encoding: quoted-printable',
      '',
      '<p>caf=C3=A9 =',
      'soft</p>',
      '--b',
      'Content-Type: application/octet-stream',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from([0, 1, 2, 250]).toString('base64'),
      '--b--',
      '',
    ].join('\r\n');
    const before = await PostalMime.parse(Buffer.from(raw));
    installFastDecoders();
    installFastDecoders(); // idempotent
    const nodeProto = Object.getPrototypeOf((new PostalMime() as unknown as { root: object }).root) as Record<symbol, unknown>;
    expect(nodeProto[Symbol.for('spamrule.fastFinalize')]).toBe(true);
    const email = await PostalMime.parse(Buffer.from(raw));
    expect(email).toEqual(before);
    expect(email.text).toContain('café base64 body');
    expect(email.attachments).toHaveLength(1);
    expect([...new Uint8Array(email.attachments[0]!.content as ArrayBuffer)]).toEqual([0, 1, 2, 250]);
  });
});
