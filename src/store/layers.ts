import type pg from 'pg';
import { badRequest } from '../errors.js';
import type { ApplicationPackage, Package, UnreadableManifest } from '../model/indexing.js';
import {
  applicationsAfter,
  type InstalledApplications,
  type LayerScan,
  type PackageDatabase,
  type PackageDatabaseState,
} from '../model/layer.js';
import type { Matching } from '../model/matching.js';
import type { RiskContext } from '../model/risk.js';
import type { VersionFormatName } from '../model/version-format.js';
import { fixStateOf, type FixState, type StatedFixState } from '../model/vulnerability.js';
import { ensureFeatureVersions, installedKey, moduleStreamOf } from './features.js';
import type { Queryable } from './pool.js';
import { RISK_COLUMNS, riskContextOf, type RiskColumns } from './risk.js';
import { ensureNamespace, type VulnerabilityFields } from './vulnerabilities.js';

export interface LayerRow {
  id: number;
  name: string;
  parentId: number | null;
  parentName: string | null;
  namespace: string | null;
  scanId: number;
  indexedByVersion: number;
}

/**
 * How a layer or a layer scan was indexed: the indexer's version (IndexedByVersion) and its
 * fingerprint, the digest of the data it read layers with (ecosystems/index.ts: never shown; null
 * for what was indexed before fingerprints were kept).
 */
export interface Indexing {
  indexedByVersion: number;
  indexerFingerprint: string | null;
}

/** A stored layer, with how it was indexed. */
export interface IndexedLayer extends LayerRow, Indexing {}

/** A feature version in a layer's resolved set. */
export interface LayerFeature {
  featureVersionId: number;
  name: string;
  version: string;
  /** The architectures it is installed for; empty when not known. */
  arches: readonly string[];
  /** The module stream it is matched with (FeatureVersionRecord.module); '' for none. */
  module: string;
  namespace: string;
  versionFormat: VersionFormatName;
}

export interface ReportedFeature extends LayerFeature {
  /** The layer that introduced this name and version. */
  addedBy: string;
}

export interface AffectingVulnerability extends VulnerabilityFields {
  featureVersionId: number;
  /** null: no fix yet. */
  fixedBy: string | null;
  /** fixed with a version; else affected, or what the source says (will_not_fix, fix_deferred). */
  fixState: FixState;
  /** EPSS and KEV, as they are now. */
  risk: RiskContext;
}

const SELECT_LAYER = `
  SELECT l.id, l.name, l.parent_id, p.name AS parent_name, n.name AS namespace, l.scan_id, l.indexed_by_version,
    l.indexer_fingerprint
  FROM layer l LEFT JOIN layer p ON p.id = l.parent_id LEFT JOIN namespace n ON n.id = l.namespace_id
  WHERE l.name = $1`;
/** Blocks the parent's deletion or re-indexing until this transaction ends. */
const LOCK_PARENT = 'SELECT id FROM layer WHERE id = $1 FOR SHARE';

/**
 * The resolved features of a layer: replay the diffs from the layer up its ancestry, keeping for
 * each feature version the modification nearest the layer; those still added are present, and the
 * layer of that addition introduced them.
 */
const SELECT_RESOLVED = `
  WITH RECURSIVE chain (id, depth) AS (
    SELECT id, 0 FROM layer WHERE id = $1
    UNION ALL
    SELECT l.parent_id, c.depth + 1 FROM chain c JOIN layer l ON l.id = c.id WHERE l.parent_id IS NOT NULL
  ), latest AS (
    SELECT DISTINCT ON (d.feature_version_id) d.feature_version_id, d.modification, d.layer_id
    FROM layer_diff d JOIN chain c ON c.id = d.layer_id
    ORDER BY d.feature_version_id, c.depth
  )
  SELECT fv.id AS feature_version_id, f.name, fv.version, fv.arches, fv.module, n.name AS namespace, n.version_format, a.name AS added_by
  FROM latest
  JOIN feature_version fv ON fv.id = latest.feature_version_id
  JOIN feature f ON f.id = fv.feature_id
  JOIN namespace n ON n.id = f.namespace_id
  JOIN layer a ON a.id = latest.layer_id
  WHERE latest.modification = 'add'
  ORDER BY f.name, fv.version, n.name`;

