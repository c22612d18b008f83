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
/**
 * The architectures ($3) come as comma-separated lists ('' for none): unnest cannot take an array
 * of arrays. A version stored without its source gets it (its links by source are then made).
 */
const INSERT_FEATURE_VERSIONS = `
  INSERT INTO feature_version (feature_id, version, arches, module, source_name, source_version)
  SELECT t.feature_id, t.version, string_to_array(t.arches, ','), t.module, t.source_name, t.source_version
  FROM unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
    AS t(feature_id, version, arches, module, source_name, source_version)
  ON CONFLICT (feature_id, version, arches, module) DO UPDATE SET source_name = EXCLUDED.source_name, source_version = EXCLUDED.source_version
    WHERE feature_version.source_name IS NULL AND EXCLUDED.source_name IS NOT NULL
  RETURNING id, feature_id, version, arches, module, source_name, source_version`;
const SELECT_FEATURE_VERSIONS = `
  SELECT fv.id, fv.feature_id, fv.version, fv.arches, fv.module FROM feature_version fv
  JOIN unnest($1::int[], $2::text[], $3::text[], $4::text[]) AS t(feature_id, version, arches, module)
    ON fv.feature_id = t.feature_id AND fv.version = t.version AND fv.arches = string_to_array(t.arches, ',') AND fv.module = t.module`;
/**
 * A feature version as linking reads it (fv, and f its feature): with the feature that entries
 * naming its source name (source_feature_id): its own when its source is not known (stored before
 * sources were, or where the namespace's records name none), null when no feature has its source's
 * name (nothing names that source).
 */
const LINKED_VERSION_COLUMNS = `fv.id, fv.feature_id, fv.version, fv.arches, fv.module, fv.source_version,
  CASE WHEN fv.source_name IS NULL THEN fv.feature_id
    ELSE (SELECT sf.id FROM feature sf WHERE sf.namespace_id = f.namespace_id AND sf.name = fv.source_name) END AS source_feature_id`;
/**
 * The versions of some features ($n) and the versions built from them (whose source they name),
 * each once: every version an entry of those features may link.
 */
export const linkableVersions = (n: number): string => `
  SELECT ${LINKED_VERSION_COLUMNS} FROM feature_version fv JOIN feature f ON f.id = fv.feature_id
  WHERE fv.feature_id = ANY($${n}::int[])
  UNION ALL
  SELECT ${LINKED_VERSION_COLUMNS} FROM feature s
  JOIN feature_version fv ON fv.source_name = s.name
  JOIN feature f ON f.id = fv.feature_id AND f.namespace_id = s.namespace_id
  WHERE s.id = ANY($${n}::int[]) AND fv.feature_id <> ALL($${n}::int[])`;
const SELECT_LINKABLE_VERSIONS = linkableVersions(1);
/**
 * The holders (layers, ancestries) of a feature version the vulnerability version $1 affects, in
 * id order from startId $2: the first $3 of them, with their names. rows: the table of (holder,
 * feature_version_id) rows, with also, a further condition on its rows (h); names: the holders'
 * table. Where affected holders are spread evenly a page reads about $3 rows, however many holders
 * and affected versions there are; it never reads more than $3 rows per version and window:
 * - ids come from rows in windows of holder ids [lo, hi), starting $3 wide and doubling, one range
 *   scan per affected feature version and window, until $3 holders are found or the windows pass
 *   the last holder. Windows are disjoint, so distinct counts add up. Taking the first $3 per
 *   version bounds a window's cost: a version reaching that cap alone holds $3 holders below its
 *   last row read, so none of the rows it leaves can be on the page.
 * - names are looked up by id in a scalar subquery, which PostgreSQL never turns into a join:
 *   joined, the page's ids were hashed against a sequential scan of every holder.
 * Reading $3 rows of every version from startId instead (no windows) costs $3 × versions a page.
 */
