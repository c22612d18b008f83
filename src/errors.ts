/**
 * Errors with stable codes. Code throws these; each API dialect maps the code to its status and
 * body in exactly one place (src/api/v1/errors.ts for the v1 envelope, src/api/v3/errors.ts for
 * the ancestry API's), and src/api/edge.ts sends every error answer. Messages are written for the
 * person reading the response: they say what is wrong and what to do.
 */
export type ErrorCode =
  | 'bad_request' // the request must change before a retry (400)
  | 'unauthenticated' // API authentication is configured and the request has no valid credential (401)
  | 'not_found' // the resource does not exist (404)
  | 'method_not_allowed' // the path exists, the method does not (405)
  | 'request_timeout' // the request body did not arrive in time (408)
  | 'payload_too_large' // the request body is over the limit (413)
  | 'uri_too_long' // the request line is over the limit (414)
  | 'unsupported_media_type' // the body's Content-Type or Content-Encoding cannot be read (415)
  | 'unprocessable' // valid request, but the layer cannot be used (422)
  | 'headers_too_large' // the request headers are over the limit (431)
  | 'cancelled' // the client went away before the answer was ready (499, as nginx logs it)
  | 'not_implemented' // a valid request for something this server does not do (501)
  | 'unavailable' // the database cannot be reached; retry later (503)
  | 'internal'; // a server fault (500)

export class TarsierError extends Error {
  readonly code: ErrorCode;

  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TarsierError';
    this.code = code;
  }
}

export const badRequest = (message: string, cause?: unknown): TarsierError => new TarsierError('bad_request', message, { cause });
export const unauthenticated = (message: string): TarsierError => new TarsierError('unauthenticated', message);
export const notFound = (message: string): TarsierError => new TarsierError('not_found', message);
export const unprocessable = (message: string, cause?: unknown): TarsierError => new TarsierError('unprocessable', message, { cause });

/** SQLSTATE classes that mean "the database is not reachable right now", not "the query is wrong". */
const UNAVAILABLE_SQLSTATE_PREFIXES = ['08', '57P'];
const UNAVAILABLE_NODE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EHOSTUNREACH']);

/** True when err says the database went away (connection refused, reset, shut down, timed out). */
export function isDatabaseUnavailable(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string') {
    if (UNAVAILABLE_NODE_CODES.has(code)) return true;
    if (UNAVAILABLE_SQLSTATE_PREFIXES.some((prefix) => code.startsWith(prefix))) return true;
  }
  // pg reports a dropped connection or a pool checkout timeout with these messages and no code.
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Client was closed and is not queryable/i.test(
    err.message,
  );
}

/**
 * SQLSTATEs that mean a value from the request cannot be stored as given; nothing was written (the
 * statement failed), and the client must change the value, so they are the client's 400, not a 500.
 */
const UNSTORABLE_VALUE_MESSAGES: Readonly<Record<string, string>> = {
  '22021': 'a value contains a NUL character or invalid UTF-8, which cannot be stored; remove it',
  '22P05': 'a value contains a character the database cannot store; remove it',
  '54000': 'a value is too long to store (names and versions are indexed); shorten it',
};

/** The client-facing message when err says a request value cannot be stored, else undefined. */
export function unstorableValueMessage(err: unknown): string | undefined {
  if (!(err instanceof Error)) return undefined;
  const code = (err as { code?: unknown }).code;
  return typeof code === 'string' ? UNSTORABLE_VALUE_MESSAGES[code] : undefined;
}
