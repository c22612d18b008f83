/**
 * Notification pages at scale: a vulnerability reaching 100,000 layers (v1) and 100,000
 * ancestries (v3). Each page must cost O(limit): its ids come from the fan-out indexes and its
 * names by primary key, never from a sequential scan of layer or ancestry (which made paging
 * quadratic in the number of layers). The plans are read with EXPLAIN of the very statements the
 * store sends, on ANALYZEd tables.
 */
import type pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { ancestriesAffectedBy } from '../../src/store/ancestries.js';
import { layersIntroducing } from '../../src/store/notifications.js';
import type { Queryable } from '../../src/store/pool.js';
import { freshPool } from '../helpers/db.js';
import { prng } from '../helpers/prng.js';

const ROWS = 100_000;
const OPENSSL_VERSIONS = 20;
const ZLIB_VERSIONS = 3;
const LIMIT = 1000;
/** The rows adding curl: every 1000th, and all of 60,001 to 70,000. */
const CLUSTERED = '(ID % 1000 = 0 OR ID BETWEEN 60001 AND 70000)';

/**
 * Every layer (and ancestry) adds one of 20 openssl versions; every 7th also adds one of 3 zlib
 * versions; every 1000th, and every one of a run of 10,000, adds curl. "everything" affects the 20
 * openssl and 3 zlib versions: it reaches every row, every 7th twice. "zlib-only" affects the zlib
 * versions: every 7th row. "clustered" affects curl: sparse rows, then a dense run (where one
 * version alone fills a page).
 */
const SEED = `
  INSERT INTO namespace (name, version_format) VALUES ('debian:12', 'dpkg');
  INSERT INTO feature (namespace_id, name) SELECT id, unnest(ARRAY['openssl', 'zlib', 'curl']) FROM namespace;
  INSERT INTO feature_version (feature_id, version)
    SELECT f.id, '1.' || g FROM feature f, generate_series(1, ${OPENSSL_VERSIONS}) g WHERE f.name = 'openssl';
  INSERT INTO feature_version (feature_id, version)
    SELECT f.id, '1.' || g FROM feature f, generate_series(1, ${ZLIB_VERSIONS}) g WHERE f.name = 'zlib';
  INSERT INTO feature_version (feature_id, version) SELECT f.id, '1.0' FROM feature f WHERE f.name = 'curl';
  CREATE TEMPORARY TABLE version_of (feature text, n integer, id integer);
  INSERT INTO version_of
    SELECT f.name, row_number() OVER (PARTITION BY f.id ORDER BY fv.id) - 1, fv.id
    FROM feature_version fv JOIN feature f ON f.id = fv.feature_id;

  INSERT INTO layer_scan (key, indexed_by_version, namespace) SELECT 'v1/layer-' || g, 1, 'debian:12' FROM generate_series(1, ${ROWS}) g;
  INSERT INTO layer (name, namespace_id, scan_id, indexed_by_version)
    SELECT 'layer-' || s.id, (SELECT id FROM namespace), s.id, 1 FROM layer_scan s ORDER BY s.id;
  INSERT INTO layer_diff (layer_id, feature_version_id, modification)
    SELECT l.id, v.id, 'add' FROM layer l JOIN version_of v ON v.feature = 'openssl' AND v.n = l.id % ${OPENSSL_VERSIONS};
  INSERT INTO layer_diff (layer_id, feature_version_id, modification)
    SELECT l.id, v.id, 'add' FROM layer l JOIN version_of v ON v.feature = 'zlib' AND v.n = l.id % ${ZLIB_VERSIONS}
    WHERE l.id % 7 = 0;
  INSERT INTO layer_diff (layer_id, feature_version_id, modification)
    SELECT l.id, v.id, 'add' FROM layer l JOIN version_of v ON v.feature = 'curl' AND ${CLUSTERED.replaceAll('ID', 'l.id')};

  INSERT INTO ancestry (name) SELECT 'ancestry-' || g FROM generate_series(1, ${ROWS}) g;
  INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position)
    SELECT a.id, v.id, 0 FROM ancestry a JOIN version_of v ON v.feature = 'openssl' AND v.n = a.id % ${OPENSSL_VERSIONS};
  INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position)
    SELECT a.id, v.id, 1 FROM ancestry a JOIN version_of v ON v.feature = 'zlib' AND v.n = a.id % ${ZLIB_VERSIONS}
    WHERE a.id % 7 = 0;
  INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position)
    SELECT a.id, v.id, 2 FROM ancestry a JOIN version_of v ON v.feature = 'curl' AND ${CLUSTERED.replaceAll('ID', 'a.id')};

  INSERT INTO vulnerability (namespace_id, name, severity)
    SELECT id, unnest(ARRAY['everything', 'zlib-only', 'clustered']), 'High' FROM namespace;
  INSERT INTO vulnerability_fixedin (vulnerability_id, feature_id)
    SELECT v.id, f.id FROM vulnerability v, feature f
    WHERE (v.name = 'everything' AND f.name IN ('openssl', 'zlib')) OR (v.name = 'zlib-only' AND f.name = 'zlib')
      OR (v.name = 'clustered' AND f.name = 'curl');
  INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id)
    SELECT x.vulnerability_id, fv.id, x.id FROM vulnerability_fixedin x JOIN feature_version fv ON fv.feature_id = x.feature_id;
  DROP TABLE version_of;
  ANALYZE;`;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodesOf(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodesOf)];
}

