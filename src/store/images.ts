import type pg from 'pg';
import type { SeverityCount } from '../model/finding-counts.js';
import type { Severity } from '../model/vulnerability.js';
import { lockAncestryName } from './ancestries.js';
import type { Queryable } from './pool.js';
import { EPSS_AT_LEAST, IN_KEV } from './risk.js';
import { CHANGE_QUEUED_FOR, FINDING_COUNTS, SUMMARY_CURRENT } from './summaries.js';

/**
 * Images (migrations/0004_images.sql): records of what registries hold, by repository and
 * manifest digest, with their tags. An image's contents are the ancestry named by its digest.
 */

export interface ImageRecord {
  /** The registry as references write it. */
  registry: string;
  repository: string;
  digest: string;
  platform: string;
  mediaType: string;
  /** The index the image was reached through, when it was. */
  indexDigest: string | null;
}

export interface ImageRow extends ImageRecord {
  id: number;
  tags: string[];
  firstSeen: Date;
  lastSeen: Date;
  /** When the image's contents were last (re)assembled; null when its ancestry is gone. */
  scannedAt: Date | null;
  /** The namespaces its packages are matched in (its data coverage is theirs). */
  namespaces: string[];
  counts: Partial<Record<Severity, SeverityCount>>;
  /** Distinct vulnerabilities (by name) affecting the image that CISA's KEV catalog lists. */
  knownExploited: number;
}

export interface ImageFilter {
  registry?: string | undefined;
  repository?: string | undefined;
  tag?: string | undefined;
  digest?: string | undefined;
  /** Only images affected by a vulnerability at least this severe. */
  minSeverity?: Severity | undefined;
  /** true: only images affected by a vulnerability in KEV. */
  knownExploited?: boolean | undefined;
  /** Only images affected by a vulnerability with an EPSS score at least this. */
  minEpss?: number | undefined;
}

const UPSERT_IMAGE = `
  INSERT INTO image (registry, repository, digest, platform, media_type, index_digest)
  VALUES ($1, $2, $3, $4, $5, $6)
  ON CONFLICT (registry, repository, digest) DO UPDATE
  SET last_seen = now(), platform = EXCLUDED.platform, media_type = EXCLUDED.media_type,
      index_digest = coalesce(EXCLUDED.index_digest, image.index_digest)
  RETURNING id`;
/** Serialises the writers of one repository's records for the rest of the transaction. */
const LOCK_REPOSITORY = 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))';

/**
 * Whether a tag naming this digest (never NULL) names image i: it names the image's manifest, or an
 * index the image was reached through (an index's contents never change: once in it, always in it).
 * Never NULL itself, so NOT of it is exact.
 */
const namesImage = (digest: string) => `(i.digest = ${digest} OR i.index_digest IS NOT DISTINCT FROM ${digest})`;

/** The images ($1) get the tags their repository's tags give them. */
const APPLY_TAGS = `
  INSERT INTO image_tag (image_id, tag)
  SELECT i.id, r.tag FROM image i
  JOIN repository_tag r ON r.registry = i.registry AND r.repository = i.repository AND ${namesImage('r.digest')}
  WHERE i.id = ANY($1::bigint[])
  ON CONFLICT DO NOTHING`;

const SELECT_TAG = 'SELECT digest FROM repository_tag WHERE registry = $1 AND repository = $2 AND tag = $3';
const UPSERT_TAG = `
  INSERT INTO repository_tag (registry, repository, tag, digest) VALUES ($1, $2, $3, $4)
  ON CONFLICT (registry, repository, tag) DO UPDATE SET digest = EXCLUDED.digest`;
const DELETE_TAG = 'DELETE FROM repository_tag WHERE registry = $1 AND repository = $2 AND tag = $3';
/** The tag ($3) leaves the repository's images it does not name (all of them when $4 is NULL: the tag is gone). */
const UNTAG_OTHERS = `
  DELETE FROM image_tag t USING image i
  WHERE t.image_id = i.id AND i.registry = $1 AND i.repository = $2 AND t.tag = $3
    AND ($4::text IS NULL OR NOT ${namesImage('$4')})`;
const TAG_NAMED = `
  INSERT INTO image_tag (image_id, tag)
  SELECT i.id, $3 FROM image i
  WHERE i.registry = $1 AND i.repository = $2 AND ${namesImage('$4')}
  ON CONFLICT DO NOTHING`;

