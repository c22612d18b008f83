import { createHmac, timingSafeEqual } from 'node:crypto';
import { unauthenticated } from '../errors.js';

/**
 * Optional API authentication (clair.api.auth): a request must carry `Authorization: Bearer <t>`
 * where t is one of the static tokens or an HS256 JWT signed with the pre-shared key.
 */
export interface AuthSettings {
  readonly tokens: readonly string[];
  readonly psk: Buffer | null;
}

/** Clock difference tolerated on exp/nbf between the token issuer and this server. */
const CLOCK_SKEW_SECONDS = 60;

export type Authenticate = (authorization: string | undefined) => void;

/** undefined when no authentication is configured (every request is let through). */
export function createAuthenticator(settings: AuthSettings, now: () => number = Date.now): Authenticate | undefined {
  if (settings.tokens.length === 0 && settings.psk === null) return undefined;
  const tokens = settings.tokens.map((t) => Buffer.from(t));
  return (authorization) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match?.[1]) throw unauthenticated('this API requires a credential: send "Authorization: Bearer <token>"');
    const presented = Buffer.from(match[1]);
    if (tokens.some((t) => t.length === presented.length && timingSafeEqual(t, presented))) return;
    if (settings.psk && validJwt(match[1], settings.psk, Math.floor(now() / 1000))) return;
    throw unauthenticated('the bearer token is not valid: it is unknown, badly signed or expired');
  };
}

function validJwt(token: string, key: Buffer, nowSeconds: number): boolean {
  const parts = token.split('.');
  if (parts.length !== 3) return false;
  const [header, payload, signature] = parts as [string, string, string];
  const expected = createHmac('sha256', key).update(`${header}.${payload}`).digest();
  const given = Buffer.from(signature, 'base64url');
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) return false;
  try {
    const head = JSON.parse(Buffer.from(header, 'base64url').toString('utf8')) as { alg?: unknown };
    if (head.alg !== 'HS256') return false;
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown; nbf?: unknown };
    if (typeof claims.exp === 'number' && nowSeconds > claims.exp + CLOCK_SKEW_SECONDS) return false;
    if (typeof claims.nbf === 'number' && nowSeconds + CLOCK_SKEW_SECONDS < claims.nbf) return false;
    return true;
  } catch {
    return false;
  }
}
