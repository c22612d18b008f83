import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { riskOnSide, type RiskChange, type RiskContext } from '../model/risk.js';
import type { FixedIn, Severity } from '../model/vulnerability.js';
import { affectedHoldersPage } from './features.js';
import type { Queryable } from './pool.js';
import { RISK_COLUMNS, type RiskNotice } from './risk.js';
import { FIXED_IN_FIELDS, findVulnerabilityById, storedFixedIn, type FixedInRow, type StoredVulnerability } from './vulnerabilities.js';

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

/** The channel the notifiers LISTEN on. */
export const NOTIFY_CHANNEL = 'tarsier_notifications';

const SELECT = `
  SELECT id, name, created_at, notified_at, deleted_at, old_vulnerability_id, new_vulnerability_id, risk_change
  FROM notification WHERE name = $1`;
/**
 * Notifications, waking the notifiers of every replica when the transaction commits (NOTIFY is
 * transactional, and one transaction's repeated NOTIFYs on a channel are delivered once).
 */
const INSERT_NOTIFICATIONS = `
  WITH notice AS (
    INSERT INTO notification (name, old_vulnerability_id, new_vulnerability_id, risk_change)
    SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::jsonb[]))
  SELECT pg_notify('${NOTIFY_CHANNEL}', '')`;
/**
 * Rows per statement: large enough that an updater's tens of thousands of changes take a handful
 * of round trips, small enough that the parameter arrays stay a few MiB.
 */
const NOTIFICATIONS_CHUNK = 5_000;
/** Marks read; a notification read before keeps its first read time. */
const MARK_READ = 'UPDATE notification SET deleted_at = coalesce(deleted_at, now()) WHERE name = $1';
/** The layers whose own diff adds a feature version the vulnerability version affects (affectedHoldersPage). */
const SELECT_INTRODUCING = affectedHoldersPage({
  rows: 'layer_diff',
  holder: 'layer_id',
  also: "AND h.modification = 'add'",
  names: 'layer',
});

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

/** A change to notify: the version it replaced (null: none) and the one it wrote (null: a deletion). */
export interface NotifiedChange {
  readonly old: number | null;
  readonly new: number | null;
  /** For a change of the risk context: both sides are the same version, and this says old → new. */
  readonly riskChange?: RiskChange;
}

/**
 * Records the notifications of these changes, in their order, and wakes the notifiers at COMMIT;
 * returns their names. Every notification is written here but the one a single vulnerability
 * write inserts in its own statement (store/updates.ts). Runs in the caller's transaction.
 */
export async function recordNotifications(client: pg.PoolClient, changes: readonly NotifiedChange[]): Promise<string[]> {
  const names = changes.map(() => randomUUID());
  for (let i = 0; i < changes.length; i += NOTIFICATIONS_CHUNK) {
    const batch = changes.slice(i, i + NOTIFICATIONS_CHUNK);
    await client.query(INSERT_NOTIFICATIONS, [
      names.slice(i, i + NOTIFICATIONS_CHUNK),
      batch.map((c) => c.old),
      batch.map((c) => c.new),
      batch.map((c) => (c.riskChange ? JSON.stringify(c.riskChange) : null)),
    ]);
  }
  return names;
}