const SELECT_CHAIN = `
  WITH RECURSIVE chain (id) AS (
    SELECT id FROM layer WHERE id = $1
    UNION ALL
    SELECT l.parent_id FROM chain c JOIN layer l ON l.id = c.id WHERE l.parent_id IS NOT NULL
  )
  SELECT id FROM chain`;

const SELECT_AFFECTING = `
  SELECT a.feature_version_id, v.name, n.name AS namespace, v.description, v.link, v.severity, v.metadata,
         fi.fixed_version AS fixed_by, fi.fix_state, ${RISK_COLUMNS}
  FROM vulnerability_affects a
  JOIN vulnerability v ON v.id = a.vulnerability_id AND v.deleted_at IS NULL
  JOIN namespace n ON n.id = v.namespace_id
  JOIN vulnerability_fixedin fi ON fi.id = a.fixedin_id
  WHERE a.feature_version_id = ANY($1::int[])
  ORDER BY v.name`;

const UPSERT_SCAN = `
  INSERT INTO layer_scan (key, indexed_by_version, indexer_fingerprint, namespace, package_dbs, removed_paths, unread, unread_count)
  VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
  ON CONFLICT (key) DO UPDATE SET indexed_by_version = EXCLUDED.indexed_by_version,
    indexer_fingerprint = EXCLUDED.indexer_fingerprint, namespace = EXCLUDED.namespace, package_dbs = EXCLUDED.package_dbs,
    removed_paths = EXCLUDED.removed_paths, unread = EXCLUDED.unread, unread_count = EXCLUDED.unread_count, created_at = now()
  RETURNING id`;
/** The unread files kept per layer: enough to say which and why, bounded whatever a layer holds. */
const UNREAD_KEPT = 100;
const DELETE_SCAN_APPLICATIONS = 'DELETE FROM layer_scan_application WHERE layer_scan_id = $1';
const INSERT_SCAN_APPLICATIONS = `
  INSERT INTO layer_scan_application (layer_scan_id, location, ecosystem, name, version)
  SELECT $1, t.location, t.ecosystem, t.name, t.version FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS t(location, ecosystem, name, version)
  ON CONFLICT DO NOTHING`;
const SELECT_SCAN_APPLICATIONS = 'SELECT location, ecosystem, name, version FROM layer_scan_application WHERE layer_scan_id = $1';
const DELETE_SCAN_PACKAGES = 'DELETE FROM layer_scan_package WHERE layer_scan_id = $1';
/** The architectures ($7) come as comma-separated lists, NULL when not known; module ($8) NULL for none. */
const INSERT_SCAN_PACKAGES = `
  INSERT INTO layer_scan_package (layer_scan_id, format, name, version, source_name, source_version, arches, module)
  SELECT $1, t.format, t.name, t.version, t.source_name, t.source_version, string_to_array(t.arches, ','), t.module
  FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[])
    AS t(format, name, version, source_name, source_version, arches, module)
  ON CONFLICT DO NOTHING`;
const SELECT_SCAN = 'SELECT namespace, package_dbs, removed_paths, unread FROM layer_scan WHERE id = $1';
const SELECT_SCAN_PACKAGES = `
  SELECT format, name, version, source_name, source_version, arches, module FROM layer_scan_package WHERE layer_scan_id = $1`;

const INSERT_LAYER = `
  INSERT INTO layer (name, parent_id, namespace_id, scan_id, indexed_by_version, indexer_fingerprint)
  VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`;
const UPDATE_LAYER = 'UPDATE layer SET namespace_id = $2, scan_id = $3, indexed_by_version = $4, indexer_fingerprint = $5 WHERE id = $1';
const UPDATE_LAYER_NAMESPACE = 'UPDATE layer SET namespace_id = $2 WHERE id = $1';
const DELETE_DIFF = 'DELETE FROM layer_diff WHERE layer_id = $1';
const INSERT_DIFF = `
  INSERT INTO layer_diff (layer_id, feature_version_id, modification)
  SELECT $1, * FROM unnest($2::int[], $3::modification[])`;
