import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { versionFormat } from '../ecosystems/index.js';
import type { VersionFormatName } from '../model/version-format.js';
import type { FixedIn, Severity, Vulnerability } from '../model/vulnerability.js';
import { linkAffected, lockFeatures, shareNamespace, versionsOfFeatures, type FixRecord } from './features.js';
import type { Queryable } from './pool.js';

export interface NamespaceRow {
  id: number;
  name: string;
  versionFormat: VersionFormatName;
}

/** A stored vulnerability version. */
export interface StoredVulnerability extends Vulnerability {
  readonly id: number;
  readonly updater: string | null;
  /** Its namespace's version format (how its fixed-in versions are compared). */
  readonly versionFormat: VersionFormatName;
}

const SELECT_NAMESPACES = 'SELECT id, name, version_format FROM namespace ORDER BY name';
const SELECT_NAMESPACE = 'SELECT id, name, version_format FROM namespace WHERE name = $1';
const INSERT_NAMESPACE = 'INSERT INTO namespace (name, version_format) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING';

const VULNERABILITY_COLUMNS =
  'v.id, v.name, n.name AS namespace, v.description, v.link, v.severity, v.metadata, v.updater, n.version_format AS "versionFormat"';
const SELECT_LIVE = `
  SELECT ${VULNERABILITY_COLUMNS} FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.namespace_id = $1 AND v.name = $2 AND v.deleted_at IS NULL`;
/** Any version, live or superseded (notifications show both sides). */
const SELECT_BY_ID = `
  SELECT ${VULNERABILITY_COLUMNS} FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id WHERE v.id = $1`;
/** One page of a namespace's live vulnerabilities in id order; the caller asks for limit + 1 rows. */
const SELECT_LIVE_PAGE = `
  SELECT ${VULNERABILITY_COLUMNS} FROM vulnerability v JOIN namespace n ON n.id = v.namespace_id
  WHERE v.namespace_id = $1 AND v.deleted_at IS NULL AND v.id >= $2
  ORDER BY v.id LIMIT $3`;
const SELECT_FIXEDIN = `
  SELECT fi.vulnerability_id, f.name AS feature, fi.fixed_version
  FROM vulnerability_fixedin fi JOIN feature f ON f.id = fi.feature_id
  WHERE fi.vulnerability_id = ANY($1::bigint[]) ORDER BY f.name`;

/** Serialises writers of one (namespace, name) for the rest of the transaction. */
const LOCK_NAME = 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))';
const SOFT_DELETE = 'UPDATE vulnerability SET deleted_at = now() WHERE id = $1';
const INSERT_VULNERABILITY = `
  INSERT INTO vulnerability (namespace_id, name, description, link, severity, metadata, updater, source_severity)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $5) RETURNING id`;
const INSERT_FIXEDIN = `
  INSERT INTO vulnerability_fixedin (vulnerability_id, feature_id, fixed_version)
  SELECT $1, f, v FROM unnest($2::int[], $3::text[]) AS t(f, v)
  RETURNING id, vulnerability_id, feature_id, fixed_version`;
const INSERT_NOTIFICATION = `
  INSERT INTO notification (name, old_vulnerability_id, new_vulnerability_id) VALUES ($1, $2, $3) RETURNING name`;
/** The channel the notifiers LISTEN on. */
export const NOTIFY_CHANNEL = 'tarsier_notifications';
/** Wakes the notifiers of every replica when the transaction commits (NOTIFY is transactional). */
export const WAKE_NOTIFIERS = `SELECT pg_notify('${NOTIFY_CHANNEL}', '')`;

interface NamespaceRecord {
  id: number;
  name: string;
  version_format: VersionFormatName;
}

const toNamespace = (r: NamespaceRecord): NamespaceRow => ({ id: r.id, name: r.name, versionFormat: r.version_format });

export async function listNamespaces(db: Queryable): Promise<NamespaceRow[]> {
  return (await db.query<NamespaceRecord>(SELECT_NAMESPACES)).rows.map(toNamespace);
}

export async function findNamespace(db: Queryable, name: string): Promise<NamespaceRow | undefined> {
  const row = (await db.query<NamespaceRecord>(SELECT_NAMESPACE, [name])).rows[0];
  return row && toNamespace(row);
}

/** The namespace, created with versionFormat when new (an existing one keeps its format). */
export async function ensureNamespace(db: Queryable, name: string, format: VersionFormatName): Promise<NamespaceRow> {
  await db.query(INSERT_NAMESPACE, [name, format]);
  const found = await findNamespace(db, name);
  if (!found) throw new Error(`namespace ${name} vanished right after it was created`);
  return found;
}

interface VulnerabilityRecord {
  id: number;
  name: string;
  namespace: string;
  description: string;
  link: string;
  severity: Severity;
  metadata: Record<string, unknown> | null;
  updater: string | null;
  versionFormat: VersionFormatName;
}

