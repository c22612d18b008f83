import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { riskOnSide, type RiskChange } from '../model/risk.js';
import type { Queryable } from './pool.js';
import type { RiskNotice } from './risk.js';
import { findVulnerabilityById, WAKE_NOTIFIERS, type StoredVulnerability } from './vulnerabilities.js';

export interface NotificationRow {
  id: number;
  name: string;
  createdAt: Date;
  notifiedAt: Date | null;
  deletedAt: Date | null;
  oldVulnerabilityId: number | null;
  newVulnerabilityId: number | null;
  /** For a change of the risk context (KEV) rather than of the vulnerability: both sides are the same version, and this says old → new. */
  riskChange: RiskChange | null;
}

export interface IntroducingLayer {
  /** The layer's id: increases with every layer stored, so pages can resume from it. */
  id: number;
  name: string;
}

const SELECT = `
  SELECT id, name, created_at, notified_at, deleted_at, old_vulnerability_id, new_vulnerability_id, risk_change
  FROM notification WHERE name = $1`;
const INSERT_RISK_NOTIFICATIONS = `
  INSERT INTO notification (name, old_vulnerability_id, new_vulnerability_id, risk_change)
  SELECT name, id, id, change FROM unnest($1::text[], $2::bigint[], $3::jsonb[]) AS t (name, id, change)`;
/** Marks read; a notification read before keeps its first read time. */
const MARK_READ = 'UPDATE notification SET deleted_at = coalesce(deleted_at, now()) WHERE name = $1';
/**
 * The layers whose own diff adds a feature version the vulnerability version affects, in id order
 * from startId: the first $3 of them. Where affected layers are spread evenly a page reads about
 * $3 rows, however many layers and affected versions there are; it never reads more than $3 rows
 * per version and window:
 * - ids come from layer_diff_added in windows of layer ids [lo, hi), starting $3 wide and doubling,
 *   one range scan per affected feature version and window, until $3 layers are found or the
 *   windows pass the last layer. Windows are disjoint, so distinct counts add up. Taking the first
 *   $3 per version bounds a window's cost: a version reaching that cap alone holds $3 layers below
 *   its last row read, so none of the rows it leaves can be on the page.
 * - names are looked up by id in a scalar subquery, which PostgreSQL never turns into a join:
 *   joined, the page's ids were hashed against a sequential scan of every layer.
 * Reading $3 rows of every version from startId instead (no windows) costs $3 × versions a page.
 */
const SELECT_INTRODUCING = `
  WITH RECURSIVE windows (lo, hi, found, ids) AS (
    SELECT $2::bigint, $2::bigint + $3, 0::bigint, ARRAY[]::bigint[]
    UNION ALL
    SELECT w.hi, w.hi + 2 * (w.hi - w.lo), w.found + s.n, s.ids
    FROM windows w CROSS JOIN LATERAL (
      SELECT count(DISTINCT x.layer_id) AS n, array_agg(DISTINCT x.layer_id) AS ids
      FROM vulnerability_affects a
      CROSS JOIN LATERAL (
        SELECT d.layer_id FROM layer_diff d
        WHERE d.feature_version_id = a.feature_version_id AND d.modification = 'add' AND d.layer_id >= w.lo AND d.layer_id < w.hi
        ORDER BY d.layer_id LIMIT $3
      ) x
      WHERE a.vulnerability_id = $1
    ) s
    WHERE w.found < $3 AND w.lo <= (SELECT max(id) FROM layer)
  )
  SELECT page.id, (SELECT l.name FROM layer l WHERE l.id = page.id) AS name
  FROM (SELECT id FROM windows, unnest(windows.ids) id ORDER BY id LIMIT $3) page
  ORDER BY page.id`;

export async function findNotification(db: Queryable, name: string): Promise<NotificationRow | undefined> {
  const row = (
    await db.query<{
      id: number;
      name: string;
      created_at: Date;
      notified_at: Date | null;
      deleted_at: Date | null;
      old_vulnerability_id: number | null;
      new_vulnerability_id: number | null;
      risk_change: RiskChange | null;
    }>(SELECT, [name])
  ).rows[0];
  return (
    row && {
      id: row.id,
      name: row.name,
      createdAt: row.created_at,
      notifiedAt: row.notified_at,
      deletedAt: row.deleted_at,
      oldVulnerabilityId: row.old_vulnerability_id,
      newVulnerabilityId: row.new_vulnerability_id,
      riskChange: row.risk_change,
    }
  );
}

