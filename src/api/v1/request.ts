import type { FastifyRequest } from 'fastify';
import { badRequest } from '../../errors.js';
import type { Revision } from './serialize.js';

export type Query = Record<string, string | string[] | undefined>;

/** A query parameter's value; the last one when it is repeated. */
export function single(query: Query, name: string): string | undefined {
  const value = query[name];
  return Array.isArray(value) ? value[value.length - 1] : value;
}

/** The output revision: X-Clair-Api-Revision when present, else the configured default. */
export function revisionOf(request: FastifyRequest, fallback: Revision): Revision {
  const header = request.headers['x-clair-api-revision'];
  if (header === undefined) return fallback;
  const value = (Array.isArray(header) ? header[0] : header)?.trim().toUpperCase();
  if (value === 'A' || value === 'B') return value;
  throw badRequest('X-Clair-Api-Revision must be A or B');
}

/** Presence flags (?features&vulnerabilities): on when present, off when absent, "false" or "0". */
export function flag(query: Query, name: string): boolean {
  if (!Object.hasOwn(query, name)) return false;
  const value = single(query, name)?.trim().toLowerCase();
  return value !== 'false' && value !== '0';
}

export const MAX_PAGE_LIMIT = 1000;

/** A page size: 1 to MAX_PAGE_LIMIT; fallback when absent (required when fallback is undefined). */
export function pageLimit(query: Query, fallback?: number): number {
  const raw = single(query, 'limit');
  if (raw === undefined || raw === '') {
    if (fallback === undefined) throw badRequest('the limit query parameter is required (1 to 1000)');
    return fallback;
  }
  if (!/^\d+$/.test(raw.trim()) || Number(raw) < 1 || Number(raw) > MAX_PAGE_LIMIT) {
    throw badRequest(`limit must be an integer from 1 to ${MAX_PAGE_LIMIT} (got ${JSON.stringify(raw)})`);
  }
  return Number(raw);
}

export function pageToken(query: Query): string | undefined {
  const raw = single(query, 'page');
  return raw === undefined || raw === '' ? undefined : raw;
}
