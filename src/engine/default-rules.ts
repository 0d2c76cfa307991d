/**
 * spamrule's own default rule set, used when no `--rules` file is given. Written by us (not
 * Stalwart's), covering all seven scopes; documented tag by tag in `docs/default-rules.md`.
 * Conditions use only pure functions, so the set runs without any lookup store.
 */
import type { SpamRuleInput, SpamTagInput } from './types.js';

type Scope = SpamRuleInput['@type'];

function rule(scope: Scope, name: string, priority: number, cond: string, tag: string): SpamRuleInput {
  return { '@type': scope, name, enable: true, priority, condition: { match: [{ if: cond, then: `'${tag}'` }], else: 'false' } };
}

const SHORTENERS = "['bit.ly','tinyurl.com','t.co','goo.gl','ow.ly','is.gd','buff.ly','rebrand.ly','cutt.ly','shorturl.at','tiny.cc','rb.gy']";
const FREEMAIL = "['gmail.com','googlemail.com','yahoo.com','hotmail.com','outlook.com','live.com','aol.com','mail.ru','gmx.com','gmx.net','yandex.ru','icloud.com','proton.me','protonmail.com']";
const ABUSED_TLDS = "['zip','mov','xyz','top','click','work','country','kim','gq','tk','ml','cf','ga','loan','download','racing','review','stream']";

/** The default SpamRules (Url → Domain → Email → Ip → Header → Body → Any). */
export const DEFAULT_RULES: readonly SpamRuleInput[] = [
  // Url
  rule('Url', 'SR_URL_NUMERIC_IP', 100, "is_ip_addr(host)", 'URL_NUMERIC_IP'),
  rule('Url', 'SR_URL_SHORTENER', 110, `contains(${SHORTENERS}, sld)`, 'URL_SHORTENER'),
  // mailto:user@host has no userinfo (RFC 6068: the address is the path), but Stalwart's URL parsing reads
  // such a link as an authority (scheme empty, authority "mailto:user@host"), '@' included.
  rule('Url', 'SR_URL_USERINFO', 120, "!starts_with(url, 'mailto:') && contains(authority, '@')", 'URL_HAS_USERINFO'),
  rule('Url', 'SR_URL_ODD_PORT', 130, 'port > 0 && port != 80 && port != 443', 'URL_NONSTANDARD_PORT'),
  rule('Url', 'SR_URL_ABUSED_TLD', 140, `contains(${ABUSED_TLDS}, rsplit(host, '.')[0])`, 'URL_ABUSED_TLD'),
  // Domain
  rule('Domain', 'SR_DOMAIN_MANY_HYPHENS', 200, "count(split(value, '-')) > 4", 'DOMAIN_MANY_HYPHENS'),
  rule('Domain', 'SR_DOMAIN_LONG_LABEL', 210, "len(split(value, '.')[0]) > 40", 'DOMAIN_LONG_LABEL'),
  // Email
  rule('Email', 'SR_FREEMAIL_FROM', 300, `location == 'from' && contains(${FREEMAIL}, domain)`, 'FREEMAIL_FROM'),
  rule('Email', 'SR_FREEMAIL_REPLYTO', 310, `location == 'reply_to' && contains(${FREEMAIL}, domain)`, 'FREEMAIL_REPLYTO'),
  rule('Email', 'SR_RCPT_NO_DOMAIN', 320, "(location == 'to' || location == 'cc') && !is_empty(email) && !is_email(email)", 'RCPT_INVALID_ADDRESS'),
  rule('Email', 'SR_FROM_LONG_DIGITS', 330, "location == 'from' && len(local) > 12 && has_digits(local) && count(split(local, '.')) == 1", 'FROM_LOCAL_DIGITS'),
  // Ip
  rule('Ip', 'SR_RCVD_PRIVATE_IP', 400, "location == 'received' && (is_ip_in_cidr(ip, '10.0.0.0/8') || is_ip_in_cidr(ip, '172.16.0.0/12') || is_ip_in_cidr(ip, '192.168.0.0/16'))", 'RCVD_PRIVATE_IP'),
  rule('Ip', 'SR_TCP_NO_PTR', 410, "location == 'tcp' && is_empty(remote_ip.ptr) && !is_ip_in_cidr(ip, '127.0.0.0/8')", 'RDNS_NONE'),
  rule('Ip', 'SR_BODY_IP', 420, "location == 'body_text' && is_v4", 'BODY_NUMERIC_IP'),
  // Header
  rule('Header', 'SR_XM_PHPMAILER', 500, "(name_lower == 'x-mailer' || name_lower == 'user-agent') && contains_ignore_case(value, 'phpmailer')", 'XM_PHPMAILER'),
  rule('Header', 'SR_PRECEDENCE_BULK', 510, "name_lower == 'precedence' && contains(['bulk', 'junk'], trim(value_lower))", 'PRECEDENCE_BULK'),
  rule('Header', 'SR_UPSTREAM_SPAM_FLAG', 520, "name_lower == 'x-spam-flag' && trim(value_lower) == 'yes'", 'UPSTREAM_SPAM_FLAG'),
  rule('Header', 'SR_MSGID_NO_DOMAIN', 530, "name_lower == 'message-id' && !contains(raw, '@')", 'MID_NO_DOMAIN'),
  // Body
  rule('Body', 'SR_GTUBE', 600, "contains(value, 'XJS*C4JDBQADN1.NSBN3*2IDNEN*GTUBE-STANDARD-ANTI-UBE-TEST-EMAIL*C.34X')", 'GTUBE'),
  rule('Body', 'SR_LOTTERY_WORDS', 610, "matches('(?i)\\b(lottery|jackpot|you have (been selected|won))\\b', value)", 'LOTTERY_WORDS'),
  rule('Body', 'SR_LARGE_MONEY', 620, "matches('[$€£]\\s?[0-9]{1,3}(,[0-9]{3}){2,}', value)", 'BODY_LARGE_MONEY'),
  rule('Body', 'SR_URGENT_ACTION', 630, "matches('(?i)\\b(act now|urgent(ly)? (reply|response)|verify your account)\\b', value)", 'BODY_URGENCY'),
  // Any
  rule('Any', 'SR_MISSING_SUBJECT', 700, 'is_empty(subject)', 'MISSING_SUBJECT'),
  rule('Any', 'SR_MISSING_FROM', 710, 'is_empty(from)', 'MISSING_FROM'),
  rule('Any', 'SR_REPLYTO_NEQ_FROM', 720, '!is_empty(reply_to.domain) && !is_empty(from.domain) && reply_to.domain != from.domain', 'REPLYTO_DOM_NEQ_FROM_DOM'),
  rule('Any', 'SR_SUBJECT_SHOUTING', 730, "contains(subject, '!!!') || contains(subject, '$$$') || starts_with(subject, 'free ')", 'SUBJECT_SHOUTING'),
  rule('Any', 'SR_FREEMAIL_REPLYTO_DIFFERS', 740, '$FREEMAIL_REPLYTO && !$FREEMAIL_FROM', 'FREEMAIL_REPLYTO_NEQ_FROM'),
  rule('Any', 'SR_SHORTENER_AND_MONEY', 750, '$URL_SHORTENER && ($LOTTERY_WORDS || $BODY_LARGE_MONEY)', 'SHORTENER_MONEY_COMBO'),
  rule('Any', 'SR_DMARC_ALLOW_SPF_FAIL', 760, '$DMARC_POLICY_ALLOW && ($SPF_FAIL || $SPF_SOFTFAIL)', 'DMARC_ALLOW_WITH_SPF_FAILURE'),
];