/** A layer's descendants, parents before children, locked against concurrent changes. */
const SELECT_DESCENDANTS = `
  WITH RECURSIVE tree (id, parent_id, scan_id, depth) AS (
    SELECT id, parent_id, scan_id, 0 FROM layer WHERE parent_id = $1
    UNION ALL
    SELECT l.id, l.parent_id, l.scan_id, t.depth + 1 FROM layer l JOIN tree t ON l.parent_id = t.id
  )
  SELECT id, parent_id, scan_id FROM tree ORDER BY depth, id`;
const LOCK_LAYERS = 'SELECT id FROM layer WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE';
const SELECT_SUBTREE_SCANS = `
  WITH RECURSIVE tree (id, scan_id) AS (
    SELECT id, scan_id FROM layer WHERE name = $1
    UNION ALL
    SELECT l.id, l.scan_id FROM layer l JOIN tree t ON l.parent_id = t.id
  )
  SELECT scan_id FROM tree`;
const DELETE_LAYER = 'DELETE FROM layer WHERE name = $1';
const DELETE_SCANS = 'DELETE FROM layer_scan WHERE id = ANY($1::bigint[])';

interface LayerRecord {
  id: number;
  name: string;
  parent_id: number | null;
  parent_name: string | null;
  namespace: string | null;
  scan_id: number;
  indexed_by_version: number;
  indexer_fingerprint: string | null;
}

export async function findLayer(db: Queryable, name: string): Promise<IndexedLayer | undefined> {
  const row = (await db.query<LayerRecord>(SELECT_LAYER, [name])).rows[0];
  return (
    row && {
      id: row.id,
      name: row.name,
      parentId: row.parent_id,
      parentName: row.parent_name,
      namespace: row.namespace,
      scanId: row.scan_id,
      indexedByVersion: row.indexed_by_version,
      indexerFingerprint: row.indexer_fingerprint,
    }
  );
}

interface ResolvedRecord {
  feature_version_id: number;
  name: string;
  version: string;
  arches: string[];
  module: string;
  namespace: string;
  version_format: VersionFormatName;
  added_by: string;
}

/** The features of a layer and its ancestors, each with the layer that introduced it. */
export async function layerFeatures(db: Queryable, layerId: number): Promise<ReportedFeature[]> {
  const { rows } = await db.query<ResolvedRecord>(SELECT_RESOLVED, [layerId]);
  return rows.map((r) => ({
    featureVersionId: r.feature_version_id,
    name: r.name,
    version: r.version,
    arches: r.arches,
    module: r.module,
    namespace: r.namespace,
    versionFormat: r.version_format,
    addedBy: r.added_by,
  }));
}

/** The layer and its ancestors, whose diffs make up its features. */
export async function layerChain(db: Queryable, layerId: number): Promise<number[]> {
  return (await db.query<{ id: number }>(SELECT_CHAIN, [layerId])).rows.map((r) => r.id);
}

/** The live vulnerabilities affecting some feature versions, with the fix for each. */
export async function affectingVulnerabilities(db: Queryable, featureVersionIds: readonly number[]): Promise<AffectingVulnerability[]> {
  if (featureVersionIds.length === 0) return [];
  const { rows } = await db.query<
    VulnerabilityFields & { feature_version_id: number; fixed_by: string | null; fix_state: StatedFixState | null } & RiskColumns
  >(SELECT_AFFECTING, [featureVersionIds]);
  return rows.map((r) => ({
    featureVersionId: r.feature_version_id,
    name: r.name,
    namespace: r.namespace,
    description: r.description,
    link: r.link,
    severity: r.severity,
    metadata: r.metadata,
    fixedBy: r.fixed_by,
    fixState: fixStateOf({ version: r.fixed_by, state: r.fix_state ?? undefined }),
    risk: riskContextOf(r),
  }));
}

const featureKey = (format: string, name: string, version: string, arches: readonly string[], module: string): string =>
  `${format}\0${name}\0${installedKey(version, arches, module)}`;

