import { randomUUID } from 'node:crypto';
import { maxHeaderSize, METHODS, STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyBaseLogger, FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import FindMyWay from 'find-my-way';
import type { Logger } from 'pino';
import { TarsierError } from '../errors.js';
import type { Metrics } from '../metrics.js';
import { MAX_NAME_LENGTH } from './limits.js';
import { harborErrorResponse, isHarborApiUrl } from './harbor/errors.js';
import { classifyRequestError, type RequestError } from './request-errors.js';
import { JSON_CONTENT_TYPE, v1ErrorResponse } from './v1/errors.js';
import { HTML_CONTENT_TYPE, isUiUrl, UI_PAGE_HEADERS, uiErrorResponse } from './ui/errors.js';
import { ancestryErrorResponse, isAncestryApiUrl } from './v3/errors.js';

/**
 * The HTTP edge: what a request meets before, around and instead of a route. Every error answer
 * of the API server, whether a route threw it, Fastify refused the request (bad percent-encoding,
 * a name too long, a body too large or too slow) or Node's HTTP parser did (URL or headers too
 * long, a method it does not know), is sent here: in the envelope of the route the URL belongs
 * to, with the request id, logged once and counted in tarsier_http_errors_total.
 */

export type Dialect = 'v1' | 'ancestry' | 'harbor' | 'ui';

/** The error envelope of the route a URL belongs to: the ancestry API's, Harbor's (/api/v1), the dashboard's (/ui), or v1's (also /tarsier). */
export function dialectOf(url: string): Dialect {
  if (isHarborApiUrl(url)) return 'harbor';
  if (isUiUrl(url)) return 'ui';
  return isAncestryApiUrl(url) ? 'ancestry' : 'v1';
}

/** The answer to a problem in a dialect: JSON in every API, a page (its HTML text) in the dashboard. */
function errorResponse(dialect: Dialect, problem: RequestError): { status: number; body: unknown; type: string } {
  switch (dialect) {
    case 'ancestry':
      return { ...ancestryErrorResponse(problem), type: JSON_CONTENT_TYPE };
    case 'harbor':
      return harborErrorResponse(problem);
    case 'ui':
      return { ...uiErrorResponse(problem), type: HTML_CONTENT_TYPE };
    default:
      return { ...v1ErrorResponse(problem), type: JSON_CONTENT_TYPE };
  }
}

/** Request ids a client may choose: short, printable, nothing a log line could be forged with. */
const CLIENT_REQUEST_ID = /^[\w.:@/+=-]{1,128}$/;

/** The request's id: the client's X-Request-Id when it is a sensible one, else a new UUID. */
export function requestIdOf(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  return given !== undefined && CLIENT_REQUEST_ID.test(given) ? given : randomUUID();
}

/**
 * How URLs find routes, for the API's router and RouteTable alike. klar and reg join a base URL
 * ending in "/" with "/v1/...": "//v1/layers" is "/v1/layers". Names in paths may be up to
 * MAX_NAME_LENGTH (Fastify's default of 100 refused klar's and Quay's layer names).
 */
export const ROUTER_OPTIONS = { ignoreTrailingSlash: true, ignoreDuplicateSlashes: true, maxParamLength: MAX_NAME_LENGTH } as const;

/** The routes' paths and methods, to tell "no such path" (404) from "no such method" (405, Allow). */
export class RouteTable {
  readonly #router = FindMyWay({ ...ROUTER_OPTIONS });
  readonly #seen = new Set<string>();

  add(methods: string | readonly string[], url: string): void {
    for (const method of typeof methods === 'string' ? [methods] : methods) {
      const key = `${method} ${url}`;
      if (this.#seen.has(key)) continue;
      this.#seen.add(key);
      this.#router.on(method as FindMyWay.HTTPMethod, url, () => undefined);
    }
  }

  /** The methods the path (no query) has a route for; empty when it has none. */
  allowed(path: string): string[] {
    const methods = new Set<string>();
    for (const key of this.#seen) {
      const method = key.slice(0, key.indexOf(' '));
      if (!methods.has(method) && this.#router.find(method as FindMyWay.HTTPMethod, path)) methods.add(method);
    }
    return [...methods].sort();
  }
}

const pathOf = (url: string): string => url.split('?', 1)[0] ?? '';

/** What could be read of a request the HTTP parser refused: its method and target, when the packet starts with them. */
interface RefusedRequest {
  method?: string;
  target?: string;
  /** The request line, when it ended within the packet. */
  line?: string;
}

const REQUEST_LINE_START = /^([A-Za-z][A-Za-z-]*) (\/\S*)/;

function refusedRequest(rawPacket: unknown): RefusedRequest {
  if (!Buffer.isBuffer(rawPacket)) return {};
  const raw = rawPacket.toString('latin1', 0, Math.min(rawPacket.length, 64 * 1024));
  const start = REQUEST_LINE_START.exec(raw);
  if (!start) return {};
  const end = raw.indexOf('\r\n');
  return { method: start[1], target: start[2], ...(end >= 0 ? { line: raw.slice(0, end) } : {}) };
}

/** A refused request's method as a metric label: one of HTTP's, else "other" (a client may send any word). */
function methodLabel(method: string | undefined): string {
  return method !== undefined && METHODS.includes(method) ? method : 'other';
}

/** Node's HTTP parser errors (llhttp codes) as our error codes and messages. */
function describeParserError(
  err: Error & { code?: string; reason?: string },
  refused: RefusedRequest,
  maxHeaderBytes: number,
): RequestError {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      // Node counts the request line as a header: call it the URL's fault when it is most of it.
      if (refused.target !== undefined && (refused.line === undefined || refused.line.length > maxHeaderBytes / 2)) {
        return {
          code: 'uri_too_long',
          message: `the URL is longer than the ${maxHeaderBytes / 1024} KiB limit of the request line and headers`,
        };
      }
      return { code: 'headers_too_large', message: `the request line and headers are larger than the ${maxHeaderBytes / 1024} KiB limit` };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { code: 'request_timeout', message: 'the request did not arrive in time' };
    default:
      return { code: 'bad_request', message: `the request is not valid HTTP/1.1: ${err.reason ?? err.message}` };
  }
}

/**
 * A signal that aborts when the client goes away before its answer is complete, so work done
 * only for it (a layer download) stops. Its reason is a 'cancelled' TarsierError.
 */
export function whileClientWaits(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) {
      controller.abort(new TarsierError('cancelled', 'the client closed the connection before the answer was ready'));
    }
  });
  return controller.signal;
}

