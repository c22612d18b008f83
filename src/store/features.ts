import type pg from 'pg';
import type { InstalledVersion, Matching, StoredFix } from '../model/matching.js';
import type { Package } from '../model/indexing.js';
import type { VersionFormatName } from '../model/version-format.js';
import type { Queryable } from './pool.js';

/** Advisory lock class for features (pg_advisory_xact_lock(class, bucket)). */
export const FEATURE_LOCK_CLASS = 1;
/**
 * Advisory lock class for namespaces: an updater rewriting a namespace holds it exclusively;
 * single writes (API, layer indexing) hold it shared, taken before they change any row.
 */
export const NAMESPACE_LOCK_CLASS = 2;
const LOCK_NAMESPACE_SHARED = `SELECT pg_advisory_xact_lock_shared(${NAMESPACE_LOCK_CLASS}, $1)`;
const LOCK_NAMESPACE_EXCLUSIVE = `SELECT pg_advisory_xact_lock(${NAMESPACE_LOCK_CLASS}, $1)`;

/** Lets single writers into a namespace that no updater is rewriting (re-entrant within a transaction). */
export async function shareNamespace(client: pg.PoolClient, namespaceId: number): Promise<void> {
  await client.query(LOCK_NAMESPACE_SHARED, [namespaceId]);
}

/** Locks the namespace against every other writer until the transaction ends. */
export async function lockNamespace(client: pg.PoolClient, namespaceId: number): Promise<void> {
  await client.query(LOCK_NAMESPACE_EXCLUSIVE, [namespaceId]);
}

const INSERT_FEATURES = `
  INSERT INTO feature (namespace_id, name) SELECT $1, unnest($2::text[]) ON CONFLICT (namespace_id, name) DO NOTHING`;
const SELECT_FEATURES = 'SELECT id, name FROM feature WHERE namespace_id = $1 AND name = ANY($2::text[])';
/** Locks in ascending id order (the subquery's order), so two writers never wait on each other in a cycle. */
/**
 * Features are locked by bucket (feature id modulo FEATURE_LOCK_BUCKETS), not one by one: a lock
 * per feature let a layer of many thousand packages exhaust PostgreSQL's shared lock table
 * (max_locks_per_transaction × max_connections, 6,400 by default: "out of shared memory"), while a
 * transaction now holds at most this many. Buckets are taken in order, so lockers cannot deadlock.
 */
export const FEATURE_LOCK_BUCKETS = 1024;
const LOCK_FEATURES = `
  SELECT pg_advisory_xact_lock(${FEATURE_LOCK_CLASS}, bucket)
  FROM (SELECT DISTINCT id % ${FEATURE_LOCK_BUCKETS} AS bucket FROM unnest($1::int[]) AS id ORDER BY 1) buckets`;
/** The architectures ($3) come as comma-separated lists ('' for none): unnest cannot take an array of arrays. */
const INSERT_FEATURE_VERSIONS = `
  INSERT INTO feature_version (feature_id, version, arches)
  SELECT t.feature_id, t.version, string_to_array(t.arches, ',') FROM unnest($1::int[], $2::text[], $3::text[]) AS t(feature_id, version, arches)
  ON CONFLICT (feature_id, version, arches) DO NOTHING RETURNING id, feature_id, version, arches`;
const SELECT_FEATURE_VERSIONS = `
  SELECT fv.id, fv.feature_id, fv.version, fv.arches FROM feature_version fv
  JOIN unnest($1::int[], $2::text[], $3::text[]) AS t(feature_id, version, arches)
    ON fv.feature_id = t.feature_id AND fv.version = t.version AND fv.arches = string_to_array(t.arches, ',')`;
const SELECT_VERSIONS_OF_FEATURES = 'SELECT id, feature_id, version, arches FROM feature_version WHERE feature_id = ANY($1::int[])';
/** Fixed-in entries of the live vulnerabilities of some features. */
const SELECT_LIVE_FIXES = `
  SELECT fi.id, fi.vulnerability_id, fi.feature_id, fi.fixed_version, fi.fix_state, fi.arches, fi.affected_above, fi.affected_through
  FROM vulnerability_fixedin fi JOIN vulnerability v ON v.id = fi.vulnerability_id AND v.deleted_at IS NULL
  WHERE fi.feature_id = ANY($1::int[])`;
const INSERT_AFFECTS = `
  INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id)
  SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[]) ON CONFLICT DO NOTHING`;
/** Links per statement: the three parameter arrays stay well under a MiB. */
const AFFECTS_CHUNK = 5_000;
const SELECT_FEATURES_OF_NAMESPACE = 'SELECT id FROM feature WHERE namespace_id = $1 ORDER BY id';
/** The links of these feature versions to live vulnerabilities (superseded versions keep theirs). */
const SELECT_LIVE_AFFECTS = `
  SELECT a.vulnerability_id, a.feature_version_id FROM vulnerability_affects a
  JOIN vulnerability v ON v.id = a.vulnerability_id AND v.deleted_at IS NULL
  WHERE a.feature_version_id = ANY($1::int[])`;
