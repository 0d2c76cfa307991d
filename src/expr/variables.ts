/**
 * Name tables of the expression language (docs/expression-language.md): the 92
 * `ExpressionVariable` names, the 19 `ExpressionConstant` names, and the allow-lists of the
 * SpamRule / DNSBL contexts. Checked against `registry-subset.json` (`enums.ExpressionVariable`,
 * `enums.ExpressionConstant`) by `test/expr/variables.test.ts`.
 */
import { Constant } from './value.js';

/** All ExpressionVariable names, in schema enum order. */
export const EXPRESSION_VARIABLES: readonly string[] = Object.freeze(
  (
    'asn attributes authenticated_as authority bcc bcc.domain bcc.local bcc.name body body.html body.raw body.text ' +
    'body.words cc cc.domain cc.local cc.name country domain email email_lower env_from env_from.domain env_from.local ' +
    'env_to expires_in from from.domain from.local from.name headers helo_domain host ip ip_reverse is_tls is_v4 is_v6 ' +
    'last_error last_status listener local local_ip local_port location method mx name name_lower notify_num octets ' +
    'path path_query port priority protocol query queue_age queue_name raw raw_lower rcpt rcpt_domain received_from_ip ' +
    'received_via_port recipients remote_ip remote_ip.ptr remote_port reply_to reply_to.domain reply_to.local ' +
    'reply_to.name retry_num reverse_ip scheme sender sender_domain size sld source subject subject.thread ' +
    'subject.words to to.domain to.local to.name url url_original value value_lower'
  ).split(' '),
);

/** All ExpressionConstant names, in enum order (the ordinal orders constants, §2.5). */
export const EXPRESSION_CONSTANTS: readonly string[] = Constant.NAMES;

const VARIABLE_SET = new Set(EXPRESSION_VARIABLES);
export function isExpressionVariable(name: string): boolean {
  return VARIABLE_SET.has(name);
}
export function isExpressionConstant(name: string): boolean {
  return Constant.of(name) !== undefined;
}

/** SPAM_DEFAULT_VARIABLE: the "generic" message variables every spam scope sees (§3.3). */
export const SPAM_DEFAULT_VARIABLES: readonly string[] = Object.freeze(
  (
    'remote_ip remote_ip.ptr helo_domain authenticated_as asn country is_tls env_from env_from.local env_from.domain ' +
    'env_to from from.name from.local from.domain reply_to reply_to.name reply_to.local reply_to.domain to to.name ' +
    'to.local to.domain cc cc.name cc.local cc.domain bcc bcc.name bcc.local bcc.domain body body.text body.html ' +
    'body.words body.raw subject subject.thread subject.words location'
  ).split(' '),
);

const withDefault = (extra: string): readonly string[] => Object.freeze([...extra.split(' '), ...SPAM_DEFAULT_VARIABLES]);

export const SPAM_GENERIC_VARIABLES = withDefault('value');
export const SPAM_EMAIL_VARIABLES = withDefault('email value name local domain sld');
export const SPAM_HEADER_VARIABLES = withDefault('name name_lower value value_lower attributes raw raw_lower');
export const SPAM_IP_VARIABLES = withDefault('ip value reverse_ip ip_reverse octets is_v4 is_v6');
export const SPAM_URL_VARIABLES = withDefault('url url_original value path_query path query scheme authority host sld port');

export type SpamRuleScope = 'Any' | 'Url' | 'Domain' | 'Email' | 'Ip' | 'Header' | 'Body';

/**
 * Variables allowed in a SpamRule `condition`, by the rule's `@type` (Stalwart
 * `structs_impl.rs` ctx functions): Any, Domain and Body share the generic list.
 * Constants are unrestricted in every spam context (an empty list allows all 19).
 */
export const SPAM_RULE_VARIABLES: Readonly<Record<SpamRuleScope, readonly string[]>> = Object.freeze({
  Any: SPAM_GENERIC_VARIABLES,
  Domain: SPAM_GENERIC_VARIABLES,
  Body: SPAM_GENERIC_VARIABLES,
  Email: SPAM_EMAIL_VARIABLES,
  Header: SPAM_HEADER_VARIABLES,
  Ip: SPAM_IP_VARIABLES,
  Url: SPAM_URL_VARIABLES,
});

/** Variables of a DNSBL server's `tag` expression: evaluated against the answer IP (SPAM_IP). */
export const DNSBL_TAG_VARIABLES: readonly string[] = SPAM_IP_VARIABLES;

/** `system('…')` names (Stalwart `SystemVariable`). */
export const SYSTEM_VARIABLES: readonly string[] = Object.freeze(['domain', 'hostname', 'node_id', 'node_hostname', 'node_role']);
