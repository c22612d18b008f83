import type { Readable } from 'node:stream';
import type { FastifyRequest } from 'fastify';
import { badRequest } from '../errors.js';
import { MAX_JSON_DEPTH } from './limits.js';
import { compressedBodyError, readBody, type BodySettings } from './request-body.js';

/** Matches a lone surrogate: in a /u pattern, a well-formed pair is one code point, not two Cs. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Refuses JSON a client cannot mean and the store cannot keep: nesting deeper than MAX_JSON_DEPTH,
 * and strings or keys with lone UTF-16 surrogates (`"\ud800"` is valid JSON syntax but not
 * Unicode; PostgreSQL rejects it). Names the place it found, e.g. Vulnerability.Metadata.x.
 */
function checkJson(value: unknown, path: string, depth: number): void {
  if (typeof value === 'string') {
    if (LONE_SURROGATE.test(value))
      throw badRequest(`${path || 'request body'} contains invalid Unicode (a lone UTF-16 surrogate escape such as \\ud800)`);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  if (depth >= MAX_JSON_DEPTH) throw badRequest(`request body nests deeper than ${MAX_JSON_DEPTH} levels (at ${path})`);
  if (Array.isArray(value)) {
    value.forEach((item, i) => checkJson(item, `${path}[${i}]`, depth + 1));
    return;
  }
  for (const [key, inner] of Object.entries(value)) {
    const at = path === '' ? key : `${path}.${key}`;
    if (LONE_SURROGATE.test(key))
      throw badRequest(`a field name in ${path || 'request body'} contains invalid Unicode (a lone UTF-16 surrogate escape)`);
    checkJson(inner, at, depth + 1);
  }
}

/**
 * A Fastify body parser that reads any body as JSON, as Clair did whatever the Content-Type: empty
 * is no body, invalid JSON is a 400 (its message says where), a compressed body is a 415, and
 * transform (e.g. the v1 API's field-name normalisation) is applied to what parses.
 */
export function jsonBodyParser(settings: BodySettings, transform: (value: unknown) => unknown = (value) => value) {
  return (request: FastifyRequest, payload: Readable, done: (err: Error | null, body?: unknown) => void): void => {
    const compressed = compressedBodyError(request.headers);
    if (compressed) {
      done(compressed);
      return;
    }
    readBody(payload, request.headers, settings).then(
      (bytes) => {
        const text = bytes.toString('utf8').trim();
        if (text === '') return done(null, undefined);
        let value: unknown;
        try {
          value = JSON.parse(text);
        } catch (err) {
          return done(badRequest(`request body is not valid JSON: ${(err as Error).message}`));
        }
        try {
          checkJson(value, '', 0);
          done(null, transform(value));
        } catch (err) {
          done(err as Error);
        }
      },
      (err: Error) => done(err),
    );
  };
}
