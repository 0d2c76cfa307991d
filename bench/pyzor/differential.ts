/**
 * Differential check of the pyzor-mode ports against the Python they follow (Debian's /usr/bin/python3 with
 * pyzor 1.0.0): generated HTML through pyzor's `normalize_html_part`, quoted-printable through
 * `binascii.a2b_qp`, base64 through `email._encoded_words.decode_b`, random bytes through `bytes.decode(charset,
 * errors)` ("ignore" and "replace"), and generated MIME messages through `DataDigester(email.message_from_bytes(…))`. Prints the first differences and their count (0 expected).
 *
 *   npx tsx bench/pyzor/differential.ts [SEED]
 */
import { spawnSync } from 'node:child_process';
import { a2bQp, decodeB, pythonDecode } from '../../src/analysis/pyzor/py-codecs.js';
import { htmlStripperText } from '../../src/analysis/pyzor/py-html.js';
import { pyzorModeDigest } from '../../src/analysis/pyzor/pyzor-mode.js';

let seed = Number(process.argv[2] ?? 1);
const rnd = (n: number): number => {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed % n;
};
const generate = (count: number, tokens: readonly string[], max: number, sep: () => string = () => ''): string[] =>
  Array.from({ length: count }, () => Array.from({ length: 1 + rnd(max) }, () => tokens[rnd(tokens.length)]! + sep()).join(''));

const HTML = ['<', '>', '</', '<p>', '</p>', '<a href="x">', "<a b='c'>", '<br/>', '<script>', '</script>', '<style>', '</STYLE >', '<!--', '-->',
  '--', '<!', '<![CDATA[', ']]>', '<![if x]>', '<![endif]>', '<!doctype html>', '<?xml?>', '&', '&amp;', '&amp', '&notit;', '&#65;', '&#x41',
  '&#150;', '&#0;', '&bogus;', ';', '"', "'", '=', '/', ' ', '\n', '\t', '\r\n', 'word', 'text', 'é', '\u00a0', '\u3000', 'x', 'A', '1', '<b',
  '<1', '< a', '</ p>', '</a b>', '<a/b>', '<x\x00>', '&lt', '\x0c', '\u2028'];
const QP = ['=', '=3D', '=\r\n', '=\n', '=\r', '=4', '=ZZ', '==', 'ab', ' ', '\r\n', '\n', '\r', '=e9', 'QQ', '=\t'];
const B64 = ['QUJD', 'QQ', 'Q', '=', '==', '\r\n', '!', ' ', 'QUI=', 'Zm9v', 'YQ==YQ', '-', '_'];
const MIME = ['Content-Type: multipart/mixed; boundary="a"', 'Content-Type: multipart/alternative; boundary=b', 'Content-Type: multipart/digest; boundary=a',
  'Content-Type: text/plain', 'Content-Type: text/html; charset=utf-8', 'Content-Type: message/rfc822', 'Content-Type: message/delivery-status',
  'Content-Type: application/x-stuff', 'Content-Type: text', 'Content-Type: multipart/mixed', 'Content-Transfer-Encoding: base64',
  'Content-Transfer-Encoding: quoted-printable', 'Content-type: TEXT/PLAIN; charset="iso-8859-1"', ' continued; boundary=a', '\tmore', '', '', '',
  '--a', '--a--', '--a  ', '--b', '--b--', '--a-- trailing', '--ab', 'From someone', ':novalue', 'X-H: v', 'plain words of text here',
  'more text line, please', '<p>html paragraph text</p>', 'caf\xe9 au lait ok', 'QUJDREVGR0hJSktMTU5PUA==', 'soft=3D break=', 'x@y.z mail me', 'http://u.example ok'];

const CHARSETS = ['utf-8', 'us-ascii', 'iso-8859-1', 'windows-1252', 'iso-8859-7', 'koi8-r', 'gb2312', 'gbk', 'big5', 'cp950', 'ks_c_5601-1987', 'euc-kr', 'x-unknown'];
/** `errors:charset:bytes as Latin-1`, the bytes biased towards the high half where the multi-byte codecs live. */
const codecInputs = Array.from({ length: 3000 }, () => {
  const bytes = Array.from({ length: 1 + rnd(12) }, () => (rnd(4) === 0 ? rnd(128) : 128 + rnd(128)));
  return `${rnd(2) === 0 ? 'ignore' : 'replace'}:${CHARSETS[rnd(CHARSETS.length)]!}:${String.fromCharCode(...bytes)}`;
});

const input = {
  codec: codecInputs,
  html: generate(4000, HTML, 25),
  qp: generate(2000, QP, 12),
  b64: generate(2000, B64, 10),
  mime: generate(4000, MIME, 30, () => ['\r\n', '\r\n', '\r\n', '\r\n', '\n', '\r'][rnd(6)]!),
};
const PY = String.raw`
import sys, json, email, binascii, pyzor.digest
from email._encoded_words import decode_b
d = json.load(sys.stdin)
def html(s):
    try: return pyzor.digest.DataDigester.normalize_html_part(s)
    except Exception as e: return '!' + type(e).__name__
def mime(s):
    try: return pyzor.digest.DataDigester(email.message_from_bytes(s.encode('latin1'))).value
    except Exception as e: return '!' + type(e).__name__
def codec(s):
    errors, name, data = s.split(':', 2)
    try: return data.encode('latin1').decode(name, errors)
    except LookupError: return '!LookupError'
print(json.dumps({
    'codec': [codec(s) for s in d['codec']],
    'html': [html(s) for s in d['html']],
    'qp': [binascii.a2b_qp(s.encode('latin1')).decode('latin1') for s in d['qp']],
    'b64': [decode_b(b''.join(s.encode('latin1').splitlines()))[0].decode('latin1') for s in d['b64']],
    'mime': [mime(s) for s in d['mime']],
}))`;
const r = spawnSync('/usr/bin/python3', ['-c', PY], { input: JSON.stringify(input), encoding: 'utf8', maxBuffer: 1 << 26 });
if (r.status !== 0) throw new Error(`python3: ${r.stderr}`);
const theirs = JSON.parse(r.stdout) as Record<keyof typeof input, string[]>;

const latin1 = (b: Uint8Array): string => Buffer.from(b).toString('latin1');
const ours: Record<keyof typeof input, (s: string) => string> = {
  codec: (s) => {
    const [errors, name] = s.split(':', 2) as ['ignore' | 'replace', string];
    return pythonDecode(Buffer.from(s.slice(errors.length + name.length + 2), 'latin1'), name, errors) ?? '!LookupError';
  },
  html: (s) => {
    try {
      return htmlStripperText(s);
    } catch {
      return '!error';
    }
  },
  qp: (s) => latin1(a2bQp(Buffer.from(s, 'latin1'))),
  b64: (s) => latin1(decodeB(Buffer.from(s, 'latin1'))),
  mime: (s) => {
    const d = pyzorModeDigest(Buffer.from(s, 'latin1'));
    return 'digest' in d ? d.digest : '!error';
  },
};
let differ = 0;
for (const kind of Object.keys(input) as (keyof typeof input)[]) {
  input[kind].forEach((s, i) => {
    const want = theirs[kind][i]!;
    const got = ours[kind](s);
    if (got === want || (got.startsWith('!') && want.startsWith('!'))) return;
    if (differ++ < 10) process.stdout.write(`${kind} ${JSON.stringify(s)}\n  python: ${JSON.stringify(want)}\n  ours:   ${JSON.stringify(got)}\n`);
  });
}
process.stdout.write(`${Object.values(input).reduce((n, a) => n + a.length, 0)} inputs, ${differ} differences\n`);
