/** A resolver specification or configuration that cannot be used (bad `--dns` spec, server address, static file). */
export class DnsConfigError extends Error {
  override readonly name = 'DnsConfigError';
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}
