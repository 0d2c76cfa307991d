/**
 * The built-in function table (docs/expression-language.md): every named function except the
 * special forms `matches`/`system`/`metric`, which the compiler handles itself.
 *
 * Sync functions are pure and never throw; async ones (store, directory, DNS) reject with
 * `ExprEvalError`. Arity is fixed and checked by the compiler at parse time.
 */
import { ARRAY_FUNCTIONS } from './array.js';
import { DNS_FUNCTIONS } from './dns.js';
import { EMAIL_FUNCTIONS } from './email.js';
import { IP_FUNCTIONS } from './ip.js';
import { MISC_FUNCTIONS } from './misc.js';
import { STORE_FUNCTIONS } from './store.js';
import { TEXT_FUNCTIONS } from './text.js';
import type { FunctionDef } from './types.js';

export type { FunctionDef, SyncFunctionDef, AsyncFunctionDef } from './types.js';
export { setDnsResolver, type DnsResolver } from './dns.js';
export { isEmailValid } from './email.js';
export { parseIp, parseIpv4, parseIpv6, ipInCidr, ipReverseName, type ParsedIp } from './ip.js';

/** Name → definition for all named functions (not the special forms `matches`/`system`/`metric`). */
export const FUNCTIONS: Readonly<Record<string, FunctionDef>> = Object.freeze({
  ...ARRAY_FUNCTIONS,
  ...EMAIL_FUNCTIONS,
  ...TEXT_FUNCTIONS,
  ...IP_FUNCTIONS,
  ...MISC_FUNCTIONS,
  ...STORE_FUNCTIONS,
  ...DNS_FUNCTIONS,
});
