import { badRequest, notFound, TarsierError } from '../../errors.js';
import { layerFormatNamed, type LayerFormat } from '../../indexer/archive.js';
import type { LayerScans, ScannedLayer } from '../../indexer/layer-scans.js';
import { lockAncestryName, readAncestry, replaceAncestry, type AncestryFeatureRow } from '../../store/ancestries.js';
import { featuresFor, type AffectingVulnerability, type LayerFeature } from '../../store/layers.js';
import { withTransaction, type Pool } from '../../store/pool.js';
import { messageListField, messageOf, metadataText, stringField, stringMapField, withoutDefaults } from './proto-json.js';
import { whileClientWaits } from '../edge.js';
import { MAX_NAME_LENGTH } from '../limits.js';
import {
  AncestryParams,
  AncestryQuery,
  GetAncestryResponse,
  PostAncestryRequest as PostAncestryBody,
  PostAncestryResponse,
} from './schemas.js';
import { DETECTOR_NAMES, LISTER_NAMES, serviceStatus } from './status.js';
import type { RouteApp } from '../route-app.js';

export interface AncestryRouteDeps {
  pool: Pool;
  scans: LayerScans;
}

/** Format names accepted on input (case-insensitive); OCI layers are Docker layers (as in v1). */
const FORMAT_HINT = 'use Docker (or OCI) or ACI';
/** Layers downloaded at once for one ancestry. */
const SCAN_CONCURRENCY = 4;
/** Scan keys of v1 layers start with this; an ancestry layer hash must not (it would name a v1 layer's scan). */
const V1_SCAN_PREFIX = 'v1/';

export interface PostLayer {
  hash: string;
  path: string;
  headers: Record<string, string>;
}

export interface PostAncestryRequest {
  name: string;
  format: LayerFormat;
  /** Parent first. */
  layers: PostLayer[];
}

const blank = (value: string): boolean => value.trim() === '';

/** PostAncestryRequest from a JSON body (proto3 JSON: snake_case or lowerCamelCase names, unknown fields ignored). */
export function parsePostAncestry(body: unknown): PostAncestryRequest {
  if (body === undefined) throw badRequest('request body is empty: send a JSON object with ancestry_name, format and layers');
  const message = messageOf(body, 'request body');
  const name = stringField(message, 'ancestry_name');
  if (blank(name)) throw badRequest('ancestry_name is required');
  if (name.length > MAX_NAME_LENGTH) throw badRequest(`ancestry_name is longer than the ${MAX_NAME_LENGTH}-character limit`);
  const formatName = stringField(message, 'format');
  if (blank(formatName)) throw badRequest(`format is required: ${FORMAT_HINT}`);
  const format = layerFormatNamed(formatName);
  if (!format) throw badRequest(`format ${JSON.stringify(formatName)} is not supported: ${FORMAT_HINT}`);
  const layerMessages = messageListField(message, 'layers');
  if (layerMessages.length === 0) throw badRequest("layers is required: list the ancestry's layers, parent first");
  const layers = layerMessages.map((layer, i) => {
    const at = `layers[${i}]`;
    const hash = stringField(layer, 'hash', at);
    if (blank(hash)) throw badRequest(`${at}.hash is required`);
    if (hash.length > MAX_NAME_LENGTH) throw badRequest(`${at}.hash is longer than the ${MAX_NAME_LENGTH}-character limit`);
    if (hash.startsWith(V1_SCAN_PREFIX)) throw badRequest(`${at}.hash must not start with "${V1_SCAN_PREFIX}"`);
    const path = stringField(layer, 'path', at);
    if (blank(path)) throw badRequest(`${at}.path is required`);
    return { hash, path, headers: stringMapField(layer, 'headers', at) };
  });
  return { name, format, layers };
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
async function scanLayers(scans: LayerScans, request: PostAncestryRequest, signal: AbortSignal): Promise<Map<string, ScannedLayer>> {
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
async function storeAncestry(pool: Pool, request: PostAncestryRequest, scanned: Map<string, ScannedLayer>): Promise<void> {
  await withTransaction(pool, async (client) => {
    await lockAncestryName(client, request.name);
    let resolved: LayerFeature[] = [];
    let introducedAt = new Map<number, number>();
    let namespace: string | null = null;
    for (const [position, layer] of request.layers.entries()) {
      const { scan } = scanned.get(layer.hash)!;
      namespace = scan.namespace ?? namespace;
      let features: LayerFeature[];
      try {
        features = await featuresFor(client, scan, namespace, resolved);
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
  });
  // No markDataChanged: an ancestry changes no v1 layer report (the only cached reads).
}

function vulnerabilityMessage(v: AffectingVulnerability): Record<string, unknown> {
  return {
    name: v.name,
    namespace_name: v.namespace,
    description: v.description,
    link: v.link,
    severity: v.severity,
    metadata: metadataText(v.metadata),
    fixed_by: v.fixedBy ?? undefined,
  };
}

export function registerAncestryRoutes(app: RouteApp, deps: AncestryRouteDeps): void {
  const { pool, scans } = deps;

  const tags = ['ancestry'];

  app.post(
    '/ancestry',
    {
      schema: {
        operationId: 'postAncestry',
        summary: 'Scan an image: its layers, parent first (AncestryService.PostAncestry)',
        description: 'Answers when every layer is scanned and the ancestry stored. A layer hash already scanned is not downloaded again.',
        tags,
        body: PostAncestryBody,
        response: { 200: PostAncestryResponse },
      },
    },
    async (request, reply) => {
      const input = parsePostAncestry(request.body);
      const scanned = await scanLayers(scans, input, whileClientWaits(reply));
      await storeAncestry(pool, input, scanned);
      return { status: await serviceStatus(pool) };
    },
  );

  app.get(
    '/ancestry/:ancestry_name',
    {
      schema: {
        operationId: 'getAncestry',
        summary: "An ancestry's layers, the features each introduced and their vulnerabilities (AncestryService.GetAncestry)",
        tags,
        params: AncestryParams,
        querystring: AncestryQuery,
        response: { 200: GetAncestryResponse },
      },
    },
    async (request) => {
      const name = request.params.ancestry_name;
      if (name === '') throw badRequest('ancestry name should not be empty');
      const ancestry = await readAncestry(pool, name);
      if (!ancestry) throw notFound(`requested ancestry '${name}' is not found`);
      const vulnerabilities = new Map<number, AffectingVulnerability[]>();
      for (const v of ancestry.vulnerabilities) {
        const list = vulnerabilities.get(v.featureVersionId) ?? [];
        list.push(v);
        vulnerabilities.set(v.featureVersionId, list);
      }
      const introduced = new Map<number, Array<Record<string, unknown>>>();
      for (const f of ancestry.features) {
        const list = introduced.get(f.position) ?? [];
        list.push({
          name: f.name,
          namespace_name: f.namespace,
          version: f.version,
          version_format: f.versionFormat,
          vulnerabilities: (vulnerabilities.get(f.featureVersionId) ?? []).map(vulnerabilityMessage),
        });
        introduced.set(f.position, list);
      }
      const layers = ancestry.layers.map((hash, position) => ({ layer: { hash }, detected_features: introduced.get(position) ?? [] }));
      return withoutDefaults({
        ancestry: {
          name: ancestry.name,
          scanned_listers: [...LISTER_NAMES],
          scanned_detectors: [...DETECTOR_NAMES],
          layers,
        },
        status: await serviceStatus(pool),
      });
    },
  );
}
