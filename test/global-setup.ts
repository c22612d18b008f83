import { rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import pino from 'pino';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../src/store/embedded.js';
import { migrate } from '../src/store/migrate.js';
import { migrateQueue } from '../src/images/queue.js';
import { createPool } from '../src/store/pool.js';
import { databaseOf } from './helpers/database-of.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser connection to the maintenance database, for creating per-file databases. */
    pgAdmin: pg.PoolConfig;
    /** A migrated database each test file clones. */
    pgTemplate: string;
  }
}

/**
 * Tests run against real PostgreSQL: DATABASE_URL when set (CI uses the machine's server),
 * otherwise an embedded server started here. Migrations run once into a template database;
 * every test file clones it (CREATE DATABASE ... TEMPLATE), which takes milliseconds.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const log = pino({ level: 'silent' });
  let embedded: EmbeddedPostgres | undefined;
  let dataDir: string | undefined;
  let admin: pg.PoolConfig;
  if (process.env.DATABASE_URL) {
    admin = { connectionString: process.env.DATABASE_URL };
  } else {
    dataDir = join(tmpdir(), `tarsier-test-pg-${process.pid}`);
    embedded = await startEmbeddedPostgres({ dataDir, log, ephemeral: true });
    admin = embedded.adminConnection;
  }

  const template = `tarsier_template_${process.pid}`;
  const adminClient = new pg.Client(admin);
  await adminClient.connect();
  await adminClient.query(`DROP DATABASE IF EXISTS ${template}`);
  await adminClient.query(`CREATE DATABASE ${template}`);
  const pool = createPool(databaseOf(admin, template), 2, log);
  await migrate(pool, log);
  await migrateQueue(pool, log);
  await pool.end();

  project.provide('pgAdmin', admin);
  project.provide('pgTemplate', template);

  return async () => {
    await adminClient.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
    await adminClient.end();
    await embedded?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  };
}
