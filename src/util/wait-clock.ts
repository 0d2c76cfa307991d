/**
 * The time during which at least one of several overlapping waits is in progress (milliseconds): waits
 * that run side by side count once, as the message waits for them once. The engine adds it to the
 * classify time budget, which bounds a message's own work, not its waits (docs/dns.md, "Per-message budget").
 */
export class WaitClock {
  private waiting = 0;
  private since = 0;
  private waited = 0;

  /** Awaits `p`, counting the time until it settles (or rejects). */
  async time<T>(p: Promise<T>): Promise<T> {
    if (this.waiting++ === 0) this.since = performance.now();
    try {
      return await p;
    } finally {
      if (--this.waiting === 0) this.waited += performance.now() - this.since;
    }
  }

  /** Time waited so far (ms), a wait still in progress included. */
  waitedMs(): number {
    return this.waited + (this.waiting > 0 ? performance.now() - this.since : 0);
  }
}
