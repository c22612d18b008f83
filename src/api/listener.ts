import { createServer as createTcpServer, type AddressInfo, type Server as TcpServer, type Socket } from 'node:net';
import type { Server as HttpServer } from 'node:http';
import { createServer as createTlsServer, type TLSSocket } from 'node:tls';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from 'pino';

/**
 * The API port, shared by HTTP/1.1 (the JSON APIs, served by Fastify's HTTP server) and gRPC, as
 * Clair's multiplexer shared it. Each connection goes to one of them: in cleartext by its first
 * bytes (HTTP/2 with prior knowledge starts with the connection preface, which gRPC clients send),
 * under TLS by the protocol ALPN agreed (h2 for gRPC, http/1.1 otherwise). TLS ends here, so the
 * JSON API and gRPC share one certificate and one client-certificate check.
 */

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

export interface ListenerTls {
  readonly key: Buffer;
  readonly cert: Buffer;
  /** When set, clients must present a certificate this CA signed. */
  readonly ca?: Buffer;
}

export interface ApiListener {
  /** The port listened on (resolved when 0 was asked). */
  readonly port: number;
  /**
   * Stops accepting connections and asks gRPC clients to go (GOAWAY; calls under way get
   * graceMs to finish). Resolves once every connection has ended: the HTTP server closes its own.
   */
  close(graceMs: number): Promise<void>;
}

export interface ListenOptions {
  host: string;
  port: number;
  /** Fastify's server (created, not listening): it receives the HTTP/1.1 connections. */
  http: HttpServer;
  /** The gRPC server: it receives the HTTP/2 connections. */
  grpc: grpc.Server;
  tls?: ListenerTls | undefined;
  log: Logger;
}

/**
 * Decides where a cleartext connection goes from its first bytes: gRPC when they are the HTTP/2
 * preface, HTTP/1.1 as soon as they cannot be. The bytes read are put back for the server that
 * takes the connection.
 */
function routeCleartext(socket: Socket, toHttp: (socket: Socket) => void, toGrpc: (socket: Socket) => void): void {
  let received = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    received = Buffer.concat([received, chunk]);
    const compared = Math.min(received.length, H2_PREFACE.length);
    const isPreface = received.subarray(0, compared).equals(H2_PREFACE.subarray(0, compared));
    if (isPreface && received.length < H2_PREFACE.length) return; // not enough yet to tell
    socket.off('data', onData);
    socket.pause();
    socket.unshift(received);
    if (isPreface) {
      // An HTTP/2 session takes the bytes put back from the paused socket itself.
      toGrpc(socket);
    } else {
      toHttp(socket);
      // The HTTP/1.1 parser reads through the stream (data was read already): let it flow again.
      socket.resume();
    }
  };
  socket.on('data', onData);
}

export async function listenApi(options: ListenOptions): Promise<ApiListener> {
  const { http, log } = options;
  // Connections are already decrypted here: gRPC gets plaintext HTTP/2 whatever the port speaks.
  const injector = options.grpc.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const toHttp = (socket: Socket): void => void http.emit('connection', socket);
  const toGrpc = (socket: Socket): void => injector.injectConnection(socket);

  let server: TcpServer;
  if (options.tls) {
    const { key, cert, ca } = options.tls;
    server = createTlsServer(
      {
        key,
        cert,
        ...(ca ? { ca, requestCert: true, rejectUnauthorized: true } : {}),
        minVersion: 'TLSv1.2',
        ALPNProtocols: ['h2', 'http/1.1'],
      },
      (socket: TLSSocket) => (socket.alpnProtocol === 'h2' ? toGrpc(socket) : toHttp(socket)),
    );
    server.on('tlsClientError', (err) => log.debug({ err }, 'tls handshake failed'));
  } else {
    server = createTcpServer((socket) => routeCleartext(socket, toHttp, toGrpc));
  }
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: (graceMs) =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        injector.drain(graceMs);
      }),
  };
}
