import type { AncestryRequest } from '../indexer/ancestry-assembly.js';
import { writeAncestry } from '../indexer/ancestry-assembly.js';
import type { ScannedLayer } from '../indexer/layer-scans.js';
import type { RegistryRepository } from '../registry/client.js';
import { forgetManifest, lockImageRepository, pointTag, recordImages, type ImageRecord, type RepositoryName } from '../store/images.js';
import { withTransaction, type Pool } from '../store/pool.js';

/**
 * What Tarsier records of a registry (images by repository and digest, and what each tag names)
 * follows the registry, not the order in which scans finish or events arrive. Every writer does the
 * same: it takes the repository's lock, asks the registry what the tag and the manifest are now,
 * and writes that. Whoever writes last asked last, so a slow scan of an older push, or a queue retry
 * of an old event, cannot give a tag back to the image it moved away from, and an image deleted
 * while it was being scanned is not recorded. Deletes the registry announces are written under the
 * same lock.
 *
 * Event timestamps are not used to order anything: Distribution's come from the registry's clock
 * and its ids are random, Harbor's occur_at is in whole seconds, and an event lost or delivered
 * again would leave a tag wrong for good; the registry's answer at the time of writing is right
 * whatever happened before.
 */

/** A lookup made under the repository's lock: the other writers of the repository wait for it. */
const LOOKUP_TIMEOUT_MS = 30_000;

/** One image of a scan: its record and its contents, to be written with it. */
export interface ScannedContents {
  record: Omit<ImageRecord, 'registry' | 'repository'>;
  ancestry: AncestryRequest;
  layers: Map<string, ScannedLayer>;
}

/** What a scan saw of a repository: the tag it was asked for, the manifest or index it pulled, and what that holds. */
export interface Observation {
  where: RepositoryName;
  tag: string | undefined;
  /** The manifest or index digest pulled; absent when the tag named nothing. */
  digest: string | undefined;
  /** The images found under the digest (none when the registry had no such manifest). */
  images: readonly ScannedContents[];
}

export interface Reconciled {
  /** The registry still has the digest; its images were recorded (with their contents). */
  present: boolean;
  /** What the tag names now (null: the tag is gone); undefined when no tag was asked for. */
  named: string | null | undefined;
}

/**
 * Records a scan as the registry has it now, in one transaction under the repository's lock: the
 * tag is looked up again (HEAD) and recorded as naming what the registry says; the digest pulled is
 * recorded with its images when the registry still has it, and forgotten (with its tags and the
 * images reached through it) when the registry says it has no such manifest.
 */
export async function reconcile(
  pool: Pool,
  registry: RegistryRepository,
  observation: Observation,
  signal: AbortSignal,
): Promise<Reconciled> {
  const { where, tag, digest } = observation;
  const lookup = (reference: string) => registry.resolve(reference, signal, { timeoutMs: LOOKUP_TIMEOUT_MS });
  return withTransaction(pool, async (client) => {
    await lockImageRepository(client, where);
    const named = tag === undefined ? undefined : ((await lookup(tag)) ?? null);
    const present = digest !== undefined && (named === digest || (await lookup(digest)) !== undefined);
    if (present) {
      // Contents first, each under its ancestry name's lock until the images are recorded; in digest
      // order, so two scans sharing images never wait for each other in a circle.
      const images = [...observation.images].sort((a, b) => a.record.digest.localeCompare(b.record.digest));
      for (const image of images) await writeAncestry(client, image.ancestry, image.layers);
      await recordImages(
        client,
        where,
        observation.images.map((i) => i.record),
      );
    } else if (digest !== undefined) {
      await forgetManifest(client, where, digest);
    }
    if (tag !== undefined) await pointTag(client, where, tag, named!);
    return { present, named };
  });
}

/**
 * One record of a repository at a time in this process: while one holds the repository's lock, the
 * others wait here, holding no database connection (a burst of scans of one repository, such as
 * Harbor scanning each platform of an index, would otherwise hold the pool while waiting their
 * turn). A promise chain per repository: a dependency is not worth these few lines.
 */
export class RepositoryTurns {
  readonly #last = new Map<string, Promise<void>>();

  async take<T>(where: RepositoryName, work: () => Promise<T>): Promise<T> {
    const key = `${where.registry}/${where.repository}`;
    const previous = this.#last.get(key) ?? Promise.resolve();
    const mine = previous.then(work);
    const settled = mine.then(
      () => undefined,
      () => undefined,
    );
    this.#last.set(key, settled);
    try {
      return await mine;
    } finally {
      if (this.#last.get(key) === settled) this.#last.delete(key);
    }
  }
}

/** A delete a registry announced: a manifest (by digest) or a tag of a repository. */
export interface Deletion {
  where: RepositoryName;
  digest?: string | undefined;
  tag?: string | undefined;
}

/**
 * Records a delete the registry announced, under the repository's lock: a deleted manifest goes with
 * its tags and the images reached through it that no tag names any more; a deleted tag leaves its
 * images, which stay untagged (clair.images.untaggedretention). Returns the image records deleted.
 */
export async function recordDeletion(pool: Pool, deletion: Deletion): Promise<number> {
  return withTransaction(pool, async (client) => {
    await lockImageRepository(client, deletion.where);
    const deleted = deletion.digest === undefined ? 0 : await forgetManifest(client, deletion.where, deletion.digest);
    if (deletion.tag !== undefined) await pointTag(client, deletion.where, deletion.tag, null);
    return deleted;
  });
}
