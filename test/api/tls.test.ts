import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { PageTokens } from '../../src/api/paging.js';
import { buildApp } from '../../src/app.js';
import { parseConfig } from '../../src/config.js';
import { Indexer, indexerSettings } from '../../src/indexer/indexer.js';
import { Metrics } from '../../src/metrics.js';
import { freshPool, silentLog } from '../helpers/db.js';

/** A CA, a server certificate for 127.0.0.1 and a client certificate, made with openssl. */
async function certificates() {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-tls-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '1', '-subj', '/CN=test-ca');
  for (const name of ['server', 'client']) {
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
      ...(name === 'server' ? ['-extfile', writeExt(dir)] : []),
    );
  }
  const read = (f: string) => readFileSync(join(dir, f));
  return {
    ca: read('ca.pem'),
    serverKey: read('server.key'),
    serverCert: read('server.pem'),
    clientKey: read('client.key'),
    clientCert: read('client.pem'),
  };
}

function writeExt(dir: string): string {
  execFileSync('sh', ['-c', `printf 'subjectAltName=IP:127.0.0.1\\n' > ${join(dir, 'ext.cnf')}`]);
  return 'ext.cnf';
}

function get(port: number, options: { ca: Buffer; key?: Buffer; cert?: Buffer }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/v1/namespaces', ...options }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('API over TLS (api.certfile, api.keyfile, api.cafile)', () => {
  it('serves HTTPS, and with a CA requires a client certificate signed by it', async () => {
    const pems = await certificates();
    const pool = await freshPool();
    const config = parseConfig('');
    const indexer = new Indexer({ pool, settings: indexerSettings(config), log: silentLog });
    const deps = { config, pool, log: silentLog, pageTokens: new PageTokens(randomBytes(32)), metrics: new Metrics(), indexer };

    const https = buildApp({ ...deps, tls: { key: pems.serverKey, cert: pems.serverCert } });
    await https.listen({ host: '127.0.0.1', port: 0 });
    afterAll(() => https.close());
    const httpsPort = (https.server.address() as { port: number }).port;
    expect(await get(httpsPort, { ca: pems.ca })).toBe(200);

    const mutual = buildApp({ ...deps, tls: { key: pems.serverKey, cert: pems.serverCert, ca: pems.ca } });
    await mutual.listen({ host: '127.0.0.1', port: 0 });
    afterAll(() => mutual.close());
    const mutualPort = (mutual.server.address() as { port: number }).port;
    await expect(get(mutualPort, { ca: pems.ca })).rejects.toThrow();
    expect(await get(mutualPort, { ca: pems.ca, key: pems.clientKey, cert: pems.clientCert })).toBe(200);
  });
});
