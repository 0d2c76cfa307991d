/**
 * What a Postfix campaign found in the milter listener, against the wire protocol: a slow SMTP client
 * leaves the MTA's milter connection quiet (libmilter's idle timeout, not spamd's), 8-bit header bytes
 * reach the analysis as sent, a forged verdict header goes even when the message is not scanned, a
 * HELO inside a transaction ends it (as libmilter takes it), and a shutdown between SMTP commands
 * sends no reply the MTA would take for its next command's; and what fuzzing the listener found.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { milterOptneg, milterPacket, milterReplies, raw, startAll, type Started } from './harness.js';

const connect = milterPacket('C', 'client.example.net\x004\x00\x19192.0.2.7\x00');

/** The header replies (`h`) as name → value. */
function added(replies: [string, string][]): Record<string, string> {
  return Object.fromEntries(replies.filter((r) => r[0] === 'h').map((r) => r[1].split('\0').slice(0, 2) as [string, string]));
}

describe('milter edges', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startAll({ workers: 1, limits: { idleTimeoutMs: 300, maxSize: 4096 } });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });

  const milter = async (packets: Buffer[], pauseAfter?: number, pauseMs = 0): Promise<{ replies: [string, string][]; closedBy: string }> => {
    const { host, port } = s.hostPort('milter');
    if (pauseAfter === undefined) {
      const r = await raw(host, port, Buffer.concat(packets), { timeoutMs: 15_000 });
      return { replies: milterReplies(r.reply), closedBy: r.closedBy };
    }
    const { connect: open } = await import('node:net');
    return new Promise((resolve, reject) => {
      const sock = open(port, host);
      const chunks: Buffer[] = [];
      let closedBy = 'client';
      sock.on('data', (c: Buffer) => chunks.push(c));
      sock.on('error', reject);
      sock.on('end', () => (closedBy = 'server'));
      sock.on('close', () => resolve({ replies: milterReplies(Buffer.concat(chunks)), closedBy }));
      sock.write(Buffer.concat(packets.slice(0, pauseAfter)));
      setTimeout(() => {
        if (!sock.destroyed) sock.write(Buffer.concat(packets.slice(pauseAfter))); // Q closes it
      }, pauseMs);
    });
  };

  it('keeps a quiet milter connection open past spamd\'s idle timeout (the MTA waits for a slow client)', async () => {
    const r = await milter(
      [milterOptneg(), connect, milterPacket('M', '<a@example.org>\x00'), milterPacket('R', '<b@example.org>\x00'), milterPacket('L', 'Subject\x00 slow client\x00'), milterPacket('N'), milterPacket('B', 'hello\r\n'), milterPacket('E'), milterPacket('Q')],
      4,
      1_000, // over idleTimeoutMs (300), far below milterIdleTimeoutMs (libmilter's 7210 s)
    );
    expect(added(r.replies)['X-Spam-Score']).toMatch(/^ ?(ham|spam), score=/);
  });

  it('passes 8-bit header bytes to the analysis as sent (INVALID_FROM_8BIT, as classify finds it)', async () => {
    const from = Buffer.from('From\0 J\xf6rg M\xfcller <jorg@example.org>\0', 'latin1');
    const r = await milter([milterOptneg(), connect, milterPacket('M', '<jorg@example.org>\x00BODY=8BITMIME\x00'), milterPacket('R', '<b@example.org>\x00'), milterPacket('L', from), milterPacket('L', 'Subject\x00 hi\x00'), milterPacket('N'), milterPacket('B', 'hello\r\n'), milterPacket('E'), milterPacket('Q')]);
    expect(added(r.replies)['X-Spam-Result']).toContain('INVALID_FROM_8BIT');
    // The same bytes through the engine directly, with the same session.
    const direct = await s.pool.classify(Buffer.from('From: J\xf6rg M\xfcller <jorg@example.org>\r\nSubject: hi\r\n\r\nhello\r\n', 'latin1'), {
      session: { remoteIp: '192.0.2.7', mailFrom: 'jorg@example.org', rcptTo: ['b@example.org'], eightBitMime: true, iprev: { result: 'pass', ptr: ['client.example.net'] } },
    });
    expect(direct.tags).toContain('INVALID_FROM_8BIT');
  });

  it('deletes forged verdict headers from a message it does not scan (over maxSize)', async () => {
    const r = await milter([
      milterOptneg(),
      connect,
      milterPacket('M', '<a@example.org>\x00'),
      milterPacket('R', '<b@example.org>\x00'),
      milterPacket('L', 'X-Spam-Score\x00 ham, score=-100.00\x00'),
      milterPacket('L', 'X-Spam-Note\x00 forged\x00'),
      milterPacket('N'),
      milterPacket('B', 'x'.repeat(5000)),
      milterPacket('E'),
      milterPacket('Q'),
    ]);
    const tail = r.replies.slice(-4);
    expect(tail.slice(0, 2)).toEqual([
      ['m', '\0\0\0\x01X-Spam-Score\0\0'],
      ['m', '\0\0\0\x01X-Spam-Note\0\0'],
    ]);
    expect(tail[2]![0]).toBe('h');
    expect(tail[2]![1]).toMatch(/^X-Spam-Note\0 ?message larger than/);
    expect(tail[3]).toEqual(['c', '']);
  });

  it('takes a HELO inside a transaction as its end, and scans the next message', async () => {
    const before = (await s.server.metrics.protocolErrors.get()).values.find((v) => v.labels.protocol === 'milter')?.value ?? 0;
    const r = await milter([
      milterOptneg(),
      connect,
      milterPacket('H', 'client.example.net\x00'),
      milterPacket('M', '<a@example.org>\x00'),
      milterPacket('R', '<b@example.org>\x00'),
      milterPacket('H', 'client.example.net\x00'), // EHLO again: RFC 5321 §4.1.4 resets the transaction
      milterPacket('M', '<a@example.org>\x00'),
      milterPacket('R', '<c@example.org>\x00'),
      milterPacket('L', 'Subject\x00 second\x00'),
      milterPacket('N'),
      milterPacket('B', 'hello\r\n'),
      milterPacket('E'),
      milterPacket('Q'),
    ]);
    expect(added(r.replies)['X-Spam-Score']).toMatch(/score=/);
    expect((await s.server.metrics.protocolErrors.get()).values.find((v) => v.labels.protocol === 'milter')?.value ?? 0).toBe(before);
  });
});

