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
 *
 * One connection policy for both protocols:
 * - a connection has prefaceTimeoutMs (clair.api.headertimeout) from its start to show what it
 *   speaks: an HTTP/2 client its whole connection preface (the magic and its SETTINGS frame), an
 *   HTTP/1.1 client its first bytes, after which Node's header deadline (the same setting) runs;
 * - an HTTP/2 connection without a call, like an HTTP/1.1 one between requests, is closed after
 *   clair.api.idletimeout (the gRPC server's max_connection_idle_ms, src/api/grpc.ts);
 * - a peer that stops sending (FIN) on a connection that is undecided or HTTP/2 has gone: its
 *   socket is destroyed at once. Node's HTTP server accepts half-open sockets, which its HTTP/1.1
 *   code ends itself; its HTTP/2 code does not, and left them in CLOSE-WAIT for ever.
 */

const H2_MAGIC = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');
const FRAME_HEADER_BYTES = 9;
const SETTINGS_FRAME = 0x4;
/** The largest frame a peer may send before settings say otherwise (SETTINGS_MAX_FRAME_SIZE, RFC 9113 §6.5.2). */
const INITIAL_MAX_FRAME_BYTES = 16_384;

/** The protocols a TLS API port offers when it is shared with gRPC, gRPC's first. */
export const SHARED_PORT_ALPN = ['h2', 'http/1.1'];

export interface SharedPort {
  /**
   * Closes the connections that have not shown their protocol yet and asks gRPC clients to go
   * (GOAWAY); calls under way get graceMs to finish, then are cancelled.
   */
  close(graceMs: number): void;
}

export interface ConnectionPolicy {
  /** A connection that has not sent the HTTP/2 preface, or its first HTTP/1.1 bytes, this long after it started is closed. */
  prefaceTimeoutMs: number;
}

type Preface = 'h2' | 'other' | 'incomplete';

/**
 * What the first bytes of a connection are: the whole HTTP/2 connection preface, something else,
 * or not enough to tell. A first frame that is not SETTINGS, or is too large, ends the preface
 * too: refusing it (GOAWAY) is the HTTP/2 server's part.
 */
function prefaceOf(received: Buffer): Preface {
  const compared = Math.min(received.length, H2_MAGIC.length);
  if (!received.subarray(0, compared).equals(H2_MAGIC.subarray(0, compared))) return 'other';
  const headerEnd = H2_MAGIC.length + FRAME_HEADER_BYTES;
  if (received.length < headerEnd) return 'incomplete';
  const length = received.readUIntBE(H2_MAGIC.length, 3);
  if (received[H2_MAGIC.length + 3] !== SETTINGS_FRAME || length > INITIAL_MAX_FRAME_BYTES) return 'h2';
  return received.length >= headerEnd + length ? 'h2' : 'incomplete';
}

/**
 * Reads a connection's first bytes until they show whether it is HTTP/2, within the deadline
 * (counted from now, however the bytes trickle in); then puts them back for the server that takes
 * the connection, paused. A connection that ends, fails or misses the deadline first is destroyed.
 */
function awaitPreface(socket: Socket, timeoutMs: number, undecided: Set<Socket>, decide: (preface: 'h2' | 'other') => void): void {
  let received = Buffer.alloc(0);
  undecided.add(socket);
  const drop = (): void => void socket.destroy();
  const timer = setTimeout(drop, timeoutMs);
  const release = (): void => {
    clearTimeout(timer);
    undecided.delete(socket);
    socket.off('data', onData).off('error', drop).off('end', drop).off('close', release);
  };
  const onData = (chunk: Buffer): void => {
    received = Buffer.concat([received, chunk]);
    const preface = prefaceOf(received);
    if (preface === 'incomplete') return;
    release();
    socket.pause();
    socket.unshift(received);
    decide(preface);
  };
  socket.on('data', onData).on('error', drop).on('end', drop).on('close', release);
}

/**
 * Makes Fastify's server (created, not yet listening) share its port with the gRPC server: it
 * keeps the HTTP/1.1 connections and hands the gRPC ones over. With TLS, the server must offer
 * SHARED_PORT_ALPN.
 */
export function shareWithGrpc(http: HttpServer, grpcServer: grpc.Server, policy: ConnectionPolicy): SharedPort {
  // Connections reach here decrypted: gRPC gets plaintext HTTP/2 whatever the port speaks.
  const injector = grpcServer.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const undecided = new Set<Socket>();
  let closed = false;
  const toGrpc = (socket: Socket): void => {
    // HTTP/2 needs both directions: a peer that stops sending is gone.
    socket.once('end', () => socket.destroy());
    // The HTTP/2 session takes the bytes put back on the paused socket itself.
    injector.injectConnection(socket);
  };
  // Node's HTTP server serves a connection from its connection listener; it is taken off the
  // event and called for the connections that are HTTP/1.1.
  const event = http instanceof TlsServer ? 'secureConnection' : 'connection';
  const serveHttp = http.listeners(event) as Array<(socket: Socket) => void>;
  if (serveHttp.length !== 1) throw new Error(`expected one '${event}' listener on the HTTP server, found ${serveHttp.length}`);
  const [httpListener] = serveHttp as [(socket: Socket) => void];
  http.off(event, httpListener);
  const toHttp = (socket: Socket): void => {
    httpListener.call(http, socket);
    // The HTTP/1.1 parser reads through the stream (data was read already): let it flow again.
    socket.resume();
  };
  const accept = (socket: Socket, onOther: (socket: Socket) => void): void => {
    if (closed) {
      socket.destroy();
      return;
    }
    awaitPreface(socket, policy.prefaceTimeoutMs, undecided, (preface) => (preface === 'h2' ? toGrpc(socket) : onOther(socket)));
  };
  if (event === 'secureConnection') {
    // ALPN chose the protocol; a client that agreed to h2 and sends something else is dropped.
    http.on(event, (socket: TLSSocket) =>
      socket.alpnProtocol === 'h2' ? accept(socket, (s) => s.destroy()) : httpListener.call(http, socket),
    );
  } else {
    http.on(event, (socket: Socket) => accept(socket, toHttp));
  }
  return {
    close(graceMs) {
      closed = true;
      for (const socket of undecided) socket.destroy();
      injector.drain(graceMs);
    },
  };
}
