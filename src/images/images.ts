import type { Logger } from 'pino';
import { badRequest, TarsierError } from '../errors.js';
import { scanAncestryLayers, type AncestryRequest } from '../indexer/ancestry-assembly.js';
import type { LayerScans } from '../indexer/layer-scans.js';
import type { Metrics } from '../metrics.js';
import {
  ManifestUnknown,
  RegistryError,
  type FetchedManifest,
  type RegistryAccess,
  type RegistryClient,
  type RegistryRepository,
} from '../registry/client.js';
import {
  formatPlatform,
  imageEntries,
  parsePlatform,
  samePlatform,
  selectPlatform,
  type ImageIndex,
  type ImageManifest,
  type Platform,
} from '../registry/manifest.js';
import { formatImageReference, InvalidReference, parseImageReference, type ImageReference } from '../registry/reference.js';
import type { ImageRecord } from '../store/images.js';
import type { Pool } from '../store/pool.js';
import { reconcile, RepositoryTurns, type Observation, type Reconciled, type ScannedContents } from './records.js';

/** What to scan: an image reference, as `POST /tarsier/v1/images` and the queue give it. */
export interface ImageScanRequest {
  /** `host[:port]/repo:tag`, `…@sha256:…`, or a Docker Hub short name. */
  reference: string;
  /** `os/arch[/variant]`: only this platform of an index; absent: every platform. */
  platform?: string | undefined;
  /** Plain HTTP to the registry for this pull. */
  insecure?: boolean | undefined;
  /** A registry Authorization header value for this pull only (never stored, never queued). */
  authorization?: string | undefined;
}

export interface ScannedImage extends ImageRecord {
  /** The tag scanned, when the registry says it names this image (or its index) now. */
  tag: string | undefined;
  /** Layer blob digests, bottom first. */
  layers: string[];
}

/** A request checked before anything is fetched: the parsed reference and platform. */
export interface CheckedImageRequest {
  reference: ImageReference;
  platform: Platform | undefined;
  access: RegistryAccess;
}

/** Checks a request's reference and platform; a 400 that names what is wrong. */
export function checkImageRequest(request: ImageScanRequest): CheckedImageRequest {
  let reference: ImageReference;
  try {
    reference = parseImageReference(request.reference);
  } catch (err) {
    if (err instanceof InvalidReference) throw badRequest(err.message, err);
    throw err;
  }
  let platform: Platform | undefined;
  if (request.platform !== undefined) {
    try {
      platform = parsePlatform(request.platform);
    } catch (err) {
      throw badRequest(`platform: ${(err as Error).message}`, err);
    }
  }
  return { reference, platform, access: { authorization: request.authorization, insecure: request.insecure } };
}

/** The platform of an image whose config names none (and of an SBOM's, which names none either). */
export const UNKNOWN_PLATFORM = 'unknown';

interface PlatformImage {
  digest: string;
  manifest: ImageManifest;
  platform: string;
  indexDigest: string | null;
}

/**
 * Scans images from registries: the manifest (an index gives one image per platform, or the one
 * asked for), each layer blob downloaded at most once by digest (digest verified; a layer already
 * scanned, by any image or ancestry, is not downloaded again), each image assembled as the
 * ancestry named by its manifest digest, then recorded with its repository and tag.
 */
export class ImageScanner {
  readonly #pool: Pool;
  readonly #registry: RegistryClient;
  readonly #scans: LayerScans;
  readonly #log: Logger;
  readonly #metrics: Metrics | undefined;
  readonly #turns = new RepositoryTurns();

  constructor(deps: { pool: Pool; registry: RegistryClient; scans: LayerScans; log: Logger; metrics?: Metrics }) {
    this.#pool = deps.pool;
    this.#registry = deps.registry;
    this.#scans = deps.scans;
    this.#log = deps.log.child({ component: 'images' });
    this.#metrics = deps.metrics;
  }

  /**
   * Checks a request before anything is stored, queued or fetched: its reference and platform
   * (checkImageRequest), and that it does not ask for plain HTTP to a registry whose credentials
   * would then travel in clear. A 400 that names what is wrong.
   */
  check(request: ImageScanRequest): CheckedImageRequest {
    const checked = checkImageRequest(request);
    const problem = this.#registry.cleartextProblem(checked.reference.registry, checked.access);
    if (problem) throw badRequest(problem);
    return checked;
  }

  /** Scans the image; tarsier_image_scans_total counts each scan by outcome, whoever asked (API, queue, Harbor). */
  async scan(request: ImageScanRequest, signal: AbortSignal = new AbortController().signal): Promise<ScannedImage[]> {
    const checked = checkImageRequest(request);
    try {
      const scanned = await this.#scan(checked, signal);
      this.#metrics?.imageScans.inc({ outcome: 'scanned' });
      return scanned;
    } catch (err) {
      if (!signal.aborted) this.#metrics?.imageScans.inc({ outcome: 'failed' });
      throw err;
    }
  }