/** Scores for the default tags (SpamTag `Score` / `Reject`). */
export const DEFAULT_TAGS: readonly SpamTagInput[] = [
  ['URL_NUMERIC_IP', 1.5], ['URL_SHORTENER', 0.5], ['URL_HAS_USERINFO', 2.5], ['URL_NONSTANDARD_PORT', 1.0],
  ['URL_ABUSED_TLD', 1.0], ['DOMAIN_MANY_HYPHENS', 1.0], ['DOMAIN_LONG_LABEL', 0.5], ['FREEMAIL_FROM', 0.0],
  ['FREEMAIL_REPLYTO', 0.5], ['RCPT_INVALID_ADDRESS', 1.0], ['FROM_LOCAL_DIGITS', 0.5], ['RCVD_PRIVATE_IP', 0.0],
  ['RDNS_NONE', 1.0], ['BODY_NUMERIC_IP', 0.2], ['XM_PHPMAILER', 1.5], ['PRECEDENCE_BULK', 0.5],
  ['UPSTREAM_SPAM_FLAG', 3.0], ['MID_NO_DOMAIN', 1.0], ['LOTTERY_WORDS', 2.0], ['BODY_LARGE_MONEY', 1.5],
  ['BODY_URGENCY', 1.0], ['MISSING_SUBJECT', 1.0], ['MISSING_FROM', 2.0], ['REPLYTO_DOM_NEQ_FROM_DOM', 0.5],
  ['SUBJECT_SHOUTING', 1.0], ['FREEMAIL_REPLYTO_NEQ_FROM', 2.0], ['SHORTENER_MONEY_COMBO', 2.5],
  ['DMARC_ALLOW_WITH_SPF_FAILURE', 1.0],
  // The statistical classifier's tags (set with a model: `classify --model`, docs/classifier.md), with the
  // scores of Stalwart's published SpamTag objects, so that a trained model moves the verdict here too.
  ['PROB_HAM_HIGH', -8.0], ['PROB_HAM_MEDIUM', -6.0], ['PROB_HAM_LOW', -2.0], ['PROB_SPAM_UNCERTAIN', 0.0],
  ['PROB_SPAM_LOW', 2.0], ['PROB_SPAM_MEDIUM', 6.0], ['PROB_SPAM_HIGH', 8.0],
  // The module tags that only an operator's configuration can set (a `spam-traps` list, a Pyzor server, an
  // LLM endpoint with Stalwart's default categories): whoever configures them means them to count, so they
  // get the scores of Stalwart's published rule set.
  ['SPAM_TRAP', 15.0], ['PYZOR', 3.5],
  ...(['UNSOLICITED', 'COMMERCIAL', 'HARMFUL'] as const).flatMap((c) => [[`LLM_${c}_HIGH`, 3.0], [`LLM_${c}_MEDIUM`, 2.0], [`LLM_${c}_LOW`, 0.5]] as const),
  ['LLM_LEGITIMATE_HIGH', -3.0], ['LLM_LEGITIMATE_MEDIUM', -2.0], ['LLM_LEGITIMATE_LOW', -0.5],
]
  .map(([tag, score]) => ({ '@type': 'Score', tag, score }) as SpamTagInput)
  .concat([{ '@type': 'Reject', tag: 'GTUBE' }]);