/** The tags naming a deleted manifest ($3) go, and with them their image_tag rows. */
const FORGET_TAGS_OF = `
  WITH gone AS (DELETE FROM repository_tag WHERE registry = $1 AND repository = $2 AND digest = $3 RETURNING tag)
  DELETE FROM image_tag t USING image i, gone g
  WHERE t.image_id = i.id AND i.registry = $1 AND i.repository = $2 AND t.tag = g.tag`;
/** The images of a deleted manifest ($3), and those reached through it (an index) that no tag names now. */
const FORGET_IMAGES_OF = `
  DELETE FROM image i
  WHERE i.registry = $1 AND i.repository = $2
    AND (i.digest = $3 OR (i.index_digest = $3 AND NOT EXISTS (SELECT 1 FROM image_tag t WHERE t.image_id = i.id)))
  RETURNING i.digest`;
const DELETE_UNUSED_ANCESTRIES =
  'DELETE FROM ancestry a WHERE a.name = ANY($1::text[]) AND NOT EXISTS (SELECT 1 FROM image i WHERE i.digest = a.name)';

/** The tags of image p, sorted ('{}' when none). */
const TAGS_OF_P = `coalesce((SELECT array_agg(t.tag ORDER BY t.tag) FROM image_tag t WHERE t.image_id = p.id), '{}') AS tags`;

/** The live vulnerabilities affecting an image's ancestry (by its digest), joined per affected feature version. */
const AFFECTING_IMAGE = `
  FROM ancestry a
  JOIN ancestry_feature af ON af.ancestry_id = a.id
  JOIN vulnerability_affects va ON va.feature_version_id = af.feature_version_id
  JOIN vulnerability v ON v.id = va.vulnerability_id AND v.deleted_at IS NULL
  JOIN vulnerability_fixedin fi ON fi.id = va.fixedin_id`;

/**
 * An image i's summary s (migration 0009), when it has one: its counts and rank kept by the
 * triggers and the refreshers. Where it is current (SUMMARY_CURRENT: not stale, no queued change
 * touches it) lists read it; where it is not, or missing, they count live, so every list shows the
 * numbers of now.
 */
const WITH_SUMMARY = `
  image i LEFT JOIN ancestry a ON a.name = i.digest LEFT JOIN ancestry_summary s ON s.ancestry_id = a.id`;

/** The list filters, on image i and its summary s ($2 registry … $6 severity, $8 KEV, $9 minimum EPSS). */
const IMAGE_FILTERS = `
      ($2::text IS NULL OR i.registry = $2)
      AND ($3::text IS NULL OR i.repository = $3)
      AND ($4::text IS NULL OR EXISTS (SELECT 1 FROM image_tag t WHERE t.image_id = i.id AND t.tag = $4))
      AND ($5::text IS NULL OR i.digest = $5)
      AND ($6::severity IS NULL OR CASE WHEN ${SUMMARY_CURRENT('s', 'a.id')}
        THEN EXISTS (SELECT 1 FROM jsonb_object_keys(s.counts) k WHERE k::severity >= $6::severity)
        ELSE EXISTS (SELECT 1 ${AFFECTING_IMAGE} WHERE a.name = i.digest AND v.severity >= $6::severity) END)
      AND (NOT $8::boolean OR CASE WHEN ${SUMMARY_CURRENT('s', 'a.id')}
        THEN s.known_exploited > 0
        ELSE EXISTS (SELECT 1 ${AFFECTING_IMAGE} WHERE a.name = i.digest AND ${IN_KEV}) END)
      AND ($9::float8 IS NULL OR EXISTS (SELECT 1 ${AFFECTING_IMAGE} WHERE a.name = i.digest AND ${EPSS_AT_LEAST('$9::float8')}))`;

/**
 * What a page's rows carry of their summary (and the ancestry to count live without one), for
 * CHECKED_PAGE: whether it is stale is read for every candidate row, whether a queued change
 * touches it only for the rows of the page.
 */
const SUMMARY_FIELDS =
  's.counts AS summary_counts, s.known_exploited AS summary_known_exploited, s.stale IS FALSE AS summary_not_stale, a.id AS ancestry_id';

