import type pg from 'pg';
import type { LayerFormat } from './archive.js';
import { MATCHING } from '../ecosystems/matching.js';
import { badRequest, TarsierError } from '../errors.js';
import { lockAncestryName, replaceAncestry, type AncestryFeatureRow } from '../store/ancestries.js';
import { applicationsAfter, type InstalledApplications } from '../model/layer.js';
import { featuresFor, type LayerFeature } from '../store/layers.js';
import { withTransaction, type Pool } from '../store/pool.js';
import type { DigestOf } from './digest.js';
import type { LayerScans, ScannedLayer } from './layer-scans.js';

/**
 * An ancestry (the ancestry API's, or an image's, named by its manifest digest) from its layers:
 * each layer scanned once by hash, then the features resolved layer by layer and stored.
 */

/** Layers downloaded at once for one ancestry. */
const SCAN_CONCURRENCY = 4;

export interface AncestryLayer {
  hash: string;
  path: string;
  headers: Record<string, string>;
  /** sha256 of the layer, verified when given: of the compressed bytes (registry blobs), or see digestOf. */
  digest?: string;
  digestOf?: DigestOf;
}

export interface AncestryRequest {
  name: string;
  format: LayerFormat;
  /** Parent first. */
  layers: AncestryLayer[];
}

/**
 * Checks, before anything is downloaded or written, that every layer given without a path was
 * scanned before (uploaded, or part of an earlier ancestry): a 400 naming the first that was not.
 */
export async function checkLayerSources(scans: LayerScans, request: AncestryRequest): Promise<void> {
  for (const [index, layer] of request.layers.entries()) {
    if (layer.path !== '' || (await scans.isScanned(layer.hash))) continue;
    throw badRequest(
      `layers[${index}].path is required: the layer ${layer.hash} has not been scanned before ` +
        '(nor uploaded with PUT /tarsier/v1/layers/{digest})',
    );
  }
}

/** The same error, its message naming the layer it is about. */
function aboutLayer(err: unknown, index: number, hash: string): unknown {
  if (!(err instanceof TarsierError)) return err;
  return new TarsierError(err.code, `layers[${index}] (${hash}): ${err.message}`, { cause: err });
}

/**
 * Scans the distinct layer hashes, a few at a time. After a failure no new download starts; the
 * error reported is that of the first failing layer in ancestry order.
 */
export async function scanAncestryLayers(
  scans: LayerScans,
  request: AncestryRequest,
  signal: AbortSignal,
): Promise<Map<string, ScannedLayer>> {
  const firstIndex = new Map<string, number>();
  request.layers.forEach((l, i) => firstIndex.has(l.hash) || firstIndex.set(l.hash, i));
  const queue = [...firstIndex.values()];
  const scanned = new Map<string, ScannedLayer>();
  const failures: Array<{ index: number; err: unknown }> = [];
  const worker = async (): Promise<void> => {
    for (let index = queue.shift(); index !== undefined && failures.length === 0; index = queue.shift()) {
      const layer = request.layers[index]!;
      try {
        scanned.set(layer.hash, await scans.scan({ ...layer, format: request.format }, signal));
      } catch (err) {
        failures.push({ index, err: aboutLayer(err, index, layer.hash) });
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(SCAN_CONCURRENCY, queue.length) }, worker));
  if (failures.length > 0) throw failures.reduce((a, b) => (b.index < a.index ? b : a)).err;
  return scanned;
}

/**
 * Assembles and stores the ancestry: the layers in order, each resolving its features from its own
 * scan and the features so far (its namespace is its detected one, else the one before); a feature
 * belongs to the position of the layer that introduced it. Replaces an ancestry of the same name.
 */
export async function storeAncestry(pool: Pool, request: AncestryRequest, scanned: Map<string, ScannedLayer>): Promise<void> {
  await withTransaction(pool, (client) => writeAncestry(client, request, scanned));
}

/**
 * storeAncestry in the caller's transaction, which holds the ancestry's name locked from here to
 * its end (an image records its repository in the same transaction, so its contents are never
 * deleted as unused before it is recorded).
 */
export async function writeAncestry(client: pg.PoolClient, request: AncestryRequest, scanned: Map<string, ScannedLayer>): Promise<void> {
  await lockAncestryName(client, request.name);
  let resolved: LayerFeature[] = [];
  let introducedAt = new Map<number, number>();
  let namespace: string | null = null;
  let applications: InstalledApplications = new Map();
  for (const [position, layer] of request.layers.entries()) {
    const { scan } = scanned.get(layer.hash)!;
    namespace = scan.namespace ?? namespace;
    applications = applicationsAfter(applications, scan.applications);
    let features: LayerFeature[];
    try {
      features = await featuresFor(client, scan, namespace, resolved, MATCHING, applications);
    } catch (err) {
      throw aboutLayer(err, position, layer.hash);
    }
    const next = new Map<number, number>();
    for (const f of features)
      if (!next.has(f.featureVersionId)) next.set(f.featureVersionId, introducedAt.get(f.featureVersionId) ?? position);
    resolved = features;
    introducedAt = next;
  }
  const rows: AncestryFeatureRow[] = [...introducedAt].map(([featureVersionId, position]) => ({ featureVersionId, position }));
  await replaceAncestry(client, {
    name: request.name,
    scanIds: request.layers.map((l) => scanned.get(l.hash)!.scanId),
    features: rows,
  });
}
