import pg from 'pg';
import type { Logger } from 'pino';

// bigint (int8) columns hold ids and counts far below 2^53: read them as numbers, once, here.
pg.types.setTypeParser(pg.types.builtins.INT8, (value: string) => Number.parseInt(value, 10));

export type Pool = pg.Pool;
export type Queryable = pg.Pool | pg.PoolClient;

export function createPool(connection: pg.PoolConfig, maxConnections: number, log: Logger): pg.Pool {
  const pool = new pg.Pool({
    ...connection,
    max: maxConnections,
    connectionTimeoutMillis: connection.connectionTimeoutMillis ?? 5_000,
    idleTimeoutMillis: 30_000,
    application_name: connection.application_name ?? 'tarsier',
  });
  // An idle client losing its connection (database restart) must not crash the process; the
  // pool replaces it and the next query reports the outage to its caller.
  // Once the pool is closing, connections ended by the database shutting down after it (the
  // embedded one) are expected: nothing is lost.
  pool.on('error', (err) => {
    if (!pool.ending) log.warn({ err }, 'idle database connection lost');
  });
  // The pool listens to idle clients only. A checked-out client whose backend is terminated
  // (restart, failover, pg_terminate_backend) emits 'error' too, and an 'error' nobody listens to
  // ends the process. The query in flight fails with the same error, so its request answers 503;
  // the broken client is dropped from the pool when released.
  pool.on('connect', (client) => {
    client.on('error', (err) => {
      if (!pool.ending) log.warn({ err }, 'database connection lost while in use');
    });
  });
  return pool;
}

/** SQLSTATEs after which the same transaction may simply run again: deadlock, serialization failure. */
const RETRYABLE = new Set(['40P01', '40001']);
const ATTEMPTS = 4;

/**
 * Runs fn in one transaction: COMMIT when it resolves, ROLLBACK when it throws. A transaction that
 * PostgreSQL aborted as a deadlock victim runs again (fn must be safe to re-run; its writes were
 * rolled back).
 */
export async function withTransaction<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const client = await pool.connect();
    try {
      await client.query('BEGIN');
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      const code = (err as { code?: unknown }).code;
      if (attempt >= ATTEMPTS || typeof code !== 'string' || !RETRYABLE.has(code)) throw err;
    } finally {
      client.release();
    }
  }
}
