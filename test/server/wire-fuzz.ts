/**
 * What the listener fuzz suites (fuzz-milter, fuzz-spamd, fuzz-rspamd) share: a raw client that
 * sends a byte stream in pieces, each in its own TCP segment, and the arbitraries that cut a stream
 * at arbitrary byte boundaries.
 */
import { connect } from 'node:net';
import fc from 'fast-check';
import type { Started } from './harness.js';

/** What came back on one connection: every byte the server sent, and who ended it. */
export interface Exchange {
  reply: Buffer;
  closedBy: 'server' | 'timeout';
}

/**
 * Sends `parts` on a new connection, one write each, waiting until each has left (and a tick more)
 * before the next so that the server reads them as separate chunks; then half-closes when
 * `halfClose` (the default) and collects everything until the server closes or `timeoutMs` passes.
 */
export function sendParts(host: string, port: number, parts: readonly Uint8Array[], opts: { halfClose?: boolean; timeoutMs?: number } = {}): Promise<Exchange> {
  return new Promise((resolve) => {
    const s = connect(port, host);
    s.setNoDelay(true);
    const chunks: Buffer[] = [];
    let done = false;
    const finish = (closedBy: Exchange['closedBy']): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ reply: Buffer.concat(chunks), closedBy });
    };
    const timer = setTimeout(() => finish('timeout'), opts.timeoutMs ?? 10_000);
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('close', () => finish('server'));
    // The server may close mid-stream (a protocol error): a write after that fails, which is expected.
    s.on('error', () => undefined);
    let i = 0;
    const next = (): void => {
      if (done || s.destroyed) return;
      if (i >= parts.length) {
        if (opts.halfClose ?? true) s.end();
        return;
      }
      s.write(parts[i++]!, () => setTimeout(next, 1));
    };
    s.once('connect', next);
  });
}

/** `buf` cut at `cuts` (offsets, any order, duplicates and out-of-range ones ignored): the pieces in order. */
export function splitAt(buf: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.filter((c) => c > 0 && c < buf.length))].sort((a, b) => a - b);
  const out: Buffer[] = [];
  let prev = 0;
  for (const c of at) {
    out.push(buf.subarray(prev, c));
    prev = c;
  }
  out.push(buf.subarray(prev));
  return out;
}

/** Up to `max` cut points, as fractions of a stream's length (so they fit whatever stream they cut). */
export const cutFractions = (max = 6): fc.Arbitrary<number[]> => fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: max });

/** `fractions` of `length` as byte offsets. */
export function offsets(fractions: readonly number[], length: number): number[] {
  return fractions.map((f) => Math.floor(f * length));
}

/**
 * Waits until `s` holds no connection of `protocol` and nothing in its buffer budget (what a
 * connection that leaked a lease, a timer or a socket would keep); throws with what is left after `ms`.
 */
export async function expectDrained(s: Started, protocol: 'milter' | 'spamd' | 'rspamd', ms = 5_000): Promise<void> {
  const until = Date.now() + ms;
  const open = async (): Promise<number> => (await s.server.metrics.connections.get()).values.find((v) => v.labels.protocol === protocol)?.value ?? 0;
  for (;;) {
    const n = await open();
    const held = s.server.scanner.budget.used;
    if (n === 0 && held === 0 && s.server.scanner.depth === 0) return;
    if (Date.now() > until) throw new Error(`${protocol}: ${n} connections still open, ${held} bytes still held, ${s.server.scanner.depth} scans under way`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