/** The rows of CTE page with summary_fresh: their summary is current (SUMMARY_CURRENT), for IMAGE_COLUMNS and LIVE_COUNTS. */
const CHECKED_PAGE = `checked AS MATERIALIZED (
    SELECT page.*, page.summary_not_stale AND NOT ${CHANGE_QUEUED_FOR('page.ancestry_id')} AS summary_fresh FROM page
  )`;

/** An image p of a page with its tags, scan time and counts: its fresh summary's, else counted now (FINDING_COUNTS). */
const IMAGE_COLUMNS = `
  p.id, p.registry, p.repository, p.digest, p.platform, p.media_type, p.index_digest, p.first_seen, p.last_seen,
         ${TAGS_OF_P},
         (SELECT created_at FROM ancestry WHERE name = p.digest) AS scanned_at,
         coalesce((SELECT namespaces FROM ancestry WHERE name = p.digest), '{}') AS namespaces,
         CASE WHEN p.summary_fresh THEN p.summary_counts ELSE coalesce(live.counts, '{}') END AS counts,
         CASE WHEN p.summary_fresh THEN p.summary_known_exploited ELSE coalesce(live.known_exploited, 0) END AS known_exploited`;

/** The counts of page p's images without a fresh summary (none are computed for the others), for IMAGE_COLUMNS. */
const LIVE_COUNTS = `LEFT JOIN LATERAL (${FINDING_COUNTS('af.ancestry_id = p.ancestry_id AND NOT p.summary_fresh')}) live ON true`;

const SELECT_IMAGES = `
  WITH page AS (
    SELECT i.*, ${SUMMARY_FIELDS} FROM ${WITH_SUMMARY}
    WHERE i.id > $1 AND ${IMAGE_FILTERS}
    ORDER BY i.id
    LIMIT $7
  ), ${CHECKED_PAGE}
  SELECT ${IMAGE_COLUMNS}
  FROM checked p ${LIVE_COUNTS}
  ORDER BY p.id`;

/**
 * The same list ranked by risk (ancestry_summary.risk: known exploited first, then by counts from
 * the most severe down; images never scanned last), then by id; $1/$10: the rank and id of the
 * last image of the previous page (NULL for the first page).
 */
const SELECT_IMAGES_BY_RISK = `
  WITH ranked AS (
    SELECT i.*, ${SUMMARY_FIELDS}, coalesce(s.risk, '{}') AS risk
    FROM ${WITH_SUMMARY}
    WHERE ${IMAGE_FILTERS}
  ), page AS (
    SELECT * FROM ranked
    WHERE $10::int[] IS NULL OR risk < $10::int[] OR (risk = $10::int[] AND id > $1)
    ORDER BY risk DESC, id
    LIMIT $7
  ), ${CHECKED_PAGE}
  SELECT ${IMAGE_COLUMNS}, p.risk
  FROM checked p ${LIVE_COUNTS}
  ORDER BY p.risk DESC, p.id`;

interface ImageDbRow {
  id: number;
  registry: string;
  repository: string;
  digest: string;
  platform: string;
  media_type: string;
  index_digest: string | null;
  first_seen: Date;
  last_seen: Date;
  tags: string[];
  scanned_at: Date | null;
  namespaces: string[];
  counts: Partial<Record<Severity, SeverityCount>>;
  known_exploited: number;
  risk?: number[];
}

const toImageRow = (r: ImageDbRow): ImageRow => ({
  id: r.id,
  registry: r.registry,
  repository: r.repository,
  digest: r.digest,
  platform: r.platform,
  mediaType: r.media_type,
  indexDigest: r.index_digest,
  tags: r.tags,
  firstSeen: r.first_seen,
  lastSeen: r.last_seen,
  scannedAt: r.scanned_at,
  namespaces: r.namespaces,
  counts: r.counts,
  knownExploited: r.known_exploited,
});

/** A repository of a registry, as references write them. */
export interface RepositoryName {
  registry: string;
  repository: string;
}

/**
 * Serialises the writers of one repository's images and tags until the transaction ends: whoever
 * asks the registry while holding it writes an answer no other writer has overtaken.
 */
export async function lockImageRepository(client: pg.PoolClient, where: RepositoryName): Promise<void> {
  await client.query(LOCK_REPOSITORY, [`image-repository/${where.registry}/${where.repository}`]);
}