export const affectedHoldersPage = (holders: { rows: string; holder: string; also?: string; names: string }): string => `
  WITH RECURSIVE windows (lo, hi, found, ids) AS (
    SELECT $2::bigint, $2::bigint + $3, 0::bigint, ARRAY[]::bigint[]
    UNION ALL
    SELECT w.hi, w.hi + 2 * (w.hi - w.lo), w.found + s.n, s.ids
    FROM windows w CROSS JOIN LATERAL (
      SELECT count(DISTINCT x.holder) AS n, array_agg(DISTINCT x.holder) AS ids
      FROM vulnerability_affects a
      CROSS JOIN LATERAL (
        SELECT h.${holders.holder} AS holder FROM ${holders.rows} h
        WHERE h.feature_version_id = a.feature_version_id ${holders.also ?? ''}
          AND h.${holders.holder} >= w.lo AND h.${holders.holder} < w.hi
        ORDER BY h.${holders.holder} LIMIT $3
      ) x
      WHERE a.vulnerability_id = $1
    ) s
    WHERE w.found < $3 AND w.lo <= (SELECT max(id) FROM ${holders.names})
  )
  SELECT page.id, (SELECT n.name FROM ${holders.names} n WHERE n.id = page.id) AS name
  FROM (SELECT id FROM windows, unnest(windows.ids) id ORDER BY id LIMIT $3) page
  ORDER BY page.id`;