/**
 * A layer's feature set from its scan and its parent's set: formats the layer does not touch are
 * inherited; a deleted database leaves none of its format; a present one gives exactly its
 * packages; an added part gives the inherited packages and its own. A package the parent already
 * had keeps the parent's feature version (so its namespace and AddedBy survive a distribution
 * upgrade, as in Clair); new ones go to the layer's namespace. Application packages are the
 * installed set given, each in its ecosystem's namespace.
 */
export async function featuresFor(
  client: pg.PoolClient,
  scan: LayerScan,
  namespace: string | null,
  parent: readonly LayerFeature[],
  matching: Matching,
  /** The application packages installed once this layer is applied (applicationsAfter). */
  applications: InstalledApplications,
): Promise<LayerFeature[]> {
  const replaced = new Set(
    Object.entries(scan.packageDbs)
      .filter(([, db]) => db.state !== 'added')
      .map(([format]) => format),
  );
  // Application packages come from the installed set below, not from the parent's features.
  const features = parent.filter((f) => !replaced.has(f.versionFormat) && !matching.isApplicationNamespace(f.namespace));
  const fromParent = new Map(parent.map((f) => [featureKey(f.versionFormat, f.name, f.version, f.arches, f.module), f]));
  // The parent's version of a package: the one of its module stream, or, where the parent's
  // namespace does not match by module stream, the one stored without.
  const inheritedOf = (format: VersionFormatName, p: Package): LayerFeature | undefined => {
    const key = (module: string) => featureKey(format, p.name, p.version, p.arches ?? [], module);
    const own = fromParent.get(key(p.module ?? ''));
    if (own || p.module === undefined) return own;
    const plain = fromParent.get(key(''));
    return plain && !matching.moduleStreams(plain.namespace) ? plain : undefined;
  };
  for (const [format, database] of Object.entries(scan.packageDbs) as Array<[VersionFormatName, PackageDatabase]>) {
    if (database.state === 'deleted') continue;
    const fresh: Package[] = [];
    for (const p of matchedPackages(database.packages, namespace, matching)) {
      const inherited = inheritedOf(format, p);
      if (!inherited) fresh.push(p);
      else if (database.state === 'present') features.push(inherited); // an added part keeps it already
    }
    // A loop, not push(...array): spreading 300,000 arguments overflows the stack.
    if (fresh.length > 0) for (const f of await newFeatures(client, format, namespace, fresh, matching)) features.push(f);
  }
  for (const f of await applicationFeatures(client, applications, parent, matching)) features.push(f);
  return features;
}

/**
 * The feature versions of the application packages installed, each name and version of an
 * ecosystem once (in its namespace, whatever the layer's distribution), the parent's where it had
 * them (so AddedBy stays the layer that first installed them).
 */
async function applicationFeatures(
  client: pg.PoolClient,
  applications: InstalledApplications,
  parent: readonly LayerFeature[],
  matching: Matching,
): Promise<LayerFeature[]> {
  const fromParent = new Map(parent.map((f) => [`${f.namespace}\0${f.name}\0${f.version}`, f]));
  const byEcosystem = new Map<string, Map<string, Package>>();
  for (const p of applications.values()) {
    const packages = byEcosystem.get(p.ecosystem) ?? new Map<string, Package>();
    packages.set(`${p.name}\0${p.version}`, { name: p.name, version: p.version });
    byEcosystem.set(p.ecosystem, packages);
  }
  const features: LayerFeature[] = [];
  for (const [ecosystem, packages] of [...byEcosystem].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const format = matching.namespaceFormat(ecosystem);
    if (format === undefined) continue;
    const fresh: Package[] = [];
    for (const p of packages.values()) {
      const inherited = fromParent.get(`${ecosystem}\0${p.name}\0${p.version}`);
      if (inherited) features.push(inherited);
      else fresh.push(p);
    }
    if (fresh.length > 0) for (const f of await namespaceFeatures(client, ecosystem, format, fresh, matching)) features.push(f);
  }
  return features;
}

