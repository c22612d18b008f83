import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Logger } from 'pino';
import type { Config } from '../config.js';
import { openDatabase, type Database } from '../database.js';
import { holdsVulnerabilityData } from '../coverage.js';
import { imageContents } from '../images/report.js';
import { storeAncestry } from '../indexer/ancestry-assembly.js';
import { Indexer } from '../indexer/indexer.js';
import type { LayerScans, ScannedLayer } from '../indexer/layer-scans.js';
import { layerScans } from '../layer-scanning.js';
import { Rematcher } from '../rematch.js';
import { indexerSettings, runnerSettings } from '../settings.js';
import { getValue, setValue } from '../store/keyvalue.js';
import { withTransaction } from '../store/pool.js';
import {
  sbomContents,
  ScanError,
  sendNewLayers,
  withDefaultPlatform,
  type Progress,
  type RegistryScanRequest,
  type ScanBackend,
  type LocalSbom,
  type ScannedContents,
} from './backend.js';
import type { LocalImage } from './local-image.js';

/**
 * Scans in this process, with the server's own code (indexer, layer scans, image scanner, matcher)
 * and a store of its own: the embedded PostgreSQL under the cache directory (or the configured
 * database), its vulnerability data loaded from a bundle (`tarsier export`) or by the updaters.
 */

/** What chooses the store's directory, named when it cannot be used. */
const CACHE_DIR_SETTING = '--cache-dir (or TARSIER_CACHE_DIR)';
/** Layers read at once. */
const SCAN_CONCURRENCY = 2;
/** keyvalue: the sha256 of the last bundle imported, so the same bundle is not imported again. */
const BUNDLE_KEY = 'scanner/bundle-sha256';

export interface DataOptions {
  /** A bundle written by `tarsier export`, imported unless it is the one imported last. */
  bundle: string | undefined;
  /** Run the enabled updaters first. */
  update: boolean;
  /** Scan even when the store holds no vulnerability data at all (the caller warns). */
  allowMissingData: boolean;
}

export class StandaloneBackend implements ScanBackend {
  readonly mode = 'standalone' as const;
  readonly #database: Database;
  readonly #config: Config;
  readonly #log: Logger;
  readonly #indexer: Indexer;
  readonly #scans: LayerScans;

  private constructor(database: Database, config: Config, log: Logger) {
    this.#database = database;
    this.#config = config;
    this.#log = log;
    this.#indexer = new Indexer({ pool: database.pool, settings: indexerSettings(config), log });
    this.#scans = layerScans({ pool: database.pool, indexer: this.#indexer, config, log });
  }

  /** Opens (creating when new) the store, and loads vulnerability data as asked; a store without any is refused unless allowed. */
  static async open(config: Config, log: Logger, data: DataOptions, progress: Progress): Promise<StandaloneBackend> {
    progress({ kind: 'step', message: 'opening the local vulnerability store' });
    const database = await openDatabase(config, log, { dataDirSetting: CACHE_DIR_SETTING, imageQueue: false });
    try {
      if (data.bundle !== undefined) await importBundleOnce(database, config, log, data.bundle, progress);
      if (data.update) await update(database, config, log, progress);
      // A store kept in the cache by an earlier release may hold matches made with an older version order.
      await new Rematcher({ pool: database.pool, log }).run();
      if (!data.allowMissingData && !(await holdsVulnerabilityData(database.pool))) {
        throw new ScanError(
          'the local vulnerability store holds no vulnerability data (EPSS, KEV and NVD scores are not): load a bundle written by ' +
            'tarsier export (--db FILE), or download the feeds (--update), or scan against a server (--server URL)',
        );
      }
      return new StandaloneBackend(database, config, log);
    } catch (err) {
      await database.close();
      throw err;
    }
  }

