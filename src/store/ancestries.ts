import type pg from 'pg';
import { fileOfLocation, type UnreadableManifest } from '../model/indexing.js';
import { isWhitedOut, whiteoutsOf } from '../model/layer.js';
import type { VersionFormatName } from '../model/version-format.js';
import { shareKevLock } from './risk.js';
import { computeSummaries } from './summaries.js';
import { affectingVulnerabilities, type AffectingVulnerability, type Indexing, type LayerFeature } from './layers.js';
import { affectedHoldersPage } from './features.js';
import type { Pool, Queryable } from './pool.js';

/**
 * The ancestry API's store: ancestries assembled from the scans of their layers (layer_scan rows
 * keyed by the layer hash), each resolved feature attributed to the position of the layer that
 * introduced it.
 */

export interface StoredScan extends Indexing {
  id: number;
}

export interface AncestryFeatureRow {
  featureVersionId: number;
  /** Position (0 = the base layer) of the layer that introduced it. */
  position: number;
}

export interface AncestryReport {
  id: number;
  name: string;
  /** Layer hashes, in ancestry order (parent first). */
  layers: string[];
  /** The ancestry's features, each with the position of the layer that introduced it. */
  features: Array<LayerFeature & { position: number }>;
  /** The live vulnerabilities affecting those features. */
  vulnerabilities: AffectingVulnerability[];
  /** Files of its layers the listers could not read (the first 100 of each layer), and how many there were in all. */
  unread: { files: UnreadFile[]; count: number };
}

/** A file of a layer the application listers could not read. */
export interface UnreadFile {
  /** The layer's hash. */
  readonly layer: string;
  readonly location: string;
  readonly why: string;
}

export interface AffectedAncestry {
  /** The ancestry's id: grows with every ancestry stored, so pages resume from it. */
  id: number;
  name: string;
}

const SELECT_SCAN = 'SELECT id, indexed_by_version, indexer_fingerprint FROM layer_scan WHERE key = $1';
/** Serialises writers of one ancestry name for the rest of the transaction. */
const LOCK_NAME = 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))';
const DELETE_ANCESTRY = 'DELETE FROM ancestry WHERE name = $1';
const INSERT_ANCESTRY = 'INSERT INTO ancestry (name) VALUES ($1) RETURNING id';
const INSERT_LAYERS = `
  INSERT INTO ancestry_layer (ancestry_id, position, layer_scan_id)
  SELECT $1, * FROM unnest($2::int[], $3::bigint[])`;
const INSERT_FEATURES = `
  INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position)
  SELECT $1, * FROM unnest($2::int[], $3::int[])`;

/** The namespaces its packages are matched in (migration 0011), from the features just inserted. */
const SET_NAMESPACES = `
  UPDATE ancestry SET namespaces = coalesce((
    SELECT array_agg(DISTINCT n.name ORDER BY n.name)
    FROM ancestry_feature af
    JOIN feature_version fv ON fv.id = af.feature_version_id
    JOIN feature f ON f.id = fv.feature_id
    JOIN namespace n ON n.id = f.namespace_id
    WHERE af.ancestry_id = $1), '{}')
  WHERE id = $1`;
const SELECT_ANCESTRY = 'SELECT id, name FROM ancestry WHERE name = $1';
const SELECT_LAYER_SCANS = 'SELECT layer_scan_id FROM ancestry_layer WHERE ancestry_id = $1 ORDER BY position';
const SELECT_FEATURE_ROWS = 'SELECT feature_version_id, position FROM ancestry_feature WHERE ancestry_id = $1';
const SELECT_LAYERS = `
  SELECT s.key AS hash FROM ancestry_layer al JOIN layer_scan s ON s.id = al.layer_scan_id
  WHERE al.ancestry_id = $1 ORDER BY al.position`;
const SELECT_UNREAD = `
  SELECT s.key AS layer, s.unread, s.unread_count, s.removed_paths FROM ancestry_layer al JOIN layer_scan s ON s.id = al.layer_scan_id
  WHERE al.ancestry_id = $1 ORDER BY al.position`;
const SELECT_FEATURES = `
  SELECT af.position, fv.id AS feature_version_id, f.name, fv.version, fv.arches, fv.module, n.name AS namespace, n.version_format
  FROM ancestry_feature af
  JOIN feature_version fv ON fv.id = af.feature_version_id
  JOIN feature f ON f.id = fv.feature_id
  JOIN namespace n ON n.id = f.namespace_id
  WHERE af.ancestry_id = $1
  ORDER BY af.position, f.name, fv.version, n.name`;

/**
 * The ancestries holding a feature version the vulnerability version affects, paged as v1's layers
 * are (affectedHoldersPage): ids from ancestry_feature_fan_out.
 */
const SELECT_AFFECTED = affectedHoldersPage({ rows: 'ancestry_feature', holder: 'ancestry_id', names: 'ancestry' });

/** The stored scan of a layer hash, if any. */
export async function findScanByHash(db: Queryable, hash: string): Promise<StoredScan | undefined> {
  type Row = { id: number; indexed_by_version: number; indexer_fingerprint: string | null };
  const row = (await db.query<Row>(SELECT_SCAN, [hash])).rows[0];
  return row && { id: row.id, indexedByVersion: row.indexed_by_version, indexerFingerprint: row.indexer_fingerprint };
}

