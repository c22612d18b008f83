import { request } from 'node:https';
import { connect as tlsConnect } from 'node:tls';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';
import { startServer } from '../../src/server.js';
import { freshDatabase } from '../helpers/db.js';
import { testCertificates } from '../helpers/certificates.js';
import { databaseUrl } from '../helpers/process.js';
import { whenDone } from '../helpers/when-done.js';

/** A CA, a server certificate for 127.0.0.1 and a client certificate. */
const certificates = () => testCertificates(['server', 'client'], 'IP:127.0.0.1');

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

/** A running server whose API port speaks TLS with the given files (and a CA: client certificates); api: more clair.api lines. */
async function tlsServer(certs: Awaited<ReturnType<typeof certificates>>, withCa: boolean, api: string[] = []) {
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
      `    certfile: ${join(certs.dir, 'server.pem')}`,
      `    keyfile: ${join(certs.dir, 'server.key')}`,
      ...(withCa ? [`    cafile: ${join(certs.dir, 'ca.pem')}`] : []),
      ...api,
      '  updater:',
      '    interval: 0',
    ].join('\n'),
  );
  const server = await startServer(config, pino({ level: 'silent' }));
  whenDone(() => server.stop());
  return server.apiPort;
}

describe('API over TLS (api.certfile, api.keyfile, api.cafile)', () => {
  it('serves HTTPS and gRPC (ALPN h2) on one TLS port', async () => {
    const certs = await certificates();
    const port = await tlsServer(certs, false);
    expect(await get(port, { ca: certs.ca })).toBe(200);
    expect(await getStatus(port, grpc.credentials.createSsl(certs.ca))).toBe(grpc.status.OK);
    // A gRPC client that does not trust the server's certificate gets no answer.
    expect(await getStatus(port, grpc.credentials.createSsl())).toBe(grpc.status.UNAVAILABLE);
  });

  it('with a CA requires a client certificate signed by it, for HTTPS and gRPC alike', async () => {
    const certs = await certificates();
    const client = certs.pairs.client!;
    const port = await tlsServer(certs, true);
    await expect(get(port, { ca: certs.ca })).rejects.toThrow();
    expect(await get(port, { ca: certs.ca, ...client })).toBe(200);
    expect(await getStatus(port, grpc.credentials.createSsl(certs.ca))).toBe(grpc.status.UNAVAILABLE);
    expect(await getStatus(port, grpc.credentials.createSsl(certs.ca, client.key, client.cert))).toBe(grpc.status.OK);
  });

  it('closes an HTTP/2 connection (ALPN h2) that does not send its preface within api.headertimeout, and one whose client stops sending at once', async () => {
    const certs = await certificates();
    const port = await tlsServer(certs, false, ['    headertimeout: 500ms', '    idletimeout: 10m']);
    /** A TLS connection agreeing on h2 that sends bytes and nothing more; resolves once the server has closed it. */
    const stalled = (bytes: Buffer, halfClose: boolean) =>
      new Promise<void>((resolve, reject) => {
        const socket = tlsConnect({ host: '127.0.0.1', port, ca: certs.ca, ALPNProtocols: ['h2'] }, () => {
          expect(socket.alpnProtocol).toBe('h2');
          socket.write(bytes);
          if (halfClose) socket.end();
        });
        socket
          .on('error', reject)
          .on('close', () => resolve())
          .resume();
      });
    const magic = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
    await stalled(magic, false);
    // The idle timeout is far: only letting the connection go when its client does passes.
    await stalled(Buffer.concat([magic, Buffer.from([0, 0, 0, 4, 0, 0, 0, 0, 0])]), true);
  });
});
