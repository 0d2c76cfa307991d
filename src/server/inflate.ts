/**
 * Inflating a zlib body (spamd's `Compress: zlib`) without letting it grow past the size cap or the
 * buffer budget: a body of 160 KB can inflate to 47 MB (×294), so the inflated bytes are counted as
 * zlib produces them, not once the whole message is out.
 */
import { createInflate } from 'node:zlib';
import type { BudgetLease } from './budget.js';

/** Why a body did not inflate: over `max`, over the buffer budget, or not zlib data. */
export type InflateFailure = 'too_large' | 'buffer_full' | 'corrupt';

export type InflateResult = { ok: true; body: Buffer } | { ok: false; reason: InflateFailure; size: number };

/**
 * Inflates zlib `data` (RFC 1950) in zlib's thread pool, never on the event loop every connection
 * shares. Each output chunk is taken from `lease` before it is kept and counted against `max`
 * (bytes); inflating stops at the first that does not fit. Resolves (never rejects) to the body
 * or to why not, with the bytes inflated so far (`size`). On failure the lease still holds what
 * was taken for the dropped chunks: the caller resizes or releases it.
 */
export function inflateWithin(data: Uint8Array, max: number, lease: BudgetLease): Promise<InflateResult> {
  return new Promise((resolve) => {
    const z = createInflate({ chunkSize: 64 * 1024 });
    const parts: Buffer[] = [];
    let size = 0;
    let done = false;
    const stop = (reason: InflateFailure): void => {
      if (done) return;
      done = true;
      parts.length = 0;
      z.destroy();
      resolve({ ok: false, reason, size });
    };
    z.on('data', (c: Buffer) => {
      if (done) return;
      size += c.length;
      if (size > max) return stop('too_large');
      if (!lease.take(c.length)) return stop('buffer_full');
      parts.push(c);
    });
    z.on('error', () => stop('corrupt'));
    z.on('end', () => {
      if (done) return;
      done = true;
      const body = Buffer.concat(parts, size);
      parts.length = 0;
      resolve({ ok: true, body });
    });
    z.end(data);
  });
}