const DELETE_AFFECTS = `
  DELETE FROM vulnerability_affects a USING unnest($1::bigint[], $2::int[]) AS t(vulnerability_id, feature_version_id)
  WHERE a.vulnerability_id = t.vulnerability_id AND a.feature_version_id = t.feature_version_id`;

/** The ids of features of a namespace by name, created when new. */
export async function featureIds(client: pg.PoolClient, namespaceId: number, names: readonly string[]): Promise<Map<string, number>> {
  await client.query(INSERT_FEATURES, [namespaceId, names]);
  const { rows } = await client.query<{ id: number; name: string }>(SELECT_FEATURES, [namespaceId, names]);
  return new Map(rows.map((r) => [r.name, r.id]));
}

/**
 * Creates the features that do not exist yet and locks all of them until the transaction ends.
 *
 * The "affects" relation is written from two sides: a new vulnerability version links the existing
 * versions of its features, and a new feature version links the live vulnerabilities of its
 * feature. Both sides lock the feature first, so neither can miss rows the other is writing.
 * A transaction calling this more than once must pass its features in one call (or in a consistent
 * order) to stay clear of deadlocks; withTransaction retries the rare deadlock.
 */
export async function lockFeatures(client: pg.PoolClient, namespaceId: number, names: readonly string[]): Promise<Map<string, number>> {
  await shareNamespace(client, namespaceId);
  const ids = await featureIds(client, namespaceId, [...new Set(names)]);
  await client.query(LOCK_FEATURES, [[...ids.values()]]);
  return ids;
}

export interface FeatureVersionRecord extends InstalledVersion {
  id: number;
  feature_id: number;
}

/** A stored fixed-in entry. */
export interface FixRecord {
  id: number;
  vulnerability_id: number;
  feature_id: number;
  fixed_version: string | null;
  /** A stated fix state (will_not_fix, fix_deferred, not_affected); null when fixed_version implies it. */
  fix_state: string | null;
  arches: string[] | null;
  affected_above: string | null;
  affected_through: string | null;
}

/** The matching rule of a format, as the store applies it (Matching.match). */
export type MatchRule = ReturnType<Matching['match']>;

/** Every stored version of these features. */
export async function versionsOfFeatures(client: pg.PoolClient, ids: readonly number[]): Promise<FeatureVersionRecord[]> {
  return (await client.query<FeatureVersionRecord>(SELECT_VERSIONS_OF_FEATURES, [[...new Set(ids)]])).rows;
}

/**
 * The feature versions the fixes leave affected, as the matching rule says, each once per
 * vulnerability with the fix that says how: the fixes of one vulnerability and feature are taken
 * together (several entries of one package are alternatives).
 */
export function* affectedVersions<F extends StoredFix & { feature_id: number; vulnerability_id?: number }>(
  fixes: readonly F[],
  versions: readonly FeatureVersionRecord[],
  match: MatchRule,
): Generator<[F, FeatureVersionRecord]> {
  const versionsByFeature = new Map<number, FeatureVersionRecord[]>();
  for (const fv of versions) {
    const list = versionsByFeature.get(fv.feature_id);
    if (list) list.push(fv);
    else versionsByFeature.set(fv.feature_id, [fv]);
  }
  const groups = new Map<string, F[]>();
  for (const fix of fixes) {
    const key = `${fix.vulnerability_id ?? ''}/${fix.feature_id}`;
    const group = groups.get(key);
    if (group) group.push(fix);
    else groups.set(key, [fix]);
  }
  for (const group of groups.values()) {
    for (const fv of versionsByFeature.get(group[0]!.feature_id) ?? []) {
      const fix = match(group, fv);
      if (fix) yield [fix, fv];
    }
  }
}

/** Writes the "affects" links between stored fixes and the feature versions they leave affected. */
export async function linkAffected(
  client: pg.PoolClient,
  fixes: readonly FixRecord[],
  versions: readonly FeatureVersionRecord[],
  match: MatchRule,
): Promise<void> {
  await insertLinks(client, affectedVersions(fixes, versions, match));
}

/** Stores these links (fix, feature version it affects), a chunk of them per statement. */
async function insertLinks(client: pg.PoolClient, pairs: Iterable<readonly [FixRecord, FeatureVersionRecord]>): Promise<number> {
  const links: [number[], number[], number[]] = [[], [], []];
  for (const [fix, fv] of pairs) {
    links[0].push(fix.vulnerability_id);
    links[1].push(fv.id);
    links[2].push(fix.id);
  }
  await inChunks(client, INSERT_AFFECTS, links);
  return links[0].length;
}

