import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type pg from 'pg';
import type { Logger } from 'pino';

/** Advisory lock key held while migrating, so replicas starting together migrate once. */
const MIGRATION_LOCK_KEY = 0x7a51_0001;

const MIGRATION_FILE = /^(\d{4})_[a-z0-9_]+\.sql$/;

/** migrations/ sits at the repository root, above src/ (tsx) or dist/src/ (built). */
function migrationsDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    const candidate = join(dir, 'migrations');
    if (existsSync(candidate)) return candidate;
    dir = dirname(dir);
  }
  throw new Error('cannot find the migrations directory next to the Tarsier installation');
}

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export async function loadMigrations(dir = migrationsDir()): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => MIGRATION_FILE.test(f)).sort();
  return Promise.all(
    files.map(async (name) => ({
      version: Number.parseInt(name.slice(0, 4), 10),
      name,
      sql: await readFile(join(dir, name), 'utf8'),
    })),
  );
}

/**
 * Applies pending migrations in order, each in its own transaction, under an advisory lock.
 * Returns the names applied (empty when the schema was current).
 */
export async function migrate(pool: pg.Pool, log: Logger): Promise<string[]> {
  const migrations = await loadMigrations();
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(
      `CREATE TABLE IF NOT EXISTS schema_migrations (
         version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`,
    );
    const done = new Set((await client.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version));
    const applied: string[] = [];
    for (const m of migrations) {
      if (done.has(m.version)) continue;
      await client.query('BEGIN');
      try {
        await client.query(m.sql);
        await client.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${m.name} failed: ${(err as Error).message}`, { cause: err });
      }
      log.info({ migration: m.name }, 'migration applied');
      applied.push(m.name);
    }
    return applied;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    client.release();
  }
}
