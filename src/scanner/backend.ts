import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream';
import type { ImageContents, ImagePackage } from '../images/report.js';
import type { NamespaceCoverage } from '../model/coverage.js';
import { formatPlatform } from '../registry/manifest.js';
import type { Sbom, SkippedComponent } from '../sbom/read.js';
import { FALLBACK_PLATFORM, machinePlatform, type LocalImage, type LocalLayer } from './local-image.js';

/**
 * Where `tarsier scan` gets an image scanned: a Tarsier server over HTTP (server.ts) or this
 * process with a store of its own (standalone.ts). Both answer with the same contents, read by the
 * same code as the images API.
 */

/** A package found, with the vulnerabilities affecting it; an SBOM's has no layer. */
export type ScannedPackage = Omit<ImagePackage, 'addedBy'> & { addedBy?: string };

/** What a scan found: the image's layers and each package with the vulnerabilities affecting it. */
export interface ScannedContents {
  digest: string;
  platform: string | null;
  references: string[];
  /** Layer digests, base first. */
  layers: string[];
  packages: ScannedPackage[];
  /** What vulnerability data the store holds for each namespace of the packages; undefined: the server does not say. */
  coverage: NamespaceCoverage[] | undefined;
  /** An SBOM's: what the document lists that is not matched. */
  skipped?: readonly SkippedComponent[];
  /** An image's: files of its layers that could not be read; undefined when the server does not say. */
  unread?: ImageContents['unread'];
}

/** An SBOM file: the document's bytes as read (their digest names it) and what they hold. */
export interface LocalSbom {
  bytes: Buffer;
  sbom: Sbom;
}

export interface RegistryScanRequest {
  reference: string;
  platform: string | undefined;
  insecure: boolean;
  /** The registry's Authorization value for this pull (from docker's config or the command line); never stored. */
  authorization: string | undefined;
}

export type ProgressEvent =
  /** A layer the store has already scanned: nothing is sent. */
  | { kind: 'layer-known'; index: number; total: number; digest: string }
  /** Bytes of a layer read so far (sent to the server, or read by this process's indexer). */
  | { kind: 'layer-bytes'; index: number; total: number; digest: string; done: number; size: number }
  | { kind: 'layer-scanned'; index: number; total: number; digest: string }
  | { kind: 'step'; message: string };

export type Progress = (event: ProgressEvent) => void;

export interface ScanBackend {
  readonly mode: 'server' | 'standalone';
  /** The server's URL (server mode). */
  readonly server?: string;
  /** Gets the layers scanned that the store has not scanned yet, assembles the image and reads its contents. */
  scanLocal(image: LocalImage, progress: Progress, signal: AbortSignal): Promise<ScannedContents>;
  /** Has the image pulled from its registry and scanned. */
  scanRegistry(request: RegistryScanRequest, progress: Progress, signal: AbortSignal): Promise<ScannedContents>;
  /** Has the SBOM's packages matched: stored as the image its digest names, read back as an image is. */
  scanSbom(sbom: LocalSbom, progress: Progress, signal: AbortSignal): Promise<ScannedContents>;
  close(): Promise<void>;
}

/**
 * An SBOM's contents as the report shows them: the packages the document lists, without the one
 * layer the store holds them in (it is the document itself), named as the document names itself.
 */
export function sbomContents(
  stored: Pick<ScannedContents, 'digest' | 'packages' | 'coverage'>,
  sbom: Sbom,
  skipped: readonly SkippedComponent[],
): ScannedContents {
  return {
    digest: stored.digest,
    platform: null,
    references: sbom.name === undefined ? [] : [sbom.name],
    layers: [],
    packages: stored.packages.map(({ addedBy: _layer, ...p }) => p),
    coverage: stored.coverage,
    skipped,
  };
}

/** A scan that cannot be done, with a message for the user (exit code 2). */
export class ScanError extends Error {}

/** How often, at most, byte progress is reported per layer. */
const BYTES_EVERY = 4 * 1024 * 1024;

/** The layer's bytes, reporting how many have been read (every few MiB and at the end). */
function countedLayer(stream: Readable, report: (done: number) => void): Readable {
  let done = 0;
  let reported = 0;
  const counter = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      done += chunk.length;
      if (done - reported >= BYTES_EVERY) {
        reported = done;
        report(done);
      }
      callback(null, chunk);
    },
    flush(callback) {
      report(done);
      callback();
    },
  });
  // An error reading the file ends the counted stream with it.
  return pipeline(stream, counter, () => undefined);
}

/**
 * A registry scan for the platform asked for; when none was, for this machine's, else linux/amd64
 * (an index without this machine's), and a single-platform image whatever its platform: what
 * `docker pull` would run here. The registry's answers say which case it is ("is a single …
 * image, not …", "has no linux/arm64 image: …"), in this process or from a server. A single image
 * is scanned again with no platform asked, which takes the lone image as it is (also one whose
 * config names no platform).
 */
export async function withDefaultPlatform<T>(asked: string | undefined, scan: (platform: string | undefined) => Promise<T>): Promise<T> {
  if (asked !== undefined) return scan(asked);
  const machine = formatPlatform(machinePlatform());
  try {
    return await scan(machine);
  } catch (err) {
    const message = (err as Error).message;
    if (/ is a single \S+ image, not /.test(message)) return scan(undefined);
    const fallback = formatPlatform(FALLBACK_PLATFORM);
    if (machine !== fallback && / has no \S+ image: /.test(message)) return scan(fallback);
    throw err;
  }
}

/** Where a local image's layers go: a server (HEAD, PUT) or this process's own store. */
export interface LayerStore {
  isScanned(digest: string): Promise<boolean>;
  /** Scans the layer from body (its bytes, counted for progress). */
  send(layer: LocalLayer, body: Readable): Promise<void>;
}

/**
 * Gets every distinct layer of the image scanned, `concurrency` at a time: one the store has
 * already scanned is only reported, the others are sent.
 */
export async function sendNewLayers(image: LocalImage, concurrency: number, progress: Progress, store: LayerStore): Promise<void> {
  const total = image.layers.length;
  const distinct = [...new Map(image.layers.map((layer, index) => [layer.digest, { layer, index }])).values()];
  let next = 0;
  const work = async (): Promise<void> => {
    while (next < distinct.length) {
      const { layer, index } = distinct[next++]!;
      const { digest, size } = layer;
      if (await store.isScanned(digest)) {
        progress({ kind: 'layer-known', index, total, digest });
        continue;
      }
      await store.send(
        layer,
        countedLayer(layer.stream(), (done) => progress({ kind: 'layer-bytes', index, total, digest, done, size })),
      );
      progress({ kind: 'layer-scanned', index, total, digest });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, distinct.length) }, work));
}