/**
 * A Queryable that EXPLAINs the statement it is given instead of running it, so the plans
 * checked are those of the store's own statements, with the same parameters.
 */
function explaining(pool: pg.Pool): { db: Queryable; plans: PlanNode[] } {
  const plans: PlanNode[] = [];
  const db = {
    async query(text: string, values: unknown[]) {
      const { rows } = await pool.query<{ 'QUERY PLAN': Array<{ Plan: PlanNode }> }>(`EXPLAIN (FORMAT JSON) ${text}`, values);
      plans.push(rows[0]!['QUERY PLAN'][0]!.Plan);
      return { rows: [] };
    },
  };
  return { db: db as unknown as Queryable, plans };
}

type Page = (db: Queryable, vulnerabilityId: number, startId: number, limit: number) => Promise<Array<{ id: number; name: string }>>;

/** Pages from the start as the routes do (limit + 1 rows, the last one starting the next page). */
async function pageAll(pool: pg.Pool, page: Page, vulnerabilityId: number, limit = LIMIT) {
  const pages: Array<Array<{ id: number; name: string }>> = [];
  for (let start = 0; ;) {
    const rows = await page(pool, vulnerabilityId, start, limit + 1);
    pages.push(rows.slice(0, limit));
    if (rows.length <= limit) return pages;
    start = rows[limit]!.id;
  }
}

/**
 * "scattered": 8 versions of bash, added by 1 to 3 of them at a time to a few runs of neighbouring
 * rows and to single rows anywhere, and deleted (v1 'del', which must not count) by other rows.
 */
async function seedScattered(pool: pg.Pool): Promise<void> {
  const random = prng(13);
  const below = (n: number) => Math.floor(random() * n);
  const rows = new Set<number>();
  for (let run = 0; run < 5; run++) {
    const first = 1 + below(ROWS - 100);
    for (let id = first, end = first + 20 + below(60); id < end; id++) rows.add(id);
  }
  while (rows.size < 400) rows.add(1 + below(ROWS));
  const added: Array<[number, number]> = [];
  for (const row of rows) {
    const versions = new Set([below(8), below(8), below(8)].slice(0, 1 + below(3)));
    for (const v of versions) added.push([row, v]);
  }
  const deletedBy = new Map<number, number>();
  while (deletedBy.size < 100) {
    const row = 1 + below(ROWS);
    if (!rows.has(row)) deletedBy.set(row, below(8));
  }
  const deleted = [...deletedBy];
  await pool.query(`
    INSERT INTO feature (namespace_id, name) SELECT id, 'bash' FROM namespace;
    INSERT INTO feature_version (feature_id, version) SELECT f.id, '5.' || g FROM feature f, generate_series(0, 7) g WHERE f.name = 'bash';
    INSERT INTO vulnerability (namespace_id, name, severity) SELECT id, 'scattered', 'High' FROM namespace;
    INSERT INTO vulnerability_fixedin (vulnerability_id, feature_id)
      SELECT v.id, f.id FROM vulnerability v, feature f WHERE v.name = 'scattered' AND f.name = 'bash';
    INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id)
      SELECT x.vulnerability_id, fv.id, x.id FROM vulnerability_fixedin x JOIN feature_version fv ON fv.feature_id = x.feature_id
      JOIN vulnerability v ON v.id = x.vulnerability_id WHERE v.name = 'scattered'`);
  const bash = `SELECT fv.id FROM feature_version fv JOIN feature f ON f.id = fv.feature_id WHERE f.name = 'bash' AND fv.version = '5.' || v`;
  const write = (sql: string, pairs: Array<[number, number]>) => pool.query(sql, [pairs.map(([row]) => row), pairs.map(([, v]) => v)]);
  await write(`INSERT INTO layer_diff SELECT id, (${bash}), 'add' FROM unnest($1::bigint[], $2::int[]) AS p (id, v)`, added);
  await write(`INSERT INTO layer_diff SELECT id, (${bash}), 'del' FROM unnest($1::bigint[], $2::int[]) AS p (id, v)`, deleted);
  await write(`INSERT INTO ancestry_feature SELECT id, (${bash}), 3 + v FROM unnest($1::bigint[], $2::int[]) AS p (id, v)`, added);
}

