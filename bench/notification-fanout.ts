/**
 * Notification fan-out: one vulnerability affecting 100,000 layers. Time from the update (the
 * POST that changes the vulnerability) to its notification being readable, and time to page
 * through all its layers on both sides at limit=1000, against a running server, beside the same
 * pages read straight from PostgreSQL with the server's page query, and by primary key (the floor).
 */
import pg from 'pg';
import { layersIntroducing } from '../src/store/notifications.js';
import { median, provenance, recordTargets, writeBenchmarkSection } from './lib.js';
import { benchDatabase, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- notification-fanout';
const LAYERS = 100_000;
const VERSIONS = 20;
const RUNS = 3;
/** Layers per page, as a client reading a large notification asks. */
export const LIMIT = 1000;
const VULNERABILITIES_URL = '/v1/namespaces/debian%3A12/vulnerabilities';

/**
 * 100,000 base layers (written with SQL: this measures fan-out, not indexing), each adding one of
 * 20 versions of openssl in debian:12, plus a child per 10 bases that introduces nothing.
 */
async function seed(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  await client.query(`
    INSERT INTO namespace (name, version_format) VALUES ('debian:12', 'dpkg');
    INSERT INTO feature (namespace_id, name) SELECT id, 'openssl' FROM namespace;
    INSERT INTO feature_version (feature_id, version) SELECT f.id, '3.0.' || g || '-1' FROM feature f, generate_series(1, ${VERSIONS}) g;
    INSERT INTO layer_scan (key, indexed_by_version, namespace) SELECT 'v1/layer-' || g, 1, 'debian:12' FROM generate_series(1, ${LAYERS}) g;
    INSERT INTO layer (name, namespace_id, scan_id, indexed_by_version)
      SELECT 'layer-' || s.id, (SELECT id FROM namespace), s.id, 1 FROM layer_scan s ORDER BY s.id;
    INSERT INTO layer_diff (layer_id, feature_version_id, modification)
      SELECT l.id, (SELECT id FROM feature_version ORDER BY id OFFSET (l.id % ${VERSIONS}) LIMIT 1), 'add' FROM layer l;
    ANALYZE;`);
  await client.end();
}

/** A new fixed version of the vulnerability: a new version of it, and a notification naming both. */
async function postFix(base: string, version: string): Promise<void> {
  const res = await fetch(`${base}${VULNERABILITIES_URL}`, {
    method: 'POST',
    body: JSON.stringify({ Vulnerability: { Name: 'CVE-2099-0001', Severity: 'High', FixedIn: [{ Name: 'openssl', Version: version }] } }),
  });
  if (res.status !== 201) throw new Error(`POST answered ${res.status}`);
}

interface NotificationPage {
  Notification: {
    NextPage?: string;
    Old?: { OrderedLayersIntroducingVulnerability?: Array<{ Index: number }> };
    New?: { OrderedLayersIntroducingVulnerability?: Array<{ Index: number }> };
  };
}

/** Counts a side's layers, checking they come in increasing id order across pages. */
class SideCount {
  layers = 0;
  #last = 0;
  add(layers: Array<{ Index: number }> | undefined): void {
    for (const { Index } of layers ?? []) {
      if (Index <= this.#last) throw new Error(`layer ${Index} came after ${this.#last}`);
      this.#last = Index;
      this.layers++;
    }
  }
}

async function getPage(base: string, name: string, token: string | undefined): Promise<NotificationPage> {
  const page = token ? `&page=${encodeURIComponent(token)}` : '';
  const res = await fetch(`${base}/v1/notifications/${name}?limit=${LIMIT}${page}`);
  if (res.status !== 200) throw new Error(`GET notification answered ${res.status}`);
  return (await res.json()) as NotificationPage;
}

/**
 * Every page of a notification over HTTP (limit=LIMIT, Old and New sides), checking each side's
 * layers come once each, in id order: when the first page arrived (performance.now()), how long
 * all of them took from the first request, and how many layers each side listed.
 */
export async function pageNotification(
  base: string,
  name: string,
): Promise<{ firstPageAt: number; allPagesMs: number; old: number; new: number }> {
  const started = performance.now();
  const first = await getPage(base, name, undefined);
  const firstPageAt = performance.now();
  const old = new SideCount();
  const current = new SideCount();
  for (let page: NotificationPage | undefined = first; page;) {
    old.add(page.Notification.Old?.OrderedLayersIntroducingVulnerability);
    current.add(page.Notification.New?.OrderedLayersIntroducingVulnerability);
    const next: string | undefined = page.Notification.NextPage;
    page = next ? await getPage(base, name, next) : undefined;
  }
  return { firstPageAt, allPagesMs: performance.now() - started, old: old.layers, new: current.layers };
}

export type PageQuery = (pool: pg.Pool, start: number) => Promise<Array<{ id: number | string }>>;

/**
 * Time to read every page of both sides straight from PostgreSQL with pg, the sides in parallel
 * as the server runs them: one query per side and page, LIMIT + 1 rows from the page's start.
 */
export async function timePages(url: string, sides: PageQuery[], expected = LAYERS): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: sides.length });
  await Promise.all(sides.map(() => pool.query('SELECT 1')));
  const started = performance.now();
  const seen = await Promise.all(
    sides.map(async (page) => {
      let layers = 0;
      for (let start = 0; ;) {
        const rows = await page(pool, start);
        layers += Math.min(rows.length, LIMIT);
        if (rows.length <= LIMIT) return layers;
        // int8 comes back as a string unless src/store/pool.ts set its parser in this process.
        start = Number(rows[LIMIT]!.id);
      }
    }),
  );
  const elapsed = performance.now() - started;
  await pool.end();
  if (seen.some((n) => n !== expected)) throw new Error(`read ${seen.join(', ')} layers, expected ${expected} a side`);
  return elapsed;
}