/**
 * The packages as they are matched: as listed, or by the source package each was built from (for
 * distributions whose advisories name those), each source and version once: the binaries of one
 * source become one feature (their architectures are not kept: those advisories name none).
 */
function matchedPackages(packages: readonly Package[], namespace: string | null, matching: Matching): readonly Package[] {
  const bySource = matching.bySource(namespace);
  if (!bySource) return packages;
  const matched = new Map<string, Package>();
  for (const p of packages) {
    const { name, version } = bySource(p);
    matched.set(`${name}\0${version}`, { name, version });
  }
  return [...matched.values()];
}

async function newFeatures(
  client: pg.PoolClient,
  format: VersionFormatName,
  layerNamespace: string | null,
  packages: readonly Package[],
  matching: Matching,
): Promise<LayerFeature[]> {
  const name = matching.advisoryNamespace(layerNamespace, format);
  return name === undefined ? [] : namespaceFeatures(client, name, format, packages, matching);
}

/**
 * The feature versions of packages matched in one advisory namespace, created (and linked to the
 * vulnerabilities affecting them) when new: a layer's packages of one format, or an SBOM's of one
 * namespace. Runs in the caller's transaction.
 */
export async function namespaceFeatures(
  client: pg.PoolClient,
  name: string,
  format: VersionFormatName,
  packages: readonly Package[],
  matching: Matching,
): Promise<LayerFeature[]> {
  const namespace = await ensureNamespace(client, name, format);
  const ids = await ensureFeatureVersions(client, namespace, packages, matching);
  const moduleOf = moduleStreamOf(name, matching);
  return packages.map((p, i) => ({
    featureVersionId: ids[i]!,
    name: p.name,
    version: p.version,
    arches: p.arches ?? [],
    module: moduleOf(p),
    namespace: name,
    versionFormat: format,
  }));
}

async function writeDiff(
  client: pg.PoolClient,
  layerId: number,
  parent: readonly LayerFeature[],
  own: readonly LayerFeature[],
): Promise<void> {
  const before = new Set(parent.map((f) => f.featureVersionId));
  const after = new Set(own.map((f) => f.featureVersionId));
  const ids: number[] = [];
  const modifications: string[] = [];
  for (const id of after) {
    if (!before.has(id)) {
      ids.push(id);
      modifications.push('add');
    }
  }
  for (const id of before) {
    if (!after.has(id)) {
      ids.push(id);
      modifications.push('del');
    }
  }
  await client.query(DELETE_DIFF, [layerId]);
  if (ids.length > 0) await client.query(INSERT_DIFF, [layerId, ids, modifications]);
}

/** Stores what a layer's own files hold under key (v1: 'v1/<name>'; ancestry API: the layer hash). */
export async function saveScan(client: pg.PoolClient, key: string, scan: LayerScan, indexing: Indexing): Promise<number> {
  const states = Object.fromEntries(Object.entries(scan.packageDbs).map(([format, db]) => [format, db.state]));
  const removed = scan.applications?.removed ?? [];
  const unread = scan.applications?.unreadable ?? [];
  const values = [
    key,
    indexing.indexedByVersion,
    indexing.indexerFingerprint,
    scan.namespace,
    states,
    removed,
    JSON.stringify(unread.slice(0, UNREAD_KEPT)),
    unread.length,
  ];
  const id = (await client.query<{ id: number }>(UPSERT_SCAN, values)).rows[0]!.id;
  await client.query(DELETE_SCAN_PACKAGES, [id]);
  await client.query(DELETE_SCAN_APPLICATIONS, [id]);
  const applications = scan.applications?.packages ?? [];
  if (applications.length > 0) {
    const column = (field: 'location' | 'ecosystem' | 'name' | 'version') => applications.map((p) => p[field]);
    await client.query(INSERT_SCAN_APPLICATIONS, [id, column('location'), column('ecosystem'), column('name'), column('version')]);
  }
  const formats: string[] = [];
  const names: string[] = [];
  const versions: string[] = [];
  const sourceNames: Array<string | null> = [];
  const sourceVersions: Array<string | null> = [];
  const arches: Array<string | null> = [];
  const modules: Array<string | null> = [];
  for (const [format, db] of Object.entries(scan.packageDbs)) {
    if (db.state === 'deleted') continue;
    for (const p of db.packages) {
      formats.push(format);
      names.push(p.name);
      versions.push(p.version);
      sourceNames.push(p.source?.name ?? null);
      sourceVersions.push(p.source?.version ?? null);
      arches.push(p.arches && p.arches.length > 0 ? p.arches.join(',') : null);
      modules.push(p.module ?? null);
    }
  }
  if (formats.length > 0)
    await client.query(INSERT_SCAN_PACKAGES, [id, formats, names, versions, sourceNames, sourceVersions, arches, modules]);
  return id;
}