describe('milter: what fuzzing the listener found (test/server/fuzz-milter.test.ts)', () => {
  let s: Started;
  beforeAll(async () => {
    s = await startAll({ workers: 1 });
  }, 60_000);
  afterAll(async () => {
    await s?.close();
  });
  const letters = (reply: Buffer): string =>
    milterReplies(reply)
      .map((r) => r[0])
      .join('');

  it('sends the verdict to an MTA that half-closes after its last packet (O, M, E, Q, then FIN)', async () => {
    // Was: Node ended our side at the client's FIN while the scan ran, and the verdict was dropped ('Oc').
    const { host, port } = s.hostPort('milter');
    const r = await raw(host, port, Buffer.concat([milterOptneg(), milterPacket('M', '<a@example.org>\0'), milterPacket('E'), milterPacket('Q')]), { halfClose: true });
    expect(r.closedBy).toBe('server');
    expect(letters(r.reply)).toMatch(/^Och+c$/);
    // Without Q: the same replies, and the connection still closes.
    const noQuit = await raw(host, port, Buffer.concat([milterOptneg(), milterPacket('M', '<a@example.org>\0'), milterPacket('E')]), { halfClose: true });
    expect(noQuit.closedBy).toBe('server');
    expect(noQuit.reply.equals(r.reply)).toBe(true);
  });

  it('answers the packets that came before a bad length in the same read, then closes (O, C, then 0xa1f2e6ee)', async () => {
    // Was: the reader's error closed the connection before the packets completed in the same chunk were
    // handled, so the replies depended on where TCP cut the stream ('' whole, 'Oc' in two writes).
    const { host, port } = s.hostPort('milter');
    const before = (await s.server.metrics.protocolErrors.get()).values.find((v) => v.labels.protocol === 'milter')?.value ?? 0;
    const bad = Buffer.from([0xa1, 0xf2, 0xe6, 0xee, 0xb2, 0x03]);
    const r = await raw(host, port, Buffer.concat([milterOptneg(), milterPacket('C', 'unknown\x006\x00\x19192.0.2.7\x00'), bad, milterPacket('Q')]));
    expect(r.closedBy).toBe('server');
    expect(letters(r.reply)).toBe('Oc');
    expect((await s.server.metrics.protocolErrors.get()).values.find((v) => v.labels.protocol === 'milter')?.value).toBe(before + 1);
    // With a scan under way when the bad length is read: its verdict first.
    const scanned = await raw(host, port, Buffer.concat([milterOptneg(), milterPacket('M', '<a@example.org>\0'), milterPacket('E'), Buffer.from([0, 0, 0, 0])]));
    expect(scanned.closedBy).toBe('server');
    expect(letters(scanned.reply)).toMatch(/^Och+c$/);
  });
});

describe('milter at the end of a shutdown grace period', () => {
  it('between SMTP commands closes without a reply; with content under way it sends tempfail', async () => {
    const s = await startAll({ workers: 1 });
    const { host, port } = s.hostPort('milter');
    const { connect: open } = await import('node:net');
    const client = (packets: Buffer): Promise<{ sock: import('node:net').Socket; replies: () => [string, string][]; closed: Promise<void> }> =>
      new Promise((resolve, reject) => {
        const sock = open(port, host, () => {
          sock.write(packets);
          setTimeout(() => resolve({ sock, replies: () => milterReplies(Buffer.concat(chunks)), closed }), 200);
        });
        const chunks: Buffer[] = [];
        const closed = new Promise<void>((r) => sock.on('close', () => r()));
        sock.on('data', (c: Buffer) => chunks.push(c));
        sock.on('error', reject);
      });
    // One between RCPTs, one sending its body.
    const envelope = await client(Buffer.concat([milterOptneg(), connect, milterPacket('M', '<a@example.org>\x00'), milterPacket('R', '<b@example.org>\x00')]));
    const content = await client(Buffer.concat([milterOptneg(), connect, milterPacket('M', '<a@example.org>\x00'), milterPacket('R', '<b@example.org>\x00'), milterPacket('L', 'Subject\x00 x\x00'), milterPacket('N'), milterPacket('B', 'part ')]));
    const before = [envelope.replies().length, content.replies().length];
    await s.server.close(300);
    await Promise.all([envelope.closed, content.closed]);
    expect(envelope.replies().slice(before[0])).toEqual([]);
    expect(content.replies().slice(before[1])).toEqual([['t', '']]);
    await s.pool.close();
  }, 60_000);
});