/**
 * Records images seen in a repository (first seen now, or last seen now again), each with the tags
 * of the repository that name it (repository_tag). Returns their ids, in order. Runs in the
 * caller's transaction, which holds lockImageRepository.
 */
export async function recordImages(
  client: pg.PoolClient,
  where: RepositoryName,
  images: readonly Omit<ImageRecord, 'registry' | 'repository'>[],
): Promise<number[]> {
  const ids: number[] = [];
  for (const image of images) {
    const { rows } = await client.query<{ id: number }>(UPSERT_IMAGE, [
      where.registry,
      where.repository,
      image.digest,
      image.platform,
      image.mediaType,
      image.indexDigest,
    ]);
    ids.push(rows[0]!.id);
  }
  await client.query(APPLY_TAGS, [ids]);
  return ids;
}

/**
 * Records what a tag names now, as the registry said it: a manifest or index digest, or null when
 * the tag is gone. The tag moves to the recorded images of that digest; it leaves the others only
 * when it named something else before, so a scan of some platforms of an index leaves the tag on
 * the platforms it did not scan. Runs in the caller's transaction, which holds lockImageRepository.
 */
export async function pointTag(client: pg.PoolClient, where: RepositoryName, tag: string, digest: string | null): Promise<void> {
  const key = [where.registry, where.repository, tag];
  const before = (await client.query<{ digest: string }>(SELECT_TAG, key)).rows[0]?.digest ?? null;
  if (digest === null) {
    await client.query(DELETE_TAG, key);
  } else {
    await client.query(UPSERT_TAG, [...key, digest]);
  }
  if (before !== digest) await client.query(UNTAG_OTHERS, [...key, digest]);
  if (digest !== null) await client.query(TAG_NAMED, [...key, digest]);
}

/**
 * Forgets a manifest the registry deleted from a repository: the tags naming it, its image records,
 * and the images reached through it (an index) that no tag names any more. Their contents go when
 * no other image holds their digest. Returns how many image records went. Runs in the caller's
 * transaction, which holds lockImageRepository.
 */
export async function forgetManifest(client: pg.PoolClient, where: RepositoryName, digest: string): Promise<number> {
  await client.query(FORGET_TAGS_OF, [where.registry, where.repository, digest]);
  const { rows } = await client.query<{ digest: string }>(FORGET_IMAGES_OF, [where.registry, where.repository, digest]);
  await deleteUnusedAncestries(
    client,
    rows.map((r) => r.digest),
  );
  return rows.length;
}

/**
 * Deletes the ancestries of these digests that no image holds. Each name is locked first, as a scan
 * storing it holds it until its image is recorded, so contents a scan is about to record are never
 * deleted under it.
 */
async function deleteUnusedAncestries(client: pg.PoolClient, digests: readonly string[]): Promise<void> {
  const names = [...new Set(digests)].sort();
  if (names.length === 0) return;
  for (const name of names) await lockAncestryName(client, name);
  await client.query(DELETE_UNUSED_ANCESTRIES, [names]);
}

const filterValues = (filter: ImageFilter) => [
  filter.registry ?? null,
  filter.repository ?? null,
  filter.tag ?? null,
  filter.digest ?? null,
  filter.minSeverity ?? null,
];

/** Up to limit images matching the filter, in id order after afterId, with tags and counts. */
export async function listImages(db: Queryable, filter: ImageFilter, afterId: number, limit: number): Promise<ImageRow[]> {
  const { rows } = await db.query<ImageDbRow>(SELECT_IMAGES, [
    afterId,
    ...filterValues(filter),
    limit,
    filter.knownExploited ?? false,
    filter.minEpss ?? null,
  ]);
  return rows.map(toImageRow);
}

/** Where a page ranked by risk ends: the last image's rank and id. */
export interface RiskCursor {
  risk: number[];
  id: number;
}

/** Up to limit images matching the filter ranked by risk (most urgent first), after the cursor, with tags and counts. */
export async function listImagesByRisk(
  db: Queryable,
  filter: ImageFilter,
  after: RiskCursor | undefined,
  limit: number,
): Promise<Array<ImageRow & { rank: RiskCursor }>> {
  const { rows } = await db.query<ImageDbRow>(SELECT_IMAGES_BY_RISK, [
    after?.id ?? 0,
    ...filterValues(filter),
    limit,
    filter.knownExploited ?? false,
    filter.minEpss ?? null,
    after?.risk ?? null,
  ]);
  return rows.map((r) => ({ ...toImageRow(r), rank: { risk: r.risk ?? [], id: r.id } }));
}

