import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { freshDatabase } from '../helpers/db.js';
import { databaseUrl } from '../helpers/process.js';

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

const PROTO = fileURLToPath(new URL('../../proto/ancestry.proto', import.meta.url));
const StatusService = (
  (grpc.loadPackageDefinition(protoLoader.loadSync(PROTO, { keepCase: true })).coreos as grpc.GrpcObject).clair as grpc.GrpcObject
).StatusService as grpc.ServiceClientConstructor;

/** StatusService/GetStatus over gRPC with TLS; resolves with the status code of the call. */
function getStatus(port: number, credentials: grpc.ChannelCredentials): Promise<grpc.status> {
  const client = new StatusService(`127.0.0.1:${port}`, credentials);
  return new Promise<grpc.status>((resolve) => {
    (client as unknown as { GetStatus: (request: object, callback: (err: grpc.ServiceError | null) => void) => void }).GetStatus(
      {},
      (err) => {
        client.close();
        resolve(err ? err.code : grpc.status.OK);
      },
    );
  });
}

/** A running server whose API port speaks TLS with the given files (and a CA: client certificates). */
async function tlsServer(pems: Awaited<ReturnType<typeof certificates>>, withCa: boolean) {
  const dir = await mkdtemp(join(tmpdir(), 'tarsier-tls-config-'));
  afterAll(() => rm(dir, { recursive: true, force: true }));
  for (const [name, pem] of [
    ['server.pem', pems.serverCert],
    ['server.key', pems.serverKey],
    ['ca.pem', pems.ca],
  ] as const) {
    writeFileSync(join(dir, name), pem);
  }
  const url = databaseUrl(await freshDatabase());
  const config = parseConfig(
    [
      'clair:',
      '  database:',
      '    options:',
      `      source: "${url}"`,
      '  api:',
      '    port: 0',
      '    healthport: 0',
      `    certfile: ${join(dir, 'server.pem')}`,
      `    keyfile: ${join(dir, 'server.key')}`,
      ...(withCa ? [`    cafile: ${join(dir, 'ca.pem')}`] : []),
      '  updater:',
      '    interval: 0',
    ].join('\n'),
  );
  const server = await startServer(config, pino({ level: 'silent' }));
  afterAll(() => server.stop());
  return server.apiPort;
}

describe('API over TLS (api.certfile, api.keyfile, api.cafile)', () => {
  it('serves HTTPS and gRPC (ALPN h2) on one TLS port', async () => {
    const pems = await certificates();
    const port = await tlsServer(pems, false);
    expect(await get(port, { ca: pems.ca })).toBe(200);
    expect(await getStatus(port, grpc.credentials.createSsl(pems.ca))).toBe(grpc.status.OK);
    // A gRPC client that does not trust the server's certificate gets no answer.
    expect(await getStatus(port, grpc.credentials.createSsl())).toBe(grpc.status.UNAVAILABLE);
  });

  it('with a CA requires a client certificate signed by it, for HTTPS and gRPC alike', async () => {
    const pems = await certificates();
    const port = await tlsServer(pems, true);
    await expect(get(port, { ca: pems.ca })).rejects.toThrow();
    expect(await get(port, { ca: pems.ca, key: pems.clientKey, cert: pems.clientCert })).toBe(200);
    expect(await getStatus(port, grpc.credentials.createSsl(pems.ca))).toBe(grpc.status.UNAVAILABLE);
    expect(await getStatus(port, grpc.credentials.createSsl(pems.ca, pems.clientKey, pems.clientCert))).toBe(grpc.status.OK);
  });
});
