import type pg from 'pg';
import { versionFormat } from '../ecosystems/index.js';
import type { Package } from '../model/indexing.js';
import type { VersionFormatName } from '../model/version-format.js';

/** Advisory lock class for features (pg_advisory_xact_lock(class, id)). */
const FEATURE_LOCK_CLASS = 1;
/**
 * Advisory lock class for namespaces: an updater rewriting a namespace holds it exclusively;
 * single writes (API, layer indexing) hold it shared, taken before they change any row.
 */
export const NAMESPACE_LOCK_CLASS = 2;
const LOCK_NAMESPACE_SHARED = `SELECT pg_advisory_xact_lock_shared(${NAMESPACE_LOCK_CLASS}, $1)`;

/** Lets single writers into a namespace that no updater is rewriting (re-entrant within a transaction). */
export async function shareNamespace(client: pg.PoolClient, namespaceId: number): Promise<void> {
  await client.query(LOCK_NAMESPACE_SHARED, [namespaceId]);
}

const INSERT_FEATURES = `
  INSERT INTO feature (namespace_id, name) SELECT $1, unnest($2::text[]) ON CONFLICT (namespace_id, name) DO NOTHING`;
const SELECT_FEATURES = 'SELECT id, name FROM feature WHERE namespace_id = $1 AND name = ANY($2::text[])';
/** Locks in ascending id order (the subquery's order), so two writers never wait on each other in a cycle. */
const LOCK_FEATURES = `
  SELECT pg_advisory_xact_lock(${FEATURE_LOCK_CLASS}, id) FROM (SELECT unnest($1::int[]) AS id ORDER BY 1) ids`;
const INSERT_FEATURE_VERSIONS = `
  INSERT INTO feature_version (feature_id, version) SELECT * FROM unnest($1::int[], $2::text[])
  ON CONFLICT (feature_id, version) DO NOTHING RETURNING id, feature_id, version`;
const SELECT_FEATURE_VERSIONS = `
  SELECT fv.id, fv.feature_id, fv.version FROM feature_version fv
  JOIN unnest($1::int[], $2::text[]) AS t(feature_id, version) ON fv.feature_id = t.feature_id AND fv.version = t.version`;
/** Fixed-in entries of the live vulnerabilities of some features. */
const SELECT_LIVE_FIXES = `
  SELECT fi.id, fi.vulnerability_id, fi.feature_id, fi.fixed_version
  FROM vulnerability_fixedin fi JOIN vulnerability v ON v.id = fi.vulnerability_id AND v.deleted_at IS NULL
  WHERE fi.feature_id = ANY($1::int[])`;
const INSERT_AFFECTS = `
  INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id)
  SELECT * FROM unnest($1::bigint[], $2::int[], $3::bigint[]) ON CONFLICT DO NOTHING`;

/**
 * Creates the features that do not exist yet and locks all of them until the transaction ends.
 *
 * The "affects" relation is written from two sides: a new vulnerability version links the existing
 * versions of its features, and a new feature version links the live vulnerabilities of its
 * feature. Both sides lock the feature first, so neither can miss rows the other is writing.
 * A transaction calling this more than once must pass its features in one call (or in a consistent
 * order) to stay clear of deadlocks; withTransaction retries the rare deadlock.
 */
export async function lockFeatures(
  client: pg.PoolClient,
  namespaceId: number,
  names: readonly string[],
): Promise<Map<string, number>> {
  const unique = [...new Set(names)];
  await shareNamespace(client, namespaceId);
  await client.query(INSERT_FEATURES, [namespaceId, unique]);
  const { rows } = await client.query<{ id: number; name: string }>(SELECT_FEATURES, [namespaceId, unique]);
  await client.query(LOCK_FEATURES, [rows.map((r) => r.id)]);
  return new Map(rows.map((r) => [r.name, r.id]));
}

interface FeatureVersionRecord {
  id: number;
  feature_id: number;
  version: string;
}

/**
 * The feature version ids of packages in a namespace, created when new. Each new version is
 * linked to the live vulnerabilities it is affected by, under the namespace's version format.
 * Returns package name → version → id.
 */
export async function ensureFeatureVersions(
  client: pg.PoolClient,
  namespace: { id: number; versionFormat: VersionFormatName },
  packages: readonly Package[],
): Promise<Map<string, Map<string, number>>> {
  const featureIds = await lockFeatures(client, namespace.id, packages.map((p) => p.name));
  const featureColumn = packages.map((p) => featureIds.get(p.name)!);
  const versionColumn = packages.map((p) => p.version);
  const created = (await client.query<FeatureVersionRecord>(INSERT_FEATURE_VERSIONS, [featureColumn, versionColumn])).rows;
  await linkNewVersions(client, namespace.versionFormat, created);
  const all = (await client.query<FeatureVersionRecord>(SELECT_FEATURE_VERSIONS, [featureColumn, versionColumn])).rows;
  const nameOf = new Map([...featureIds].map(([name, id]) => [id, name]));
  const result = new Map<string, Map<string, number>>();
  for (const fv of all) {
    const name = nameOf.get(fv.feature_id)!;
    const versions = result.get(name) ?? new Map<string, number>();
    versions.set(fv.version, fv.id);
    result.set(name, versions);
  }
  return result;
}

async function linkNewVersions(client: pg.PoolClient, format: VersionFormatName, created: readonly FeatureVersionRecord[]): Promise<void> {
  if (created.length === 0) return;
  const fixes = (
    await client.query<{ id: number; vulnerability_id: number; feature_id: number; fixed_version: string | null }>(
      SELECT_LIVE_FIXES,
      [[...new Set(created.map((fv) => fv.feature_id))]],
    )
  ).rows;
  if (fixes.length === 0) return;
  const compare = versionFormat(format).compare;
  const fixesByFeature = new Map<number, typeof fixes>();
  for (const fix of fixes) fixesByFeature.set(fix.feature_id, [...(fixesByFeature.get(fix.feature_id) ?? []), fix]);
  const vulnerabilities: number[] = [];
  const versions: number[] = [];
  const fixedin: number[] = [];
  for (const fv of created) {
    for (const fix of fixesByFeature.get(fv.feature_id) ?? []) {
      if (fix.fixed_version === null || compare(fv.version, fix.fixed_version) < 0) {
        vulnerabilities.push(fix.vulnerability_id);
        versions.push(fv.id);
        fixedin.push(fix.id);
      }
    }
  }
  if (vulnerabilities.length > 0) await client.query(INSERT_AFFECTS, [vulnerabilities, versions, fixedin]);
}
