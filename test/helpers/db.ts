import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { inject } from 'vitest';
import { whenDone } from './when-done.js';
import { databaseOf } from './database-of.js';
import { createPool } from '../../src/store/pool.js';

export const silentLog = pino({ level: 'silent' });

/**
 * A fresh, migrated database (cloned from the template made by the global setup), dropped when the
 * test that asked for it ends, or, asked for at the top of the file, in a describe or a beforeAll,
 * when the file ends. Returns its connection settings.
 */
export async function freshDatabase(): Promise<pg.PoolConfig> {
  const admin = inject('pgAdmin');
  const name = `${inject('pgRunPrefix')}${randomBytes(6).toString('hex')}`;
  const client = new pg.Client(admin);
  await client.connect();
  await client.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`);
  await client.end();
  whenDone(async () => {
    const c = new pg.Client(admin);
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  return databaseOf(admin, name);
}

/** A pool on a fresh database, closed (before its database is dropped) when the test or the file that asked for it ends. */
export async function freshPool(): Promise<pg.Pool> {
  const pool = createPool(await freshDatabase(), 10, silentLog);
  whenDone(() => pool.end());
  return pool;
}
