import type { Logger } from 'pino';
import type pg from 'pg';
import type { Config } from './config.js';
import { isDatabaseUnavailable } from './errors.js';
import { startEmbeddedPostgres, type EmbeddedPostgres } from './store/embedded.js';
import { migrate } from './store/migrate.js';
import { createPool, type Pool } from './store/pool.js';

/**
 * Opening the database, for every command: the server, migrate, and the updater commands (which
 * load this without the API's modules).
 */

export interface Database {
  pool: Pool;
  /** The connection settings (for connections outside the pool, such as LISTEN). */
  connection: pg.PoolConfig;
  close(): Promise<void>;
}

/** How long start-up waits for a configured database that is not up yet (containers start together). */
export const DATABASE_WAIT_MS = 60_000;

/**
 * Migrates (Tarsier's schema, then the image queue's when asked), retrying while the database
 * cannot be reached, up to DATABASE_WAIT_MS.
 */
async function migrateWhenReachable(pool: Pool, log: Logger, imageQueue: boolean, waitMs = DATABASE_WAIT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  for (let delay = 500; ; delay = Math.min(delay * 2, 5_000)) {
    try {
      await migrate(pool, log);
      // The queue (graphile-worker) is loaded only by the processes that run it: not by a standalone scan.
      if (imageQueue) await (await import('./images/queue.js')).migrateQueue(pool, log);
      return;
    } catch (err) {
      if (!isDatabaseUnavailable(err) || Date.now() + delay > deadline) throw err;
      log.warn({ err, retryInMs: delay }, 'database not reachable yet; waiting');
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }
}

export interface OpenOptions {
  /** What chose the embedded data directory, for the error when it cannot be used. */
  dataDirSetting?: string;
  /**
   * Whether to migrate the image queue's schema too (default true). The standalone scanner runs no
   * queue, so its store is left without the queue's tables; a server opening the same database later
   * adds them.
   */
  imageQueue?: boolean;
}

/** The configured database, or an embedded one when none is configured; migrated. */
export async function openDatabase(config: Config, log: Logger, options: OpenOptions = {}): Promise<Database> {
  let embedded: EmbeddedPostgres | undefined;
  let connection: pg.PoolConfig;
  if (config.database.connection) {
    connection = config.database.connection;
  } else {
    embedded = await startEmbeddedPostgres({
      dataDir: config.database.dataDir,
      relocatable: config.database.dataDirIsDefault,
      ...(options.dataDirSetting ? { dataDirSetting: options.dataDirSetting } : {}),
      log: log.child({ component: 'embedded-postgres' }),
    });
    connection = embedded.connection;
  }
  const pool = createPool(connection, config.database.maxConnections, log);
  try {
    await migrateWhenReachable(pool, log, options.imageQueue ?? true);
  } catch (err) {
    await pool.end();
    await embedded?.stop();
    throw err;
  }
  return {
    pool,
    connection,
    async close() {
      await pool.end();
      await embedded?.stop();
    },
  };
}