export async function loadScan(db: Queryable, scanId: number): Promise<LayerScan> {
  const scan = (
    await db.query<{
      namespace: string | null;
      package_dbs: Record<string, PackageDatabaseState>;
      removed_paths: string[];
      unread: UnreadableManifest[];
    }>(SELECT_SCAN, [scanId])
  ).rows[0]!;
  const applications = (await db.query<ApplicationPackage>(SELECT_SCAN_APPLICATIONS, [scanId])).rows;
  const packages = (
    await db.query<{
      format: VersionFormatName;
      name: string;
      version: string;
      source_name: string | null;
      source_version: string | null;
      arches: string[] | null;
      module: string | null;
    }>(SELECT_SCAN_PACKAGES, [scanId])
  ).rows;
  const packageDbs: Record<VersionFormatName, PackageDatabase> = {};
  for (const [format, state] of Object.entries(scan.package_dbs) as Array<[VersionFormatName, PackageDatabaseState]>) {
    packageDbs[format] =
      state === 'deleted'
        ? { state }
        : {
            state,
            packages: packages
              .filter((p) => p.format === format)
              .map((p) => ({
                name: p.name,
                version: p.version,
                ...(p.source_name !== null && p.source_version !== null
                  ? { source: { name: p.source_name, version: p.source_version } }
                  : {}),
                ...(p.arches !== null ? { arches: p.arches } : {}),
                ...(p.module !== null ? { module: p.module } : {}),
              })),
          };
  }
  const found = applications.length > 0 || scan.removed_paths.length > 0 || scan.unread.length > 0;
  const unreadable = scan.unread.length > 0 ? { unreadable: scan.unread } : {};
  return {
    namespace: scan.namespace,
    packageDbs,
    ...(found ? { applications: { packages: applications, removed: scan.removed_paths, ...unreadable } } : {}),
  };
}

async function namespaceId(client: pg.PoolClient, name: string | null, matching: Matching): Promise<number | null> {
  if (name === null) return null;
  const format = matching.namespaceFormat(name);
  return format ? (await ensureNamespace(client, name, format)).id : null;
}

export interface SaveLayer {
  name: string;
  parent: LayerRow | null;
  scan: LayerScan;
  indexing: Indexing;
  /** The stored layer when it is being re-indexed. */
  existing: LayerRow | undefined;
  matching: Matching;
}

/**
 * Stores a layer from its scan: the scan itself, the feature versions it brings (linked to the
 * vulnerabilities affecting them), and its diff against its parent. Re-indexing a layer also
 * re-derives the diffs of its descendants from their own scans. Runs in the caller's transaction.
 */
export async function saveLayer(client: pg.PoolClient, input: SaveLayer): Promise<void> {
  const { parent, scan, existing, matching } = input;
  if (parent && (await client.query(LOCK_PARENT, [parent.id])).rowCount === 0) {
    throw badRequest(`parent layer ${parent.name} was deleted while this layer was indexed; post the parent again first`);
  }
  const { indexedByVersion, indexerFingerprint } = input.indexing;
  const scanId = await saveScan(client, `v1/${input.name}`, scan, input.indexing);
  const namespace = scan.namespace ?? parent?.namespace ?? null;
  const nsId = await namespaceId(client, namespace, matching);
  let layerId: number;
  if (existing) {
    layerId = existing.id;
    await client.query(UPDATE_LAYER, [layerId, nsId, scanId, indexedByVersion, indexerFingerprint]);
  } else {
    const values = [input.name, parent?.id ?? null, nsId, scanId, indexedByVersion, indexerFingerprint];
    layerId = (await client.query<{ id: number }>(INSERT_LAYER, values)).rows[0]!.id;
  }
  const parentFeatures = parent ? await layerFeatures(client, parent.id) : [];
  const applications = applicationsAfter(parent ? await installedApplications(client, parent.id) : new Map(), scan.applications);
  const own = await featuresFor(client, scan, namespace, parentFeatures, matching, applications);
  await writeDiff(client, layerId, parentFeatures, own);
  if (existing) await rederiveDescendants(client, layerId, { namespace, features: own, applications }, matching);
}