export interface EdgeDeps {
  metrics: Metrics;
  log: Logger;
  routes: RouteTable;
}

export class Edge {
  readonly #metrics: Metrics;
  readonly #log: Logger;
  readonly #routes: RouteTable;

  constructor(deps: EdgeDeps) {
    this.#metrics = deps.metrics;
    this.#log = deps.log;
    this.#routes = deps.routes;
  }

  #record(log: FastifyBaseLogger | Logger, route: string, status: number, problem: RequestError): void {
    this.#metrics.httpErrors.inc({ route, status: String(status), reason: problem.code });
    // Server faults were logged with their cause where they were classified.
    if (status < 500 || problem.code === 'not_implemented')
      log.info({ reason: problem.code, status, message: problem.message }, 'request rejected');
  }

  /** Answers request with problem in its route's dialect. */
  send(request: FastifyRequest, reply: FastifyReply, problem: RequestError): FastifyReply {
    const { status, body, type } = errorResponse(dialectOf(request.url), problem);
    this.#record(request.log, request.routeOptions.url ?? 'unmatched', status, problem);
    reply.code(status).type(type).header('x-request-id', request.id);
    if (type === HTML_CONTENT_TYPE) reply.headers(UI_PAGE_HEADERS);
    if (problem.allow) reply.header('allow', problem.allow.join(', '));
    // A body left unread (too large, too slow) is not worth waiting for: close the connection.
    if (!request.raw.complete) reply.header('connection', 'close');
    // Bytes under any other type, which goes out exactly as given: Fastify would serialize an
    // object as plain JSON, and add a charset to a string's type.
    return reply.send(type === JSON_CONTENT_TYPE || typeof body === 'string' ? body : Buffer.from(JSON.stringify(body)));
  }

  /** Fastify's error handler: errors of routes and their hooks, parsers and validation. */
  readonly onError = (err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply =>
    this.send(request, reply, classifyRequestError(err, request.log));

  /**
   * Fastify's frameworkErrors: the router refused the URL (bad percent-encoding, a name too long).
   * Fastify runs no onResponse hook for these requests, so their answer is counted here.
   */
  readonly onFrameworkError = (err: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply => {
    const sent = this.onError(err, request, reply);
    this.#metrics.httpRequests.inc({ method: methodLabel(request.method), route: 'unmatched', status: String(reply.statusCode) });
    return sent;
  };

  /** No route for the method and path: 405 with Allow when the path has other methods, else 404. */
  readonly onNotFound = (request: FastifyRequest, reply: FastifyReply): FastifyReply =>
    this.send(request, reply, this.#noRoute(request.method, pathOf(request.url)));

  #noRoute(method: string, path: string): RequestError {
    const allow = this.#routes.allowed(path);
    return allow.length > 0
      ? { code: 'method_not_allowed', message: `${method} is not allowed on ${path}: use ${allow.join(', ')}`, allow }
      : { code: 'not_found', message: `no route for ${method} ${path}` };
  }

  /**
   * Node's clientError: the HTTP parser refused the request (or its headers timed out) before
   * Fastify saw it, so the answer is written to the socket here, in the dialect of the URL when the
   * request line could be read.
   */
  readonly onClientError = (err: Error & { code?: string; rawPacket?: unknown; reason?: string }, socket: Socket): void => {
    if (err.code === 'ECONNRESET' || socket.destroyed) return; // the client went away: no one to answer
    const refused = refusedRequest(err.rawPacket);
    const url = refused.target ?? (socket as Socket & { _httpMessage?: { req?: { url?: string } } })._httpMessage?.req?.url ?? '/';
    let problem = describeParserError(err, refused, maxHeaderSize);
    if (err.code === 'HPE_INVALID_METHOD' && refused.target !== undefined) {
      // A method Node's parser does not know: as for any other method the path lacks.
      problem = this.#noRoute(refused.method ?? '', pathOf(url));
    }
    const { status, body, type } = errorResponse(dialectOf(url), problem);
    const id = randomUUID();
    this.#record(this.#log.child({ reqId: id }), 'unparsed', status, problem);
    const text = typeof body === 'string' ? body : JSON.stringify(body);
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (socket.writable && !inFlight?.headersSent) {
      // Fastify never saw this request, so its onResponse hook does not count the answer: count it here.
      this.#metrics.httpRequests.inc({ method: methodLabel(refused.method), route: 'unparsed', status: String(status) });
      socket.end(
        `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n` +
          `Content-Type: ${type}\r\nContent-Length: ${Buffer.byteLength(text)}\r\n` +
          `X-Request-Id: ${id}\r\n${problem.allow ? `Allow: ${problem.allow.join(', ')}\r\n` : ''}Connection: close\r\n\r\n${text}`,
      );
    } else {
      socket.destroy();
    }
  };
}
