/**
 * The caps on training samples taken over the mail-path protocols (rspamd's `/learnspam` and
 * `/learnham` with `--allow-learn`, spamd's `TELL` with `--allow-tell`): a sample size, and a rate
 * for all clients together. The classifier's store keeps every sample it is given (it only cuts a
 * message to its first 8 MiB, `MAX_SAMPLE_BYTES`): ten unchecked 8 MB requests added 107 MB to the
 * model file, and whoever may learn may also poison the model, so a flood is refused rather than
 * stored.
 */

/** Why a learn request was refused by the gate. */
export type LearnRefusal = { reason: 'rate'; retryAfterS: number } | { reason: 'too_large'; maxSize: number };

export class LearnGate {
  private tokens: number;
  private last: number;

  /**
   * `perMinute`: samples per minute, all clients together (0 = no limit); a burst of up to that many
   * is taken at once, then one every 60 000 / perMinute ms (a token bucket). `maxSize`: the largest
   * sample, in bytes. `now`: the clock, in ms.
   */
  constructor(
    private readonly perMinute: number,
    readonly maxSize: number,
    private readonly now: () => number = Date.now,
  ) {
    this.tokens = perMinute;
    this.last = now();
  }

  /**
   * Takes one sample from the allowance, given its announced size in bytes (undefined: not known
   * before the body is read; the body is then capped at {@link maxSize} as it arrives). Returns
   * why not, or undefined when it may be learned. A refused request takes nothing.
   */
  admit(size?: number): LearnRefusal | undefined {
    if (size !== undefined && size > this.maxSize) return { reason: 'too_large', maxSize: this.maxSize };
    if (this.perMinute <= 0) return undefined;
    const t = this.now();
    this.tokens = Math.min(this.perMinute, this.tokens + ((t - this.last) * this.perMinute) / 60_000);
    this.last = t;
    if (this.tokens < 1) return { reason: 'rate', retryAfterS: Math.max(1, Math.ceil(((1 - this.tokens) * 60_000) / this.perMinute / 1000)) };
    this.tokens -= 1;
    return undefined;
  }

  /** The refusal's words, for an error reply or a log line. */
  static describe(r: LearnRefusal): string {
    return r.reason === 'rate'
      ? `too many training samples (limits.learnPerMinute); try again in ${r.retryAfterS} s`
      : `training sample larger than the ${r.maxSize} bytes limit (limits.maxLearnSize); not learned`;
  }
}
