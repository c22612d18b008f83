import type { FastifyRequest } from 'fastify';

/**
 * A Fastify body parser (parseAs: 'string') that reads any body as JSON, as Clair did whatever the
 * Content-Type: empty is no body, invalid JSON is a 400 (its message says where), and transform
 * (e.g. the v1 API's field-name normalisation) is applied to what parses.
 */
export function jsonBodyParser(transform: (value: unknown) => unknown = (value) => value) {
  return (_request: FastifyRequest, body: string | Buffer, done: (err: Error | null, body?: unknown) => void): void => {
    const text = body.toString().trim();
    if (text === '') return done(null, undefined);
    try {
      done(null, transform(JSON.parse(text)));
    } catch (err) {
      (err as Error & { statusCode?: number }).statusCode = 400;
      done(err as Error, undefined);
    }
  };
}
