/**
 * One budget of request bytes held in memory by every listener together (`limits.maxBufferedBytes`).
 * Each listener buffers a whole message before it can ask for a scan slot, so without it memory
 * grows with connections (`maxConnections` × `maxSize` per listener) rather than with the work the
 * workers can do. Bytes are taken as they arrive, before they are kept, and a request whose next
 * bytes do not fit is refused at once with its protocol's temporary failure (docs/deployment.md,
 * "Limits and back-pressure", says why refusing beats pausing the socket).
 */

/** The shared count: bytes held by all leases, never above `limit`. */
export class ByteBudget {
  private usedBytes = 0;
  private peakBytes = 0;

  /** `limit`: bytes (a positive integer). */
  constructor(readonly limit: number) {
    if (!Number.isSafeInteger(limit) || limit <= 0) throw new RangeError(`the buffer budget must be a positive number of bytes, not ${limit}`);
  }

  /** Bytes held now. */
  get used(): number {
    return this.usedBytes;
  }

  /** The most bytes held at once since the budget was made (what the memory bound is checked against). */
  get peak(): number {
    return this.peakBytes;
  }

  /** A holder of bytes for one request or connection, holding nothing yet. */
  lease(): BudgetLease {
    return new BudgetLease(this);
  }

  /** Takes `n` bytes if they fit under the limit; false (and nothing taken) when they do not. */
  take(n: number): boolean {
    if (this.usedBytes + n > this.limit) return false;
    this.usedBytes += n;
    if (this.usedBytes > this.peakBytes) this.peakBytes = this.usedBytes;
    return true;
  }

  /** Gives back `n` bytes taken before. */
  give(n: number): void {
    this.usedBytes -= n;
  }
}

/**
 * The bytes one request (or one milter connection) holds. Whatever it holds goes back with
 * {@link release}, which the listener calls when the request is answered or its connection closes.
 */
export class BudgetLease {
  private heldBytes = 0;
  private ended = false;

  constructor(private readonly budget: ByteBudget) {}

  /** Bytes held by this lease. */
  get held(): number {
    return this.heldBytes;
  }

  /** Takes `n` more bytes; false (nothing taken) when the budget has not that much left, or the lease has ended. */
  take(n: number): boolean {
    if (n <= 0) return true;
    if (this.ended || !this.budget.take(n)) return false;
    this.heldBytes += n;
    return true;
  }

  /**
   * Holds exactly `n` bytes from now on: a smaller `n` gives the difference back, a larger one takes
   * it. False (the lease unchanged) when the growth does not fit.
   */
  resize(n: number): boolean {
    if (n < this.heldBytes) {
      this.budget.give(this.heldBytes - n);
      this.heldBytes = n;
      return true;
    }
    return this.take(n - this.heldBytes);
  }

  /** Gives back everything held. Idempotent. */
  release(): void {
    this.resize(0);
  }

  /**
   * Gives back everything and takes nothing more: the connection is gone, and work still finishing
   * for it (a scan, an inflate) must not take bytes that nobody would give back. Idempotent.
   */
  end(): void {
    this.release();
    this.ended = true;
  }
}
