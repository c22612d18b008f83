import type pg from 'pg';

/** The same server as admin, another database. */
export function databaseOf(admin: pg.PoolConfig, database: string): pg.PoolConfig {
  if (admin.connectionString) {
    const url = new URL(admin.connectionString);
    url.pathname = `/${database}`;
    return { connectionString: url.toString() };
  }
  return { ...admin, database };
}
