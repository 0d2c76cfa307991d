/**
 * spamrule's own outbound HTTP (redirect hops, remote list downloads): which addresses it may connect to
 * (public unicast, plus the operator's allowed networks), and connections pinned to the address checked.
 */
export { AddressPolicy, nonPublicRange, parseIpHost, parseNetwork } from './address-policy.js';
export { AddressRefusedError, dnsHostResolver, pinnedLookup, resolveAllowed, systemHostResolver, type HostResolver, type PinnedAddress } from './pinned.js';
export { guardedFetch, type GuardedFetchOptions } from './guarded-fetch.js';
