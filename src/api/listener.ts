import type { Server as HttpServer } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer, type TLSSocket } from 'node:tls';
import * as grpc from '@grpc/grpc-js';

/**
 * The API port, shared by HTTP/1.1 (the JSON APIs) and gRPC, as Clair's multiplexer shared it.
 * Fastify's server listens on the port; each connection it accepts goes to one of the two: in
 * cleartext by its first bytes (HTTP/2 with prior knowledge, which gRPC clients speak, starts with
 * the connection preface), under TLS by the protocol ALPN agreed (h2 for gRPC, http/1.1 otherwise).
 * So both share one certificate and one client-certificate check, and HTTP connections keep every
 * behaviour of Node's server (header deadline, keep-alive, closing idle connections on close).
 */

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** The protocols a TLS API port offers when it is shared with gRPC, gRPC's first. */
export const SHARED_PORT_ALPN = ['h2', 'http/1.1'];

export interface SharedPort {
  /** Asks gRPC clients to go (GOAWAY); calls under way get graceMs to finish, then are cancelled. */
  drainGrpc(graceMs: number): void;
}

export interface ShareOptions {
  /** A cleartext connection that has not shown which protocol it speaks by then is closed. */
  undecidedTimeoutMs: number;
}

/**
 * Decides where a cleartext connection goes from its first bytes: gRPC when they are the HTTP/2
 * preface, HTTP/1.1 as soon as they cannot be. The bytes read are put back for the server that
 * takes the connection.
 */
function routeCleartext(socket: Socket, timeoutMs: number, toHttp: (socket: Socket) => void, toGrpc: (socket: Socket) => void): void {
  let received = Buffer.alloc(0);
  // Until a server has the socket, its errors (a reset) are this function's to absorb.
  const onError = (): void => void socket.destroy();
  const onTimeout = (): void => void socket.destroy();
  const onData = (chunk: Buffer): void => {
    received = Buffer.concat([received, chunk]);
    const compared = Math.min(received.length, H2_PREFACE.length);
    const isPreface = received.subarray(0, compared).equals(H2_PREFACE.subarray(0, compared));
    if (isPreface && received.length < H2_PREFACE.length) return; // not enough yet to tell
    socket.off('data', onData);
    socket.off('error', onError);
    socket.off('timeout', onTimeout);
    socket.setTimeout(0);
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
  socket.on('error', onError);
  socket.setTimeout(timeoutMs);
  socket.on('timeout', onTimeout);
  socket.on('data', onData);
}

/**
 * Makes Fastify's server (created, not yet listening) share its port with the gRPC server: it
 * keeps the HTTP/1.1 connections and hands the gRPC ones over. With TLS, the server must offer
 * SHARED_PORT_ALPN.
 */
export function shareWithGrpc(http: HttpServer, grpcServer: grpc.Server, options: ShareOptions): SharedPort {
  // Connections reach here decrypted: gRPC gets plaintext HTTP/2 whatever the port speaks.
  const injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const toGrpc = (socket: Socket): void => injector.injectConnection(socket);
  // Node's HTTP server serves a connection from its connection listener; it is taken off the
  // event and called for the connections that are HTTP/1.1.
  const event = http instanceof TlsServer ? 'secureConnection' : 'connection';
  const serveHttp = http.listeners(event) as Array<(socket: Socket) => void>;
  if (serveHttp.length !== 1) throw new Error(`expected one '${event}' listener on the HTTP server, found ${serveHttp.length}`);
  const [httpListener] = serveHttp as [(socket: Socket) => void];
  http.off(event, httpListener);
  const toHttp = (socket: Socket): void => httpListener.call(http, socket);
  if (event === 'secureConnection') {
    http.on(event, (socket: TLSSocket) => (socket.alpnProtocol === 'h2' ? toGrpc(socket) : toHttp(socket)));
  } else {
    http.on(event, (socket: Socket) => routeCleartext(socket, options.undecidedTimeoutMs, toHttp, toGrpc));
  }
  return { drainGrpc: (graceMs) => injector.drain(graceMs) };
}
