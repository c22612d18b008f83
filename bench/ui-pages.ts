/**
 * Dashboard page latency (issue 18): every page of /ui rendered by the built server with 10,000
 * images and 50,000 vulnerabilities in the database, seeded directly with SQL (the API would take
 * hours): one Debian namespace, 3,000 source packages, images sharing a base of packages and
 * differing in the rest, EPSS and KEV, superseded versions with their notifications, feed states,
 * and every image summary computed. Each page's time to the last byte on loopback, beside a bare
 * node:http server answering the same bytes.
 */
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import pg from 'pg';
import pino from 'pino';
import { Pool as HttpPool } from 'undici';
import { INDEXER_VERSION } from '../src/ecosystems/index.js';
import { createPool } from '../src/store/pool.js';
import { median, provenance, recordTargets, writeBenchmarkSection } from './lib.js';
import {
  BASE_NAMES,
  changesStep,
  computeEverySummary,
  installedVersionSql,
  poolNameSql,
  riskAndNotificationSteps,
  runSeedSteps,
  updaterStateStep,
  vulnerabilitySteps,
  type SeedStep,
  type StepTime,
  type VulnerabilityPopulation,
} from './seed.js';
import { benchDatabase, migrateDatabase, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- ui-pages';
const TARGET_MS = 300;

const FEATURES = 3_000;
/** Source packages every image holds (the base image's), in one of a few base versions. */
const BASE_FEATURES = 100;
const VERSIONS_PER_FEATURE = 4;
const VULNERABILITIES = 50_000;
const IMAGES = 10_000;
const REPOSITORIES = 500;
/** Packages an image takes from its repository's set, and from anywhere else. */
const REPOSITORY_FEATURES = 90;
const OWN_FEATURES = 15;
/** Vulnerabilities changed (a superseded version and a notification each), and new ones notified. */
const CHANGED = 1_600;
const NEW_NOTIFIED = 400;
const KEV_ROWS = 1_000;
/** Summaries computed per transaction (the refresher's batch), and transactions at a time (replicas). */
const SUMMARY_BATCH = 100;
const SUMMARY_CONNECTIONS = 2;

const WARMUP = 3;
const REQUESTS = 20;

const POPULATION: VulnerabilityPopulation = {
  vulnerabilities: VULNERABILITIES,
  versionsPerFeature: VERSIONS_PER_FEATURE,
  changed: CHANGED,
  newNotified: NEW_NOTIFIED,
  kevRows: KEV_ROWS,
};

/**
 * The seed, one statement at a time on one connection (setseed makes random() repeatable):
 * feature versions 1.M.0-1 … 1.M.3-1; each vulnerability on one package (uniformly), with a fix
 * in one of those versions (+deb12u1), before all of them, or none yet; affects rows from that.
 */
const SEED: SeedStep[] = [
  ['seed', 'SELECT setseed(0.18)'],
  ['namespace', "INSERT INTO namespace (id, name, version_format) VALUES (1, 'debian:12', 'dpkg')"],
  [
    'feature',
    `INSERT INTO feature (id, namespace_id, name) SELECT f, 1, ${poolNameSql('f')} FROM generate_series(1, ${FEATURES}) f`,
    [BASE_NAMES],
  ],
  [
    'feature_version',
    `INSERT INTO feature_version (id, feature_id, version)
     SELECT (f - 1) * ${VERSIONS_PER_FEATURE} + v + 1, f, ${installedVersionSql("'dpkg'", 'f', 'v')}
     FROM generate_series(1, ${FEATURES}) f, generate_series(0, ${VERSIONS_PER_FEATURE - 1}) v`,
  ],
  changesStep(POPULATION),
  // Per vulnerability: its package, its fix (k: the last affected version; -1 none affected; NULL no fix), its severity, its age.
  [
    'plan',
    `CREATE TEMPORARY TABLE plan AS
     SELECT i AS id, 1 AS namespace_id, 1 + floor(random() * ${FEATURES})::int AS feature_id, i AS cve,
            CASE WHEN r < 0.12 THEN NULL WHEN r < 0.52 THEN -1 ELSE floor((r - 0.52) / 0.12)::int END AS k,
            CASE WHEN s < 0.03 THEN 'Critical' WHEN s < 0.20 THEN 'High' WHEN s < 0.58 THEN 'Medium'
                 WHEN s < 0.88 THEN 'Low' WHEN s < 0.96 THEN 'Negligible' ELSE 'Unknown' END::severity AS severity,
            now() - random() * interval '900 days' AS created_at
     FROM (SELECT i, random() AS r, random() AS s FROM generate_series(1, ${VULNERABILITIES}) i) x`,
  ],
  ...vulnerabilitySteps(POPULATION),
  // Images: a repository per image (a % 500), 20 images a repository, first seen over the last year, older
  // first, all seen again within clair.images.untaggedretention (the server deletes untagged ones older than
  // that when it starts); a layer and an ancestry each.
  [
    'image',
    `INSERT INTO image (id, registry, repository, digest, platform, media_type, first_seen, last_seen)
     SELECT a, CASE WHEN r % 10 < 7 THEN 'registry.example.com' WHEN r % 10 < 9 THEN 'ghcr.io' ELSE 'docker.io' END,
            format('team-%s/service-%s', r % 40, r), 'sha256:' || encode(sha256(('image-' || a)::bytea), 'hex'),
            'linux/amd64', 'application/vnd.oci.image.manifest.v1+json', seen,
            greatest(seen, now() - random() * interval '20 days')
     FROM generate_series(1, ${IMAGES}) a
     CROSS JOIN LATERAL (SELECT a % ${REPOSITORIES} AS r, now() - (${IMAGES} - a) * interval '52 minutes' AS seen) x`,
  ],
  // Tags move: the newer half of each repository's images keep a version tag, its newest is latest too.
  [
    'image_tag',
    `INSERT INTO image_tag (image_id, tag)
     SELECT a, format('1.%s.0', a / ${REPOSITORIES}) FROM generate_series(1, ${IMAGES}) a WHERE a / ${REPOSITORIES} >= ${IMAGES / REPOSITORIES / 2}
     UNION ALL
     SELECT a, 'latest' FROM generate_series(${IMAGES - REPOSITORIES + 1}, ${IMAGES}) a`,
  ],
  [
    'layer_scan',
    `INSERT INTO layer_scan (id, key, indexed_by_version, namespace, package_dbs, created_at)
     SELECT a, 'sha256:' || encode(sha256(('layer-' || a)::bytea), 'hex'), $1, 'debian:12', '{"dpkg": "present"}', i.first_seen
     FROM generate_series(1, ${IMAGES}) a JOIN image i ON i.id = a`,
    [INDEXER_VERSION],
  ],
  ['ancestry', `INSERT INTO ancestry (id, name, created_at) SELECT id, digest, first_seen FROM image`],
  ['ancestry_layer', `INSERT INTO ancestry_layer (ancestry_id, position, layer_scan_id) SELECT id, 0, id FROM ancestry`],
  // The base packages in the version of the image's base epoch (four base images over the year);
  // the repository's packages and a few of its own in versions that are newer the newer the image.
  [
    'ancestry_feature',
    `INSERT INTO ancestry_feature (ancestry_id, feature_version_id, position)
     SELECT DISTINCT ON (a, f) a, (f - 1) * ${VERSIONS_PER_FEATURE} + v + 1, 0 FROM (
       SELECT a, f, greatest(0, e - ((f * 7 + e) % 3 = 0)::int) AS v
       FROM generate_series(1, ${IMAGES}) a, generate_series(1, ${BASE_FEATURES}) f,
            LATERAL (SELECT (a - 1) * ${VERSIONS_PER_FEATURE} / ${IMAGES} AS e) x
       UNION ALL
       SELECT a, ${BASE_FEATURES + 1} + ((a % ${REPOSITORIES}) * ${REPOSITORY_FEATURES} + j) * 7919 % ${FEATURES - BASE_FEATURES},
              least(${VERSIONS_PER_FEATURE - 1}, floor(${VERSIONS_PER_FEATURE} * power(random(), 1.5 - a::float8 / ${IMAGES}))::int)
       FROM generate_series(1, ${IMAGES}) a, generate_series(0, ${REPOSITORY_FEATURES - 1}) j
       UNION ALL
       SELECT a, ${BASE_FEATURES + 1} + floor(random() * ${FEATURES - BASE_FEATURES})::int,
              least(${VERSIONS_PER_FEATURE - 1}, floor(${VERSIONS_PER_FEATURE} * power(random(), 1.5 - a::float8 / ${IMAGES}))::int)
       FROM generate_series(1, ${IMAGES}) a, generate_series(1, ${OWN_FEATURES}) j
     ) x ORDER BY a, f`,
  ],
  ...riskAndNotificationSteps(POPULATION),
  updaterStateStep(
    [{ name: 'debian', records: VULNERABILITIES, changed: CHANGED }],
    { name: 'ubuntu', url: 'https://security-metadata.canonical.com/oval/' },
    KEV_ROWS,
  ),
];

const COUNTED = [
  'namespace',
  'feature',
  'feature_version',
  'vulnerability',
  'vulnerability_fixedin',
  'vulnerability_affects',
  'image',
  'image_tag',
  'layer_scan',
  'ancestry',
  'ancestry_layer',
  'ancestry_feature',
  'ancestry_summary',
  'epss',
  'kev',
  'notification',
  'updater_state',
] as const;

interface Seeded {
  seconds: number;
  steps: Array<{ label: string; seconds: number }>;
  counts: Record<string, number>;
  live: number;
  superseded: number;
  perImage: { min: number; median: number; max: number };
  features: { min: number; max: number };
}

export async function seed(databaseUrl: string): Promise<Seeded> {
  const started = performance.now();
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  let steps: StepTime[];
  try {
    steps = await runSeedSteps(db, SEED);
    for (const table of ['feature', 'feature_version', 'vulnerability', 'vulnerability_fixedin', 'image', 'layer_scan', 'ancestry']) {
      await db.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), (SELECT max(id) FROM ${table}))`);
    }
    await db.query('ANALYZE');
  } finally {
    await db.end();
  }
  steps.push(...(await computeEverySummary(databaseUrl, SUMMARY_BATCH, SUMMARY_CONNECTIONS)));

  const pool = createPool({ connectionString: databaseUrl }, 1, pino({ level: 'silent' }));
  try {
    const counts: Record<string, number> = {};
    for (const table of COUNTED) counts[table] = (await pool.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${table}`)).rows[0]!.n;
    const versions = (
      await pool.query<{ live: number; superseded: number }>(
        'SELECT count(*) FILTER (WHERE deleted_at IS NULL)::int AS live, count(*) FILTER (WHERE deleted_at IS NOT NULL)::int AS superseded FROM vulnerability',
      )
    ).rows[0]!;
    const perImage = (
      await pool.query<{ min: number; median: number; max: number }>(`
        SELECT min(n)::int AS min, percentile_disc(0.5) WITHIN GROUP (ORDER BY n)::int AS median, max(n)::int AS max
        FROM (SELECT (SELECT coalesce(sum((value->>'total')::int), 0) FROM jsonb_each(counts)) AS n FROM ancestry_summary) x`)
    ).rows[0]!;
    const features = (
      await pool.query<{ min: number; max: number }>(
        'SELECT min(n)::int AS min, max(n)::int AS max FROM (SELECT count(*) AS n FROM ancestry_feature GROUP BY ancestry_id) x',
      )
    ).rows[0]!;
    return { seconds: (performance.now() - started) / 1000, steps, counts, ...versions, perImage, features };
  } finally {
    await pool.end();
  }
}

