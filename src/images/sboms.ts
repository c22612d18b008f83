import type pg from 'pg';
import { CURRENT_INDEXING } from '../ecosystems/index.js';
import { MATCHING } from '../ecosystems/matching.js';
import { SBOM_MEDIA_TYPES, type Sbom, type SbomPackage } from '../sbom/read.js';
import { lockAncestryName, replaceAncestry } from '../store/ancestries.js';
import { imagesWithDigest, lockImageRepository, pointTag, recordImages, type RepositoryName } from '../store/images.js';
import { namespaceFeatures, saveScan, type LayerFeature } from '../store/layers.js';
import { withTransaction, type Pool } from '../store/pool.js';
import { UNKNOWN_PLATFORM } from './images.js';

/**
 * An SBOM stored as an image, so that everything that reads images (the images API, the dashboard,
 * notifications, the summaries kept as vulnerability data changes) reads it unchanged: its contents
 * are the ancestry named by the document's digest, of one layer (a layer scan keyed by that digest,
 * holding no files) which adds every package the document lists, each in its namespace as a layer's
 * would be; its record is an image of that digest in the repository named after the SBOM, under the
 * registry `sbom`, which no registry reference can name (a first component without a dot, a colon
 * or `localhost` is a Docker Hub namespace).
 */

export const SBOM_REGISTRY = 'sbom';

/**
 * The tag an SBOM's repository gives the document posted last: a newer document of the same name
 * takes it, as a push moves a tag, and the one before, untagged, goes after
 * clair.images.untaggedretention, as an image whose tag moved does.
 */
export const SBOM_TAG = 'latest';

/**
 * Stores the SBOM's contents as the ancestry named by its digest, replacing nothing when it is
 * stored already (replaceAncestry keeps an identical one). Runs in the caller's transaction, which
 * holds the ancestry's name locked from here to its end.
 */
export async function writeSbomAncestry(client: pg.PoolClient, sbom: Sbom): Promise<void> {
  await lockAncestryName(client, sbom.digest);
  const scanId = await saveScan(client, sbom.digest, { namespace: null, packageDbs: {} }, CURRENT_INDEXING);
  const ids = new Set<number>();
  for (const f of await sbomFeatures(client, sbom.packages)) ids.add(f.featureVersionId);
  const features = [...ids].map((featureVersionId) => ({ featureVersionId, position: 0 }));
  await replaceAncestry(client, { name: sbom.digest, scanIds: [scanId], features });
}

/**
 * The packages' feature versions, each in the namespace whose advisories apply to it as they would
 * to an image's (centos:7 packages in rhel:7), one namespace at a time in name order, so that two
 * writers lock features in the same order.
 */
async function sbomFeatures(client: pg.PoolClient, packages: readonly SbomPackage[]): Promise<LayerFeature[]> {
  const byNamespace = new Map<string, { format: string; packages: SbomPackage[] }>();
  for (const p of packages) {
    const namespace = MATCHING.advisoryNamespace(p.namespace, p.versionFormat);
    // The reader names a package's namespace and format from one catalog row: they always agree.
    if (namespace === undefined) throw new Error(`${p.purl}: ${p.namespace} has no ${p.versionFormat} advisories`);
    const group = byNamespace.get(namespace) ?? { format: p.versionFormat, packages: [] };
    group.packages.push(p);
    byNamespace.set(namespace, group);
  }
  const features: LayerFeature[] = [];
  for (const [namespace, group] of [...byNamespace].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    features.push(...(await namespaceFeatures(client, namespace, group.format, group.packages, MATCHING)));
  }
  return features;
}

export interface StoredSbom {
  where: RepositoryName;
  /** Whether this repository had no record of the document before. */
  created: boolean;
}

/**
 * Stores the SBOM as an image of the repository `name` (its contents, its record, and the tag
 * SBOM_TAG moved to it), in one transaction under the repository's lock, as a registry image is
 * recorded. Posting the same document again stores nothing new and finds it recorded.
 */
export async function storeSbom(pool: Pool, sbom: Sbom, name: string): Promise<StoredSbom> {
  const where = { registry: SBOM_REGISTRY, repository: name };
  return withTransaction(pool, async (client) => {
    await lockImageRepository(client, where);
    const recorded = await imagesWithDigest(client, sbom.digest);
    const created = !recorded.some((r) => r.registry === where.registry && r.repository === where.repository);
    await writeSbomAncestry(client, sbom);
    const record = { digest: sbom.digest, platform: UNKNOWN_PLATFORM, mediaType: SBOM_MEDIA_TYPES[sbom.format], indexDigest: null };
    await recordImages(client, where, [record]);
    await pointTag(client, where, SBOM_TAG, sbom.digest);
    return { where, created };
  });
}
