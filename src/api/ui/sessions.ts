import { createHash, randomBytes } from 'node:crypto';
import type { Pool } from '../../store/pool.js';
import { endDashboardSession, openDashboardSession, useDashboardSession } from '../../store/dashboard-sessions.js';
import type { Authenticator, Credential } from '../auth.js';

/** A session id as the cookie carries it: 32 random bytes, base64url. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/;

const hashOf = (id: string): Buffer => createHash('sha256').update(id).digest();

/**
 * Dashboard sessions: a browser signs in once with an API credential and keeps only a random
 * session id, stored in PostgreSQL (as its hash) so every replica accepts it. A session ends when
 * it is signed out, goes unused for the idle limit, reaches its lifetime (or its JWT's expiry), or
 * when the credential it was opened with is no longer configured.
 */
export class DashboardSessions {
  readonly #pool: Pool;
  readonly #authenticator: Authenticator;
  readonly #idleMs: number;
  readonly #lifetimeMs: number;

  constructor(deps: { pool: Pool; authenticator: Authenticator; idleMs: number; lifetimeMs: number }) {
    this.#pool = deps.pool;
    this.#authenticator = deps.authenticator;
    this.#idleMs = deps.idleMs;
    this.#lifetimeMs = deps.lifetimeMs;
  }

  /** Opens a session for a credential the authenticator accepted; its id, for the cookie. */
  async open(credential: Credential): Promise<string> {
    const id = randomBytes(32).toString('base64url');
    await openDashboardSession(this.#pool, {
      idHash: hashOf(id),
      credential: await credential.fingerprint(),
      idleMs: this.#idleMs,
      lifetimeMs: this.#lifetimeMs,
      credentialExpiresAt: credential.expiresAt,
    });
    return id;
  }

  /** Whether id names an open session whose credential is still configured; using it moves its idle limit on. */
  async valid(id: string): Promise<boolean> {
    if (!SESSION_ID.test(id)) return false;
    const credential = await useDashboardSession(this.#pool, hashOf(id), this.#idleMs);
    if (credential === undefined) return false;
    if (await this.#authenticator.isConfigured(credential)) return true;
    await endDashboardSession(this.#pool, hashOf(id));
    return false;
  }

  async end(id: string): Promise<void> {
    if (SESSION_ID.test(id)) await endDashboardSession(this.#pool, hashOf(id));
  }
}