export type ImageReferenceRow = Pick<ImageRow, 'registry' | 'repository' | 'platform' | 'tags' | 'firstSeen' | 'lastSeen'>;

const SELECT_WITH_DIGEST = `
  SELECT p.registry, p.repository, p.platform, p.first_seen AS "firstSeen", p.last_seen AS "lastSeen", ${TAGS_OF_P}
  FROM image p WHERE p.digest = $1 ORDER BY p.id`;

/** Where registries hold a digest: one record per repository (no counts: the contents are the same for all). */
export async function imagesWithDigest(db: Queryable, digest: string): Promise<ImageReferenceRow[]> {
  return (await db.query<ImageReferenceRow>(SELECT_WITH_DIGEST, [digest])).rows;
}

export interface AffectedImage {
  id: number;
  registry: string;
  repository: string;
  digest: string;
  platform: string;
  tags: string[];
}

export interface ExposedImage extends AffectedImage {
  /** The affected packages of the image, each with the version that fixes it (null: no fix yet). */
  packages: Array<{ name: string; version: string; namespace: string; severity: Severity; fixedBy: string | null }>;
}

const SELECT_EXPOSED = `
  WITH page AS (
    SELECT DISTINCT i.id, i.registry, i.repository, i.digest, i.platform
    FROM vulnerability v
    JOIN vulnerability_affects va ON va.vulnerability_id = v.id
    JOIN ancestry_feature af ON af.feature_version_id = va.feature_version_id
    JOIN ancestry a ON a.id = af.ancestry_id
    JOIN image i ON i.digest = a.name
    WHERE v.name = $1 AND v.deleted_at IS NULL AND i.id > $2
    ORDER BY i.id
    LIMIT $3
  )
  SELECT p.*,
         ${TAGS_OF_P},
         (SELECT jsonb_agg(DISTINCT jsonb_build_object('name', f.name, 'version', fv.version, 'namespace', n.name,
                                                       'severity', v.severity, 'fixedBy', fi.fixed_version))
          FROM ancestry a
          JOIN ancestry_feature af ON af.ancestry_id = a.id
          JOIN vulnerability_affects va ON va.feature_version_id = af.feature_version_id
          JOIN vulnerability v ON v.id = va.vulnerability_id AND v.deleted_at IS NULL AND v.name = $1
          JOIN vulnerability_fixedin fi ON fi.id = va.fixedin_id
          JOIN feature_version fv ON fv.id = af.feature_version_id
          JOIN feature f ON f.id = fv.feature_id
          JOIN namespace n ON n.id = v.namespace_id
          WHERE a.name = p.digest) AS packages
  FROM page p
  ORDER BY p.id`;

/** Up to limit images affected by the live vulnerabilities of this name (any namespace), after afterId. */
export async function imagesExposedTo(db: Queryable, vulnerability: string, afterId: number, limit: number): Promise<ExposedImage[]> {
  const { rows } = await db.query<ExposedImage>(SELECT_EXPOSED, [vulnerability, afterId, limit]);
  return rows.map((r) => ({ ...r, packages: [...r.packages].sort((a, b) => a.name.localeCompare(b.name)) }));
}

/** Whether a live vulnerability of this name exists (in any namespace). */
export async function vulnerabilityNameExists(db: Queryable, name: string): Promise<boolean> {
  const { rows } = await db.query('SELECT 1 FROM vulnerability WHERE name = $1 AND deleted_at IS NULL LIMIT 1', [name]);
  return rows.length > 0;
}

/**
 * Deletes every record of a digest, and its ancestry when no image holds the digest any more.
 * Returns how many image records went.
 */
export async function deleteImagesWithDigest(client: pg.PoolClient, digest: string): Promise<number> {
  const { rowCount } = await client.query('DELETE FROM image WHERE digest = $1', [digest]);
  await deleteUnusedAncestries(client, [digest]);
  return rowCount ?? 0;
}

const UNTAGGED_BEFORE = 'i.last_seen < $1 AND NOT EXISTS (SELECT 1 FROM image_tag t WHERE t.image_id = i.id)';

/**
 * Deletes images no tag names that were last seen before the cut-off, those of up to `digests`
 * digests (a batch: each digest's ancestry name is locked, and a transaction can hold only so many
 * locks); their ancestries go when unused. Returns the image records and the digests deleted.
 */