export interface PageTarget {
  label: string;
  path: string;
}

export interface MeasuredPage extends PageTarget {
  status: number;
  error?: string;
  bytes: number;
  latencies: number[];
  floor: number[];
}

/** Fewest requests a page over its time budget still gets: one warm-up, then enough for a median. */
const MIN_WARMUP = 1;
const MIN_TIMED = 3;

/**
 * GET path to the last byte, warm-up first; each request's time in ms. Past budgetMs (from the
 * first request) a page gets no more than MIN_WARMUP warm-ups and MIN_TIMED timed requests: a page
 * that takes minutes is still measured, in minutes rather than an hour.
 */
async function timed(
  http: HttpPool,
  path: string,
  count: number,
  budgetMs = Infinity,
): Promise<{ status: number; body: Buffer; latencies: number[] }> {
  let status = 0;
  let body = Buffer.alloc(0);
  const latencies: number[] = [];
  const started = performance.now();
  let warmups = 0;
  while (latencies.length < count) {
    const over = performance.now() - started > budgetMs;
    if (over && latencies.length >= MIN_TIMED) break;
    const before = performance.now();
    const res = await http.request({ path, method: 'GET' });
    body = Buffer.from(await res.body.arrayBuffer());
    const elapsed = performance.now() - before;
    status = res.statusCode;
    if (status !== 200) return { status, body, latencies: [] };
    if (warmups < (over ? MIN_WARMUP : WARMUP)) warmups++;
    else latencies.push(elapsed);
  }
  return { status, body, latencies };
}

