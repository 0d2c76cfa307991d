/**
 * `ipaddr.js`, loaded with `require`. The package is CommonJS, and an ES `import` of it first scans
 * its source for export names (Node's CommonJS lexer): measurable at every start-up of
 * `spamrule classify`, which `require` does not pay. Same object and types as `import ipaddr from
 * 'ipaddr.js'`.
 */
import { createRequire } from 'node:module';
import type IpAddr from 'ipaddr.js';

const ipaddr = createRequire(import.meta.url)('ipaddr.js') as typeof IpAddr;
// The address classes as types too, so `ipaddr.IPv4` works in type positions as with the package import.
declare namespace ipaddr {
  type IPv4 = IpAddr.IPv4;
  type IPv6 = IpAddr.IPv6;
}
export default ipaddr;
