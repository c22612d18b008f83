/**
 * What the test helpers open is released once its user is done, wherever it was asked for: a
 * test's database, pool, app and Tarsier process when that test ends (vitest runs no afterAll
 * registered inside a test or a hook), a file's (asked for at its top or in a beforeAll) when the
 * file ends. A run on a shared PostgreSQL neither piles up databases and connections while it runs
 * nor leaves them, or processes, behind.
 */
import pg from 'pg';
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { testApp } from './helpers/app.js';
import { freshDatabase, freshPool } from './helpers/db.js';
import { databaseUrl, startTarsier, type TarsierProcess } from './helpers/process.js';

/** The database a connection setting names. */
const nameOf = (conn: pg.PoolConfig): string => conn.database ?? new URL(conn.connectionString!).pathname.slice(1);

/** Whether the database exists, and the connections to it. */
async function state(name: string): Promise<{ exists: boolean; connections: number }> {
  const admin = new pg.Client(inject('pgAdmin'));
  await admin.connect();
  try {
    const { rows } = await admin.query<{ exists: boolean; connections: number }>(
      `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) AS exists,
              (SELECT count(*)::int FROM pg_stat_activity WHERE datname = $1) AS connections`,
      [name],
    );
    return rows[0]!;
  } finally {
    await admin.end();
  }
}

describe('resources a test asks for', () => {
  let fileDatabase: string;
  beforeAll(async () => {
    fileDatabase = nameOf(await freshDatabase());
  });

  const made: { database?: string; pool?: string; app?: string; server?: TarsierProcess } = {};
  it('are open while the test runs', async () => {
    made.database = nameOf(await freshDatabase());
    const pool = await freshPool();
    made.pool = nameOf(pool.options);
    const t = await testApp();
    made.app = nameOf(t.pool.options);
    await pool.query('SELECT 1');
    expect((await t.app.inject({ url: '/v1/namespaces' })).statusCode).toBe(200);
    made.server = await startTarsier({ DATABASE_URL: databaseUrl({ ...t.pool.options }) });
    for (const name of [made.database, made.pool, made.app]) expect((await state(name)).exists).toBe(true);
  });

  it('are released when it ends: databases dropped, connections closed, processes ended', async () => {
    for (const name of [made.database!, made.pool!, made.app!]) expect(await state(name)).toEqual({ exists: false, connections: 0 });
    const server = made.server!;
    expect(server.child.exitCode !== null || server.child.signalCode !== null).toBe(true);
  });

  it('and those of the file stay until the file ends', async () => {
    expect((await state(fileDatabase)).exists).toBe(true);
  });
});