/** The floor: a bare node:http server in this process answering with the same bytes and content type. */
export async function bareServerLatencies(body: Buffer, contentType: string, count = REQUESTS): Promise<number[]> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const http = new HttpPool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
  try {
    return (await timed(http, '/', count)).latencies;
  } finally {
    await http.close();
    server.close();
  }
}

/** Nearest-rank percentile. */
export function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const decodeHref = (href: string): string =>
  href
    .replace(/&amp;/g, '&')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"');

/**
 * Every dashboard page, at the data of this database: the image lists (by risk, first seen,
 * filtered, the second page), the image with the most vulnerabilities, the live vulnerability
 * without a fix that reaches the most images among those of the packages widestPackage picks (an
 * SQL condition on fi.feature_id), the changes and the feeds.
 */
export async function dashboardPages(databaseUrl: string, http: HttpPool, widestPackage: string): Promise<PageTarget[]> {
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  let heaviest: { digest: string; vulnerabilities: number; features: number };
  let widest: { name: string; severity: string; images: number };
  try {
    heaviest = (
      await db.query<{ digest: string; vulnerabilities: number; features: number }>(`
        SELECT a.name AS digest, x.n AS vulnerabilities, (SELECT count(*)::int FROM ancestry_feature af WHERE af.ancestry_id = a.id) AS features
        FROM ancestry_summary s JOIN ancestry a ON a.id = s.ancestry_id
        CROSS JOIN LATERAL (SELECT coalesce(sum((value->>'total')::int), 0)::int AS n FROM jsonb_each(s.counts)) x
        ORDER BY x.n DESC, a.id LIMIT 1`)
    ).rows[0]!;
    const candidate = (
      await db.query<{ id: number; name: string; severity: string }>(`
        SELECT v.id, v.name, v.severity::text FROM vulnerability v JOIN vulnerability_fixedin fi ON fi.vulnerability_id = v.id
        WHERE v.deleted_at IS NULL AND ${widestPackage} AND fi.fixed_version IS NULL
        ORDER BY v.severity DESC, v.id LIMIT 1`)
    ).rows[0]!;
    const images = (
      await db.query<{ n: number }>(
        `SELECT count(DISTINCT i.id)::int AS n FROM vulnerability v JOIN vulnerability_affects va ON va.vulnerability_id = v.id
         JOIN ancestry_feature af USING (feature_version_id) JOIN ancestry a ON a.id = af.ancestry_id JOIN image i ON i.digest = a.name
         WHERE v.name = $1 AND v.deleted_at IS NULL`,
        [candidate.name],
      )
    ).rows[0]!.n;
    widest = { name: candidate.name, severity: candidate.severity, images };
  } finally {
    await db.end();
  }
  const first = await http.request({ path: '/ui', method: 'GET' });
  const firstPage = await first.body.text();
  const nextHref = /data-testid="next-page"[^>]*href="([^"]+)"/.exec(firstPage)?.[1];
  if (!nextHref) throw new Error(`/ui (${first.statusCode}) has no next-page link`);
  return [
    { label: 'Images, by risk', path: '/ui' },
    { label: 'Images, first seen', path: '/ui?sort=first-seen' },
    { label: 'Images, at least Critical', path: '/ui?severity=Critical' },
    { label: 'Images, known exploited', path: '/ui?kev=on' },
    { label: 'Images, by risk, second page', path: decodeHref(nextHref) },
    { label: `Image (${heaviest.vulnerabilities.toLocaleString('en')} vulnerabilities)`, path: `/ui/images/${heaviest.digest}` },
    {
      label: `Vulnerability (${widest.severity}, ${widest.images.toLocaleString('en')} images)`,
      path: `/ui/vulnerabilities/${encodeURIComponent(widest.name)}`,
    },
    { label: 'Changes', path: '/ui/changes' },
    { label: 'Feeds', path: '/ui/feeds' },
  ];
}

