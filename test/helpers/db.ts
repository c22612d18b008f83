import { randomBytes } from 'node:crypto';
import pg from 'pg';
import pino from 'pino';
import { afterAll, inject } from 'vitest';
import { databaseOf } from './database-of.js';
import { createPool } from '../../src/store/pool.js';

export const silentLog = pino({ level: 'silent' });

/**
 * A fresh, migrated database for one test file (cloned from the template made by the global
 * setup), dropped after the file's tests (or, when asked for inside a hook, where vitest runs no
 * afterAll registered then, by the global teardown). Returns its connection settings.
 */
export async function freshDatabase(): Promise<pg.PoolConfig> {
  const admin = inject('pgAdmin');
  const name = `${inject('pgRunPrefix')}${randomBytes(6).toString('hex')}`;
  const client = new pg.Client(admin);
  await client.connect();
  await client.query(`CREATE DATABASE ${name} TEMPLATE ${inject('pgTemplate')}`);
  await client.end();
  afterAll(async () => {
    const c = new pg.Client(admin);
    await c.connect();
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.end();
  });
  return databaseOf(admin, name);
}

/** A pool on a fresh database, closed after the file's tests. */
export async function freshPool(): Promise<pg.Pool> {
  const pool = createPool(await freshDatabase(), 10, silentLog);
  afterAll(() => pool.end());
  return pool;
}
