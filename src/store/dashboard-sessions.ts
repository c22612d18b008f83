import type { Queryable } from './pool.js';

/**
 * Dashboard sessions (migration 0013), by the SHA-256 of their id: any replica on this database
 * finds a session another one opened. A session is valid while valid_until has not passed; each
 * use moves valid_until on by the idle limit, never past expires_at.
 */

/** Opening a session also deletes the sessions that have ended, so the table holds only those still open. */
const OPEN = `
  WITH ended AS (
    DELETE FROM dashboard_session
    WHERE id_hash IN (SELECT id_hash FROM dashboard_session WHERE valid_until <= now() FOR UPDATE SKIP LOCKED)
  ),
  limits AS (
    SELECT least(now() + $4 * interval '1 millisecond', coalesce($5::timestamptz, 'infinity')) AS expires_at
  )
  INSERT INTO dashboard_session (id_hash, credential, valid_until, expires_at)
  SELECT $1, $2, least(now() + $3 * interval '1 millisecond', expires_at), expires_at FROM limits`;
const USE = `
  UPDATE dashboard_session SET valid_until = least(now() + $2 * interval '1 millisecond', expires_at)
  WHERE id_hash = $1 AND valid_until > now()
  RETURNING credential`;
const END = 'DELETE FROM dashboard_session WHERE id_hash = $1';

export interface NewDashboardSession {
  readonly idHash: Buffer;
  /** The fingerprint of the credential it was opened with. */
  readonly credential: string;
  readonly idleMs: number;
  readonly lifetimeMs: number;
  /** When the credential itself ends (a JWT's expiry): the session ends then at the latest. */
  readonly credentialExpiresAt: Date | undefined;
}

export async function openDashboardSession(db: Queryable, session: NewDashboardSession): Promise<void> {
  const { idHash, credential, idleMs, lifetimeMs, credentialExpiresAt } = session;
  await db.query(OPEN, [idHash, credential, idleMs, lifetimeMs, credentialExpiresAt ?? null]);
}

/** The credential fingerprint of a valid session, whose idle limit moves on; undefined when there is no such session or it has ended. */
export async function useDashboardSession(db: Queryable, idHash: Buffer, idleMs: number): Promise<string | undefined> {
  return (await db.query<{ credential: string }>(USE, [idHash, idleMs])).rows[0]?.credential;
}

export async function endDashboardSession(db: Queryable, idHash: Buffer): Promise<void> {
  await db.query(END, [idHash]);
}
