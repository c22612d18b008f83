import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { whenDone } from './when-done.js';

export interface KeyPair {
  key: Buffer;
  cert: Buffer;
}

/**
 * A test CA and, for each name, a key and a certificate it signed (CN=name) valid for
 * subjectAltName, made with openssl in a directory removed when the test (or file) that made them
 * ends. The files are in dir as ca.pem, NAME.key and NAME.pem, for configurations that take paths.
 */
export async function testCertificates(
  names: readonly string[],
  subjectAltName: string,
): Promise<{ dir: string; ca: Buffer; pairs: Record<string, KeyPair> }> {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-certs-'));
  whenDone(() => rm(dir, { recursive: true, force: true }));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  writeFileSync(join(dir, 'ext.cnf'), `subjectAltName=${subjectAltName}\n`);
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=test-ca');
  const read = (file: string) => readFileSync(join(dir, file));
  const pairs: Record<string, KeyPair> = {};
  for (const name of names) {
    ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`);
    ssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      '-extfile',
      'ext.cnf',
    );
    pairs[name] = { key: read(`${name}.key`), cert: read(`${name}.pem`) };
  }
  return { dir, ca: read('ca.pem'), pairs };
}