/**
 * The floor: the rows the server returns (every layer is affected here), read by layer's primary
 * key, without finding them through the vulnerability's feature versions.
 */
export const byPrimaryKey: PageQuery = async (pool, start) =>
  (await pool.query<{ id: string }>('SELECT id, name FROM layer WHERE id >= $1 ORDER BY id LIMIT $2', [start, LIMIT + 1])).rows;

/** The server's own page query (src/store/notifications.ts) for one side's vulnerability version. */
export const introducing =
  (vulnerabilityId: number): PageQuery =>
  (pool, start) =>
    layersIntroducing(pool, vulnerabilityId, start, LIMIT + 1);

const seconds = (ms: number) => (ms / 1000).toFixed(2);

export async function run(): Promise<void> {
  const database = await benchDatabase(process.env);
  const server = await startBenchServer(database.url, '  updater:\n    interval: 0');
  const base = `http://127.0.0.1:${server.apiPort}`;
  const client = new pg.Client({ connectionString: database.url });
  try {
    await client.connect();
    await seed(database.url);
    // The vulnerability exists before the runs, so every run's notification has both sides.
    await postFix(base, '3.0.98-1');
    const readable: number[] = [];
    const paging: number[] = [];
    const queries: number[] = [];
    const floors: number[] = [];
    for (let run = 0; run < RUNS; run++) {
      const started = performance.now();
      await postFix(base, `3.0.${99 + run}-1`);
      const notification = (
        await client.query<{ name: string; old: string; new: string }>(
          'SELECT name, old_vulnerability_id AS old, new_vulnerability_id AS new FROM notification ORDER BY id DESC LIMIT 1',
        )
      ).rows[0]!;
      const name = notification.name;
      // The first page counts in both: the last step of "readable", the first of "all pages".
      const paged = await pageNotification(base, name);
      readable.push(paged.firstPageAt - started);
      paging.push(paged.allPagesMs);
      if (paged.old !== LAYERS || paged.new !== LAYERS) {
        throw new Error(`paged ${paged.old} old and ${paged.new} new layers, expected ${LAYERS} each`);
      }
      queries.push(await timePages(database.url, [introducing(Number(notification.old)), introducing(Number(notification.new))]));
      floors.push(await timePages(database.url, [byPrimaryKey, byPrimaryKey]));
    }
    const ratio = (xs: number[]) => (median(xs) / median(floors)).toFixed(1);
    const runs = (xs: number[]) => xs.map(seconds).join(', ');
    const body = [
      ...provenance(COMMAND),
      '',
      `Data: ${LAYERS.toLocaleString('en')} layers in debian:12, each introducing one of ${VERSIONS} openssl versions (seeded with SQL, then ANALYZE), all affected by one vulnerability. A first POST creates the vulnerability; each run then POSTs a new fixed version of it to a running server (node dist/src/cli.js): the change, its affects links and its notification are written in one transaction, and the notification's Old and New sides each reach all ${LAYERS.toLocaleString('en')} layers. "Readable" is from the start of the POST until the first page of the notification (limit=${LIMIT}, Old and New sides) has arrived. "All pages" is the time to fetch every page at limit=${LIMIT} over HTTP (${LAYERS / LIMIT} pages, each ${LIMIT.toLocaleString('en')} layers per side), checking each side holds every layer once, in id order. The next two rows read the same ${(2 * LAYERS) / LIMIT} side pages straight from PostgreSQL with pg, the two sides in parallel as the server runs them, ${LIMIT + 1} rows a query: first with the server's own page query (layersIntroducing, src/store/notifications.ts), then, as the floor, by layer's primary key (every layer is affected here, so these are the rows the server returns, without finding them through the vulnerability's ${VERSIONS} feature versions). Median of ${RUNS} runs; the machine is shared with other work, so figures vary from run to run.`,
      '',
      '| Measure | Median | Runs |',
      '|---|---|---|',
      `| Update → notification readable | ${seconds(median(readable))} s | ${runs(readable)} |`,
      `| All pages over HTTP, ${LAYERS.toLocaleString('en')} layers × 2 sides | ${seconds(median(paging))} s | ${runs(paging)} |`,
      `| The same pages: the server's page queries alone, with pg | ${seconds(median(queries))} s | ${runs(queries)} |`,
      `| The same pages: floor, by primary key, with pg | ${seconds(median(floors))} s | ${runs(floors)} |`,
      '',
      `All pages over HTTP / floor: ${ratio(paging)}×; page queries alone / floor: ${ratio(queries)}×.`,
    ].join('\n');
    await writeBenchmarkSection('Notification fan-out', body);
    await recordTargets([
      {
        measure: `one notification's ${LAYERS.toLocaleString('en')} layers paged, Old and New sides, limit=${LIMIT}`,
        before: '6.11 s',
        target: '< 2 s',
        now: `${seconds(median(paging))} s`,
        floor: `${seconds(median(floors))} s`,
        ratio: `${ratio(paging)}×`,
        met: median(paging) < 2000,
        benchmark: 'notification-fanout',
      },
    ]);
  } finally {
    await client.end();
    await server.stop();
    await database.close();
  }
}
