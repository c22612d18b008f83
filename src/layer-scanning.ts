import type { Logger } from 'pino';
import type { Config } from './config.js';
import type { Indexer } from './indexer/indexer.js';
import { LayerScans } from './indexer/layer-scans.js';
import type { Pool } from './store/pool.js';

/**
 * The layer scans of a process, built from its configuration: what scans a layer once, however
 * many callers ask for it (images, uploads, the ancestry API, a standalone scan's local image).
 * Apart from services.ts, which builds the registry client and image scanner over them, so that a
 * standalone scan of a local image builds them without loading those and their HTTP client.
 */
export function layerScans(deps: { pool: Pool; indexer: Indexer; config: Config; log: Logger }): LayerScans {
  return new LayerScans({
    pool: deps.pool,
    indexer: deps.indexer,
    log: deps.log.child({ component: 'layer-scans' }),
    downloadTimeoutMs: deps.config.indexer.downloadTimeoutMs,
  });
}
