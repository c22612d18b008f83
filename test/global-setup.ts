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
    /** The prefix of every database this run creates (dropped at its end). */
    pgRunPrefix: string;
  }
}

/** Test databases are named tarsier_t_<pid of the run's global setup>_<random>, its template tarsier_template_<pid>. */
const RUN_DATABASE = /^tarsier_(?:t_(\d+)_[0-9a-f]+|template_(\d+))$/;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/** Drops the databases of this run, and those a run that died (killed, or cut off) left behind. */
async function dropRunDatabases(client: pg.Client, ours: (pid: number) => boolean): Promise<void> {
  const { rows } = await client.query<{ datname: string }>("SELECT datname FROM pg_database WHERE datname LIKE 'tarsier\\_%'");
  for (const { datname } of rows) {
    const match = RUN_DATABASE.exec(datname);
    const pid = match?.[1] ?? match?.[2];
    if (pid !== undefined && ours(Number(pid)))
      await client.query(`DROP DATABASE IF EXISTS ${datname} WITH (FORCE)`).catch(() => undefined);
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
  await dropRunDatabases(adminClient, (pid) => pid !== process.pid && !alive(pid));
  await adminClient.query(`DROP DATABASE IF EXISTS ${template}`);
  await adminClient.query(`CREATE DATABASE ${template}`);
  const pool = createPool(databaseOf(admin, template), 2, log);
  await migrate(pool, log);
  await migrateQueue(pool, log);
  await pool.end();

  project.provide('pgAdmin', admin);
  project.provide('pgTemplate', template);
  project.provide('pgRunPrefix', `tarsier_t_${process.pid}_`);

  return async () => {
    // Each test file drops its databases when it ends; a file that never reached its end (its
    // worker killed or timed out) leaves them: every database of this run is dropped here.
    await dropRunDatabases(adminClient, (pid) => pid === process.pid);
    await adminClient.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`).catch(() => undefined);
    await adminClient.end();
    await embedded?.stop();
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  };
}