/** Up to limit layers introducing the vulnerability version, from layer id startId on. */
export async function layersIntroducing(
  db: Queryable,
  vulnerabilityId: number,
  startId: number,
  limit: number,
): Promise<IntroducingLayer[]> {
  return (await db.query<IntroducingLayer>(SELECT_INTRODUCING, [vulnerabilityId, startId, limit])).rows;
}

/** false when there is no such notification. */
export async function markNotificationRead(db: Queryable, name: string): Promise<boolean> {
  return ((await db.query(MARK_READ, [name])).rowCount ?? 0) > 0;
}

export interface ClaimedNotification {
  id: number;
  name: string;
  /** Consecutive failed tries so far. */
  attempts: number;
}

/**
 * Takes the most overdue unread notification for delivery: its next delivery time moves a lease
 * ahead, so other replicas skip it now, and pick it up again if this replica dies mid-delivery.
 */
const CLAIM = `
  UPDATE notification SET next_delivery_at = now() + $1 * interval '1 millisecond'
  WHERE id = (
    SELECT id FROM notification WHERE deleted_at IS NULL AND next_delivery_at <= now()
    ORDER BY next_delivery_at, id LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING id, name, delivery_attempts AS attempts`;
const DELIVERED = `
  UPDATE notification SET notified_at = now(), delivery_attempts = 0, next_delivery_at = now() + $2 * interval '1 millisecond'
  WHERE id = $1`;
const FAILED = `
  UPDATE notification SET delivery_attempts = delivery_attempts + 1, next_delivery_at = now() + $2 * interval '1 millisecond'
  WHERE id = $1`;
const PURGE_READ = `
  DELETE FROM notification WHERE id IN (
    SELECT id FROM notification WHERE deleted_at < now() - $1 * interval '1 millisecond' LIMIT $2)`;
/** Superseded vulnerability versions no notification shows any more (their fixes and links go with them). */
const PURGE_VERSIONS = `
  DELETE FROM vulnerability WHERE id IN (
    SELECT v.id FROM vulnerability v
    WHERE v.deleted_at IS NOT NULL
      AND NOT EXISTS (SELECT 1 FROM notification n WHERE n.old_vulnerability_id = v.id)
      AND NOT EXISTS (SELECT 1 FROM notification n WHERE n.new_vulnerability_id = v.id)
    LIMIT $1)`;

export async function claimNotification(db: Queryable, leaseMs: number): Promise<ClaimedNotification | undefined> {
  return (await db.query<ClaimedNotification>(CLAIM, [leaseMs])).rows[0];
}

export async function recordDelivered(db: Queryable, id: number, renotifyInMs: number): Promise<void> {
  await db.query(DELIVERED, [id, renotifyInMs]);
}

export async function recordDeliveryFailed(db: Queryable, id: number, retryInMs: number): Promise<void> {
  await db.query(FAILED, [id, retryInMs]);
}

/** Deletes read notifications older than retentionMs, then the vulnerability versions only they showed; counts both. */
export async function purgeNotifications(
  db: Queryable,
  retentionMs: number,
  batch = 10_000,
): Promise<{ notifications: number; versions: number }> {
  let notifications = 0;
  for (;;) {
    const n = (await db.query(PURGE_READ, [retentionMs, batch])).rowCount ?? 0;
    notifications += n;
    if (n < batch) break;
  }
  let versions = 0;
  for (;;) {
    const n = (await db.query(PURGE_VERSIONS, [batch])).rowCount ?? 0;
    versions += n;
    if (n < batch) break;
  }
  return { notifications, versions };
}

/** Notifications of risk-context changes (notifier.onenrichment), delivered like any other. Runs in the caller's transaction. */
export async function insertRiskNotifications(client: pg.PoolClient, notices: readonly RiskNotice[]): Promise<void> {
  if (notices.length === 0) return;
  await client.query(INSERT_RISK_NOTIFICATIONS, [
    notices.map(() => randomUUID()),
    notices.map((n) => n.vulnerabilityId),
    notices.map((n) => JSON.stringify(n.change)),
  ]);
  await client.query(WAKE_NOTIFIERS);
}

/**
 * A side's vulnerability version as the notification shows it (undefined: no such side, or purged
 * since): for a KEV change, with that side's KEV entry instead of the current one.
 */
export async function notifiedVulnerability(
  db: Queryable,
  notification: NotificationRow,
  side: 'old' | 'new',
): Promise<StoredVulnerability | undefined> {
  const id = side === 'old' ? notification.oldVulnerabilityId : notification.newVulnerabilityId;
  if (id === null) return undefined;
  const v = await findVulnerabilityById(db, id);
  return v && { ...v, risk: riskOnSide(v.risk, notification.riskChange, side) };
}
