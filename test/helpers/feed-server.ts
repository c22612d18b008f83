import { createHash } from 'node:crypto';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { whenDone } from './when-done.js';

/**
 * A real HTTP server on 127.0.0.1 serving feed files the way upstream sources do: with an ETag and
 * Last-Modified, answering conditional requests with 304. A file can be switched to fail (500) or
 * to serve garbage, as an upstream outage would.
 */
export interface FeedServer {
  readonly origin: string;
  url(path: string): string;
  /** Serves body at path (replacing what was there; a new body gets a new ETag). */
  put(path: string, body: Buffer | string): void;
  /** Makes path answer 500 until put() again. */
  fail(path: string): void;
  remove(path: string): void;
  /**
   * Holds the next request for path until released (an upstream that is slow to answer): arrived
   * resolves when it comes in.
   */
  hold(path: string): { arrived: Promise<void>; release(): void };
  /** Requests received: path, status answered, and the request headers. */
  readonly requests: Array<{ path: string; status: number; headers: IncomingHttpHeaders }>;
}

interface Entry {
  body: Buffer;
  etag: string;
  lastModified: string;
  failing: boolean;
}

export async function startFeedServer(): Promise<FeedServer> {
  const files = new Map<string, Entry>();
  const requests: FeedServer['requests'] = [];
  const held = new Map<string, { arrive: () => void; released: Promise<void> }>();
  const server = createServer(async (req, res) => {
    const path = (req.url ?? '/').split('?')[0]!;
    const hold = held.get(path);
    if (hold) {
      held.delete(path);
      hold.arrive();
      await hold.released;
    }
    const entry = files.get(path);
    const answer = (status: number, body?: Buffer | string, headers: Record<string, string> = {}) => {
      requests.push({ path, status, headers: req.headers });
      res.writeHead(status, headers).end(body);
    };
    if (!entry) return answer(404, 'not found');
    if (entry.failing) return answer(500, 'upstream is down');
    if (req.headers['if-none-match'] === entry.etag) return answer(304);
    answer(200, entry.body, { etag: entry.etag, 'last-modified': entry.lastModified, 'content-length': String(entry.body.length) });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  whenDone(() => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    url: (path) => `${origin}${path}`,
    put(path, body) {
      const buffer = Buffer.from(body);
      files.set(path, {
        body: buffer,
        etag: `"${createHash('sha256').update(buffer).digest('hex').slice(0, 16)}"`,
        lastModified: new Date().toUTCString(),
        failing: false,
      });
    },
    fail(path) {
      const entry = files.get(path);
      if (entry) entry.failing = true;
      else files.set(path, { body: Buffer.alloc(0), etag: '"x"', lastModified: new Date().toUTCString(), failing: true });
    },
    remove(path) {
      files.delete(path);
    },
    hold(path) {
      let arrive!: () => void;
      let release!: () => void;
      const arrived = new Promise<void>((resolve) => (arrive = resolve));
      const released = new Promise<void>((resolve) => (release = resolve));
      held.set(path, { arrive, released });
      return { arrived, release };
    },
    requests,
  };
}
