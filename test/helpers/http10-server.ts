import { createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { whenDone } from './when-done.js';

export interface Http10Server {
  /** http://127.0.0.1:PORT */
  readonly origin: string;
  url(path: string): string;
  /** Serves body at path; contentLength false leaves the length out (the close alone ends the body). */
  serve(path: string, body: Buffer, options?: { contentType?: string; contentLength?: boolean }): void;
  /** Paths requested, in order. */
  readonly requests: string[];
}

/**
 * An HTTP/1.0 server as `python3 -m http.server` is one: it answers each request with the whole
 * body at once, then closes the connection (the close, not a keep-alive, ends the exchange), so
 * the client sees the end of the stream while it is still reading the body. Written on node:net,
 * as node:http would answer HTTP/1.1.
 */
export async function startHttp10Server(): Promise<Http10Server> {
  const files = new Map<string, { body: Buffer; contentType: string; contentLength: boolean }>();
  const requests: string[] = [];
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    let head = '';
    const onData = (chunk: Buffer): void => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      socket.off('data', onData);
      const [method = '', target = '/'] = head.split(' ', 2);
      const path = target.split('?')[0]!;
      requests.push(path);
      const file = files.get(path);
      if (!file) {
        socket.end('HTTP/1.0 404 File not found\r\nContent-Type: text/plain\r\n\r\nnot found\n');
        return;
      }
      const length = file.contentLength ? `Content-Length: ${file.body.length}\r\n` : '';
      socket.write(`HTTP/1.0 200 OK\r\nServer: SimpleHTTP/0.6\r\nContent-Type: ${file.contentType}\r\n${length}\r\n`);
      if (method === 'HEAD') socket.end();
      else socket.end(file.body);
    };
    socket.on('data', onData);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  whenDone(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: (path) => `${origin}${path}`,
    serve: (path, body, options = {}) =>
      files.set(path, {
        body,
        contentType: options.contentType ?? 'application/octet-stream',
        contentLength: options.contentLength ?? true,
      }),
    requests,
  };
}
