import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { ReportChanges, type ReportChangeKind } from '../../src/store/report-changes.js';
import { freshPool, silentLog } from '../helpers/db.js';
import { whenDone } from '../helpers/when-done.js';

/** What a ReportChanges heard, in order. */
class Heard {
  readonly changes: Array<{ kind: ReportChangeKind; ids: number[] }> = [];
  listenings = 0;
  losses = 0;
  changed(kind: ReportChangeKind, ids: readonly number[]) {
    this.changes.push({ kind, ids: [...ids] });
  }
  listening() {
    this.listenings++;
  }
  lost() {
    this.losses++;
  }
  ids(kind: ReportChangeKind): number[] {
    return this.changes
      .filter((c) => c.kind === kind)
      .flatMap((c) => c.ids)
      .sort((a, b) => a - b);
  }
}

/** A ReportChanges listening on pool's database, and what it heard. */
async function listening(pool: pg.Pool): Promise<{ heard: Heard; caughtUp: () => Promise<void> }> {
  const heard = new Heard();
  const changes = new ReportChanges({ pool, connection: pool.options, log: silentLog, events: heard });
  await changes.start();
  whenDone(() => changes.stop());
  expect(heard.listenings).toBe(1);
  return { heard, caughtUp: () => changes.caughtUp(5_000) };
}

/** A namespace, a feature with `versions` versions, a vulnerability and its fix; ids of the versions. */
async function seed(pool: pg.Pool, versions: number): Promise<{ vulnerability: number; fixedin: number; featureVersions: number[] }> {
  const ns = (await pool.query<{ id: number }>("INSERT INTO namespace (name, version_format) VALUES ('debian:12', 'dpkg') RETURNING id"))
    .rows[0]!.id;
  const feature = (await pool.query<{ id: number }>("INSERT INTO feature (namespace_id, name) VALUES ($1, 'openssl') RETURNING id", [ns]))
    .rows[0]!.id;
  const featureVersions = (
    await pool.query<{ id: number }>(
      "INSERT INTO feature_version (feature_id, version) SELECT $1, '1.' || g FROM generate_series(1, $2) g RETURNING id",
      [feature, versions],
    )
  ).rows.map((r) => r.id);
  const vulnerability = (
    await pool.query<{ id: number }>("INSERT INTO vulnerability (namespace_id, name, severity) VALUES ($1, 'CVE-1', 'High') RETURNING id", [
      ns,
    ])
  ).rows[0]!.id;
  const fixedin = (
    await pool.query<{ id: number }>('INSERT INTO vulnerability_fixedin (vulnerability_id, feature_id) VALUES ($1, $2) RETURNING id', [
      vulnerability,
      feature,
    ])
  ).rows[0]!.id;
  return { vulnerability, fixedin, featureVersions };
}

describe('report changes announced by the database', () => {
  it('names every feature version whose matches a statement changed, in chunks a notification can carry', async () => {
    const pool = await freshPool();
    const { heard, caughtUp } = await listening(pool);
    const { vulnerability, fixedin, featureVersions } = await seed(pool, 2500);
    await pool.query('INSERT INTO vulnerability_affects SELECT $1, id, $2 FROM feature_version', [vulnerability, fixedin]);
    await caughtUp();
    expect(heard.ids('features')).toEqual(featureVersions);
    expect(heard.changes.length).toBe(3);

    heard.changes.length = 0;
    await pool.query("UPDATE vulnerability SET severity = 'Critical' WHERE id = $1", [vulnerability]);
    await pool.query("UPDATE vulnerability_fixedin SET fixed_version = '1.9' WHERE id = $1", [fixedin]);
    await pool.query('DELETE FROM vulnerability_affects WHERE feature_version_id = ANY($1::int[])', [featureVersions.slice(0, 10)]);
    await caughtUp();
    expect(heard.changes.map((c) => c.ids.length)).toEqual([1000, 1000, 500, 1000, 1000, 500, 10]);
  });

  it('names changed and deleted layers, not new ones, and nothing for a rolled-back change', async () => {
    const pool = await freshPool();
    const { heard, caughtUp } = await listening(pool);
    const scan = (await pool.query<{ id: number }>("INSERT INTO layer_scan (key, indexed_by_version) VALUES ('s', 1) RETURNING id"))
      .rows[0]!.id;
    const layer = async (name: string, parent: number | null) =>
      (
        await pool.query<{ id: number }>(
          'INSERT INTO layer (name, parent_id, scan_id, indexed_by_version) VALUES ($1, $2, $3, 1) RETURNING id',
          [name, parent, scan],
        )
      ).rows[0]!.id;
    const base = await layer('base', null);
    const child = await layer('child', base);
    await caughtUp();
    expect(heard.changes).toEqual([]);

    const client = await pool.connect();
    await client.query('BEGIN');
    await client.query('UPDATE layer SET indexed_by_version = 2 WHERE id = $1', [child]);
    await client.query('ROLLBACK');
    client.release();
    await pool.query('UPDATE layer SET indexed_by_version = 3 WHERE id = $1', [child]);
    await pool.query('DELETE FROM layer WHERE id = $1', [base]);
    await caughtUp();
    expect(heard.changes).toEqual([
      { kind: 'layers', ids: [child] },
      { kind: 'layers', ids: [base, child].sort((a, b) => a - b) },
    ]);
  });

  it('resolves caughtUp only once the changes committed before it have been heard', async () => {
    const pool = await freshPool();
    const { heard, caughtUp } = await listening(pool);
    for (let i = 1; i <= 20; i++) {
      await pool.query("SELECT pg_notify('tarsier_report_changes', $1)", [`f:${i}`]);
      await caughtUp();
      expect(heard.ids('features').at(-1)).toBe(i);
    }
  });
});
