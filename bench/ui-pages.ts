/**
 * Dashboard page latency (issue 18): every page of /ui rendered by the built server with 10,000
 * images and 50,000 vulnerabilities in the database, seeded directly with SQL (the API would take
 * hours): one Debian namespace, 3,000 source packages, images sharing a base of packages and
 * differing in the rest, EPSS and KEV, superseded versions with their notifications, feed states,
 * and every image summary computed. Each page's time to the last byte on loopback, beside a bare
 * node:http server answering the same bytes.
 */
import { execFileSync } from 'node:child_process';
import { createServer } from 'node:http';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import pino from 'pino';
import { Pool as HttpPool } from 'undici';
import { INDEXER_VERSION } from '../src/ecosystems/index.js';
import { createPool, withTransaction } from '../src/store/pool.js';
import { refreshStaleSummaries } from '../src/store/summaries.js';
import { median, provenance, recordTargets, writeBenchmarkSection } from './lib.js';
import { benchDatabase, CACHE_DIR, startBenchServer } from './server.js';

const COMMAND = 'npm run bench -- ui-pages';
const CLI = fileURLToPath(new URL('../dist/src/cli.js', import.meta.url));
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

/** Source packages of a Debian base image, by name (the rest of the 3,000 are named pkg-NNNN). */
const BASE_NAMES = [
  'acl adduser apt attr audit base-files base-passwd bash bzip2 cdebconf coreutils dash db5.3 debconf',
  'debian-archive-keyring debianutils diffutils dpkg e2fsprogs findutils gcc-12 gdbm glibc gmp gnupg2 gnutls28',
  'grep gzip hostname init-system-helpers keyutils krb5 libbsd libcap-ng libcap2 libffi libgcrypt20 libgpg-error',
  'libidn2 libmd libnsl libseccomp libselinux libsemanage libsepol libtasn1-6 libtirpc libunistring libxcrypt',
  'libzstd lz4 mawk ncurses nettle openldap openssl p11-kit pam pcre2 perl sed shadow systemd sysvinit tar',
  'tzdata usrmerge util-linux xxhash xz-utils zlib curl ca-certificates nghttp2 libpsl rtmpdump libssh2 brotli',
  'cyrus-sasl2 sqlite3 expat libxml2 icu readline libedit libyaml jansson json-c libevent libuv1 python3.11',
  'python3-defaults mpdecimal libnss3 nspr git openssh procps less wget',
]
  .join(' ')
  .split(' ');

/**
 * The seed, one statement at a time on one connection (setseed makes random() repeatable):
 * feature versions 1.M.0-1 … 1.M.3-1; each vulnerability on one package (uniformly), with a fix
 * in one of those versions (+deb12u1), before all of them, or none yet; affects rows from that.
 */
