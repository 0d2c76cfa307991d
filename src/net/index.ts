/**
 * spamrule's own outbound HTTP (redirect hops, remote list downloads): which addresses it may connect to
 * (public unicast, plus the operator's allowed networks), and connections pinned to the address checked;
 * and, for its listeners, the caps on incoming connections (in all and per peer).
 */
export { AddressPolicy, nonPublicRange, parseIpHost, parseNetwork } from './address-policy.js';
export { AddressRefusedError, dnsHostResolver, pinnedLookup, resolveAllowed, systemHostResolver, type HostResolver, type PinnedAddress } from './pinned.js';
export { guardedFetch, type GuardedFetchOptions } from './guarded-fetch.js';
export { ConnectionCaps, peerKey, type ConnectionRefusal } from './connection-caps.js';
