/** The resolver for `--dns off`: no network at all. */
import type { DnsAnswer, DnsType, Resolver } from './types.js';

const OFF: DnsAnswer<never> = Object.freeze({ status: 'error', error: 'DNS is off' });

/** Every query answers `error` "DNS is off" at once, so checks that need DNS set no tag (as on a DNS failure). */
export class OffResolver implements Resolver {
  query<T extends DnsType>(_name: string, _type: T): Promise<DnsAnswer<T>> {
    return Promise.resolve(OFF);
  }
}