/** Takes the per-name write lock of an ancestry until the transaction ends. */
export async function lockAncestryName(client: pg.PoolClient, name: string): Promise<void> {
  await client.query(LOCK_NAME, [`ancestry/${name}`]);
}

const featureRowKey = (f: AncestryFeatureRow): string => `${f.featureVersionId}@${f.position}`;

/** The id of the stored ancestry of this name when it holds exactly these layers and features. */
async function identicalAncestry(
  client: pg.PoolClient,
  input: { name: string; scanIds: readonly number[]; features: readonly AncestryFeatureRow[] },
): Promise<number | undefined> {
  const stored = (await client.query<{ id: number }>(SELECT_ANCESTRY, [input.name])).rows[0];
  if (!stored) return undefined;
  const scans = (await client.query<{ layer_scan_id: number }>(SELECT_LAYER_SCANS, [stored.id])).rows.map((r) => r.layer_scan_id);
  if (scans.length !== input.scanIds.length || scans.some((id, i) => id !== input.scanIds[i])) return undefined;
  const rows = (await client.query<{ feature_version_id: number; position: number }>(SELECT_FEATURE_ROWS, [stored.id])).rows;
  if (rows.length !== input.features.length) return undefined;
  const wanted = new Set(input.features.map(featureRowKey));
  return rows.every((r) => wanted.has(featureRowKey({ featureVersionId: r.feature_version_id, position: r.position })))
    ? stored.id
    : undefined;
}

/**
 * Stores an ancestry, replacing one of the same name (its rows go with it; the new one gets a new
 * id, as Clair's did) unless the stored one is identical, which is kept untouched: posting the
 * same image again writes nothing. scanIds: the layers' scans by position. Runs in the caller's
 * transaction, which must hold lockAncestryName.
 */
export async function replaceAncestry(
  client: pg.PoolClient,
  input: { name: string; scanIds: readonly number[]; features: readonly AncestryFeatureRow[] },
): Promise<number> {
  const identical = await identicalAncestry(client, input);
  if (identical !== undefined) return identical;
  await client.query(DELETE_ANCESTRY, [input.name]);
  const id = (await client.query<{ id: number }>(INSERT_ANCESTRY, [input.name])).rows[0]!.id;
  await client.query(INSERT_LAYERS, [id, input.scanIds.map((_, i) => i), input.scanIds]);
  if (input.features.length > 0) {
    await client.query(INSERT_FEATURES, [id, input.features.map((f) => f.featureVersionId), input.features.map((f) => f.position)]);
    await client.query(SET_NAMESPACES, [id]);
  }
  // Its counts and rank among images, from the start (after any KEV replace under way: see shareKevLock).
  await shareKevLock(client);
  await computeSummaries(client, [id]);
  return id;
}

/** An ancestry with its layers, features and their vulnerabilities, read from one snapshot. */
export async function readAncestry(pool: Pool, name: string): Promise<AncestryReport | undefined> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
    const ancestry = (await client.query<{ id: number; name: string }>(SELECT_ANCESTRY, [name])).rows[0];
    let report: AncestryReport | undefined;
    if (ancestry) {
      const layers = (await client.query<{ hash: string }>(SELECT_LAYERS, [ancestry.id])).rows.map((r) => r.hash);
      const features = (
        await client.query<{
          position: number;
          feature_version_id: number;
          name: string;
          version: string;
          arches: string[];
          module: string;
          namespace: string;
          version_format: VersionFormatName;
        }>(SELECT_FEATURES, [ancestry.id])
      ).rows.map((r) => ({
        position: r.position,
        featureVersionId: r.feature_version_id,
        name: r.name,
        version: r.version,
        arches: r.arches,
        module: r.module,
        namespace: r.namespace,
        versionFormat: r.version_format,
      }));
      const vulnerabilities = await affectingVulnerabilities(
        client,
        features.map((f) => f.featureVersionId),
      );
      const unread = unreadFiles((await client.query<UnreadRow>(SELECT_UNREAD, [ancestry.id])).rows);
      report = { id: ancestry.id, name: ancestry.name, layers, features, vulnerabilities, unread };
    }
    await client.query('COMMIT');
    return report;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

interface UnreadRow {
  layer: string;
  unread: UnreadableManifest[];
  unread_count: number;
  removed_paths: string[];
}

/** The unread files of an ancestry's layers (in order), but those a later layer deletes. */
function unreadFiles(rows: readonly UnreadRow[]): AncestryReport['unread'] {
  const files: UnreadFile[] = [];
  let count = 0;
  rows.forEach((row, i) => {
    const later = rows.slice(i + 1).map((r) => whiteoutsOf(r.removed_paths));
    const kept = row.unread.filter((u) => !later.some((w) => isWhitedOut(fileOfLocation(u.location), w)));
    files.push(...kept.map((u) => ({ layer: row.layer, location: u.location, why: u.why })));
    count += row.unread_count - (row.unread.length - kept.length);
  });
  return { files, count };
}

/** Up to limit ancestries affected by the vulnerability version, from ancestry id startId on. */
export async function ancestriesAffectedBy(
  db: Queryable,
  vulnerabilityId: number,
  startId: number,
  limit: number,
): Promise<AffectedAncestry[]> {
  return (await db.query<AffectedAncestry>(SELECT_AFFECTED, [vulnerabilityId, startId, limit])).rows;
}
