import { coverageOf } from '../coverage.js';
import { imageData, imagesData, type ImageData } from '../model/coverage.js';
import {
  deleteImagesWithDigest,
  imagesAffectedByVersion,
  imagesExposedTo,
  imagesWithDigest,
  listImages,
  vulnerabilityNameExists,
  type AffectedImage,
  type ExposedImage,
  type ImageFilter,
  type ImageReferenceRow,
  type ImageRow,
  type RepositoryName,
} from '../store/images.js';
import { notifiedVulnerability, type NotificationRow } from '../store/notifications.js';
import { withTransaction, type Pool } from '../store/pool.js';
import type { StoredVulnerability } from '../store/vulnerabilities.js';
import { imageContents, type ImageContents } from './report.js';

/**
 * What Tarsier has recorded of images, as the images API reads it: each image with the state of
 * the vulnerability data its counts rest on (counts over a namespace with no data say nothing, and
 * data older than updater.maxdataage is stale), the images a vulnerability or a notification
 * affects, and deletes.
 */

/** An image record with the state of its data. */
export interface ImageWithData {
  image: ImageRow;
  data: ImageData;
}

/** One image by digest: its contents, where registries hold it, and the state of its data. */
export interface ImageDetail {
  contents: ImageContents;
  references: ImageReferenceRow[];
  data: ImageData;
}

/** A notification's side: the vulnerability version, and a page of the images it affects. */
export interface NotifiedSide {
  vulnerability: StoredVulnerability;
  images: AffectedImage[];
}

/** Where each side's page of images starts: after this image id; undefined reads none (that side's pages are done). */
export interface SidesAfter {
  old: number | undefined;
  new: number | undefined;
}

export class ImageInventory {
  readonly #pool: Pool;
  readonly #maxDataAgeMs: number;

  /** maxDataAgeMs: data older than this is stale (updater.maxdataage); 0: never. */
  constructor(deps: { pool: Pool; maxDataAgeMs: number }) {
    this.#pool = deps.pool;
    this.#maxDataAgeMs = deps.maxDataAgeMs;
  }

  /** Up to limit images after the id afterId, in the order they were first recorded. */
  async list(filter: ImageFilter, afterId: number, limit: number): Promise<ImageWithData[]> {
    return this.#withData(await listImages(this.#pool, filter, afterId, limit));
  }

  /** The records of the images a scan of this repository just recorded, by their digests. */
  async scanned(where: RepositoryName, digests: readonly string[]): Promise<ImageWithData[]> {
    const images: ImageRow[] = [];
    for (const digest of digests) images.push(...(await listImages(this.#pool, { ...where, digest }, 0, 1)));
    return this.#withData(images);
  }

  /** The image with this manifest digest; undefined when it was never scanned. */
  async image(digest: string): Promise<ImageDetail | undefined> {
    const [contents, references] = await Promise.all([imageContents(this.#pool, digest), imagesWithDigest(this.#pool, digest)]);
    if (!contents) return undefined;
    return { contents, references, data: imageData(contents.coverage, new Date(), this.#maxDataAgeMs) };
  }

  /** Deletes every record of the digest (in every repository) and its contents; returns the records deleted. */
  async delete(digest: string): Promise<number> {
    return withTransaction(this.#pool, (client) => deleteImagesWithDigest(client, digest));
  }

  /**
   * Up to limit images after the id afterId that hold a package the live vulnerabilities of this
   * name (any namespace) affect; undefined when no live vulnerability has the name.
   */
  async exposedTo(name: string, afterId: number, limit: number): Promise<ExposedImage[] | undefined> {
    const images = await imagesExposedTo(this.#pool, name, afterId, limit);
    // An empty first page tells nothing by itself: the vulnerability may affect no image.
    if (images.length === 0 && afterId === 0 && !(await vulnerabilityNameExists(this.#pool, name))) return undefined;
    return images;
  }

  /**
   * A notification's vulnerability before and after its change, each with up to limit of the
   * images it affects. A side is absent when the change has none (an added or a deleted
   * vulnerability) or its version is purged.
   */
  async notifiedSides(
    notification: NotificationRow,
    after: SidesAfter,
    limit: number,
  ): Promise<{ old: NotifiedSide | undefined; new: NotifiedSide | undefined }> {
    const side = async (which: 'old' | 'new', afterId: number | undefined): Promise<NotifiedSide | undefined> => {
      const vulnerabilityId = which === 'old' ? notification.oldVulnerabilityId : notification.newVulnerabilityId;
      if (vulnerabilityId === null) return undefined;
      const vulnerability = await notifiedVulnerability(this.#pool, notification, which);
      if (!vulnerability) return undefined;
      const images = afterId === undefined ? [] : await imagesAffectedByVersion(this.#pool, vulnerabilityId, afterId, limit);
      return { vulnerability, images };
    };
    const [old, fresh] = await Promise.all([side('old', after.old), side('new', after.new)]);
    return { old, new: fresh };
  }

  /** Images with the coverage of their namespaces, read once for them all. */
  async #withData(images: readonly ImageRow[]): Promise<ImageWithData[]> {
    const coverage = await coverageOf(
      this.#pool,
      images.flatMap((i) => i.namespaces),
    );
    const data = imagesData(images, coverage, new Date(), this.#maxDataAgeMs);
    return images.map((image, i) => ({ image, data: data[i]! }));
  }
}
