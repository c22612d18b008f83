import type { Queryable } from './pool.js';

/**
 * Expiring leases in the lock table, for work that one replica at a time should do (indexing a
 * given layer, an updater run, delivering a notification). A replica that dies simply stops
 * renewing; its lease lapses and another replica takes over.
 */
const ACQUIRE = `
  INSERT INTO lock (name, owner, until) VALUES ($1, $2, now() + $3 * interval '1 millisecond')
  ON CONFLICT (name) DO UPDATE SET owner = EXCLUDED.owner, until = EXCLUDED.until
    WHERE lock.until < now() OR lock.owner = EXCLUDED.owner
  RETURNING owner`;
const RENEW = `UPDATE lock SET until = now() + $3 * interval '1 millisecond' WHERE name = $1 AND owner = $2`;
const RELEASE = 'DELETE FROM lock WHERE name = $1 AND owner = $2';

/** Takes the lease when it is free or lapsed; true when owner now holds it. */
export async function acquireLease(db: Queryable, name: string, owner: string, ttlMs: number): Promise<boolean> {
  return ((await db.query(ACQUIRE, [name, owner, ttlMs])).rowCount ?? 0) > 0;
}

/** Extends a held lease; false when owner no longer holds it. */
export async function renewLease(db: Queryable, name: string, owner: string, ttlMs: number): Promise<boolean> {
  return ((await db.query(RENEW, [name, owner, ttlMs])).rowCount ?? 0) > 0;
}

export async function releaseLease(db: Queryable, name: string, owner: string): Promise<void> {
  await db.query(RELEASE, [name, owner]);
}