export async function purgeUntaggedImages(
  client: pg.PoolClient,
  lastSeenBefore: Date,
  digests: number,
): Promise<{ images: number; digests: number }> {
  const candidates = await client.query<{ digest: string }>(`SELECT DISTINCT i.digest FROM image i WHERE ${UNTAGGED_BEFORE} LIMIT $2`, [
    lastSeenBefore,
    digests,
  ]);
  const names = candidates.rows.map((r) => r.digest).sort();
  // Locked before the rows are deleted: a scan recording one of these images now finishes first,
  // and its image, seen again, is no longer past the cut-off.
  for (const name of names) await lockAncestryName(client, name);
  const { rows } = await client.query<{ digest: string }>(
    `DELETE FROM image i WHERE i.digest = ANY($2::text[]) AND ${UNTAGGED_BEFORE} RETURNING i.digest`,
    [lastSeenBefore, names],
  );
  await deleteUnusedAncestries(
    client,
    rows.map((r) => r.digest),
  );
  return { images: rows.length, digests: names.length };
}

const SELECT_AFFECTED_BY_VERSION = `
  SELECT p.id, p.registry, p.repository, p.digest, p.platform, ${TAGS_OF_P}
  FROM image p
  WHERE p.id > $2 AND EXISTS (
    SELECT 1 FROM ancestry a
    JOIN ancestry_feature af ON af.ancestry_id = a.id
    JOIN vulnerability_affects va ON va.feature_version_id = af.feature_version_id AND va.vulnerability_id = $1
    WHERE a.name = p.digest)
  ORDER BY p.id
  LIMIT $3`;

/**
 * Up to limit images (after afterId, in id order) holding a package this vulnerability version
 * affects: a notification's side in the images view. Superseded versions keep their affects rows,
 * so the old side of a change still lists what it affected.
 */
export async function imagesAffectedByVersion(
  db: Queryable,
  vulnerabilityId: number,
  afterId: number,
  limit: number,
): Promise<AffectedImage[]> {
  return (await db.query<AffectedImage>(SELECT_AFFECTED_BY_VERSION, [vulnerabilityId, afterId, limit])).rows;
}

/** Buckets of imagesByHighestSeverity besides the severities. */
export type HighestBucket = Severity | 'None' | 'No vulnerability data' | 'Being recounted' | 'Not scanned';

/**
 * Images by the most severe vulnerability affecting them, from their summaries: most severe first,
 * then None; images using a namespace without data ($1: 'No vulnerability data': never None),
 * images whose summary is not current ('Being recounted': never a count that may be out of date) and
 * images never scanned apart.
 */
const SELECT_BY_HIGHEST = `
  SELECT bucket AS highest, count(*)::int AS images
  FROM (
    SELECT CASE WHEN a.id IS NULL THEN 'Not scanned' WHEN a.namespaces && $1::text[] THEN 'No vulnerability data'
                WHEN NOT ${SUMMARY_CURRENT('s', 'a.id')} THEN 'Being recounted'
                WHEN s.risk[2] > 0 THEN 'Defcon1' WHEN s.risk[3] > 0 THEN 'Critical' WHEN s.risk[4] > 0 THEN 'High'
                WHEN s.risk[5] > 0 THEN 'Medium' WHEN s.risk[6] > 0 THEN 'Low' WHEN s.risk[7] > 0 THEN 'Negligible'
                WHEN s.risk[8] > 0 THEN 'Unknown' ELSE 'None' END AS bucket
    FROM ${WITH_SUMMARY}
  ) b
  GROUP BY bucket
  ORDER BY array_position(ARRAY['Defcon1', 'Critical', 'High', 'Medium', 'Low', 'Negligible', 'Unknown', 'None',
                                'No vulnerability data', 'Being recounted', 'Not scanned'], bucket)`;

/** namespacesWithoutData: the namespaces the store holds no vulnerability data for. */
export async function imagesByHighestSeverity(
  db: Queryable,
  namespacesWithoutData: readonly string[],
): Promise<Array<{ highest: HighestBucket; images: number }>> {
  return (await db.query<{ highest: HighestBucket; images: number }>(SELECT_BY_HIGHEST, [namespacesWithoutData])).rows;
}
