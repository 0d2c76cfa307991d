/**
 * A throwaway certificate authority for TLS tests, made with openssl: a CA certificate and server certificates
 * it signs for the names and addresses a test asks for (subjectAltName `DNS:` and `IP:` entries). A client
 * trusts the CA only when told to: the tests run their TLS clients in a child process with
 * `NODE_EXTRA_CA_CERTS` naming `caFile` (test/lookup/tls-client.ts), as an operator adds a private CA.
 */
import { execFileSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from './common.js';

export interface TestCert {
  certFile: string;
  keyFile: string;
  /** The CA's certificate file (PEM), for servers that want it (`tls-ca-cert-file`). */
  caFile: string;
}

export interface TestCa {
  /** The CA certificate (PEM): what `NODE_EXTRA_CA_CERTS` names. */
  caFile: string;
  /**
   * A server certificate signed by the CA for `names` (host names, and IP addresses, which become `IP:`
   * entries), with `label` as its file name stem. Valid for one day.
   */
  issue(label: string, names: string[]): TestCert;
  remove(): void;
}

const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export function makeTestCa(): TestCa {
  const dir = tempDir('tls-ca');
  const caFile = join(dir, 'ca.pem');
  const caKey = join(dir, 'ca.key');
  const openssl = (args: string[]): void => void execFileSync('openssl', args, { stdio: ['ignore', 'ignore', 'pipe'] });
  openssl(['req', '-x509', ...EC, '-keyout', caKey, '-out', caFile, '-days', '1', '-subj', '/CN=spamrule test CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  return {
    caFile,
    issue(label, names) {
      const keyFile = join(dir, `${label}.key`);
      const csr = join(dir, `${label}.csr`);
      const certFile = join(dir, `${label}.pem`);
      const ext = join(dir, `${label}.ext`);
      const san = names.map((n) => (/^[\d.]+$|:/.test(n) ? `IP:${n}` : `DNS:${n}`)).join(',');
      writeFileSync(ext, `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\n`);
      openssl(['req', '-new', ...EC, '-keyout', keyFile, '-out', csr, '-subj', `/CN=${names[0] ?? label}`]);
      openssl(['x509', '-req', '-in', csr, '-CA', caFile, '-CAkey', caKey, '-CAcreateserial', '-out', certFile, '-days', '1', '-extfile', ext]);
      return { certFile, keyFile, caFile };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
