import { scrypt, timingSafeEqual } from 'node:crypto';
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

/** Clock difference tolerated on exp, nbf and iat between the token issuer and this server. */
const CLOCK_SKEW_SECONDS = 60;

/** The configured credential a request presented. */
export interface Credential {
  /**
   * Which configured credential it is: the fingerprint of the static token, or of the JWT key for a
   * JWT. What a dashboard session keeps, so that the session ends when its credential is removed.
   */
  fingerprint(): Promise<string>;
  /** When it stops being valid: a JWT's exp (with the clock skew); undefined for a static token or a JWT without exp. */
  readonly expiresAt: Date | undefined;
}

export interface Authenticator {
  /** The credential in an Authorization header value; an unauthenticated error when there is none or it is not valid. */
  authenticate(authorization: string | undefined): Promise<Credential>;
  /** Whether fingerprint is that of a credential configured now (a static token or the JWT key). */
  isConfigured(fingerprint: string): Promise<boolean>;
}

/**
 * A credential's fingerprint: scrypt of the secret, with a fixed salt so that every replica computes
 * the same. A slow hash, because fingerprints are stored in the database and a static token may be
 * a word a person chose: a copy of the table must not give it away by a quick guess. Each is
 * computed once per process, when first needed (the dashboard), not at start.
 */
class Fingerprints {
  /** By the configured secret's own Buffer. */
  readonly #memo = new Map<Buffer, Promise<string>>();

  of(kind: 'token' | 'jwt-key', secret: Buffer): Promise<string> {
    let fingerprint = this.#memo.get(secret);
    if (!fingerprint) {
      fingerprint = new Promise<Buffer>((resolve, reject) =>
        scrypt(secret, `tarsier credential fingerprint: ${kind}`, 32, (err, hash) => (err ? reject(err) : resolve(hash))),
      ).then((hash) => `${kind}:${hash.toString('base64url')}`);
      this.#memo.set(secret, fingerprint);
    }
    return fingerprint;
  }
}

/**
 * undefined when no authentication is configured (every request is let through). JWTs are
 * checked by jose: the signature (HS256 only), and exp, nbf and iat as RFC 7519 NumericDates —
 * a claim that is present but not a number is refused, so `{"exp":"1795458091"}` never passes.
 * A token issued in the future (iat past now and the clock skew) is refused too: jose checks iat
 * only against a maximum token age, and a token dated ahead would outlive any such age.
 */
export function createAuthenticator(settings: AuthSettings, now: () => number = Date.now): Authenticator | undefined {
  if (!authConfigured(settings)) return undefined;
  const tokens = settings.tokens.map((t) => Buffer.from(t));
  const psk = settings.psk;
  const key = psk === null ? undefined : new Uint8Array(psk);
  const fingerprints = new Fingerprints();
  const configured = (): Array<Promise<string>> => [
    ...tokens.map((t) => fingerprints.of('token', t)),
    ...(psk === null ? [] : [fingerprints.of('jwt-key', psk)]),
  ];
  return {
    async authenticate(authorization) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      if (!match?.[1]) throw unauthenticated('this API requires a credential: send "Authorization: Bearer <token>"');
      const presented = Buffer.from(match[1]);
      const token = tokens.find((t) => t.length === presented.length && timingSafeEqual(t, presented));
      if (token) return { fingerprint: () => fingerprints.of('token', token), expiresAt: undefined };
      if (key && psk) {
        try {
          const at = now();
          const { payload } = await jwtVerify(match[1], key, {
            algorithms: ['HS256'],
            clockTolerance: CLOCK_SKEW_SECONDS,
            currentDate: new Date(at),
            ...(settings.requireExp ? { requiredClaims: ['exp'] } : {}),
          });
          if (payload.iat === undefined || payload.iat <= at / 1000 + CLOCK_SKEW_SECONDS) {
            return {
              fingerprint: () => fingerprints.of('jwt-key', psk),
              // Accepted until then, as the API accepts it.
              expiresAt: payload.exp === undefined ? undefined : new Date((payload.exp + CLOCK_SKEW_SECONDS) * 1000),
            };
          }
        } catch {
          // Why the token failed is not the client's to learn: every failure reads the same.
        }
      }
      throw unauthenticated('the bearer token is not valid: it is unknown, badly signed, expired or issued in the future');
    },
    async isConfigured(fingerprint) {
      return (await Promise.all(configured())).includes(fingerprint);
    },
  };
}
