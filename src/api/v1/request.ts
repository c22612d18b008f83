import type { FastifyRequest } from 'fastify';
import type { Revision } from './serialize.js';

/**
 * Reading what a v1 request asks for. The route schemas have checked the values already (a bad
 * revision header or limit never reaches a handler); these helpers only interpret them.
 */

/** The output revision: X-Clair-Api-Revision (checked by RevisionHeaders) when present, else the configured default. */
export function revisionOf(request: FastifyRequest, fallback: Revision): Revision {
  const header = request.headers['x-clair-api-revision'];
  const value = (Array.isArray(header) ? header[0] : header)?.trim().toUpperCase();
  return value === 'A' || value === 'B' ? value : fallback;
}

/** Presence flags (?features&vulnerabilities): on when present, off when absent, "false" or "0". */
export function flag(value: string | undefined): boolean {
  if (value === undefined) return false;
  const text = value.trim().toLowerCase();
  return text !== 'false' && text !== '0';
}

/** A page token parameter: absent or empty is the first page. */
export function pageToken(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}
