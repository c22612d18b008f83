import { timingSafeEqual } from 'node:crypto';
import { jwtVerify } from 'jose';
import { authConfigured } from '../config.js';
import { unauthenticated } from '../errors.js';

/**
 * Optional API authentication (clair.api.auth): a request must carry `Authorization: Bearer <t>`
 * where t is one of the static tokens or an HS256 JWT signed with the pre-shared key.
 */
export interface AuthSettings {
  readonly tokens: readonly string[];
  readonly psk: Buffer | null;
  /** JWTs without an exp claim are refused (clair.api.auth.requireexp). */
  readonly requireExp: boolean;
}

/** Clock difference tolerated on exp/nbf between the token issuer and this server. */
const CLOCK_SKEW_SECONDS = 60;

export type Authenticate = (authorization: string | undefined) => Promise<void>;

/**
 * undefined when no authentication is configured (every request is let through). JWTs are
 * checked by jose: the signature (HS256 only), and exp, nbf and iat as RFC 7519 NumericDates —
 * a claim that is present but not a number is refused, so `{"exp":"1795458091"}` never passes.
 */
export function createAuthenticator(settings: AuthSettings, now: () => number = Date.now): Authenticate | undefined {
  if (!authConfigured(settings)) return undefined;
  const tokens = settings.tokens.map((t) => Buffer.from(t));
  const key = settings.psk === null ? undefined : new Uint8Array(settings.psk);
  return async (authorization) => {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    if (!match?.[1]) throw unauthenticated('this API requires a credential: send "Authorization: Bearer <token>"');
    const presented = Buffer.from(match[1]);
    if (tokens.some((t) => t.length === presented.length && timingSafeEqual(t, presented))) return;
    if (key) {
      try {
        await jwtVerify(match[1], key, {
          algorithms: ['HS256'],
          clockTolerance: CLOCK_SKEW_SECONDS,
          currentDate: new Date(now()),
          ...(settings.requireExp ? { requiredClaims: ['exp'] } : {}),
        });
        return;
      } catch {
        // Why the token failed is not the client's to learn: every failure reads the same.
      }
    }
    throw unauthenticated('the bearer token is not valid: it is unknown, badly signed or expired');
  };
}
