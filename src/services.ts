/**
 * The services a process builds from its configuration and shares between its parts: image scans
 * (registry client, layer scans, image scanner) for the server and the standalone scanner alike,
 * the durable queue and Harbor's scans for the server, and the ancestry API's operations.
 */
import type { Logger } from 'pino';
import type { Config } from './config.js';
import { HarborScans } from './images/harbor-scans.js';
import { ImageScanner } from './images/images.js';
import { ImageQueue } from './images/queue.js';
import { AncestryService } from './indexer/ancestry-service.js';
import type { Indexer } from './indexer/indexer.js';
import type { LayerScans } from './indexer/layer-scans.js';
import { layerScans } from './layer-scanning.js';
import type { Metrics } from './metrics.js';
import { RegistryClient } from './registry/client.js';
import { registryClientSettings } from './settings.js';
import type { Pool } from './store/pool.js';

/** What scans images from registries: layer scans shared by every caller, and the image scanner over them. */
export interface ImageScanning {
  scanner: ImageScanner;
  scans: LayerScans;
}

/**
 * Image scans from registries with credentials from clair.registries. requestsConfigure: a
 * request may ask for plain HTTP itself (the standalone scanner's --insecure: no server stands
 * between the user and the registry, so that is the user's own choice, as configuration is).
 */
export function imageScanning(deps: {
  pool: Pool;
  indexer: Indexer;
  config: Config;
  log: Logger;
  metrics?: Metrics;
  requestsConfigure?: boolean;
}): ImageScanning {
  const { pool, config, log, metrics } = deps;
  const registry = new RegistryClient(registryClientSettings(config, deps.requestsConfigure ? { requestsConfigure: true } : {}));
  // One LayerScans for images, uploads and the ancestry API: a layer any of them is scanning is joined, not scanned again.
  const scans = layerScans(deps);
  const scanner = new ImageScanner({ pool, registry, scans, log, ...(metrics ? { metrics } : {}) });
  return { scanner, scans };
}

export interface ImageServices extends ImageScanning {
  queue: ImageQueue;
  /** Harbor's scans, run by the queue. */
  harbor: HarborScans;
}

/** The server's image scans and their durable queue. */
export function imageServices(deps: { pool: Pool; indexer: Indexer; config: Config; log: Logger; metrics: Metrics }): ImageServices {
  const { pool, config, log, metrics } = deps;
  const { scanner, scans } = imageScanning(deps);
  const { workers: concurrency, attempts } = config.images;
  const harbor = new HarborScans({ pool, scanner, log, attempts });
  const queue = new ImageQueue({ pool, scanner, harbor, log, metrics, concurrency, attempts });
  return { scanner, queue, harbor, scans };
}

/** The ancestry API's operations over this database, with the image services' layer scans. */
export function ancestryService(deps: { pool: Pool; scans: LayerScans }): AncestryService {
  return new AncestryService({ pool: deps.pool, scans: deps.scans });
}