/** Runs sql over parallel parameter arrays (unnest), AFFECTS_CHUNK rows per statement. */
async function inChunks(client: pg.PoolClient, sql: string, columns: readonly number[][]): Promise<void> {
  const rows = columns[0]?.length ?? 0;
  for (let i = 0; i < rows; i += AFFECTS_CHUNK) {
    await client.query(
      sql,
      columns.map((column) => column.slice(i, i + AFFECTS_CHUNK)),
    );
  }
}

/**
 * The feature version ids of packages in a namespace, created when new. Each new version is
 * linked to the live vulnerabilities it is affected by, under the namespace's version format.
 * Returns package name → installedKey(version, architectures) → id.
 */
export async function ensureFeatureVersions(
  client: pg.PoolClient,
  namespace: { id: number; versionFormat: VersionFormatName },
  packages: readonly Package[],
  matching: Matching,
): Promise<Map<string, Map<string, number>>> {
  const featureIds = await lockFeatures(
    client,
    namespace.id,
    packages.map((p) => p.name),
  );
  const featureColumn = packages.map((p) => featureIds.get(p.name)!);
  const versionColumn = packages.map((p) => p.version);
  const archesColumn = packages.map((p) => archesText(p.arches ?? []));
  const columns = [featureColumn, versionColumn, archesColumn];
  const created = (await client.query<FeatureVersionRecord>(INSERT_FEATURE_VERSIONS, columns)).rows;
  await linkNewVersions(client, matching.match(namespace.versionFormat), created);
  const all = (await client.query<FeatureVersionRecord>(SELECT_FEATURE_VERSIONS, columns)).rows;
  const nameOf = new Map([...featureIds].map(([name, id]) => [id, name]));
  const result = new Map<string, Map<string, number>>();
  for (const fv of all) {
    const name = nameOf.get(fv.feature_id)!;
    const versions = result.get(name) ?? new Map<string, number>();
    versions.set(installedKey(fv.version, fv.arches), fv.id);
    result.set(name, versions);
  }
  return result;
}

/** How ensureFeatureVersions keys a package's feature version under its name: its version and architectures. */
export const installedKey = (version: string, arches: readonly string[]): string => `${version}\0${archesText(arches)}`;

/** Architectures as one comma-separated parameter (architecture names hold no commas). */
const archesText = (arches: readonly string[]): string => arches.join(',');

async function linkNewVersions(client: pg.PoolClient, match: MatchRule, created: readonly FeatureVersionRecord[]): Promise<void> {
  if (created.length === 0) return;
  const fixes = (await client.query<FixRecord>(SELECT_LIVE_FIXES, [[...new Set(created.map((fv) => fv.feature_id))]])).rows;
  await linkAffected(client, fixes, created, match);
}

/** The ids of a namespace's features, in ascending order. */
export async function featuresOfNamespace(db: Queryable, namespaceId: number): Promise<number[]> {
  return (await db.query<{ id: number }>(SELECT_FEATURES_OF_NAMESPACE, [namespaceId])).rows.map((r) => r.id);
}

export interface RelinkCounts {
  added: number;
  removed: number;
}

/**
 * Computes again, by the matching rules given, which stored versions of these features (all of
 * one namespace) the live vulnerabilities affect, and makes the stored links say exactly that:
 * the links no longer due are deleted, the missing ones inserted, the rest left alone (so the
 * report and summary triggers hear of the changed feature versions only). Takes the namespace
 * exclusively, as an updater does, so no writer links these features meanwhile; the caller's
 * transaction should be short (a few thousand features), as layers of the namespace wait for it.
 */
export async function relinkFeatures(
  client: pg.PoolClient,
  namespaceId: number,
  features: readonly number[],
  match: MatchRule,
): Promise<RelinkCounts> {
  await lockNamespace(client, namespaceId);
  const fixes = (await client.query<FixRecord>(SELECT_LIVE_FIXES, [features])).rows;
  const versions = await versionsOfFeatures(client, features);
  const stored = (
    await client.query<{ vulnerability_id: number; feature_version_id: number }>(SELECT_LIVE_AFFECTS, [versions.map((fv) => fv.id)])
  ).rows;
  const key = (vulnerability: number, featureVersion: number): string => `${vulnerability}/${featureVersion}`;
  const due = new Map<string, [FixRecord, FeatureVersionRecord]>();
  for (const [fix, fv] of affectedVersions(fixes, versions, match)) due.set(key(fix.vulnerability_id, fv.id), [fix, fv]);
  const removed: [number[], number[]] = [[], []];
  for (const link of stored) {
    if (due.delete(key(link.vulnerability_id, link.feature_version_id))) continue;
    removed[0].push(link.vulnerability_id);
    removed[1].push(link.feature_version_id);
  }
  await inChunks(client, DELETE_AFFECTS, removed);
  // What is left in due is not stored yet.
  const added = await insertLinks(client, due.values());
  return { added, removed: removed[0].length };
}