  async #scan({ reference, platform, access }: CheckedImageRequest, signal: AbortSignal): Promise<ScannedImage[]> {
    const started = performance.now();
    const where = { registry: reference.registry, repository: reference.repository };
    const repository = this.#registry.repository(reference, access);
    let top: FetchedManifest;
    try {
      top = await repository.manifest(reference.digest ?? reference.tag!, signal);
    } catch (err) {
      // The registry has no such manifest (deleted, or the tag was): what Tarsier recorded of it goes.
      if (err instanceof ManifestUnknown) {
        await this.#record(repository, { where, tag: reference.tag, digest: reference.digest, images: [] }, signal);
      }
      throw err;
    }
    const images = await this.#imagesOf(repository, reference, top, platform, signal);
    const contents: ScannedContents[] = [];
    for (const image of images) {
      const layers = await Promise.all(image.manifest.layers.map(async (layer) => ({ layer, blob: await repository.blob(layer, signal) })));
      const ancestry: AncestryRequest = {
        name: image.digest,
        format: 'docker',
        layers: layers.map(({ layer, blob }) => ({ hash: layer.digest, path: blob.path, headers: blob.headers, digest: layer.digest })),
      };
      const record = {
        digest: image.digest,
        platform: image.platform,
        mediaType: image.manifest.mediaType,
        indexDigest: image.indexDigest,
      };
      contents.push({ record, ancestry, layers: await scanAncestryLayers(this.#scans, ancestry, signal) });
    }
    const recorded = await this.#record(repository, { where, tag: reference.tag, digest: top.digest, images: contents }, signal);
    if (!recorded.present) {
      throw new ManifestUnknown(`the registry deleted ${top.digest} from ${reference.registry}/${reference.repository} during the scan`);
    }
    const tag = recorded.named === top.digest ? reference.tag : undefined;
    const scanned = images.map((image, i) => ({
      ...where,
      ...contents[i]!.record,
      tag,
      layers: image.manifest.layers.map((l) => l.digest),
    }));
    const seconds = (performance.now() - started) / 1000;
    this.#log.info(
      {
        reference: formatImageReference(reference),
        images: scanned.map((i) => `${i.platform} ${i.digest}`),
        ...(reference.tag !== undefined ? { tagPointsAt: recorded.named } : {}),
        seconds,
      },
      'image scanned',
    );
    return scanned;
  }

  /** Records what the scan saw as the registry has it now (src/images/records.ts), one repository at a time here. */
  #record(repository: RegistryRepository, observation: Observation, signal: AbortSignal): Promise<Reconciled> {
    return this.#turns.take(observation.where, () => reconcile(this.#pool, repository, observation, signal));
  }

  /** The image manifests under the top one: itself, or one per platform of an index (or the one asked for). */
  async #imagesOf(
    repository: RegistryRepository,
    reference: ImageReference,
    top: FetchedManifest,
    wanted: Platform | undefined,
    signal: AbortSignal,
  ): Promise<PlatformImage[]> {
    if (top.manifest.kind === 'manifest') {
      const platform = await this.#platformOf(repository, top.manifest, signal);
      if (wanted && (platform === UNKNOWN_PLATFORM || !samePlatform(parsePlatform(platform), wanted))) {
        throw new RegistryError(`${formatImageReference(reference)} is a single ${platform} image, not ${formatPlatform(wanted)}`, false);
      }
      return [{ digest: top.digest, manifest: top.manifest, platform, indexDigest: null }];
    }
    const entries = wanted ? [selectPlatform(top.manifest, wanted)].filter((e) => e !== undefined) : imageEntries(top.manifest);
    if (entries.length === 0) {
      throw new RegistryError(
        `${formatImageReference(reference)} has no ${wanted ? formatPlatform(wanted) + ' ' : ''}image: ${available(top.manifest)}`,
        false,
      );
    }
    const images: PlatformImage[] = [];
    for (const entry of entries) {
      const fetched = await repository.manifest(entry.digest, signal);
      if (fetched.manifest.kind !== 'manifest') {
        throw new RegistryError(`${formatImageReference(reference)}: the index entry ${entry.digest} is an index itself`, false);
      }
      const platform = entry.platform ? formatPlatform(entry.platform) : await this.#platformOf(repository, fetched.manifest, signal);
      images.push({ digest: fetched.digest, manifest: fetched.manifest, platform, indexDigest: top.digest });
    }
    return images;
  }

  /** A lone manifest's platform, from its image config (os, architecture, variant). */
  async #platformOf(repository: RegistryRepository, manifest: ImageManifest, signal: AbortSignal): Promise<string> {
    const config = await repository.config(manifest.config, signal);
    const text = (key: string): string | undefined =>
      typeof config[key] === 'string' && config[key] !== '' ? (config[key] as string) : undefined;
    const os = text('os');
    const architecture = text('architecture');
    if (!os || !architecture) return UNKNOWN_PLATFORM;
    const variant = text('variant');
    return formatPlatform({ os, architecture, ...(variant ? { variant } : {}) });
  }
}

function available(index: ImageIndex): string {
  const platforms = imageEntries(index).map((e) => (e.platform ? formatPlatform(e.platform) : e.digest));
  return platforms.length > 0 ? `it has ${platforms.join(', ')}` : 'it lists no image';
}

/** Whether a failed scan may succeed if run again later (the registry or network failed), for the queue. */
export function isRetryable(err: unknown): boolean {
  if (err instanceof RegistryError) return err.retryable;
  if (err instanceof TarsierError) return err.code === 'unavailable' || err.code === 'internal';
  return true;
}