/** Notifications of risk-context changes (notifier.onenrichment), delivered like any other. Runs in the caller's transaction. */
export async function insertRiskNotifications(client: pg.PoolClient, notices: readonly RiskNotice[]): Promise<void> {
  await recordNotifications(
    client,
    notices.map((n) => ({ old: n.vulnerabilityId, new: n.vulnerabilityId, riskChange: n.change })),
  );
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

/**
 * Up to this many images affected, a side's first images are found by sorting them all; above it,
 * by walking images in id order (a few steps when many are affected).
 */
const FEW_IMAGES = 100;

/** An image a notification's side affects, as the changes page links it. */
export interface ChangeImage {
  id: number;
  registry: string;
  repository: string;
  digest: string;
  tags: string[];
}

/** One side of a notification as the changes page shows it. */
export interface ChangeSide {
  /** The vulnerability version's id. */
  id: number;
  name: string;
  namespace: string;
  severity: Severity;
  fixedIn: FixedIn[];
  /** KEV as it is now (a KEV change's sides are read from its riskChange instead). */
  kev: RiskContext['kev'] | null;
  /** A hash of description, link and metadata: tells whether anything else changed between the sides. */
  details: string;
  /** The images it affects: what GET /tarsier/v1/notifications/{name} lists for this side, counted. */
  images: number;
  /** The first of them in id order (the API's order), up to the number asked for. */
  firstImages: ChangeImage[];
}

export interface RecentNotification {
  id: number;
  name: string;
  createdAt: Date;
  riskChange: RiskChange | null;
  old: ChangeSide | null;
  new: ChangeSide | null;
}

/**
 * A page of notifications, newest first (ids below $1, or from the newest when null; $2 of them),
 * each side with its vulnerability version and the images it affects: how many, and the first $3
 * in id order. The rule is imagesAffectedByVersion's (an image is affected when the ancestry its
 * digest names holds a feature version the version affects), so the counts equal what the images
 * API lists for each side.
 *
 * Only the page's versions are counted, and each set of affected feature versions once (the sides
 * of a severity change or of a KEV change affect the same set):
 * - held: the ancestries images point at, each with its number of images (one hashed pass over
 *   image and ancestry: a few milliseconds for 10,000 images);
 * - a set's count: the ancestries holding its feature versions (ancestry_feature_fan_out,
 *   index-only), each once, hash-joined to held and summed. A vulnerability in every image of a
 *   fleet costs an index entry and a hash probe per image, not three index lookups;
 * - its first images: when it affects few, their images sorted (by image_digest); when many,
 *   images walked in id order (image_pkey) until $3 are found, as the API pages, which takes a
 *   few steps when many are affected; when none, none.
 */
const SELECT_RECENT = `
  WITH page AS MATERIALIZED (
    SELECT id, name, created_at, old_vulnerability_id, new_vulnerability_id, risk_change
    FROM notification WHERE id < coalesce($1::bigint, 9223372036854775807)
    ORDER BY id DESC LIMIT $2),
  versions AS MATERIALIZED (
    SELECT x.id, coalesce((
      SELECT array_agg(va.feature_version_id ORDER BY va.feature_version_id) FROM vulnerability_affects va
      WHERE va.vulnerability_id = x.id), '{}') AS fvs
    FROM (
      SELECT DISTINCT s.id FROM page CROSS JOIN LATERAL (VALUES (page.old_vulnerability_id), (page.new_vulnerability_id)) s (id)
      WHERE s.id IS NOT NULL) x),
  sets AS MATERIALIZED (
    SELECT row_number() OVER () AS set_id, fvs FROM (SELECT DISTINCT fvs FROM versions WHERE fvs <> '{}') d),
  held AS MATERIALIZED (
    SELECT a.id AS ancestry_id, count(*)::int AS images FROM ancestry a JOIN image p ON p.digest = a.name GROUP BY a.id),
  counted AS (
    SELECT s.set_id, c.images FROM sets s CROSS JOIN LATERAL (
      SELECT sum(h.images)::int AS images
      FROM (SELECT DISTINCT af.ancestry_id FROM ancestry_feature af WHERE af.feature_version_id = ANY (s.fvs)) r
      JOIN held h ON h.ancestry_id = r.ancestry_id) c),
  affected AS (
    SELECT s.fvs, coalesce(c.images, 0) AS images, CASE
      WHEN coalesce(c.images, 0) = 0 THEN '{}'::bigint[]
      WHEN c.images <= ${FEW_IMAGES} THEN ARRAY(
        SELECT p.id FROM image p
        WHERE p.digest IN (
          SELECT a.name FROM ancestry_feature af JOIN ancestry a ON a.id = af.ancestry_id WHERE af.feature_version_id = ANY (s.fvs))
        ORDER BY p.id LIMIT $3)
      ELSE ARRAY(
        SELECT p.id FROM image p
        WHERE EXISTS (
          SELECT 1 FROM ancestry a JOIN ancestry_feature af ON af.ancestry_id = a.id
          WHERE a.name = p.digest AND af.feature_version_id = ANY (s.fvs))
        ORDER BY p.id LIMIT $3) END AS first
    FROM sets s JOIN counted c ON c.set_id = s.set_id),
  sides AS (
    SELECT v.id, jsonb_build_object(
      'id', v.id, 'name', v.name, 'namespace', n.name, 'severity', v.severity, 'kev', risk.kev,
      'details', md5(v.description || E'\\n' || v.link || E'\\n' || coalesce(v.metadata::text, '')),
      'fixedIn', (
        SELECT coalesce(jsonb_agg(jsonb_build_object(${FIXED_IN_FIELDS}) ORDER BY f.name, fi.id), '[]')
        FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id WHERE fi.vulnerability_id = v.id),
      'images', coalesce(c.images, 0),
      'firstImages', (
        SELECT coalesce(jsonb_agg(jsonb_build_object(
                 'id', p.id, 'registry', p.registry, 'repository', p.repository, 'digest', p.digest,
                 'tags', coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM image_tag t WHERE t.image_id = p.id), '{}'))
               ORDER BY p.id), '[]')
        FROM image p WHERE p.id = ANY (c.first))) AS side
    FROM versions x
    JOIN vulnerability v ON v.id = x.id
    JOIN namespace n ON n.id = v.namespace_id
    CROSS JOIN LATERAL (SELECT ${RISK_COLUMNS}) risk
    LEFT JOIN affected c ON c.fvs = x.fvs)
  SELECT p.id, p.name, p.created_at, p.risk_change, o.side AS old, w.side AS new
  FROM page p
  LEFT JOIN sides o ON o.id = p.old_vulnerability_id
  LEFT JOIN sides w ON w.id = p.new_vulnerability_id
  ORDER BY p.id DESC`;

/**
 * Up to limit notifications older than beforeId (null: from the newest), newest first, each side
 * with the number of images it affects and the first firstImages of them: the changes page.
 */
export async function recentNotifications(
  db: Queryable,
  beforeId: number | null,
  limit: number,
  firstImages: number,
): Promise<RecentNotification[]> {
  const { rows } = await db.query<{
    id: number;
    name: string;
    created_at: Date;
    risk_change: RiskChange | null;
    old: StoredSide | null;
    new: StoredSide | null;
  }>(SELECT_RECENT, [beforeId, limit, firstImages]);
  const side = (s: StoredSide | null): ChangeSide | null =>
    s && {
      ...s,
      fixedIn: s.fixedIn.map(storedFixedIn),
    };
  return rows.map((r) => ({
    id: r.id,
    name: r.name,
    createdAt: r.created_at,
    riskChange: r.risk_change,
    old: side(r.old),
    new: side(r.new),
  }));
}

/** A side as the query returns it: fixed-in entries with a null state where the version implies it. */
type StoredSide = Omit<ChangeSide, 'fixedIn'> & { fixedIn: FixedInRow[] };
