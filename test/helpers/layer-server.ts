import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { whenDone } from './when-done.js';

/** How one path is answered. Everything but the body is optional. */
export interface ServeOptions {
  /** The exact Authorization value the blob requires; any other request gets a 401. */
  readonly authorization?: string;
  /** Answer with this status instead of 200 (the body is still sent). */
  readonly status?: number;
  /** Announce this Content-Length instead of the body's; 'none' sends the body chunked, unannounced. */
  readonly contentLength?: number | 'none';
  /** Send the headers and the first half of the body, then nothing more (a stalled download). */
  readonly stall?: boolean;
  /** Accept the request and never answer, not even headers. */
  readonly silent?: boolean;
}

export interface RecordedRequest {
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
}

export interface LayerServer {
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  url(path: string): string;
  serve(path: string, body: Buffer, options?: ServeOptions): void;
  /** Answer `path` with a redirect to `location` (a path on this server or an absolute URL). */
  redirect(path: string, location: string, status?: number): void;
  /** Every request received, in order. */
  readonly requests: RecordedRequest[];
  /** How many client sockets are open right now (to check that a client let go). */
  connections(): Promise<number>;
  close(): Promise<void>;
}

type Route =
  | { readonly kind: 'blob'; readonly body: Buffer; readonly options: ServeOptions }
  | { readonly kind: 'redirect'; readonly location: string; readonly status: number };

/**
 * A real HTTP server on 127.0.0.1 serving in-memory blobs, for tests of layer downloads. It closes
 * itself when the test (or file) that started it ends, destroying open sockets, so stalled answers
 * never keep the process alive.
 */
export async function startLayerServer(): Promise<LayerServer> {
  const routes = new Map<string, Route>();
  const requests: RecordedRequest[] = [];
  const server = createServer((req, res) => {
    const path = req.url ?? '/';
    requests.push({ method: req.method ?? '', path, headers: req.headers });
    answer(routes.get(path.split('?')[0] ?? path), req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  let closed: Promise<void> | undefined;
  const close = (): Promise<void> => {
    closed ??= new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
    return closed;
  };
  whenDone(close);

  return {
    origin,
    url: (path) => `${origin}${path}`,
    serve: (path, body, options = {}) => void routes.set(path, { kind: 'blob', body, options }),
    redirect: (path, location, status = 302) => void routes.set(path, { kind: 'redirect', location, status }),
    requests,
    connections: () =>
      new Promise<number>((resolve, reject) => server.getConnections((err, count) => (err ? reject(err) : resolve(count)))),
    close,
  };
}

function answer(route: Route | undefined, req: IncomingMessage, res: ServerResponse): void {
  if (route === undefined) {
    res.writeHead(404).end('not found');
  } else if (route.kind === 'redirect') {
    res.writeHead(route.status, { location: route.location }).end();
  } else {
    sendBlob(route.body, route.options, req, res);
  }
}

function sendBlob(body: Buffer, options: ServeOptions, req: IncomingMessage, res: ServerResponse): void {
  if (options.silent) return;
  if (options.authorization !== undefined && req.headers.authorization !== options.authorization) {
    res.writeHead(401, { 'www-authenticate': 'Bearer realm="test"' }).end('unauthorized');
    return;
  }
  const length = options.contentLength ?? body.length;
  // Off by default, stated because the "larger than announced" answer relies on it: Node then
  // sends every byte written whatever the Content-Length says.
  res.strictContentLength = false;
  res.writeHead(options.status ?? 200, length === 'none' ? {} : { 'content-length': String(length) });
  if (options.stall) {
    res.flushHeaders();
    res.write(body.subarray(0, Math.floor(body.length / 2)));
    return;
  }
  if (length === 'none') {
    // Several writes so the body really goes out chunked.
    const step = Math.max(1, Math.ceil(body.length / 8));
    for (let at = 0; at < body.length; at += step) res.write(body.subarray(at, at + step));
  } else {
    res.write(body);
  }
  res.end();
}