/**
 * Each page timed in turn (warm-up, then sequential requests on one connection; at least a few
 * once past budgetMs), each beside its floor.
 */
export async function measurePages(http: HttpPool, targets: readonly PageTarget[], budgetMs = Infinity): Promise<MeasuredPage[]> {
  const measured: MeasuredPage[] = [];
  for (const target of targets) {
    const { status, body, latencies } = await timed(http, target.path, REQUESTS, budgetMs);
    if (status !== 200) {
      const error = /<p[^>]*>([^<]*)</.exec(body.toString())?.[1]?.trim() ?? body.toString().slice(0, 200);
      measured.push({ ...target, status, error, bytes: body.length, latencies: [], floor: [] });
      process.stdout.write(`${target.path}: answered ${status} (${error})\n`);
      continue;
    }
    const floor = await bareServerLatencies(body, 'text/html; charset=utf-8');
    measured.push({ ...target, status, bytes: body.length, latencies, floor });
    process.stdout.write(`${target.path}: ${median(latencies).toFixed(1)} ms median, ${body.length} bytes\n`);
  }
  return measured;
}

/** Nothing may have changed the data under the measurements (the retention pass, the refresher). */
export async function assertSteady(databaseUrl: string, expectedImages: number): Promise<void> {
  const check = new pg.Client({ connectionString: databaseUrl });
  await check.connect();
  try {
    const { images, stale } = (
      await check.query<{ images: number; stale: number }>(
        'SELECT (SELECT count(*)::int FROM image) AS images, (SELECT count(*)::int FROM ancestry_summary WHERE stale) AS stale',
      )
    ).rows[0]!;
    if (images !== expectedImages || stale !== 0) {
      throw new Error(`the data changed during the run: ${images} images, ${stale} stale summaries`);
    }
  } finally {
    await check.end();
  }
}