let pool: pg.Pool;
const vulnerabilities = new Map<string, number>();
beforeAll(async () => {
  pool = await freshPool();
  await pool.query(SEED);
  await seedScattered(pool);
  for (const { id, name } of (await pool.query<{ id: number; name: string }>('SELECT id, name FROM vulnerability')).rows) {
    vulnerabilities.set(name, id);
  }
});

const EXPECTED_LAYERS = `
  SELECT DISTINCT l.id, l.name FROM layer l
  JOIN layer_diff d ON d.layer_id = l.id AND d.modification = 'add'
  JOIN vulnerability_affects a ON a.feature_version_id = d.feature_version_id
  WHERE a.vulnerability_id = $1 ORDER BY l.id`;
const EXPECTED_ANCESTRIES = `
  SELECT DISTINCT an.id, an.name FROM ancestry an
  JOIN ancestry_feature af ON af.ancestry_id = an.id
  JOIN vulnerability_affects a ON a.feature_version_id = af.feature_version_id
  WHERE a.vulnerability_id = $1 ORDER BY an.id`;

describe.each([
  { api: 'v1 layers', page: layersIntroducing as Page, table: 'layer', fanOut: 'layer_diff', expected: EXPECTED_LAYERS },
  {
    api: 'v3 ancestries',
    page: ancestriesAffectedBy as Page,
    table: 'ancestry',
    fanOut: 'ancestry_feature',
    expected: EXPECTED_ANCESTRIES,
  },
])('notification pages of $api', ({ page, table, fanOut, expected }) => {
  it(`hold every affected row once, in id order, limit at a time, each page's ids then names through indexes`, async () => {
    for (const [name, rows] of [
      ['everything', ROWS],
      ['zlib-only', Math.floor(ROWS / 7)],
      ['clustered', ROWS / 1000 + 10_000 - 10],
    ] as const) {
      const id = vulnerabilities.get(name)!;
      const all = (await pool.query<{ id: number; name: string }>(expected, [id])).rows;
      expect(all).toHaveLength(rows);
      const pages = await pageAll(pool, page, id);
      expect(pages).toHaveLength(Math.ceil(rows / LIMIT));
      expect(pages.slice(0, -1).every((p) => p.length === LIMIT)).toBe(true);
      expect(pages.flat()).toEqual(all);

      // The first page, one in the middle and the last: a custom plan for each start.
      const { db, plans } = explaining(pool);
      for (const start of [0, all[Math.floor(rows / 2)]!.id, all[rows - LIMIT]!.id]) await page(db, id, start, LIMIT + 1);
      for (const plan of plans) {
        const scans = nodesOf(plan).filter((n) => n['Relation Name'] === table || n['Relation Name'] === fanOut);
        expect(scans.filter((n) => n['Node Type'] === 'Seq Scan')).toEqual([]);
        // The names by id, and the last id (where the windows stop): both through the primary key.
        const byKey = expect.objectContaining({
          'Node Type': expect.stringMatching(/^Index (Only )?Scan$/),
          'Index Name': `${table}_pkey`,
        });
        expect(scans.filter((n) => n['Relation Name'] === table)).toEqual([byKey, byKey]);
      }
    }
  });

  it('agree with a plain query at any limit, on rows scattered in runs and alone', async () => {
    const id = vulnerabilities.get('scattered')!;
    const all = (await pool.query<{ id: number; name: string }>(expected, [id])).rows;
    expect(all.length).toBeGreaterThan(350);
    for (const limit of [1, 3, 16, 100, 1000]) {
      const pages = await pageAll(pool, page, id, limit);
      expect(pages.flat()).toEqual(all);
      expect(pages.slice(0, -1).every((p) => p.length === limit)).toBe(true);
    }
  });
});