/** What a layer's resolved set is derived from, for its children. */
interface ResolvedLayer {
  namespace: string | null;
  features: LayerFeature[];
  applications: InstalledApplications;
}

/**
 * Every application package a layer and its ancestors list, and each one's removed paths, root
 * first: the application packages installed once the layer is applied are their fold.
 */
const SELECT_CHAIN_APPLICATIONS = `
  WITH RECURSIVE chain (id, parent_id, scan_id, depth) AS (
    SELECT id, parent_id, scan_id, 0 FROM layer WHERE id = $1
    UNION ALL
    SELECT l.id, l.parent_id, l.scan_id, c.depth + 1 FROM layer l JOIN chain c ON l.id = c.parent_id)
  SELECT s.removed_paths,
    coalesce(json_agg(json_build_object('location', a.location, 'ecosystem', a.ecosystem, 'name', a.name, 'version', a.version))
      FILTER (WHERE a.location IS NOT NULL), '[]') AS packages
  FROM chain c JOIN layer_scan s ON s.id = c.scan_id LEFT JOIN layer_scan_application a ON a.layer_scan_id = s.id
  GROUP BY c.depth, s.removed_paths ORDER BY c.depth DESC`;

/** The application packages installed once a stored layer (and its ancestors) are applied. */
async function installedApplications(client: pg.PoolClient, layerId: number): Promise<InstalledApplications> {
  const { rows } = await client.query<{ removed_paths: string[]; packages: ApplicationPackage[] }>(SELECT_CHAIN_APPLICATIONS, [layerId]);
  return rows.reduce<InstalledApplications>(
    (installed, r) => applicationsAfter(installed, { packages: r.packages, removed: r.removed_paths }),
    new Map(),
  );
}

/** After a layer's features changed, every descendant's diff is recomputed from its own scan. */
async function rederiveDescendants(client: pg.PoolClient, layerId: number, layer: ResolvedLayer, matching: Matching): Promise<void> {
  const descendants = (await client.query<{ id: number; parent_id: number; scan_id: number }>(SELECT_DESCENDANTS, [layerId])).rows;
  if (descendants.length === 0) return;
  await client.query(LOCK_LAYERS, [descendants.map((d) => d.id)]);
  const resolved = new Map<number, ResolvedLayer>([[layerId, layer]]);
  for (const d of descendants) {
    const parent = resolved.get(d.parent_id)!;
    const scan = await loadScan(client, d.scan_id);
    const ns = scan.namespace ?? parent.namespace;
    await client.query(UPDATE_LAYER_NAMESPACE, [d.id, await namespaceId(client, ns, matching)]);
    const applications = applicationsAfter(parent.applications, scan.applications);
    const own = await featuresFor(client, scan, ns, parent.features, matching, applications);
    await writeDiff(client, d.id, parent.features, own);
    resolved.set(d.id, { namespace: ns, features: own, applications });
  }
}

/** Deletes a layer, its descendants and their scans; false when there is no such layer. */
export async function deleteLayer(client: pg.PoolClient, name: string): Promise<boolean> {
  const scans = (await client.query<{ scan_id: number }>(SELECT_SUBTREE_SCANS, [name])).rows.map((r) => r.scan_id);
  const { rowCount } = await client.query(DELETE_LAYER, [name]);
  if (!rowCount) return false;
  await client.query(DELETE_SCANS, [scans]);
  return true;
}