/** Loads rows with their fixed-in lists (one query for all of them). */
async function withFixedIn(db: Queryable, records: VulnerabilityRecord[]): Promise<StoredVulnerability[]> {
  if (records.length === 0) return [];
  const fixes = new Map<number, FixedIn[]>();
  const { rows } = await db.query<{ vulnerability_id: number; feature: string; fixed_version: string | null }>(SELECT_FIXEDIN, [
    records.map((r) => r.id),
  ]);
  for (const row of rows) {
    const list = fixes.get(row.vulnerability_id) ?? [];
    list.push({ feature: row.feature, version: row.fixed_version });
    fixes.set(row.vulnerability_id, list);
  }
  return records.map((r) => ({ ...r, fixedIn: fixes.get(r.id) ?? [] }));
}

export async function findLiveVulnerability(
  db: Queryable,
  namespace: NamespaceRow,
  name: string,
): Promise<StoredVulnerability | undefined> {
  const { rows } = await db.query<VulnerabilityRecord>(SELECT_LIVE, [namespace.id, name]);
  return (await withFixedIn(db, rows))[0];
}

export async function findVulnerabilityById(db: Queryable, id: number): Promise<StoredVulnerability | undefined> {
  const { rows } = await db.query<VulnerabilityRecord>(SELECT_BY_ID, [id]);
  return (await withFixedIn(db, rows))[0];
}

/** Live vulnerabilities with id ≥ startId, at most limit of them, without fixed-in lists. */
export async function listLiveVulnerabilities(
  db: Queryable,
  namespace: NamespaceRow,
  startId: number,
  limit: number,
): Promise<StoredVulnerability[]> {
  const { rows } = await db.query<VulnerabilityRecord>(SELECT_LIVE_PAGE, [namespace.id, startId, limit]);
  return rows.map((r) => ({ ...r, fixedIn: [] }));
}

/**
 * Takes the per-name write lock for the rest of the transaction and returns the live version.
 * Every change to a vulnerability goes: lock → read → decide → replaceVulnerability.
 */
export async function lockVulnerability(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  name: string,
): Promise<StoredVulnerability | undefined> {
  await shareNamespace(client, namespace.id);
  await client.query(LOCK_NAME, [`vulnerability/${namespace.id}/${name}`]);
  return findLiveVulnerability(client, namespace, name);
}

export interface ReplaceOptions {
  /** The updater writing it, null for the API. */
  updater: string | null;
  /** Write a notification row (false for an updater's very first run). */
  notify: boolean;
}

export interface ReplaceResult {
  /** The new live version's id; null after a deletion. */
  id: number | null;
  /** The notification written, if any. */
  notification: string | null;
}

/**
 * Replaces the live version `current` (locked by lockVulnerability) with `next`: the current row
 * is kept but marked deleted, `next` (null = delete) is inserted with its fixed-in entries and the
 * feature versions it affects, and a notification names both versions. Must run in the
 * transaction that took the lock.
 */
export async function replaceVulnerability(
  client: pg.PoolClient,
  namespace: NamespaceRow,
  current: StoredVulnerability | undefined,
  next: Vulnerability | null,
  options: ReplaceOptions,
): Promise<ReplaceResult> {
  if (current) await client.query(SOFT_DELETE, [current.id]);
  const id = next ? await insertVersion(client, namespace, next, options.updater) : null;
  let notification: string | null = null;
  if (options.notify && (current || id !== null)) {
    const { rows } = await client.query<{ name: string }>(INSERT_NOTIFICATION, [randomUUID(), current?.id ?? null, id]);
    notification = rows[0]?.name ?? null;
    await client.query(WAKE_NOTIFIERS);
  }
  return { id, notification };
}

async function insertVersion(client: pg.PoolClient, namespace: NamespaceRow, v: Vulnerability, updater: string | null): Promise<number> {
  const { rows } = await client.query<{ id: number }>(INSERT_VULNERABILITY, [
    namespace.id,
    v.name,
    v.description,
    v.link,
    v.severity,
    v.metadata === null ? null : JSON.stringify(v.metadata),
    updater,
  ]);
  const id = rows[0]!.id;
  if (v.fixedIn.length === 0) return id;

  // Lock the features before reading their versions, so a layer indexed concurrently cannot add
  // a version this transaction does not see (and that would then never be linked).
  const featureIds = await lockFeatures(
    client,
    namespace.id,
    v.fixedIn.map((f) => f.feature),
  );
  const fixes = (
    await client.query<FixRecord>(INSERT_FIXEDIN, [id, v.fixedIn.map((f) => featureIds.get(f.feature)!), v.fixedIn.map((f) => f.version)])
  ).rows;
  const versions = await versionsOfFeatures(
    client,
    fixes.map((f) => f.feature_id),
  );
  await linkAffected(client, fixes, versions, versionFormat(namespace.versionFormat).compare);
  return id;
}