/** Fixed-in entries of the live vulnerabilities of some features. */
const SELECT_LIVE_FIXES = `
  SELECT fi.id, fi.vulnerability_id, fi.feature_id, fi.fixed_version, fi.fix_state, fi.arches, fi.affected_above, fi.affected_through,
    fi.source, fi.module, fi.affected_from
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
  /** The feature its source package is (entries naming that source apply to it); see LINKED_VERSION_COLUMNS. */
  source_feature_id: number | null;
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
  affected_from: string | null;
  affected_through: string | null;
  /** It names a source package: it links the versions built from it. */
  source: boolean;
  /** The module stream it is scoped to; null: packages outside every module. */
  module: string | null;
}

/** The matching rule of a format, as the store applies it (Matching.match). */
export type MatchRule = ReturnType<Matching['match']>;

/** Every stored version of these features, and every version built from them (linkableVersions). */
export async function versionsOfFeatures(client: pg.PoolClient, ids: readonly number[]): Promise<FeatureVersionRecord[]> {
  return (await client.query<FeatureVersionRecord>(SELECT_LINKABLE_VERSIONS, [[...new Set(ids)]])).rows;
}

/**
 * The feature versions the fixes leave affected, as the matching rule says, each once per
 * vulnerability with the fix that says how. An entry naming a package applies to that package's
 * versions, one naming a source package to the versions built from it; the entries of one
 * vulnerability applying to a version are taken together (alternatives: a binary named like its
 * source, gawk, named both ways is reported once).
 */
export function* affectedVersions<F extends StoredFix & { feature_id: number; vulnerability_id?: number }>(
  fixes: readonly F[],
  versions: readonly FeatureVersionRecord[],
  match: MatchRule,
): Generator<[F, FeatureVersionRecord]> {
  const byFeature = indexBy(versions, (fv) => fv.feature_id);
  const bySource = indexBy(versions, (fv) => fv.source_feature_id);
  const byPackage = indexBy(fixes, (fix) => `${fix.vulnerability_id ?? ''}/${fix.source ? 's' : 'p'}${fix.feature_id}`);
  // The entries naming a source, by the version they apply to: few (unfixed packages), so kept.
  const sourceEntries = new Map<string, { fv: FeatureVersionRecord; fixes: F[] }>();
  for (const group of byPackage.values()) {
    if (!group[0]!.source) continue;
    for (const fv of bySource.get(group[0]!.feature_id) ?? []) {
      const key = `${group[0]!.vulnerability_id ?? ''}/${fv.id}`;
      const found = sourceEntries.get(key);
      if (found) found.fixes.push(...group);
      else sourceEntries.set(key, { fv, fixes: [...group] });
    }
  }
  for (const group of byPackage.values()) {
    if (group[0]!.source) continue;
    for (const fv of byFeature.get(group[0]!.feature_id) ?? []) {
      const key = `${group[0]!.vulnerability_id ?? ''}/${fv.id}`;
      const alsoBySource = sourceEntries.get(key);
      sourceEntries.delete(key);
      const fix = match(alsoBySource ? [...group, ...alsoBySource.fixes] : group, fv);
      if (fix) yield [fix, fv];
    }
  }
  for (const { fv, fixes: group } of sourceEntries.values()) {
    const fix = match(group, fv);
    if (fix) yield [fix, fv];
  }
}

/** The features whose entries may apply to a version: its own, and its source's. */
const namingFeatures = (fv: FeatureVersionRecord): number[] =>
  fv.source_feature_id === null ? [fv.feature_id] : [fv.feature_id, fv.source_feature_id];

/** Items by a key (null: left out), in their order. */
function indexBy<T, K>(items: readonly T[], key: (item: T) => K | null): Map<K, T[]> {
  const index = new Map<K, T[]>();
  for (const item of items) {
    const k = key(item);
    if (k === null) continue;
    const list = index.get(k);
    if (list) list.push(item);
    else index.set(k, [item]);
  }
  return index;
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
 * The feature version ids of packages in a namespace, created when new, in the packages' order.
 * Each new version is linked to the live vulnerabilities it is affected by, under the namespace's
 * version format.
 */
export async function ensureFeatureVersions(
  client: pg.PoolClient,
  namespace: { id: number; name: string; versionFormat: VersionFormatName },
  packages: readonly Package[],
  matching: Matching,
): Promise<number[]> {
  // Where records may name source packages, each version keeps its source, whose feature is
  // locked too: a write of an entry naming that source locks it, so neither misses the other.
  const sourceOf = (p: Package) => (matching.sourceEntries(namespace.name) ? p.source : undefined);
  const moduleOf = moduleStreamOf(namespace.name, matching);
  const featureIds = await lockFeatures(client, namespace.id, [
    ...packages.map((p) => p.name),
    ...packages.flatMap((p) => sourceOf(p)?.name ?? []),
  ]);
  const keyOf = (p: Package): string => versionKey(featureIds.get(p.name)!, p.version, p.arches ?? [], moduleOf(p));
  // Each version once: an upsert may not touch one row twice.
  const distinct = [...new Map(packages.map((p) => [keyOf(p), p])).values()];
  const columns = [
    distinct.map((p) => featureIds.get(p.name)!),
    distinct.map((p) => p.version),
    distinct.map((p) => archesText(p.arches ?? [])),
    distinct.map(moduleOf),
  ];
  const inserted = (
    await client.query<FeatureVersionRecord & { source_name: string | null }>(INSERT_FEATURE_VERSIONS, [
      ...columns,
      distinct.map((p) => sourceOf(p)?.name ?? null),
      distinct.map((p) => sourceOf(p)?.version ?? null),
    ])
  ).rows;
  const created = inserted.map(({ source_name, ...fv }) => ({
    ...fv,
    source_feature_id: source_name === null ? fv.feature_id : featureIds.get(source_name)!,
  }));
  await linkNewVersions(client, matching.match(namespace.versionFormat), created);
  const all = (await client.query<FeatureVersionRecord>(SELECT_FEATURE_VERSIONS, columns)).rows;
  const ids = new Map(all.map((fv) => [versionKey(fv.feature_id, fv.version, fv.arches, fv.module ?? ''), fv.id]));
  return packages.map((p) => ids.get(keyOf(p))!);
}

/** A feature version by what identifies it (feature_version's key). */
const versionKey = (featureId: number, version: string, arches: readonly string[], module: string): string =>
  `${featureId}\0${installedKey(version, arches, module)}`;

/** A package's installed version as one string: its version, architectures and module stream. */
export const installedKey = (version: string, arches: readonly string[], module: string): string =>
  `${version}\0${archesText(arches)}\0${module}`;

/**
 * The module stream a package's version is stored with in a namespace: its own where the
 * namespace's records are scoped by module stream, else '' (matched as outside every module).
 */
export const moduleStreamOf =
  (namespace: string, matching: Pick<Matching, 'moduleStreams'>) =>
  (p: Package): string =>
    matching.moduleStreams(namespace) ? (p.module ?? '') : '';

/** Architectures as one comma-separated parameter (architecture names hold no commas). */
const archesText = (arches: readonly string[]): string => arches.join(',');

async function linkNewVersions(client: pg.PoolClient, match: MatchRule, created: readonly FeatureVersionRecord[]): Promise<void> {
  if (created.length === 0) return;
  await linkAffected(client, await liveFixesFor(client, created), created, match);
}

/** The live vulnerabilities' entries that may apply to these versions: those naming them, or their source. */
async function liveFixesFor(client: pg.PoolClient, versions: readonly FeatureVersionRecord[]): Promise<FixRecord[]> {
  return (await client.query<FixRecord>(SELECT_LIVE_FIXES, [[...new Set(versions.flatMap(namingFeatures))]])).rows;
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
  // The versions of these features and those built from them, with every entry that may apply to them.
  const versions = await versionsOfFeatures(client, features);
  const fixes = await liveFixesFor(client, versions);
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
