/**
 * The counting rule twice, in SQL for the store's lists (FINDING_COUNTS) and in TypeScript for
 * findings read into memory (countFindings): on the same stored findings they give the same counts.
 */
import type pg from 'pg';
import { describe, expect, it } from 'vitest';
import { allSeverities, countFindings, type FindingCounts } from '../../src/model/finding-counts.js';
import { affectingVulnerabilities } from '../../src/store/layers.js';
import { computeSummaries, FINDING_COUNTS } from '../../src/store/summaries.js';
import { freshPool } from '../helpers/db.js';

/** Installed package versions, keyed `namespace/feature`. */
type Installed = Record<string, number>;

async function install(pool: pg.Pool, namespace: string, feature: string, version: string): Promise<number> {
  await pool.query("INSERT INTO namespace (name, version_format) VALUES ($1, 'dpkg') ON CONFLICT DO NOTHING", [namespace]);
  await pool.query('INSERT INTO feature (namespace_id, name) SELECT id, $2 FROM namespace WHERE name = $1 ON CONFLICT DO NOTHING', [
    namespace,
    feature,
  ]);
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO feature_version (feature_id, version)
     SELECT f.id, $3 FROM feature f JOIN namespace n ON n.id = f.namespace_id WHERE n.name = $1 AND f.name = $2 RETURNING id`,
    [namespace, feature, version],
  );
  return rows[0]!.id;
}

interface Affects {
  installed: string;
  fixedVersion: string | null;
  fixState?: 'will_not_fix' | 'fix_deferred';
}

/** A vulnerability of a namespace affecting these installed versions, each through its own fixed-in entry. */
async function vulnerability(
  pool: pg.Pool,
  installed: Installed,
  v: { namespace: string; name: string; severity: string; cves?: string[]; deleted?: boolean; affects: Affects[] },
): Promise<void> {
  const { rows } = await pool.query<{ id: number }>(
    `INSERT INTO vulnerability (namespace_id, name, severity, cves, deleted_at)
     SELECT id, $2, $3::severity, $4, CASE WHEN $5 THEN now() END FROM namespace WHERE name = $1 RETURNING id`,
    [v.namespace, v.name, v.severity, v.cves ?? [], v.deleted ?? false],
  );
  for (const a of v.affects) {
    const fixedIn = await pool.query<{ id: number }>(
      `INSERT INTO vulnerability_fixedin (vulnerability_id, feature_id, fixed_version, fix_state)
       SELECT $1, feature_id, $3, $4 FROM feature_version WHERE id = $2 RETURNING id`,
      [rows[0]!.id, installed[a.installed], a.fixedVersion, a.fixState ?? null],
    );
    await pool.query('INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id) VALUES ($1, $2, $3)', [
      rows[0]!.id,
      installed[a.installed],
      fixedIn.rows[0]!.id,
    ]);
  }
}

async function ancestry(pool: pg.Pool, name: string, featureVersionIds: number[]): Promise<number> {
  const { rows } = await pool.query<{ id: number }>('INSERT INTO ancestry (name) VALUES ($1) RETURNING id', [name]);
  await pool.query('INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position) SELECT $1, unnest($2::int[]), 0', [
    rows[0]!.id,
    featureVersionIds,
  ]);
  return rows[0]!.id;
}

describe('the counting rule, in SQL and in TypeScript', () => {
  it('counts the same stored findings the same way', async () => {
    const pool = await freshPool();
    const installed: Installed = {};
    for (const [namespace, feature, version] of [
      ['debian:12', 'openssl', '3.0.9-1'],
      ['debian:12', 'bash', '5.2-1'],
      ['debian:12', 'zlib', '1.2-1'],
      ['debian:12', 'curl', '7.88-1'],
      ['ubuntu:22.04', 'openssl', '3.0.2-0ubuntu1'],
    ] as const) {
      installed[`${namespace}/${feature}`] = await install(pool, namespace, feature, version);
    }
    await pool.query(
      `INSERT INTO kev (cve, vendor_project, product, vulnerability_name, date_added, known_ransomware_campaign_use, required_action)
       SELECT cve, 'v', 'p', 'n', '2024-01-01', 'Unknown', 'a' FROM unnest($1::text[]) AS cve`,
      [['CVE-2099-0003', 'CVE-2099-0004']],
    );
    // Two sources rate it differently and only one package has a fix: Critical, fixable.
    await vulnerability(pool, installed, {
      namespace: 'debian:12',
      name: 'CVE-2099-0001',
      severity: 'High',
      affects: [{ installed: 'debian:12/openssl', fixedVersion: '3.0.11-1' }],
    });
    await vulnerability(pool, installed, {
      namespace: 'ubuntu:22.04',
      name: 'CVE-2099-0001',
      severity: 'Critical',
      affects: [{ installed: 'ubuntu:22.04/openssl', fixedVersion: null }],
    });
    // Stated fix states leave it unfixed: counted, not fixable.
    await vulnerability(pool, installed, {
      namespace: 'debian:12',
      name: 'CVE-2099-0002',
      severity: 'Low',
      affects: [
        { installed: 'debian:12/bash', fixedVersion: null, fixState: 'will_not_fix' },
        { installed: 'debian:12/zlib', fixedVersion: null, fixState: 'fix_deferred' },
      ],
    });
    // In KEV by its name, fixed in one of its two packages.
    await vulnerability(pool, installed, {
      namespace: 'debian:12',
      name: 'CVE-2099-0003',
      severity: 'Medium',
      affects: [
        { installed: 'debian:12/bash', fixedVersion: null },
        { installed: 'debian:12/zlib', fixedVersion: '1.3-1' },
      ],
    });
    // In KEV by a CVE the advisory lists.
    await vulnerability(pool, installed, {
      namespace: 'debian:12',
      name: 'DSA-0004-1',
      severity: 'Unknown',
      cves: ['CVE-2099-0004'],
      affects: [{ installed: 'debian:12/curl', fixedVersion: '7.88-2' }],
    });
    // Withdrawn: counted nowhere.
    await vulnerability(pool, installed, {
      namespace: 'debian:12',
      name: 'CVE-2099-0005',
      severity: 'Defcon1',
      deleted: true,
      affects: [{ installed: 'debian:12/curl', fixedVersion: null }],
    });

    const whole = Object.values(installed);
    const images = {
      [await ancestry(pool, 'whole', whole)]: whole,
      [await ancestry(pool, 'curl only', [installed['debian:12/curl']!])]: [installed['debian:12/curl']!],
      [await ancestry(pool, 'empty', [])]: [],
    };

    const { rows } = await pool.query<{ ancestry_id: number; counts: FindingCounts['bySeverity']; known_exploited: number }>(
      `SELECT * FROM (${FINDING_COUNTS('af.ancestry_id = ANY ($1::bigint[])')}) c`,
      [Object.keys(images)],
    );
    const inSql = new Map(rows.map((r) => [Number(r.ancestry_id), { bySeverity: r.counts, knownExploited: r.known_exploited }]));
    for (const [id, featureVersionIds] of Object.entries(images)) {
      const inMemory = countFindings(await affectingVulnerabilities(pool, featureVersionIds));
      // An ancestry nothing affects has no row: its counts are the empty ones.
      expect(inSql.get(Number(id)) ?? { bySeverity: {}, knownExploited: 0 }).toEqual(inMemory);
    }

    // And what they agree on is the rule.
    const [wholeId, curlOnlyId] = Object.keys(images).map(Number);
    // (Critical, Medium, Low and Unknown once each, as the rank below says; all fixable but the Low.)
    expect(allSeverities(inSql.get(wholeId!)!)).toEqual({ total: 4, fixable: 3 });
    expect(inSql.get(curlOnlyId!)).toEqual({ bySeverity: { Unknown: { total: 1, fixable: 1 } }, knownExploited: 1 });

    // The stored summary is these counts, with its rank.
    await computeSummaries(pool, [wholeId!]);
    const summary = await pool.query('SELECT counts, known_exploited, risk FROM ancestry_summary WHERE ancestry_id = $1', [wholeId]);
    expect(summary.rows[0]).toEqual({
      counts: inSql.get(wholeId!)!.bySeverity,
      known_exploited: 2,
      // known exploited, Defcon1, Critical, High, Medium, Low, Negligible, Unknown
      risk: [2, 0, 1, 0, 1, 1, 0, 1],
    });
  });
});
