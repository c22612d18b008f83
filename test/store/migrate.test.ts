import { describe, expect, it } from 'vitest';
import { loadMigrations, migrate } from '../../src/store/migrate.js';
import { freshPool, silentLog } from '../helpers/db.js';

describe('migrations', () => {
  it('are numbered and all applied to the template', async () => {
    const pool = await freshPool();
    const files = await loadMigrations();
    expect(files.length).toBeGreaterThan(0);
    expect(files.map((m) => m.version)).toEqual([...files.map((m) => m.version)].sort((a, b) => a - b));
    const { rows } = await pool.query<{ name: string }>('SELECT name FROM schema_migrations ORDER BY version');
    expect(rows.map((r) => r.name)).toEqual(files.map((m) => m.name));
  });

  it('apply once when replicas start together', async () => {
    const pool = await freshPool();
    // The template is already migrated; concurrent runs must all see it current and apply nothing.
    const results = await Promise.all([migrate(pool, silentLog), migrate(pool, silentLog), migrate(pool, silentLog)]);
    expect(results).toEqual([[], [], []]);
  });

  it('create every table the product uses', async () => {
    const pool = await freshPool();
    const { rows } = await pool.query<{ tablename: string }>(
      "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename",
    );
    expect(rows.map((r) => r.tablename)).toEqual([
      'ancestry',
      'ancestry_feature',
      'ancestry_layer',
      'ancestry_summary',
      'dashboard_session',
      'epss',
      'feature',
      'feature_version',
      'harbor_scan',
      'image',
      'image_tag',
      'kev',
      'keyvalue',
      'layer',
      'layer_diff',
      'layer_scan',
      'layer_scan_application',
      'layer_scan_package',
      'lock',
      'match_revision',
      'namespace',
      'notification',
      'nvd_enrichment',
      'repository_tag',
      'schema_migrations',
      'summary_change',
      'updater_state',
      'vulnerability',
      'vulnerability_affects',
      'vulnerability_fixedin',
    ]);
    // The image scan queue's own schema (graphile-worker), migrated with Tarsier's.
    const queue = await pool.query("SELECT 1 FROM information_schema.views WHERE table_schema = 'graphile_worker' AND table_name = 'jobs'");
    expect(queue.rowCount).toBe(1);
  });
});