  async scanLocal(image: LocalImage, progress: Progress, signal: AbortSignal): Promise<ScannedContents> {
    const scanned = new Map<string, ScannedLayer>();
    const request = (digest: string, body: Readable) => ({
      hash: digest,
      path: `layer ${digest}`,
      headers: {},
      format: 'docker' as const,
      digest,
      body,
    });
    await sendNewLayers(image, SCAN_CONCURRENCY, progress, {
      // A layer scanned before is read back once, here: the ancestry is assembled from it.
      isScanned: async (digest) => {
        const stored = await this.#scans.stored(digest);
        if (stored) scanned.set(digest, stored);
        return stored !== undefined;
      },
      send: async (layer, body) => {
        scanned.set(layer.digest, await this.#scans.scan(request(layer.digest, body), signal));
      },
    });
    progress({ kind: 'step', message: 'matching vulnerabilities' });
    const layers = image.layers.map((l) => ({ hash: l.digest, path: '', headers: {} }));
    await storeAncestry(this.#database.pool, { name: image.digest, format: 'docker', layers }, scanned);
    return { ...(await this.#contents(image.digest)), platform: image.platform, references: image.references };
  }

  async scanRegistry(scan: RegistryScanRequest, progress: Progress, signal: AbortSignal): Promise<ScannedContents> {
    progress({ kind: 'step', message: `pulling ${scan.reference}` });
    // The registry client and image scanner (and their HTTP client) are loaded by a registry scan only.
    const { imageScanning } = await import('../services.js');
    const { scanner } = imageScanning({
      pool: this.#database.pool,
      indexer: this.#indexer,
      config: this.#config,
      log: this.#log,
      requestsConfigure: true,
    });
    const images = await withDefaultPlatform(scan.platform, (platform) => scanner.scan({ ...scan, platform }, signal));
    const image = images[0];
    if (!image) throw new ScanError(`no image was found for ${scan.reference}`);
    return {
      ...(await this.#contents(image.digest)),
      platform: image.platform,
      references: image.tag !== undefined ? [`${image.registry}/${image.repository}:${image.tag}`] : [],
    };
  }

  async scanSbom({ sbom }: LocalSbom, progress: Progress): Promise<ScannedContents> {
    progress({ kind: 'step', message: 'matching vulnerabilities' });
    const { writeSbomAncestry } = await import('../images/sboms.js');
    await withTransaction(this.#database.pool, (client) => writeSbomAncestry(client, sbom));
    return sbomContents(await this.#contents(sbom.digest), sbom, sbom.skipped);
  }

  async #contents(digest: string): Promise<Omit<ScannedContents, 'platform' | 'references'>> {
    const contents = await imageContents(this.#database.pool, digest);
    if (!contents) throw new ScanError(`the image ${digest} was scanned but cannot be read back`);
    return { digest, layers: contents.layers, packages: contents.packages, coverage: contents.coverage, unread: contents.unread };
  }

  async close(): Promise<void> {
    await this.#database.close();
  }
}

async function fileSha256(file: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(file), hash);
  return hash.digest('hex');
}

async function importBundleOnce(database: Database, config: Config, log: Logger, file: string, progress: Progress): Promise<void> {
  const sha256 = await fileSha256(file).catch((err: NodeJS.ErrnoException) => {
    throw new ScanError(`--db ${file}: ${err.code === 'ENOENT' ? 'no such file' : err.message}`);
  });
  if ((await getValue(database.pool, BUNDLE_KEY)) === sha256) return;
  const { checkBundle, importBundle } = await import('../updater/bundle.js');
  const { UpdaterRunner } = await import('../updater/runner.js');
  const { SOURCES } = await import('../updater/sources.js');
  try {
    await checkBundle(file);
  } catch (err) {
    throw new ScanError(`--db ${file}: ${(err as Error).message}`);
  }
  progress({ kind: 'step', message: `importing vulnerability data from ${file}` });
  const runner = new UpdaterRunner({ pool: database.pool, settings: runnerSettings(config), log });
  const summaries = await importBundle(runner, SOURCES, file);
  // busy: another process holds the source; its data is not known to be here.
  const failed = summaries.filter((s) => s.status === 'failed' || s.status === 'busy');
  if (failed.length > 0) throw new ScanError(`--db ${file}: importing ${failed.map((s) => s.source).join(', ')} failed`);
  await setValue(database.pool, BUNDLE_KEY, sha256);
}

async function update(database: Database, config: Config, log: Logger, progress: Progress): Promise<void> {
  const { enabledSources, UpdaterRunner } = {
    ...(await import('../updater/runner.js')),
    ...(await import('../updater/sources.js')),
  };
  const runner = new UpdaterRunner({ pool: database.pool, settings: runnerSettings(config), log });
  const failed: string[] = [];
  for (const source of enabledSources(config.updater.enabledUpdaters)) {
    progress({ kind: 'step', message: `updating ${source.name}` });
    const summary = await runner.run(source);
    if (summary.status === 'failed' || summary.status === 'busy') failed.push(source.name);
  }
  if (failed.length > 0)
    throw new ScanError(`--update: ${failed.join(', ')} could not be updated; the scan would miss their vulnerabilities`);
}
