/**
 * Uploaded blobs (RFC 8620 §6.1): `POST {uploadUrl}` keeps the bytes here until an object takes
 * them (today: `x:SpamTrainingSample`, whose message is copied into the classifier's store) or
 * until they expire. Kept in memory: the RFC lets a server drop a blob no object references after
 * a while ("SHOULD be at least 1 hour"), and the objects that use one store their own copy.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

export interface BlobInfo {
  /** `G` + base64url SHA-256 of the bytes: the same bytes always get the same id. */
  blobId: string;
  /** Media type given at upload (`Content-Type`), `application/octet-stream` when none. */
  type: string;
  /** Bytes. */
  size: number;
}

export interface BlobCacheOptions {
  /** How long an unused blob is kept, in ms (default 1 hour, RFC 8620 §6.1). */
  ttlMs?: number;
  /** Bytes kept at most; the least recently used blobs go first (default 512 MB). */
  maxBytes?: number;
}

export class BlobCache {
  private readonly cache: LRUCache<string, { data: Buffer; type: string }>;

  constructor(opts: BlobCacheOptions = {}) {
    this.cache = new LRUCache({
      ttl: opts.ttlMs ?? 3_600_000,
      maxSize: opts.maxBytes ?? 512 * 1024 * 1024,
      // An empty blob still takes an entry.
      sizeCalculation: (v) => Math.max(1, v.data.length),
    });
  }

  /**
   * Keeps `data`; uploading the same bytes with the same type again renews the blob's lifetime. The type
   * is part of the id, so another client's upload of the same bytes with another type cannot change
   * what this blob downloads as.
   */
  put(data: Buffer, type = 'application/octet-stream'): BlobInfo {
    const blobId = 'G' + createHash('sha256').update(type).update('\0').update(data).digest('base64url');
    this.cache.set(blobId, { data, type });
    return { blobId, type, size: data.length };
  }

  /** The bytes and type of a blob, or undefined when unknown or expired. */
  get(blobId: string): { data: Buffer; type: string } | undefined {
    return this.cache.get(blobId);
  }
}
