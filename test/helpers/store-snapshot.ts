import pg from 'pg';

/**
 * What the store holds, table by table (row count and a digest of every row): two equal snapshots
 * mean nothing was written.
 */
export async function storeSnapshot(pool: pg.Pool): Promise<Record<string, string>> {
  const tables = await pool.query<{ name: string }>("SELECT tablename AS name FROM pg_tables WHERE schemaname = 'public' ORDER BY 1");
  const snapshot: Record<string, string> = {};
  for (const { name } of tables.rows) {
    const { rows } = await pool.query<{ rows: string; digest: string | null }>(
      `SELECT count(*)::text AS rows, md5(string_agg(t::text, '|' ORDER BY t::text)) AS digest FROM ${pg.escapeIdentifier(name)} t`,
    );
    snapshot[name] = `${rows[0]!.rows} rows, ${rows[0]!.digest ?? 'empty'}`;
  }
  return snapshot;
}
