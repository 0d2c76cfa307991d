/**
 * The generation records of the classifier's store (store.ts: `classifier:gen:<n>:trainer` and
 * `classifier:gen:<n>:model`) and the checks that refuse a damaged one: a record that is truncated, has
 * bytes changed, is not base64, has a header of another shape or version, counts that do not match its
 * body, or non-finite weights or state raises {@link DamagedRecordError} naming its key, so a classifier
 * keeps the model it has rather than loading wrong weights (docs/classifier.md "Where the model lives").
 */
import { createHash } from 'node:crypto';
import { deflateRawSync, inflateRawSync } from 'node:zlib';
import type { Reservoir } from './store.js';

/**
 * Version of the generation records `pack` writes (header field `v`): 1 adds a SHA-256 trailer over the
 * record, so a damaged record is refused rather than loaded as other weights. Records of earlier versions
 * have no `v` and no trailer (read, with every other check).
 */
const RECORD_VERSION = 1;
const TRAILER = 32;

/**
 * A generation record: deflate-raw of [u32 BE header length][JSON header][body][SHA-256 of all before it],
 * base64. `header.v` is {@link RECORD_VERSION}.
 */
export function pack(parts: ArrayBufferView[], header: object): string {
  const h = Buffer.from(JSON.stringify({ v: RECORD_VERSION, ...header }));
  const len = Buffer.alloc(4);
  len.writeUInt32BE(h.length);
  const payload = Buffer.concat([len, h, ...parts.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength))]);
  return deflateRawSync(Buffer.concat([payload, createHash('sha256').update(payload).digest()])).toString('base64');
}

/** The error of a record that is not what {@link pack} writes (damaged, truncated, foreign or newer). */
export class DamagedRecordError extends Error {
  constructor(
    /** The record's key in the store (`classifier:gen:N:model`, …). */
    readonly key: string,
    why: string,
  ) {
    super(`${key} is damaged (${why}): the model store is damaged; the model in use stays`);
    this.name = 'DamagedRecordError';
  }
}

const BASE64_RE = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The header and body of the record `s` stored under `key`.
 * @throws DamagedRecordError when `s` is not base64, does not inflate, its header is not a JSON object,
 * its version is unknown, or its SHA-256 trailer does not match.
 */
export function unpack(key: string, s: string): { header: Record<string, unknown>; body: Buffer } {
  if (s.length % 4 !== 0 || !BASE64_RE.test(s)) throw new DamagedRecordError(key, 'not base64');
  let b: Buffer;
  try {
    b = inflateRawSync(Buffer.from(s, 'base64'));
  } catch (e) {
    throw new DamagedRecordError(key, `does not inflate: ${e instanceof Error ? e.message : String(e)}`);
  }
  const n = b.length >= 4 ? b.readUInt32BE(0) : -1;
  if (n < 0 || 4 + n > b.length) throw new DamagedRecordError(key, 'truncated header');
  let header: unknown;
  try {
    header = JSON.parse(b.subarray(4, 4 + n).toString());
  } catch {
    throw new DamagedRecordError(key, 'header is not JSON');
  }
  if (header === null || typeof header !== 'object' || Array.isArray(header)) throw new DamagedRecordError(key, 'header is not an object');
  const v = (header as { v?: unknown }).v;
  if (v === undefined) return { header: header as Record<string, unknown>, body: b.subarray(4 + n) };
  if (v !== RECORD_VERSION) throw new DamagedRecordError(key, `version ${JSON.stringify(v)}, this reader knows ${RECORD_VERSION}`);
  const end = b.length - TRAILER;
  if (end < 4 + n || !createHash('sha256').update(b.subarray(0, end)).digest().equals(b.subarray(end))) {
    throw new DamagedRecordError(key, 'checksum mismatch');
  }
  return { header: header as Record<string, unknown>, body: b.subarray(4 + n, end) };
}

/** `header[name]` as a finite number (and at least `min` when given). @throws DamagedRecordError */
export function finiteField(key: string, header: Record<string, unknown>, name: string, min = -Infinity): number {
  const x = header[name];
  if (typeof x !== 'number' || !Number.isFinite(x) || x < min) throw new DamagedRecordError(key, `${name} ${JSON.stringify(x)}`);
  return x;
}

/** `header[name]` as an integer in [min, max]. @throws DamagedRecordError */
export function intField(key: string, header: Record<string, unknown>, name: string, min: number, max: number): number {
  const x = header[name];
  if (typeof x !== 'number' || !Number.isInteger(x) || x < min || x > max) throw new DamagedRecordError(key, `${name} ${JSON.stringify(x)}`);
  return x;
}

/** Largest `bits` / `numFeatures` a record may give (FtrlParameters: 16–28; smaller ones are a caller's choice). */
export const MAX_BITS = 28;

/** `Reservoir` or a damaged-record error. */
export function reservoirField(key: string, header: Record<string, unknown>, name: string): Reservoir {
  const r = header[name] as Partial<Reservoir> | null | undefined;
  if (
    r === null || typeof r !== 'object' || !Array.isArray(r.buffer) || !r.buffer.every((id) => Number.isSafeInteger(id)) ||
    !Number.isSafeInteger(r.totalSeen) || r.totalSeen! < 0
  ) {
    throw new DamagedRecordError(key, `${name} is not a reservoir`);
  }
  return { buffer: r.buffer, totalSeen: r.totalSeen! };
}