export async function run(): Promise<void> {
  const database = await benchDatabase(process.env);
  let server: Awaited<ReturnType<typeof startBenchServer>> | undefined;
  let http: HttpPool | undefined;
  try {
    await migrateDatabase(database.url);
    const seeded = await seed(database.url);
    process.stdout.write(`seeded in ${seeded.seconds.toFixed(0)} s: ${JSON.stringify(seeded.counts)}\n`);

    server = await startBenchServer(database.url, '  updater:\n    interval: 0');
    http = new HttpPool(`http://127.0.0.1:${server.apiPort}`, { connections: 1 });
    // A vulnerability every image holds a package of: one of the base packages.
    const targets = await dashboardPages(database.url, http, `fi.feature_id <= ${BASE_FEATURES}`);
    const measured = await measurePages(http, targets);
    await assertSteady(database.url, IMAGES);

    const ms = (x: number) => `${x.toFixed(1)} ms`;
    const ok = measured.filter((m) => m.latencies.length > 0);
    const missing = measured.filter((m) => m.latencies.length === 0);
    const row = (m: MeasuredPage) =>
      m.latencies.length === 0
        ? `| ${m.label} | \`${m.path.length > 60 ? `${m.path.slice(0, 57)}…` : m.path}\` | — | — | — | — | not measured: answered ${m.status}${m.error ? ` (${m.error})` : ''} |`
        : `| ${m.label} | \`${m.path.length > 60 ? `${m.path.slice(0, 57)}…` : m.path}\` | ${ms(median(m.latencies))} | ${ms(percentile(m.latencies, 95))} | ${(m.bytes / 1024).toFixed(0)} KiB | ${ms(median(m.floor))} | ${median(m.latencies) < TARGET_MS ? 'yes' : 'no'} |`;
    const c = seeded.counts;
    const n = (x: number | undefined) => (x ?? 0).toLocaleString('en');
    const body = [
      ...provenance(COMMAND),
      '',
      `Database (seeded with SQL by \`bench/ui-pages.ts\` in ${seeded.seconds.toFixed(0)} s after \`tarsier migrate\`; image summaries all marked stale and computed as the refreshers compute them (batches of ${SUMMARY_BATCH} under SKIP LOCKED, on ${SUMMARY_CONNECTIONS} connections); then VACUUM ANALYZE as autovacuum would): one namespace (debian:12, dpkg); ${n(c.feature)} source packages with ${n(c.feature_version)} versions; ${n(seeded.live)} live vulnerabilities (CVE-YYYY-NNNNN; 3 % Critical, 17 % High, 38 % Medium, 30 % Low, 8 % Negligible, 4 % Unknown; 88 % with a fixed version) and ${n(seeded.superseded)} superseded versions, ${n(c.vulnerability_fixedin)} fixed-in rows, ${n(c.vulnerability_affects)} affects rows; ${n(c.image)} images in ${REPOSITORIES} repositories (${n(c.image_tag)} tags), each one ancestry of one layer with ${seeded.features.min}–${seeded.features.max} packages (${BASE_FEATURES} base packages in one of four base versions, the rest from the repository's and their own), ${n(c.ancestry_feature)} ancestry_feature rows, ${n(c.ancestry_summary)} summaries, all fresh; ${seeded.perImage.min.toLocaleString('en')}–${seeded.perImage.max.toLocaleString('en')} vulnerabilities per image (median ${seeded.perImage.median.toLocaleString('en')}); ${n(c.epss)} EPSS scores, ${n(c.kev)} KEV entries; ${n(c.notification)} notifications (${n(CHANGED)} changes with both versions' affects rows, ${n(NEW_NOTIFIED)} new vulnerabilities); ${n(c.updater_state)} updater states.`,
      '',
      `Pages: the built server (\`tarsier serve\`, no authentication, updater off), one keep-alive undici connection on loopback, ${WARMUP} warm-up requests then ${REQUESTS} timed, sequential, each to the last byte; the floor is a bare \`node:http\` server in the benchmark's process answering the same bytes, measured the same way. The target (issue 18) is < ${TARGET_MS} ms per page.`,
      '',
      '| Page | Path | Median | p95 | Size | Floor (median) | < 300 ms |',
      '|---|---|---|---|---|---|---|',
      ...measured.map(row),
      '',
      'Seed steps:',
      '',
      '| Step | Seconds |',
      '|---|---|',
      ...seeded.steps.map((s) => `| ${s.label} | ${s.seconds.toFixed(1)} |`),
      '',
      'Rows:',
      '',
      '| Table | Rows |',
      '|---|---|',
      ...COUNTED.map((t) => `| ${t} | ${n(c[t])} |`),
      ...(missing.length > 0 ? ['', `Not measured (the page does not render yet): ${missing.map((m) => m.label).join(', ')}.`] : []),
    ].join('\n');
    await writeBenchmarkSection('Dashboard pages', body);

    if (ok.length > 0) {
      const slowest = ok.reduce((a, b) => (median(b.latencies) > median(a.latencies) ? b : a));
      const slow = median(slowest.latencies);
      const floor = median(slowest.floor);
      await recordTargets([
        {
          measure: 'slowest dashboard page, 10,000 images / 50,000 vulnerabilities',
          before: '—',
          target: `< ${TARGET_MS} ms`,
          now: `${ms(slow)} median (${slowest.label})${missing.length > 0 ? `; not measured: ${missing.map((m) => m.label).join(', ')}` : ''}`,
          floor: `${ms(floor)} (bare server, same bytes)`,
          ratio: `${(slow / floor).toFixed(0)}×`,
          met: slow < TARGET_MS && missing.length === 0,
          benchmark: 'ui-pages',
        },
      ]);
    }
  } finally {
    await http?.close();
    await server?.stop();
    await database.close();
  }
}