const SEED: Array<[label: string, sql: string]> = [
  ['seed', 'SELECT setseed(0.18)'],
  ['namespace', "INSERT INTO namespace (id, name, version_format) VALUES (1, 'debian:12', 'dpkg')"],
  [
    'feature',
    `INSERT INTO feature (id, namespace_id, name)
     SELECT f, 1, coalesce(($1::text[])[f], 'pkg-' || lpad(f::text, 4, '0')) FROM generate_series(1, ${FEATURES}) f`,
  ],
  [
    'feature_version',
    `INSERT INTO feature_version (id, feature_id, version)
     SELECT (f - 1) * ${VERSIONS_PER_FEATURE} + v + 1, f, format('1.%s.%s-1', f % 50, v)
     FROM generate_series(1, ${FEATURES}) f, generate_series(0, ${VERSIONS_PER_FEATURE - 1}) v`,
  ],
  // Which vulnerabilities change (retired at the time of the change, and a new version then).
  [
    'changes',
    `CREATE TEMPORARY TABLE change AS
     SELECT g * 25 AS old_id, ${VULNERABILITIES} + g AS new_id, now() - random() * interval '30 days' AS at
     FROM generate_series(1, ${CHANGED}) g`,
  ],
  // Per vulnerability: its package, its fix (k: the last affected version; -1 none affected; NULL no fix), its severity, its age.
  [
    'plan',
    `CREATE TEMPORARY TABLE plan AS
     SELECT i AS id, 1 + floor(random() * ${FEATURES})::int AS feature_id,
            CASE WHEN r < 0.12 THEN NULL WHEN r < 0.52 THEN -1 ELSE floor((r - 0.52) / 0.12)::int END AS k,
            CASE WHEN s < 0.03 THEN 'Critical' WHEN s < 0.20 THEN 'High' WHEN s < 0.58 THEN 'Medium'
                 WHEN s < 0.88 THEN 'Low' WHEN s < 0.96 THEN 'Negligible' ELSE 'Unknown' END::severity AS severity,
            now() - random() * interval '900 days' AS created_at
     FROM (SELECT i, random() AS r, random() AS s FROM generate_series(1, ${VULNERABILITIES}) i) x`,
  ],
  [
    'vulnerability',
    `INSERT INTO vulnerability (id, namespace_id, name, description, link, severity, source_severity, metadata, updater, created_at, deleted_at)
     SELECT p.id, 1, name, description, 'https://security-tracker.debian.org/tracker/' || name, p.severity, p.severity,
            jsonb_build_object('NVD', jsonb_build_object('CVSSv3', jsonb_build_object(
              'Score', CASE p.severity WHEN 'Critical' THEN 9.8 WHEN 'High' THEN 7.5 WHEN 'Medium' THEN 5.3 ELSE 3.1 END,
              'Vectors', 'CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:N/A:N'))),
            'debian', CASE WHEN c.at IS NULL THEN p.created_at ELSE least(p.created_at, c.at - interval '1 day') END, c.at
     FROM plan p
     LEFT JOIN change c ON c.old_id = p.id
     CROSS JOIN LATERAL (SELECT format('CVE-%s-%s', 2014 + p.id % 12, 10000 + p.id) AS name) n
     CROSS JOIN LATERAL (SELECT 'A flaw was found in ' || (SELECT f.name FROM feature f WHERE f.id = p.feature_id) ||
       ': a crafted input may cause an out-of-bounds read in the parser, which a remote attacker could use to crash the '
       'process or disclose memory. ' || name || '.' AS description) d`,
  ],
  // The new versions: the same package; a fix released in the newest version when there was none; most of them more severe.
  [
    'vulnerability (new versions)',
    `INSERT INTO vulnerability (id, namespace_id, name, description, link, severity, source_severity, metadata, updater, created_at)
     SELECT c.new_id, 1, v.name, v.description || ' Updated analysis.', v.link, s.severity, s.severity, v.metadata, 'debian', c.at
     FROM change c JOIN vulnerability v ON v.id = c.old_id
     CROSS JOIN LATERAL (SELECT CASE WHEN random() < 0.6 AND v.severity < 'Critical' AND v.severity >= 'Low'
       THEN (enum_range(v.severity, NULL))[2] ELSE v.severity END AS severity) s`,
  ],
  [
    'plan (new versions)',
    `INSERT INTO plan (id, feature_id, k, severity, created_at)
     SELECT c.new_id, p.feature_id, coalesce(p.k, ${VERSIONS_PER_FEATURE - 1}), p.severity, c.at FROM change c JOIN plan p ON p.id = c.old_id`,
  ],
  [
    'vulnerability_fixedin',
    `INSERT INTO vulnerability_fixedin (id, vulnerability_id, feature_id, fixed_version)
     SELECT id, id, feature_id,
            CASE WHEN k IS NULL THEN NULL WHEN k < 0 THEN format('1.%s.0~rc1-1', feature_id % 50)
                 ELSE format('1.%s.%s-1+deb12u1', feature_id % 50, k) END
     FROM plan`,
  ],
  [
    'vulnerability_affects',
    `INSERT INTO vulnerability_affects (vulnerability_id, feature_version_id, fixedin_id)
     SELECT p.id, (p.feature_id - 1) * ${VERSIONS_PER_FEATURE} + v + 1, p.id
     FROM plan p, generate_series(0, ${VERSIONS_PER_FEATURE - 1}) v
     WHERE p.k IS NULL OR v <= p.k`,
  ],
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
  // EPSS for most CVEs (most scores near zero), KEV for 1,000 High and Critical ones.
  [
    'epss',
    `INSERT INTO epss (cve, score, percentile, scored_on)
     SELECT name, score, percent_rank() OVER (ORDER BY score), current_date - 1
     FROM (SELECT name, round(power(random(), 6)::numeric, 5)::float8 AS score FROM vulnerability WHERE deleted_at IS NULL AND random() < 0.8) x`,
  ],
  [
    'kev',
    `INSERT INTO kev (cve, vendor_project, product, vulnerability_name, date_added, due_date, known_ransomware_campaign_use, required_action)
     SELECT v.name, 'Debian', f.name, f.name || ' out-of-bounds read', d, d + 21,
            CASE WHEN random() < 0.2 THEN 'Known' ELSE 'Unknown' END, 'Apply updates per vendor instructions.'
     FROM (SELECT id, name FROM vulnerability WHERE deleted_at IS NULL AND severity >= 'High' ORDER BY random() LIMIT ${KEV_ROWS}) v
     JOIN vulnerability_fixedin fi ON fi.vulnerability_id = v.id JOIN feature f ON f.id = fi.feature_id
     CROSS JOIN LATERAL (SELECT current_date - floor(random() * 1200)::int AS d) x`,
  ],
  // A notification per change (read a day later when older than a week), and one per recent new vulnerability.
  [
    'notification',
    `INSERT INTO notification (name, created_at, notified_at, deleted_at, old_vulnerability_id, new_vulnerability_id, next_delivery_at)
     SELECT gen_random_uuid()::text, at, at + interval '1 minute', CASE WHEN at < now() - interval '7 days' THEN at + interval '1 day' END,
            old_id, new_id, at + interval '2 hours'
     FROM (SELECT at, old_id, new_id FROM change
           UNION ALL
           SELECT * FROM (SELECT created_at, NULL::bigint, id FROM vulnerability WHERE deleted_at IS NULL AND id <= ${VULNERABILITIES}
                          ORDER BY created_at DESC LIMIT ${NEW_NOTIFIED}) n) x
     ORDER BY at`,
  ],
  [
    'updater_state',
    `INSERT INTO updater_state (name, fingerprint, last_attempt_at, last_success_at, last_error, record_count, next_run_at,
                                consecutive_failures, last_duration_ms, last_changed)
     VALUES ('debian', 'etag:"5f2a"', now() - interval '40 minutes', now() - interval '40 minutes', NULL, ${VULNERABILITIES},
             now() + interval '80 minutes', 0, 41200, ${CHANGED}),
            ('nvd', 'last-modified:2099-01-01', now() - interval '35 minutes', now() - interval '35 minutes', NULL, 245000,
             now() + interval '85 minutes', 0, 182000, 310),
            ('epss', 'score_date:2099-01-01', now() - interval '3 hours', now() - interval '3 hours', NULL, 280000,
             now() - interval '1 hour', 0, 9300, 279000),
            ('kev', 'etag:"kev-1"', now() - interval '50 minutes', now() - interval '50 minutes', NULL, ${KEV_ROWS},
             now() + interval '70 minutes', 0, 800, 2),
            ('ubuntu', NULL, now() - interval '20 minutes', NULL, 'GET https://security-metadata.canonical.com/oval/: connect ETIMEDOUT',
             0, now() + interval '10 minutes', 4, 30000, 0)`,
  ],
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
  const steps: Seeded['steps'] = [];
  const db = new pg.Client({ connectionString: databaseUrl });
  await db.connect();
  try {
    for (const [label, sql] of SEED) {
      const before = performance.now();
      const parameters: unknown[] = label === 'feature' ? [BASE_NAMES] : label === 'layer_scan' ? [INDEXER_VERSION] : [];
      await db.query(sql, parameters);
      steps.push({ label, seconds: (performance.now() - before) / 1000 });
    }
    for (const table of ['feature', 'feature_version', 'vulnerability', 'vulnerability_fixedin', 'image', 'layer_scan', 'ancestry']) {
      await db.query(`SELECT setval(pg_get_serial_sequence('${table}', 'id'), (SELECT max(id) FROM ${table}))`);
    }
    await db.query('ANALYZE');
  } finally {
    await db.end();
  }

  // Every image's summary, as the refreshers compute them after a change that stales them all (a KEV
  // update): stale rows claimed in batches under SKIP LOCKED, on SUMMARY_CONNECTIONS connections.
  const before = performance.now();
  const pool = createPool({ connectionString: databaseUrl }, SUMMARY_CONNECTIONS, pino({ level: 'silent' }));
  try {
    await pool.query(
      "INSERT INTO ancestry_summary (ancestry_id, counts, known_exploited, risk, stale) SELECT id, '{}', 0, '{}', true FROM ancestry",
    );
    // The changes the seed queued for marking (migration 0024) are covered: every summary is computed after them.
    await pool.query('DELETE FROM summary_change');
    await Promise.all(
      Array.from({ length: SUMMARY_CONNECTIONS }, async () => {
        while ((await withTransaction(pool, (client) => refreshStaleSummaries(client, SUMMARY_BATCH))) > 0);
      }),
    );
    steps.push({
      label: 'ancestry_summary (all 10,000 stale, refreshed as the refreshers do)',
      seconds: (performance.now() - before) / 1000,
    });
    // Steady state: what autovacuum would have done by now (it is off on some servers).
    const vacuumed = performance.now();
    await pool.query('VACUUM ANALYZE');
    steps.push({ label: 'VACUUM ANALYZE', seconds: (performance.now() - vacuumed) / 1000 });

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

interface Target {
  label: string;
  path: string;
}

interface Measured extends Target {
  status: number;
  error?: string;
  bytes: number;
  latencies: number[];
  floor: number[];
}

/** GET path to the last byte, warm-up first; each request's time in ms. */
async function timed(http: HttpPool, path: string, count: number): Promise<{ status: number; body: Buffer; latencies: number[] }> {
  let status = 0;
  let body = Buffer.alloc(0);
  const latencies: number[] = [];
  for (let i = 0; i < WARMUP + count; i++) {
    const started = performance.now();
    const res = await http.request({ path, method: 'GET' });
    body = Buffer.from(await res.body.arrayBuffer());
    const elapsed = performance.now() - started;
    status = res.statusCode;
    if (status !== 200) return { status, body, latencies: [] };
    if (i >= WARMUP) latencies.push(elapsed);
  }
  return { status, body, latencies };
}

/** The floor: a bare node:http server in this process answering with the same bytes and content type. */
async function floorOf(body: Buffer, contentType: string): Promise<number[]> {
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': contentType, 'content-length': body.length });
    res.end(body);
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const http = new HttpPool(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, { connections: 1 });
  try {
    return (await timed(http, '/', REQUESTS)).latencies;
  } finally {
    await http.close();
    server.close();
  }
}

/** Nearest-rank percentile. */
function percentile(xs: readonly number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

const decodeHref = (href: string): string =>
  href
    .replace(/&amp;/g, '&')
    .replace(/&#39;/g, "'")
    .replace(/&quot;/g, '"');

export async function run(): Promise<void> {
  const database = await benchDatabase(process.env);
  let server: Awaited<ReturnType<typeof startBenchServer>> | undefined;
  let http: HttpPool | undefined;
  try {
    const config = join(CACHE_DIR, 'ui-pages.yaml');
    await writeFile(config, 'clair:\n  updater:\n    interval: 0\n');
    execFileSync(process.execPath, [CLI, 'migrate', '--config', config], {
      env: { PATH: process.env.PATH, DATABASE_URL: database.url, TARSIER_LOG_LEVEL: 'warn' },
      stdio: 'ignore',
    });
    const seeded = await seed(database.url);
    process.stdout.write(`seeded in ${seeded.seconds.toFixed(0)} s: ${JSON.stringify(seeded.counts)}\n`);

    // The image with the most vulnerabilities, and a vulnerability every image holds a package of.
    const db = new pg.Client({ connectionString: database.url });
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
          WHERE v.deleted_at IS NULL AND fi.feature_id <= ${BASE_FEATURES} AND fi.fixed_version IS NULL
          ORDER BY v.severity DESC, v.id LIMIT 1`)
      ).rows[0]!;
      const images = (
        await db.query<{ n: number }>(
          `SELECT count(DISTINCT i.id)::int AS n FROM vulnerability_affects va JOIN ancestry_feature af USING (feature_version_id)
           JOIN ancestry a ON a.id = af.ancestry_id JOIN image i ON i.digest = a.name WHERE va.vulnerability_id = $1`,
          [candidate.id],
        )
      ).rows[0]!.n;
      widest = { name: candidate.name, severity: candidate.severity, images };
    } finally {
      await db.end();
    }

    server = await startBenchServer(database.url, '  updater:\n    interval: 0');
    http = new HttpPool(`http://127.0.0.1:${server.apiPort}`, { connections: 1 });
    const first = await http.request({ path: '/ui', method: 'GET' });
    const firstPage = await first.body.text();
    const nextHref = /data-testid="next-page"[^>]*href="([^"]+)"/.exec(firstPage)?.[1];
    if (!nextHref) throw new Error(`/ui (${first.statusCode}) has no next-page link`);

    const targets: Target[] = [
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
    const measured: Measured[] = [];
    for (const target of targets) {
      const { status, body, latencies } = await timed(http, target.path, REQUESTS);
      if (status !== 200) {
        const error = /<p[^>]*>([^<]*)</.exec(body.toString())?.[1]?.trim() ?? body.toString().slice(0, 200);
        measured.push({ ...target, status, error, bytes: body.length, latencies: [], floor: [] });
        process.stdout.write(`${target.path}: answered ${status} (${error})\n`);
        continue;
      }
      const floor = await floorOf(body, 'text/html; charset=utf-8');
      measured.push({ ...target, status, bytes: body.length, latencies, floor });
      process.stdout.write(`${target.path}: ${median(latencies).toFixed(1)} ms median, ${body.length} bytes\n`);
    }

    // Nothing may have changed the data under the measurements (the retention pass, the refresher).
    const check = new pg.Client({ connectionString: database.url });
    await check.connect();
    try {
      const { images, stale } = (
        await check.query<{ images: number; stale: number }>(
          'SELECT (SELECT count(*)::int FROM image) AS images, (SELECT count(*)::int FROM ancestry_summary WHERE stale) AS stale',
        )
      ).rows[0]!;
      if (images !== IMAGES || stale !== 0) throw new Error(`the data changed during the run: ${images} images, ${stale} stale summaries`);
    } finally {
      await check.end();
    }

    const ms = (x: number) => `${x.toFixed(1)} ms`;
    const ok = measured.filter((m) => m.latencies.length > 0);
    const missing = measured.filter((m) => m.latencies.length === 0);
    const row = (m: Measured) =>
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
